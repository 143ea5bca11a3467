#!/usr/bin/env python3
"""A small transformer-encoder training loop (AdamW) on CUDA, the workload of the PyTorch
proof: kinetrace's trace against torch.profiler's, and the cost of each.

    torch_train.py [--steps N] [--warmup W] [--mode none|torch-cuda|torch-cpu-cuda]
                   [--profiler-api] [--alternate K] [--out DIR] [--distributed]

  --mode none            no profiler in the script (run it under `kinetrace run`, or bare)
  --mode torch-cuda      the measured steps inside torch.profiler, CUDA activity only
  --mode torch-cpu-cuda  the measured steps inside torch.profiler, CPU + CUDA activity
  --profiler-api         cudaProfilerStart() before the measured steps and cudaProfilerStop()
                         after them: `kinetrace run --capture-range=cudaProfilerApi` then
                         records exactly the steps torch.profiler records in the torch modes
  --alternate K          the cost of tracing inside one process: measured steps in blocks of
                         K, blocks alternately untraced and traced (cudaProfilerStart/Stop
                         between blocks, outside the timed steps; run it under
                         `kinetrace run --capture-range=cudaProfilerApi`); the first SKIP
                         steps of each block are not counted, they may overlap a trace being
                         written. Adds median_off_ms, median_on_ms, on_off_ratio (pooled
                         medians) and paired_ratio to RESULT: the median over traced blocks
                         of (block median / mean of the two neighbouring untraced blocks'
                         medians), which cancels slow drifts of the machine's speed
  --out DIR              where the torch modes export their chrome trace (torch_trace.json)
  --distributed          a torchrun worker: reads RANK/WORLD_SIZE, joins a gloo group
                         (every rank may share one GPU), barrier at the end

Every step ends with torch.cuda.synchronize(), so a step's wall time is its GPU time plus
whatever the CPU could not hide. Prints one parseable line on stdout:

    RESULT mode=none rank=0 steps=50 median_step_ms=12.345 mean_step_ms=12.400 min_step_ms=12.101
           threads=main:99%,kinetrace-cupti:1%,python3:0%

threads: CPU use of the busiest threads over the measured steps (per cent of their wall
time; the main thread first, then the three busiest others, by Linux thread name).
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn as nn


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=50, help="measured steps")
    p.add_argument("--warmup", type=int, default=10, help="steps before the measured ones")
    p.add_argument("--mode", choices=["none", "torch-cuda", "torch-cpu-cuda"], default="none")
    p.add_argument("--profiler-api", action="store_true")
    p.add_argument("--alternate", type=int, default=0, metavar="K")
    p.add_argument("--alternate-skip", type=int, default=3, metavar="SKIP")
    p.add_argument("--out", default=".", help="directory for torch.profiler's trace")
    p.add_argument("--distributed", action="store_true")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seed", type=int, default=1234)
    return p.parse_args()


def thread_cpu_seconds():
    """{tid: (name, user+system CPU seconds so far)} for every thread of this process."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue  # the thread exited meanwhile
        fields = stat[stat.rindex(")") + 2:].split()  # fields from the 3rd (state) on
        out[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / ticks)
    return out


def thread_cpu_summary(before, after, wall_s):
    """'main:98%,name:12%,...': the main thread and the three busiest others."""
    used = {tid: (name, seconds - before.get(tid, (name, 0.0))[1]) for tid, (name, seconds) in after.items()}
    main = used.pop(os.getpid(), ("main", 0.0))
    busiest = sorted(used.values(), key=lambda entry: -entry[1])[:3]
    return ",".join(f"{name.replace(',', '_').replace(' ', '_')}:{100.0 * seconds / wall_s:.0f}%"
                    for name, seconds in [("main", main[1])] + busiest)


class Model(nn.Module):
    def __init__(self, args, vocab=8192):
        super().__init__()
        self.embed = nn.Embedding(vocab, args.d_model)
        layer = nn.TransformerEncoderLayer(args.d_model, args.heads, dim_feedforward=4 * args.d_model,
                                           dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False)
        self.head = nn.Linear(args.d_model, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


def main():
    args = parse_args()
    if args.alternate and (args.alternate <= args.alternate_skip or args.profiler_api or args.mode != "none"):
        sys.exit("torch_train.py: --alternate K needs K > --alternate-skip, --mode none and no --profiler-api")
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if args.distributed:
        import torch.distributed as dist
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(args.seed)
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)

    model = Model(args).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    # Fixed data on the host, copied each step: the trace has host-to-device copies to count.
    generator = torch.Generator().manual_seed(args.seed)
    batches = [torch.randint(0, 8192, (args.batch, args.seq + 1), generator=generator).pin_memory()
               for _ in range(4)]

    def step(i):
        data = batches[i % len(batches)].to(device, non_blocking=True)
        tokens, targets = data[:, :-1], data[:, 1:]
        optimizer.zero_grad(set_to_none=True)
        logits = model(tokens)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()

    for i in range(args.warmup):
        step(i)

    profiler = None
    if args.mode != "none":
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CUDA]
        if args.mode == "torch-cpu-cuda":
            activities.insert(0, ProfilerActivity.CPU)
        profiler = profile(activities=activities)
        profiler.__enter__()
    if args.profiler_api:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()

    times = []
    on_times, off_times = [], []
    blocks = []  # (traced, [counted step times]) per block of --alternate steps
    cpu_before, wall_before = thread_cpu_seconds(), time.perf_counter()
    for i in range(args.steps):
        if args.alternate and i % args.alternate == 0:
            torch.cuda.synchronize()
            if (i // args.alternate) % 2 == 1:
                torch.cuda.profiler.start()
            elif i > 0:
                torch.cuda.profiler.stop()
        start = time.perf_counter()
        step(args.warmup + i)
        times.append((time.perf_counter() - start) * 1000.0)
        if args.alternate and i % args.alternate >= args.alternate_skip:
            traced = (i // args.alternate) % 2 == 1
            (on_times if traced else off_times).append(times[-1])
            if len(blocks) <= i // args.alternate:
                blocks.append((traced, []))
            blocks[-1][1].append(times[-1])
    threads = thread_cpu_summary(cpu_before, thread_cpu_seconds(), time.perf_counter() - wall_before)
    if args.alternate and (args.steps - 1) // args.alternate % 2 == 1:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()

    if args.profiler_api:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    if profiler is not None:
        profiler.__exit__(None, None, None)
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "torch_trace.json" if world == 1 else f"torch_trace_rank{rank}.json")
        profiler.export_chrome_trace(path)
        print(f"torch trace: {path}", file=sys.stderr)

    if args.distributed:
        import torch.distributed as dist
        dist.barrier()
        dist.destroy_process_group()

    alternate = ""
    if on_times and off_times:
        on, off = statistics.median(on_times), statistics.median(off_times)
        alternate = f" median_off_ms={off:.4f} median_on_ms={on:.4f} on_off_ratio={on / off:.4f}"
        medians = [(traced, statistics.median(block)) for traced, block in blocks]
        paired = [median / ((medians[k - 1][1] + medians[k + 1][1]) / 2)
                  for k, (traced, median) in enumerate(medians)
                  if traced and 0 < k < len(medians) - 1]
        if paired:
            alternate += f" paired_ratio={statistics.median(paired):.4f}"
    print(f"RESULT mode={args.mode} rank={rank} steps={args.steps} "
          f"median_step_ms={statistics.median(times):.4f} mean_step_ms={statistics.mean(times):.4f} "
          f"min_step_ms={min(times):.4f}{alternate} threads={threads}", flush=True)


if __name__ == "__main__":
    main()
