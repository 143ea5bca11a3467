#!/usr/bin/env python3
"""How long writing one trace takes in each format, in the program that recorded it.

    save_formats.py --torch --out DIR [--steps N] [--rounds R]
    save_formats.py --table FILE.json [--name NAME]

--torch: how long a torch.profiler user waits for the trace, with kinetrace as PyTorch's
profiler backend; run it under `kinetrace run --torch`.

Profiles N steps of bench/gpu/torch_train.py's transformer (CPU + CUDA, record_shapes, as
bench/gpu/format_sizes.py's torch trace) R times for each format, the formats in turn (json,
json.gz, pftrace, json, ...; PyTorch saves a profile only once), and times the call that
export_chrome_trace() makes: the profile's kineto results' save(path), which the backend
writes through the sink of the path's format. (export_chrome_trace itself gzips a ".gz"
path in Python after a JSON save; kineto_results.save() leaves the format to the backend.)

Writes DIR/save_formats.json (every save's wall and CPU time, its size) and prints a table of
medians. Exit status 1 when the backend is not kinetrace (the saved JSON says which) or a
save fails.

--table: the table of medians of such a file, or of the one that `launch_census
--save-rounds N` writes (TRACE.save_rounds.json: the census trace saved the same way by
kinetrace's C++ API). Exit status 1 when the .pftrace's median wall time is over the JSON's
(said on stderr; the table shows it either way). --table needs no torch.
"""
import argparse
import json
import os
import statistics
import sys
import time

FORMATS = ["json", "json.gz", "pftrace"]


def workload():
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_train
    sys_argv = sys.argv
    sys.argv = [sys_argv[0]]
    try:
        args = torch_train.parse_args()
    finally:
        sys.argv = sys_argv
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    torch.manual_seed(args.seed)
    return torch_train.training_step(args, device)


def table(record, title):
    """Markdown table of medians per format; returns it and whether any format was slower
    than the JSON."""
    saves = record["saves"]
    json_rows = [s for s in saves if s["format"] == "json"]
    json_bytes = json_rows[-1]["bytes"]
    json_wall = statistics.median(s["wall_ms"] for s in json_rows)
    lines = [title, "", "| format | bytes | of the JSON | wall ms | CPU ms | speed vs JSON |",
             "|---|---|---|---|---|---|"]
    slower = False
    for fmt in FORMATS:
        rows = [s for s in saves if s["format"] == fmt]
        wall = statistics.median(s["wall_ms"] for s in rows)
        cpu = statistics.median(s["cpu_ms"] for s in rows)
        size = rows[-1]["bytes"]
        lines.append(f"| {fmt} | {size:,} | {100.0 * size / json_bytes:.1f}% | {wall:.3f} | "
                     f"{cpu:.3f} | {json_wall / wall:.2f}x |")
        slower = slower or (fmt == "pftrace" and wall > json_wall)
    return "\n".join(lines), slower


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--torch", action="store_true")
    p.add_argument("--table")
    p.add_argument("--name", default="the trace")
    p.add_argument("--out")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rounds", type=int, default=11)
    args = p.parse_args()
    if args.table:
        with open(args.table) as f:
            record = json.load(f)
        text, slower = table(record, f"{args.name}: medians of {record['rounds']} interleaved "
                                     "saves in each format")
        print(text)
        if slower:
            print("the .pftrace was written slower than the JSON", file=sys.stderr)
        return 1 if slower else 0
    if not args.torch or not args.out:
        p.error("need --torch --out DIR, or --table FILE")
    os.makedirs(args.out, exist_ok=True)

    # PyTorch lets a profile be saved once ("Trace is already saved"), so each save is of a
    # profile of its own: the same steps of the same model, recorded again.
    from torch.profiler import ProfilerActivity, profile
    step = workload()
    for i in range(5):
        step(i)
    saves = []
    for round_ in range(args.rounds):
        for fmt in FORMATS:
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                         record_shapes=True) as prof:
                for i in range(args.steps):
                    step(100 + i)
            results = prof.profiler.kineto_results
            path = os.path.join(args.out, f"trace.{fmt}")
            cpu_start = time.process_time()
            start = time.perf_counter()
            results.save(path)
            wall = time.perf_counter() - start
            cpu = time.process_time() - cpu_start
            saves.append({"format": fmt, "round": round_, "wall_ms": wall * 1e3,
                          "cpu_ms": cpu * 1e3, "bytes": os.path.getsize(path)})

    with open(os.path.join(args.out, "trace.json")) as f:
        trace = json.load(f)
    backend = trace.get("kinetrace_backend", "kineto")
    events = len(trace.get("traceEvents", []))
    with open(os.path.join(args.out, "save_formats.json"), "w") as f:
        json.dump({"backend": backend, "events": events, "steps": args.steps,
                   "rounds": args.rounds, "saves": saves}, f, indent=1)

    text, _ = table({"saves": saves}, f"torch.profiler trace of {args.steps} steps, {events} "
                                      f"events, backend {backend}; medians of {args.rounds} "
                                      "interleaved saves in each format")
    print(text)
    if backend == "kineto":
        print("error: the trace was written by PyTorch's own kineto, not kinetrace "
              "(run this under `kinetrace run --torch`)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
