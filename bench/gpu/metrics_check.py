#!/usr/bin/env python3
"""Checks a trace recorded with GPU metrics (`kinetrace run --gpu-metrics default`) for the
proof on the GPU (bench/gpu/gpu_metrics.sh).

    metrics_check.py TRACE [--md FILE]                      metrics_phases's trace
    metrics_check.py TRACE --kernel-bounds ANALYZE.json     any program (PyTorch's loop)
    options: --min-coverage 0.8  --top 15

Both modes check what sampling wrote and what it lost:
- metadata kinetrace_gpu_metrics lists the default metrics (SM throughput, DRAM throughput,
  Tensor pipe active, GR active) with their units; lost == 0 and corrupted == 0; "samples"
  equals the samples in the file; samples x interval against the trace's window (the ratio
  is printed; below --min-coverage fails: sampling starts only once the program has a CUDA
  context and the device is set up, so a short run covers less than all of its window; how
  long after the window opened and after the first kernel the first sample came is said);
- every GPU that ran kernels has a counter track per default metric ("ph":"C", cat
  "gpu_metric", tid 1<<30, args one number keyed by the unit), values in range (% within
  0-110: a share of the sustained peak can pass 100 a little);
- no hole in a GPU's samples (a start more than 1.5 intervals after the one before) that the
  loss counters (lost, corrupted, setup_dropped) do not account for.

metrics_phases mode: each phase's NVTX ranges (host ranges named copy, fma, gemm, idle) give
the time spans; the samples inside them (two intervals trimmed at each end, where a sample
straddles two phases) are averaged, and each phase's kernels (those that ran inside its
ranges) are averaged from their own arguments ("DRAM throughput (%)", ...) weighted by their
durations (kernels with under 10% of their phase's kernel time are shown, not judged; 90% of
those that ended after the first sample must carry metrics, those before are counted).
Expected, from what the H200 showed (copy DRAM 81.8% / SM 6%, FMA SM 94.6%, GEMM
tensor 93.5%), with margins:
    copy   memory bound    DRAM >= 60, SM <= 40, tensor <= 10, GR >= 80
    fma    compute bound   SM >= 70, DRAM <= 20, tensor <= 10, GR >= 80
    gemm   tensor bound    tensor >= 60, GR >= 80
    idle   idle            all four <= 5 (and no kernels)

--kernel-bounds mode: `kinetrace analyze --json` must give its kernels a bound (each entry of
a "kernels" list: "gpu_bound": {"bound": "memory" | "compute" | "tensor" | "neither" |
"unknown", ...}) and name at least one memory-bound and one tensor-bound kernel. The table
shows, for the --top kernels by time, analyze's bound beside one read from the kernels' own
arguments (tensor >= 60: tensor; else DRAM >= 60: memory; else SM >= 60: compute; else
neither), which decides nothing: it is there to be compared.

Prints one line per check ("PASS name: detail" / "FAIL name: detail"), then markdown tables
(also written to --md FILE), then "N passed, M failed". Exit status 1 when a check failed, 2
when a file cannot be read. Python 3 standard library only.
"""

import argparse
import bisect
import gzip
import json
import math
import sys
from collections import defaultdict

METRICS_TID = 1 << 30
CATEGORY = "gpu_metric"
# Column -> (display name, unit): the default set (`--gpu-metrics default`).
DEFAULT_METRICS = {
    "DRAM": ("DRAM throughput", "%"),
    "SM": ("SM throughput", "%"),
    "tensor": ("Tensor pipe active", "%"),
    "GR": ("GR active", "%"),
}
COLUMNS = ("DRAM", "SM", "tensor", "GR")
PERCENT_MAX = 110.0
HOLE_FACTOR = 1.5
TRIM_INTERVALS = 2
# Phase -> (expected bound, [(column, "min" | "max", threshold %)]).
PHASE_RULES = {
    "copy": ("memory", [("DRAM", "min", 60), ("SM", "max", 40), ("tensor", "max", 10), ("GR", "min", 80)]),
    "fma": ("compute", [("SM", "min", 70), ("DRAM", "max", 20), ("tensor", "max", 10), ("GR", "min", 80)]),
    "gemm": ("tensor", [("tensor", "min", 60), ("GR", "min", 80)]),
    "idle": ("idle", [("DRAM", "max", 5), ("SM", "max", 5), ("tensor", "max", 5), ("GR", "max", 5)]),
}
PHASES = tuple(PHASE_RULES)
KERNEL_SHARE_WITH_ARGS = 0.9  # kernels at the very end may finish after the last sample
MINOR_KERNEL_SHARE = 0.1  # of a phase's kernel time: less is shown but not judged
BOUND_THRESHOLD = 60.0  # % of peak that limits a kernel: the limiter analyze applies


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""))
        return ok


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def arg_key(column):
    name, unit = DEFAULT_METRICS[column]
    return f"{name} ({unit})"


def fmt(value):
    return "-" if value is None else f"{value:.1f}"


def short_name(name, width=60):
    name = str(name)
    return name if len(name) <= width else name[: width - 3] + "..."


def mean(values):
    values = list(values)
    return sum(values) / len(values) if values else None


class Samples:
    """One GPU's samples: sorted starts (us) and each default metric's value per start."""

    def __init__(self):
        self.by_start = defaultdict(dict)  # ts -> {column: value}

    def finish(self, interval_us):
        self.starts = sorted(self.by_start)
        self.ends = self.starts[1:] + ([self.starts[-1] + interval_us] if self.starts else [])
        self.values = [self.by_start[s] for s in self.starts]

    def inside(self, begin, end):
        """Indexes of the samples lying wholly within [begin, end]."""
        i = bisect.bisect_left(self.starts, begin)
        out = []
        while i < len(self.starts) and self.ends[i] <= end:
            out.append(i)
            i += 1
        return out


def check_metadata(report, top, events):
    """The metrics metadata, the counter tracks and the holes; returns (samples per device,
    interval in us) or (None, None) when there is nothing to go on."""
    meta = top.get("kinetrace_gpu_metrics")
    if not report.check("kinetrace_gpu_metrics present", isinstance(meta, dict),
                        "the trace was recorded without --gpu-metrics, or sampling was refused: "
                        f"kinetrace_gpu_status says {top.get('kinetrace_gpu_status')!r}"
                        if not isinstance(meta, dict) else ""):
        return None, None
    listed = {m.get("display_name"): m for m in meta.get("metrics", []) if isinstance(m, dict)}
    missing = [f"{name} ({unit})" for name, unit in DEFAULT_METRICS.values()
               if name not in listed or listed[name].get("unit") != unit]
    report.check("default metrics listed with their units", not missing,
                 f"missing or with another unit: {missing}; listed: "
                 + ", ".join(f"{n} ({m.get('unit')}) = {m.get('name')}" for n, m in listed.items()))
    lost, corrupted = meta.get("lost"), meta.get("corrupted")
    setup_dropped = meta.get("setup_dropped", 0)
    report.check("no samples lost", lost == 0, f"lost={lost!r}")
    report.check("no samples corrupted", corrupted == 0, f"corrupted={corrupted!r}")
    interval_ns = meta.get("interval_ns")
    if not report.check("interval_ns positive", is_number(interval_ns) and interval_ns > 0, f"{interval_ns!r}"):
        return None, None
    interval_us = interval_ns / 1000.0

    # Counter events: on the GPU's pid, tid 1<<30, one number keyed by the metric's unit.
    units = {name: m.get("unit") for name, m in listed.items()}
    per_device = defaultdict(Samples)
    per_metric = defaultdict(int)
    bad, out_of_range = [], []
    by_display = {name: column for column, (name, _) in DEFAULT_METRICS.items()}
    for e in events:
        if e.get("ph") != "C" or e.get("cat") != CATEGORY:
            continue
        name, args = e.get("name"), e.get("args")
        unit = units.get(name)
        if (e.get("tid") != METRICS_TID or not isinstance(e.get("pid"), int) or not isinstance(args, dict)
                or list(args) != [unit] or not is_number(args[unit]) or not is_number(e.get("ts"))):
            bad.append(f"{name!r} pid={e.get('pid')} tid={e.get('tid')} args={args}")
            continue
        value = args[unit]
        if value < 0 or (unit == "%" and value > PERCENT_MAX):
            out_of_range.append(f"{name} = {value} {unit} at ts {e['ts']}")
        per_metric[name] += 1
        if name in by_display:
            per_device[e["pid"]].by_start[e["ts"]][by_display[name]] = value
    report.check("metric counters well formed (pid, tid 1<<30, one unit-keyed number)", not bad,
                 "; ".join(bad[:3]) + (f"; ... ({len(bad)} in all)" if len(bad) > 3 else ""))
    report.check("metric values in range", not out_of_range,
                 "; ".join(out_of_range[:3]) + (f"; ... ({len(out_of_range)})" if len(out_of_range) > 3 else ""))

    kernels_by_device = defaultdict(int)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            kernels_by_device[e.get("pid")] += 1
    absent = [f"GPU {d}: {name}" for d in sorted(kernels_by_device, key=str)
              for column, (name, _) in DEFAULT_METRICS.items()
              if not any(column in v for v in per_device[d].by_start.values())]
    report.check("a counter track per default metric on every GPU with kernels",
                 bool(kernels_by_device) and not absent,
                 f"absent: {absent[:4]}" if absent else
                 ("no kernels in the trace" if not kernels_by_device else
                  ", ".join(f"GPU {d}: {len(per_device[d].by_start)} samples" for d in sorted(per_device))))

    samples = meta.get("samples")
    in_file = {name: per_metric.get(name, 0) for name in set(listed) | set(per_metric)}
    report.check("metadata's samples equal the samples in the file",
                 bool(in_file) and all(n == samples for n in in_file.values()),
                 f"metadata samples={samples!r}; events per metric: {in_file}")

    for samples_of in per_device.values():
        samples_of.finish(interval_us)
    holes = 0
    hole_examples = []
    for device, s in sorted(per_device.items()):
        for a, b in zip(s.starts, s.starts[1:]):
            if b - a > HOLE_FACTOR * interval_us:
                holes += round((b - a) / interval_us) - 1
                hole_examples.append(f"GPU {device}: {b - a:.0f} us after ts {a:.0f}")
    explained = (lost or 0) + (corrupted or 0) + (setup_dropped or 0)
    report.check("no hole in the samples beyond the counted losses", holes <= explained,
                 f"{holes} sample(s) missing in {len(hole_examples)} hole(s) "
                 f"({'; '.join(hole_examples[:3])}); counted: lost + corrupted + setup_dropped = {explained}")
    return per_device, interval_us


def check_coverage(report, top, events, per_device, interval_us, min_coverage, lines):
    """Samples x interval against the window: said as a ratio, per GPU."""
    start, stop = top.get("kinetrace_window_start_ns"), top.get("kinetrace_window_stop_ns")
    meta = top["kinetrace_gpu_metrics"]
    if not (is_number(start) and is_number(stop) and stop > start):
        report.check("samples cover the window", False, f"window {start!r}..{stop!r} not in the trace")
        return
    window_us = (stop - start) / 1000.0
    ratios = {d: len(s.starts) * interval_us / window_us for d, s in per_device.items()}
    spans = {d: (s.ends[-1] - s.starts[0]) if s.starts else 0.0 for d, s in per_device.items()}
    worst = min(ratios.values()) if ratios else 0.0
    detail = "; ".join(f"GPU {d}: {len(per_device[d].starts)} samples x {interval_us:g} us / "
                       f"{window_us / 1e6:.2f} s window = {r:.3f} (sampled span {spans[d] / 1e6:.2f} s)"
                       for d, r in sorted(ratios.items()))
    report.check(f"samples cover at least {min_coverage:.0%} of the window", worst >= min_coverage,
                 detail or "no samples")
    # Sampling begins once a device is set up: how long after the window opened and after
    # the GPU's first kernel (trace times are microseconds from the window's start).
    kernel_starts = [e["ts"] for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"
                     and is_number(e.get("ts"))]
    first = min((s.starts[0] for s in per_device.values() if s.starts), default=None)
    began = "-" if first is None else f"{first / 1000:.0f} ms"
    after_kernel = "-" if first is None or not kernel_starts else f"{(first - min(kernel_starts)) / 1000:.0f} ms"
    print(f"first sample {began} after the window opened, {after_kernel} after the first kernel")
    lines += ["| interval | samples | window | samples x interval / window | first sample after the window opened "
              "| after the first kernel | lost | corrupted | set-up dropped | kernels without their samples |",
              "|---|---|---|---|---|---|---|---|---|---|",
              f"| {interval_us:g} us | {meta.get('samples')} | {window_us / 1e6:.2f} s | {worst:.3f} | {began} | "
              f"{after_kernel} | {meta.get('lost')} | {meta.get('corrupted')} | {meta.get('setup_dropped')} | "
              f"{meta.get('kernels_without_their_samples', '-')} |", ""]


def judge(averages, rules):
    """(ok, why): the averages (column -> value or None) against a phase's rules."""
    wrong = []
    for column, kind, threshold in rules:
        value = averages.get(column)
        if value is None or (value < threshold if kind == "min" else value > threshold):
            wrong.append(f"{column} {fmt(value)} {'<' if kind == 'min' else '>'} {threshold}")
    return not wrong, ", ".join(wrong)


def main_device(events):
    counts = defaultdict(int)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            counts[e.get("pid")] += 1
    return max(counts, key=counts.get) if counts else None


def kernel_averages(kernels):
    """Duration-weighted mean of each column over the kernels that carry it."""
    out = {}
    for column in COLUMNS:
        key = arg_key(column)
        weighted = [(e["args"][key], e.get("dur", 0)) for e in kernels
                    if is_number((e.get("args") or {}).get(key)) and is_number(e.get("dur"))]
        total = sum(w for _, w in weighted)
        out[column] = sum(v * w for v, w in weighted) / total if total > 0 else mean(v for v, _ in weighted)
    return out


def check_phases(report, events, per_device, interval_us, lines):
    device = main_device(events)
    samples = per_device.get(device)
    ranges = defaultdict(list)
    for e in events:
        if (e.get("ph") == "X" and e.get("name") in PHASE_RULES and e.get("cat") not in ("kernel", "gpu_user_annotation")
                and is_number(e.get("ts")) and is_number(e.get("dur"))):
            ranges[e["name"]].append((e["ts"], e["ts"] + e["dur"]))
    missing = [p for p in PHASES if not ranges.get(p)]
    report.check("an NVTX range for every phase", not missing,
                 f"none for {missing}" if missing else ", ".join(f"{p} x{len(ranges[p])}" for p in PHASES))
    if samples is None:
        report.check("samples on the GPU that ran the kernels", False, f"GPU {device} has none")
        return
    trim = TRIM_INTERVALS * interval_us
    lines += [f"Phases on GPU {device}: the samples inside each phase's NVTX ranges ({TRIM_INTERVALS} intervals "
              "trimmed at each end), averaged (%).", "",
              "| phase | ranges | samples | DRAM | SM | tensor | GR | ranges passing | expected bound | result |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for phase in PHASES:
        expected, rules = PHASE_RULES[phase]
        chosen, passing = [], 0
        for begin, end in ranges.get(phase, []):
            inside = samples.inside(begin + trim, end - trim)
            chosen += inside
            if inside and judge({c: mean(samples.values[i].get(c) for i in inside
                                       if c in samples.values[i]) for c in COLUMNS}, rules)[0]:
                passing += 1
        averages = {c: mean(samples.values[i][c] for i in chosen if c in samples.values[i]) for c in COLUMNS}
        ok, why = judge(averages, rules)
        ok = ok and bool(chosen)
        report.check(f"phase {phase} as expected ({expected})", ok,
                     (why or "no samples inside its ranges") if not ok else
                     ", ".join(f"{c} {fmt(averages[c])}" for c in COLUMNS) + f" over {len(chosen)} samples")
        lines.append(f"| {phase} | {len(ranges.get(phase, []))} | {len(chosen)} | "
                     + " | ".join(fmt(averages[c]) for c in COLUMNS)
                     + f" | {passing}/{len(ranges.get(phase, []))} | {expected} | {'pass' if ok else 'FAIL: ' + why} |")
    lines.append("")
    check_phase_kernels(report, events, device, ranges, samples.starts[0] if samples.starts else None, lines)


def check_phase_kernels(report, events, device, ranges, first_sample, lines):
    """Each phase's kernels (by name) from their own metric arguments. Kernels that ended
    before the device's first sample (sampling was still being set up) cannot carry metrics:
    counted apart, the rest must."""
    spans = sorted((b, e, p) for p, rs in ranges.items() for b, e in rs)
    starts = [b for b, _, _ in spans]
    groups = defaultdict(list)  # (phase, name) -> kernels
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "kernel" or e.get("pid") != device or not is_number(e.get("ts")):
            continue
        i = bisect.bisect_right(starts, e["ts"]) - 1
        if i >= 0 and e["ts"] + e.get("dur", 0) <= spans[i][1]:
            groups[(spans[i][2], e.get("name"))].append(e)
    lines += ["Kernels of each phase, from their arguments (duration-weighted, %).", "",
              "| phase | kernel | count | before the first sample | with metrics | DRAM | SM | tensor | GR "
              "| expected bound | result |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    idle_kernels = sum(len(k) for (p, _), k in groups.items() if p == "idle")
    report.check("no kernels in the idle phase", idle_kernels == 0, f"{idle_kernels} kernel(s)")
    for phase in PHASES:
        if phase == "idle":
            continue
        expected, rules = PHASE_RULES[phase]
        def time_of(name):
            return sum(k.get("dur", 0) for k in groups[(phase, name)] if is_number(k.get("dur")))

        names = sorted((n for p, n in groups if p == phase), key=lambda n: -time_of(n))
        count = sum(len(groups[(phase, n)]) for n in names)
        if not report.check(f"kernels inside the {phase} ranges", bool(names),
                            f"{count} of {len(names)} name(s)" if names else "none found"):
            continue
        phase_time = sum(time_of(n) for n in names)
        for name in names:
            kernels = groups[(phase, name)]
            with_args = [k for k in kernels if all(is_number((k.get("args") or {}).get(arg_key(c))) for c in COLUMNS)]
            averages = kernel_averages(with_args)
            ok, why = judge(averages, rules)
            before = sum(1 for k in kernels if first_sample is None or k["ts"] + k.get("dur", 0) <= first_sample)
            sampled = len(kernels) - before
            if sampled == 0 or len(with_args) / sampled < KERNEL_SHARE_WITH_ARGS:
                ok, why = False, (why + "; " if why else "") + (
                    f"only {len(with_args)} of the {sampled} after the first sample carry metrics")
            # A helper kernel of little time (a library's split-K reduction, say) is shown, not judged.
            judged = phase_time <= 0 or time_of(name) >= MINOR_KERNEL_SHARE * phase_time
            if judged:
                report.check(f"kernel {short_name(name, 40)} in {phase} as expected ({expected})", ok,
                             why if not ok else ", ".join(f"{c} {fmt(averages[c])}" for c in COLUMNS))
            result = ("pass" if ok else "FAIL: " + why) if judged else f"not judged: under {MINOR_KERNEL_SHARE:.0%} of the phase"
            lines.append(f"| {phase} | `{short_name(name)}` | {len(kernels)} | {before} | {len(with_args)} | "
                         + " | ".join(fmt(averages[c]) for c in COLUMNS) + f" | {expected} | {result} |")
    lines.append("")


def bound_from_args(averages):
    tensor, dram, sm = (averages.get(c) for c in ("tensor", "DRAM", "SM"))
    if tensor is None and dram is None and sm is None:
        return "unknown"
    if tensor is not None and tensor >= BOUND_THRESHOLD:
        return "tensor"
    if dram is not None and dram >= BOUND_THRESHOLD:
        return "memory"
    if sm is not None and sm >= BOUND_THRESHOLD:
        return "compute"
    return "neither"


def analyze_bounds(report):
    """Kernel name -> bound from every "kernels" list in analyze's JSON (a rank's top kernels;
    steps carry a bound too, and are not kernels); the first bound of a name is kept."""
    found = {}

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "kernels" and isinstance(value, list):
                    for k in value:
                        if not isinstance(k, dict):
                            continue
                        bound = k.get("gpu_bound")
                        if isinstance(k.get("name"), str) and isinstance(bound, dict) \
                                and isinstance(bound.get("bound"), str):
                            found.setdefault(k["name"], bound["bound"])
                walk(value)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(report)
    return found


def check_kernel_bounds(report, events, analyze, top_n, lines):
    kernels = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel" and is_number(e.get("dur")):
            kernels[e.get("name")].append(e)
    ranked = sorted(kernels, key=lambda n: -sum(k["dur"] for k in kernels[n]))[:top_n]
    # analyze's own kernel list is judged (its names may be shortened, so they are not
    # matched to the trace's); the bound read from the trace's arguments is shown beside it.
    from_analyze = analyze_bounds(analyze)
    report.check("analyze gives its kernels a bound", bool(from_analyze),
                 f"{len(from_analyze)} kernels" if from_analyze else
                 'no "gpu_bound" in any of its "kernels" lists')
    lines += [f"Top {len(ranked)} kernels by time: analyze's bound, and one read from the kernels' arguments.", "",
              "| kernel | time (ms) | count | DRAM | SM | tensor | GR | bound (analyze) | bound (args) |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name in ranked:
        averages = kernel_averages(kernels[name])
        lines.append(f"| `{short_name(name)}` | {sum(k['dur'] for k in kernels[name]) / 1000:.1f} | "
                     f"{len(kernels[name])} | " + " | ".join(fmt(averages[c]) for c in COLUMNS)
                     + f" | {from_analyze.get(name, '-')} | {bound_from_args(averages)} |")
    lines.append("")
    chosen = defaultdict(list)
    for name, bound in from_analyze.items():
        chosen[bound].append(name)
    if from_analyze:
        lines += ["analyze's bounds: " + "; ".join(f"{b}: {len(n)}" for b, n in sorted(chosen.items())), ""]
    for bound in ("memory", "tensor"):
        names = chosen.get(bound, [])
        report.check(f"a {bound}-bound kernel named (by analyze)", bool(names),
                     "; ".join(short_name(n, 50) for n in names[:3]) if names else
                     f"none among analyze's {len(from_analyze)} kernels: "
                     + ", ".join(f"{b} {len(n)}" for b, n in chosen.items()))


def describe_kernels_without_metrics(top, events, per_device):
    """Said, not judged: the kernels after their GPU's first sample that carry no metrics,
    where in the window they lie, why the tracer says they have none, and how many read as
    starting before the call that launched them (the GPU's clock as CUPTI converts it
    against the host's), with the trace's bound on that offset."""
    first = {d: s.starts[0] for d, s in per_device.items() if s.starts}
    calls = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and is_number(e.get("ts")):
            correlation = (e.get("args") or {}).get("correlation")
            if correlation is not None:
                calls[correlation] = e["ts"]
    bare, before_call, gaps = [], 0, []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "kernel" or not is_number(e.get("ts")):
            continue
        args = e.get("args") or {}
        if e.get("pid") not in first or e["ts"] + e.get("dur", 0) <= first[e.get("pid")]:
            continue
        if any(is_number(args.get(arg_key(c))) for c in COLUMNS):
            continue
        bare.append(e["ts"])
        launched = calls.get(args.get("correlation"))
        if launched is not None:
            gaps.append(e["ts"] - launched)
            before_call += e["ts"] < launched
    if bare:
        print(f"kernels without metrics after the first sample: {len(bare)}, from {min(bare) / 1e6:.2f} s to "
              f"{max(bare) / 1e6:.2f} s of the window; {before_call} read as starting before "
              f"their launch call; kernel start - call start: min {fmt(min(gaps)) if gaps else '-'} us, "
              f"median {fmt(sorted(gaps)[len(gaps) // 2]) if gaps else '-'} us; "
              f"why, by the tracer: {top['kinetrace_gpu_metrics'].get('kernels_without_their_samples_because')}; "
              f"clock offset bound {top.get('kinetrace_gpu_clock_offset_bound_ns')}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", help="trace file (.json or .json.gz)")
    parser.add_argument("--kernel-bounds", metavar="ANALYZE_JSON",
                        help="check kernels' bounds against `kinetrace analyze --json` instead of phases")
    parser.add_argument("--min-coverage", type=float, default=0.8,
                        help="least samples x interval / window (default 0.8)")
    parser.add_argument("--top", type=int, default=15, help="kernels by time looked at (--kernel-bounds)")
    parser.add_argument("--md", help="write the tables to this markdown file")
    args = parser.parse_args()
    try:
        top = load(args.trace)
        analyze = load(args.kernel_bounds) if args.kernel_bounds else None
    except (OSError, ValueError, EOFError) as error:
        print(f"FAIL cannot load: {error}")
        print("0 passed, 1 failed")
        return 2
    events = top.get("traceEvents") if isinstance(top, dict) else None
    if not isinstance(events, list):
        print("FAIL the trace has no traceEvents list")
        print("0 passed, 1 failed")
        return 1
    events = [e for e in events if isinstance(e, dict)]

    report = Report()
    lines = [f"# GPU metrics: {args.trace.rsplit('/', 1)[-1]}", ""]
    per_device, interval_us = check_metadata(report, top, events)
    if per_device is not None:
        check_coverage(report, top, events, per_device, interval_us, args.min_coverage, lines)
        describe_kernels_without_metrics(top, events, per_device)
        if isinstance(top.get("kinetrace_gpu_buffers"), dict):
            print(f"CUPTI's buffers: {top['kinetrace_gpu_buffers']}; GPU ops without their launch: "
                  f"{top.get('kinetrace_gpu_ops_without_launch')}")
        if analyze is not None:
            check_kernel_bounds(report, events, analyze, args.top, lines)
        else:
            check_phases(report, events, per_device, interval_us, lines)
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + f"\n{report.passed} checks passed, {report.failed} failed.\n")
    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
