#!/usr/bin/env python3
"""One PyTorch script, run once with PyTorch's own kineto and once with kinetrace as its
profiler backend (`kinetrace run --torch`, or LD_PRELOAD=libkineto_api.so): what a
torch.profiler user does, recorded for bench/gpu/compare_backends.py.

    torch_backend.py --out DIR [--steps N] [--rounds R]
    torch_backend.py --edge exit|threads|held     (the cases libkineto is known to fail)

  --edge exit      the process ends while a trace records
  --edge threads   two sessions back to back, each from its own thread
  --edge held      one profile while another tool holds CUPTI (run it with such a tool's
                   CUDA injection set): the trace must still come, with the CPU ops

Writes to DIR:
  tb/*.pt.trace.json   a schedule (wait 1, warmup 1, active 3, repeat 2) with record_shapes
                       and tensorboard_trace_handler: one trace per active cycle
  trace.json           one profile of 5 steps (CPU + CUDA, record_shapes), export_chrome_trace
  key_averages.json    key_averages() of that profile: per op, count, CPU and device time
  key_averages.txt     its table, sorted by device time
  overhead.json        step times in interleaved rounds: R x (N untraced steps, N steps inside
                       torch.profiler with CPU activity only, N with CPU + CUDA), medians
  backend.json         which backend recorded (the trace's "kinetrace_backend" metadata)

The workload is bench/gpu/torch_train.py's transformer (launch-bound, ~285 launches a step).
"""
import argparse
import json
import os
import statistics
import sys
import threading
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_train  # noqa: E402

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.CUDA]


def workload():
    # torch_train's defaults (transformer, batch 16 x 128 tokens), whatever this script's argv.
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


def timed_steps(step, first, count):
    times = []
    for i in range(count):
        start = time.perf_counter()
        step(first + i)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def backend_of(trace_path):
    with open(trace_path) as f:
        trace = json.load(f)
    return trace.get("kinetrace_backend", "kineto")


def main_run(args):
    os.makedirs(args.out, exist_ok=True)
    step = workload()
    for i in range(10):
        step(i)

    # 1. A schedule with two active cycles, as TensorBoard users run it.
    tb_dir = os.path.join(args.out, "tb")
    with profile(activities=ACTIVITIES, record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=2),
                 on_trace_ready=tensorboard_trace_handler(tb_dir)) as prof:
        for i in range(12):
            step(100 + i)
            prof.step()

    # 2. One profile: exported trace and key_averages().
    with profile(activities=ACTIVITIES, record_shapes=True) as prof:
        for i in range(5):
            step(200 + i)
    trace_path = os.path.join(args.out, "trace.json")
    prof.add_metadata("workload", "transformer")
    prof.export_chrome_trace(trace_path)
    averages = {}
    for e in prof.key_averages():
        averages[e.key] = {
            "count": e.count,
            "cpu_time_total_us": e.cpu_time_total,
            "device_time_total_us": getattr(e, "device_time_total", getattr(e, "cuda_time_total", 0)),
        }
    with open(os.path.join(args.out, "key_averages.json"), "w") as f:
        json.dump(averages, f, indent=1, sort_keys=True)
    with open(os.path.join(args.out, "key_averages.txt"), "w") as f:
        f.write(prof.key_averages().table(sort_by="device_time_total", row_limit=25))

    # 3. Overhead: untraced steps, steps inside a CPU-only profile (PyTorch's own CPU-side
    # cost) and inside a CPU + CUDA profile, interleaved within the process.
    rounds = []
    first = 300
    phases = [("untraced", None), ("cpu_only", [ProfilerActivity.CPU]), ("cpu_cuda", ACTIVITIES)]
    for r in range(args.rounds):
        medians = {}
        # Rotate the order so that no phase always follows the same one.
        for name, activities in phases[r % 3:] + phases[:r % 3]:
            if activities is None:
                times = timed_steps(step, first, args.steps)
            else:
                with profile(activities=activities):
                    times = timed_steps(step, first, args.steps)
            first += args.steps
            medians[name + "_median_ms"] = statistics.median(times)
        rounds.append(medians)
    summary = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    untraced = summary["untraced_median_ms"]
    profiled = summary["cpu_cuda_median_ms"]
    overhead = {"rounds": rounds, "steps_per_phase": args.steps, **summary,
                "profiled_median_ms": profiled,
                "ratio": profiled / untraced,
                "cpu_only_ratio": summary["cpu_only_median_ms"] / untraced,
                "per_round_ratios": [r["cpu_cuda_median_ms"] / r["untraced_median_ms"] for r in rounds]}
    with open(os.path.join(args.out, "overhead.json"), "w") as f:
        json.dump(overhead, f, indent=1)
    backend = backend_of(trace_path)
    with open(os.path.join(args.out, "backend.json"), "w") as f:
        json.dump({"backend": backend}, f)
    print(f"RESULT backend={backend} untraced_ms={untraced:.3f} profiled_ms={profiled:.3f} "
          f"ratio={profiled / untraced:.3f} cpu_only_ratio={overhead['cpu_only_ratio']:.3f}", flush=True)


def main_edge(args):
    step = workload()
    step(0)
    if args.edge == "exit":
        # The process ends while a trace records, never stopped.
        prof = profile(activities=ACTIVITIES)
        prof.start()
        step(1)
        print("EDGE exit: leaving with the profiler running", flush=True)
        sys.exit(0)
    if args.edge == "held":
        with profile(activities=ACTIVITIES) as prof:
            step(1)
        path = os.path.join(args.out, "held.json")
        os.makedirs(args.out, exist_ok=True)
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        cats = [e.get("cat") for e in trace["traceEvents"] if e.get("ph") == "X"]
        status = trace.get("kinetrace_gpu_status", "-")
        print(f"EDGE held: cpu_ops={cats.count('cpu_op')} kernels={cats.count('kernel')} "
              f"gpu_status={status!r}", flush=True)
        sys.exit(0 if cats.count("cpu_op") > 0 else 1)
    # Two sessions back to back, each from its own thread.
    results = []

    def session(n):
        with profile(activities=ACTIVITIES) as prof:
            step(10 + n)
        kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        results.append(kernels)

    for n in range(2):
        t = threading.Thread(target=session, args=(n,))
        t.start()
        t.join()
    print(f"EDGE threads: sessions={len(results)} gpu_events={results}", flush=True)
    if len(results) != 2 or min(results) == 0:
        sys.exit(1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="torch_backend")
    p.add_argument("--steps", type=int, default=40, help="steps per phase of the overhead rounds")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--edge", choices=["exit", "threads", "held"])
    args = p.parse_args()
    if args.edge:
        main_edge(args)
    else:
        main_run(args)


if __name__ == "__main__":
    main()
