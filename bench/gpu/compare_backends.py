#!/usr/bin/env python3
"""Compares what bench/gpu/torch_backend.py recorded with PyTorch's own kineto (STOCK) and
with kinetrace as its backend (KINETRACE): the same kernels, copies and memsets; the same
ops with device time attributed in key_averages(); launch-to-kernel flows all paired; the
tensorboard_trace_handler files of both schedule cycles; the fields trace readers (HTA,
TensorBoard) use; the overhead of each. Writes a Markdown report; exits 1 when a check fails.

    compare_backends.py STOCK_DIR KINETRACE_DIR --md OUT.md
"""
import argparse
import collections
import glob
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def events(trace):
    return trace.get("traceEvents", [])


def by_category(trace, category):
    return [e for e in events(trace) if e.get("cat") == category and e.get("ph") == "X"]


def flow_ids(trace, phase):
    return collections.Counter(e.get("id") for e in events(trace)
                               if e.get("ph") == phase and e.get("cat") == "ac2g")


def reader_fields_missing(trace):
    """Complete events lacking a field HTA's and TensorBoard's parsers read."""
    missing = 0
    for e in events(trace):
        if e.get("ph") != "X":
            continue
        if any(k not in e for k in ("name", "cat", "pid", "tid", "ts", "dur")):
            missing += 1
        elif e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset") and "correlation" not in e.get("args", {}):
            missing += 1
    return missing


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stock")
    p.add_argument("kinetrace")
    p.add_argument("--md", required=True)
    args = p.parse_args()
    runs = {"stock kineto": args.stock, "kinetrace": args.kinetrace}
    lines = ["# PyTorch's profiler: stock kineto against kinetrace as its backend", ""]
    failures = []
    traces = {name: load(os.path.join(d, "trace.json")) for name, d in runs.items()}
    backends = {name: load(os.path.join(d, "backend.json"))["backend"] for name, d in runs.items()}
    if backends["kinetrace"] != "libkineto_api":
        failures.append(f"the kinetrace run was recorded by {backends['kinetrace']}, not kinetrace")

    lines += ["## The same profile (5 steps, CPU + CUDA, record_shapes), export_chrome_trace", "",
              "| | " + " | ".join(runs) + " |", "|---|" + "---|" * len(runs)]

    def row(label, values):
        lines.append(f"| {label} | " + " | ".join(str(v) for v in values) + " |")

    counts = {}
    for category in ("kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime"):
        counts[category] = [len(by_category(traces[n], category)) for n in runs]
        row(category + " events", counts[category])
    names = [collections.Counter(e["name"] for e in by_category(traces[n], "kernel")) for n in runs]
    row("distinct kernel names", [len(c) for c in names])
    for category in ("kernel", "gpu_memcpy", "gpu_memset"):
        a, b = counts[category]
        if a != b:
            failures.append(f"{category}: {a} with stock kineto, {b} with kinetrace")
    if names[0] != names[1]:
        only = (names[0] - names[1]) + (names[1] - names[0])
        failures.append(f"kernel names differ: {dict(list(only.items())[:5])}")
    unpaired = []
    for n in runs:
        starts, ends = flow_ids(traces[n], "s"), flow_ids(traces[n], "f")
        unpaired.append(len(set(starts) ^ set(ends)))
    row("launch flows (s)", [sum(flow_ids(traces[n], "s").values()) for n in runs])
    row("flow ids without both ends", unpaired)
    if unpaired[1] != 0:
        failures.append(f"{unpaired[1]} unpaired flows with kinetrace")
    missing = [reader_fields_missing(traces[n]) for n in runs]
    row("complete events missing a reader field", missing)
    if missing[1] != 0:
        failures.append(f"{missing[1]} events lack a field trace readers need")
    for key in ("kinetrace_cupti_dropped_records", "kinetrace_gpu_clock_offset_bound_ns",
                "kinetrace_framework_clock_offset_ns"):
        row(key, [traces[n].get(key, "-") for n in runs])

    # key_averages(): device time attributed to the same ops.
    averages = {n: load(os.path.join(d, "key_averages.json")) for n, d in runs.items()}
    stock, ours = averages["stock kineto"], averages["kinetrace"]
    top = sorted(stock, key=lambda k: -stock[k]["device_time_total_us"])[:15]
    lines += ["", "## key_averages(): the ops with the most device time (stock kineto's top 15)", "",
              "| op | count (stock / kinetrace) | device time us (stock / kinetrace) |", "|---|---|---|"]
    for key in top:
        s = stock[key]
        o = ours.get(key, {"count": 0, "device_time_total_us": 0})
        lines.append(f"| `{key}` | {s['count']} / {o['count']} | "
                     f"{s['device_time_total_us']:.0f} / {o['device_time_total_us']:.0f} |")
        if s["device_time_total_us"] > 0 and o["device_time_total_us"] <= 0:
            failures.append(f"{key}: no device time attributed with kinetrace")
        if s["count"] != o["count"]:
            failures.append(f"{key}: {s['count']} calls with stock kineto, {o['count']} with kinetrace")
    attributed = [sum(1 for v in averages[n].values() if v["device_time_total_us"] > 0) for n in runs]
    lines += ["", f"ops with device time attributed: stock {attributed[0]}, kinetrace {attributed[1]}"]

    # The schedule's cycles.
    lines += ["", "## Schedule (wait 1, warmup 1, active 3, repeat 2) with tensorboard_trace_handler", ""]
    for n, d in runs.items():
        files = sorted(glob.glob(os.path.join(d, "tb", "*.pt.trace.json")))
        kernels = [len(by_category(load(f), "kernel")) for f in files]
        lines.append(f"- {n}: {len(files)} trace files, kernels in each: {kernels}")
        if len(files) != 2 or min(kernels or [0]) == 0:
            failures.append(f"{n}: {len(files)} schedule traces (2 expected), kernels {kernels}")

    # Overhead.
    lines += ["", "## Overhead (step time inside torch.profiler, CPU + CUDA, over untraced; "
              "interleaved rounds in one process, medians)", "",
              "| backend | untraced ms | CPU-only profile ms | CPU + CUDA profile ms | CPU + CUDA over untraced | CPU-only over untraced |",
              "|---|---|---|---|---|---|"]
    ratios = {}
    for n, d in runs.items():
        o = load(os.path.join(d, "overhead.json"))
        ratios[n] = o["ratio"]
        lines.append(f"| {n} | {o['untraced_median_ms']:.3f} | {o['cpu_only_median_ms']:.3f} | "
                     f"{o['profiled_median_ms']:.3f} | **{o['ratio']:.3f}x** | {o['cpu_only_ratio']:.3f}x |")

    lines += ["", "## Result", ""]
    lines += [f"- FAIL: {f}" for f in failures] or ["- every check passed"]
    with open(args.md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
