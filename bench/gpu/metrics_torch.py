#!/usr/bin/env python3
"""A PyTorch training loop whose kernels are long enough to be told apart by GPU metrics
sampled every millisecond (bench/gpu/gpu_metrics.sh runs it under `kinetrace run
--gpu-metrics default`, then `kinetrace analyze --json` must name a memory-bound and a
tensor-bound kernel).

    metrics_torch.py [--steps 20] [--warmup 3] [--tokens 16384] [--hidden 4096] [--vocab 65536]
                     [--profiler TRACE.json]

--profiler records the measured steps with torch.profiler (CPU and CUDA activities, a
ProfilerStep per step) and exports its trace to TRACE.json: under `kinetrace run --torch
--gpu-metrics default` that is the PyTorch backend's path (libkineto_api), whose trace must
carry the metric tracks and each kernel's averages as `kinetrace run`'s does.

bench/gpu/torch_train.py's models do not fit: they train in fp32 (no tensor cores unless TF32
is allowed) and their kernels last tens of microseconds, far below a 1 ms sample. Here one
block of a language model trains under bf16 autocast, with large shapes: per step the
feed-forward GEMMs (tokens x hidden x 4 hidden) and the vocabulary head (tokens x hidden x
vocab) run on the tensor cores for milliseconds each; the cross-entropy over tokens x vocab
logits in fp32 (the cast, log-softmax and their backward passes, 4 GiB each way at the
defaults) and the fused AdamW step over the fp32 parameters stream DRAM. Each step is an NVTX
range "step K" and ends with torch.cuda.synchronize(). About 15 GiB of GPU memory and 70-90 ms
a step on an H200 at the defaults.

Prints, for scripts:

    RESULT model=lm_block steps=20 median_step_ms=81.234 tflops=512.3
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.up = nn.Linear(hidden, 4 * hidden, bias=False)
        self.down = nn.Linear(4 * hidden, hidden, bias=False)
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, x):
        x = self.norm(x + self.down(F.gelu(self.up(x))))
        return self.head(x)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--vocab", type=int, default=65536)
    p.add_argument("--profiler", metavar="TRACE", help="record the steps with torch.profiler, export to TRACE")
    args = p.parse_args()
    if args.steps <= 0 or args.warmup < 0 or min(args.tokens, args.hidden, args.vocab) <= 0:
        p.error("steps, tokens, hidden and vocab must be positive, warmup not negative")

    torch.manual_seed(1234)
    device = torch.device("cuda", 0)
    model = Block(args.hidden, args.vocab).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(args.tokens, args.hidden, device=device)
    targets = torch.randint(0, args.vocab, (args.tokens,), device=device)
    h, t, v = args.hidden, args.tokens, args.vocab
    flops_per_step = 3 * 2 * t * h * (8 * h + v)  # forward + backward of the three GEMMs

    def step(i):
        torch.cuda.nvtx.range_push(f"step {i}")
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float(), targets)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()

    for i in range(args.warmup):
        step(i)
    times = []
    profiler = None
    if args.profiler:
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        profiler.start()
    for i in range(args.steps):
        start = time.perf_counter()
        step(args.warmup + i)
        times.append((time.perf_counter() - start) * 1000.0)
        if profiler is not None:
            profiler.step()
    if profiler is not None:
        profiler.stop()
        profiler.export_chrome_trace(args.profiler)
    median = statistics.median(times)
    print(f"RESULT model=lm_block steps={args.steps} median_step_ms={median:.3f} "
          f"tflops={flops_per_step / median / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
