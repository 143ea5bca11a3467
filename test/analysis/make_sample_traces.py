#!/usr/bin/env python3
"""Writes two ranks' traces of a made-up training job, in torch.profiler's layout, with one
of every problem `kinetrace analyze` looks for: a data loader that stalls each step, swarms
of tiny kernels, a memory leak, and an all-reduce that rank 1 joins late.

    make_sample_traces.py OUT_DIR [--steps N] [--ranks R] [--no-steps]
                          [--alloc-start BYTES] [--alloc-step BYTES] [--alloc-spike BYTES]
                          [--gpu-metrics] [--host-only]
                                                                   -> OUT_DIR/rank0.json, ...

(6 steps and 2 ranks by default; bench/analyze_speed.sh asks for thousands of steps to make
a trace of a gigabyte. --no-steps leaves the ProfilerStep ranges out, as a trace recorded
without a schedule has none; allocated memory starts at --alloc-start and grows by
--alloc-step a step; --alloc-spike holds BYTES more for a millisecond in the middle of the
third step, a peak that the line falls from right after, as a temporary buffer's would;
--gpu-metrics gives each kernel its hardware metric averages and writes the samples they come
from (a gpu_metric counter per metric every 100 us, each the kernels' values weighted by their
share of the window), as `kinetrace run --gpu-metrics` writes them, so the report adds what
bounded each kernel and step, and fits the short kernels' values from the samples;
--host-only leaves every GPU operation out, as a trace recorded on a machine without a GPU,
which says why in its kinetrace_gpu_status.)
The file is written event by event, so any size takes little memory.
"""
import argparse
import json
import os

BASE = 1_700_000_000_000_000_000


# Each kernel's metric averages under --gpu-metrics: the gemm tensor-bound, the elementwise
# adds memory-bound, the all-reduce neither.
METRICS = {"sm90_xmma": {"SM throughput (%)": 71.0, "DRAM throughput (%)": 20.0, "Tensor pipe active (%)": 93.5},
           "void at::native": {"SM throughput (%)": 6.0, "DRAM throughput (%)": 82.0, "Tensor pipe active (%)": 0.0},
           "ncclDevKernel": {"SM throughput (%)": 12.0, "DRAM throughput (%)": 30.0, "Tensor pipe active (%)": 0.0}}
METRICS_FOOTER = {"metrics": [{"name": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                               "display_name": "SM throughput", "unit": "%"},
                              {"name": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                               "display_name": "DRAM throughput", "unit": "%"},
                              {"name": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
                               "display_name": "Tensor pipe active", "unit": "%"}],
                  "interval_ns": 100_000, "samples": 600, "lost": 0, "corrupted": 0, "setup_dropped": 0}
INTERVAL_US = METRICS_FOOTER["interval_ns"] // 1000


def trace(rank, steps, out, step_ranges=True, alloc_start=100_000_000, alloc_step=3_000_000,
          alloc_spike=0, gpu_metrics=False, host_only=False):
    """Writes the trace of `rank` to the open file `out`."""
    first = True

    class Events:
        def append(self, event):
            nonlocal first
            out.write(("" if first else ",\n") + json.dumps(event, separators=(",", ":")))
            first = False

    events = Events()
    header = {"schemaVersion": 1, "baseTimeNanoseconds": BASE,
              "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}}
    if host_only:
        header["kinetrace_gpu_status"] = ("no NVIDIA driver: libcuda.so.1: cannot open shared "
                                          "object file: No such file or directory")
    out.write(json.dumps(header)[:-1])
    out.write(', "traceEvents": [\n')
    if host_only:
        events.append({"ph": "M", "name": "thread_name", "pid": 100 + rank, "tid": 100 + rank,
                       "args": {"name": "main"}})
    correlation = 0
    allocated = alloc_start
    ran = []  # this step's kernels under --gpu-metrics: (start, end, their metrics)

    def host(name, ts, dur, cat="user_annotation", ext=0):
        args = {"External id": ext} if ext else {}
        events.append({"ph": "X", "cat": cat, "name": name, "pid": 100 + rank, "tid": 100 + rank,
                       "ts": ts, "dur": dur, "args": args})

    def launch(name, call, start, dur, cat="kernel", stream=7, ext=0):
        nonlocal correlation
        if host_only:
            return
        correlation += 1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100 + rank,
                       "tid": 100 + rank, "ts": call, "dur": 4,
                       "args": {"External id": ext, "cbid": 211, "correlation": correlation}})
        args = {"External id": ext, "device": 0, "stream": stream, "correlation": correlation}
        if gpu_metrics:
            metrics = next(m for prefix, m in METRICS.items() if name.startswith(prefix))
            args.update(metrics)
            ran.append((start, start + dur, metrics))
        events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": start, "dur": dur,
                       "args": args})

    def memory(ts, total, change):
        events.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100 + rank,
                       "tid": 100 + rank, "ts": ts, "s": "t",
                       "args": {"Total Allocated": total, "Bytes": change, "Device Id": 0}})

    def samples(begin, end):
        """The step's metric samples, a window of INTERVAL_US each, from the kernels that ran."""
        for at in range(begin, end, INTERVAL_US):
            values = dict.fromkeys(next(iter(METRICS.values())), 0.0)
            for start, stop, metrics in ran:
                overlap = min(stop, at + INTERVAL_US) - max(start, at)
                if overlap > 0:
                    for key, value in metrics.items():
                        values[key] += value * overlap / INTERVAL_US
            for index, (key, value) in enumerate(values.items()):
                events.append({"ph": "C", "cat": "gpu_metric", "name": key[: -len(" (%)")],
                               "pid": 0, "tid": 1_000_000 + index, "ts": at,
                               "args": {"%": round(value, 6)}})
        ran.clear()

    ext = 0
    for step in range(steps):
        t = step * 10_000
        if step_ranges:
            host(f"ProfilerStep#{step}", t, 10_000)
        host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, 2_000)
        ext += 1
        host("aten::linear", t + 2_000, 3_000, "cpu_op", ext)
        launch("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32", t + 2_010, t + 2_030, 2_500, ext=ext)
        ext += 1
        host("aten::add", t + 5_000, 3_000, "cpu_op", ext)
        for i in range(100):
            launch("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>", t + 5_000 + i * 25,
                   t + 5_003 + i * 25, 3, ext=ext)
        if alloc_spike and step == 2:
            memory(t + 5_000, allocated + alloc_spike, alloc_spike)
            memory(t + 6_000, allocated, -alloc_spike)
        start = t + 8_200 + (1_200 if rank == 1 else 0)
        launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", t + 8_100, start,
               9_900 - (start - t), stream=20)
        allocated += alloc_step
        memory(t + 9_500, allocated, alloc_step)
        if gpu_metrics:
            samples(t, t + 10_000)
    out.write("\n]" + (', "kinetrace_gpu_metrics": ' + json.dumps(METRICS_FOOTER) if gpu_metrics else "")
              + "}\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--no-steps", action="store_true")
    p.add_argument("--alloc-start", type=int, default=100_000_000)
    p.add_argument("--alloc-step", type=int, default=3_000_000)
    p.add_argument("--alloc-spike", type=int, default=0)
    p.add_argument("--gpu-metrics", action="store_true")
    p.add_argument("--host-only", action="store_true")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for rank in range(args.ranks):
        with open(os.path.join(args.out, f"rank{rank}.json"), "w") as f:
            trace(rank, args.steps, f, not args.no_steps, args.alloc_start, args.alloc_step,
                  args.alloc_spike, args.gpu_metrics, args.host_only)


if __name__ == "__main__":
    main()
