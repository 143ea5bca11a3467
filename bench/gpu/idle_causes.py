#!/usr/bin/env python3
"""PyTorch programs that each keep the GPU idle for one known reason, traced by torch.profiler
(with ProfilerStep ranges, as users trace), for `kinetrace analyze` to diagnose:

    idle_causes.py CASE --out DIR [--steps N]

  tiny     a model of hundreds of tiny elementwise ops a step: launch-bound (tiny kernels,
           host wait)
  loader   a DataLoader whose dataset sleeps 20 ms per batch: the GPU idles during data
           loading
  leak     every step keeps its output in a list: allocated memory grows step over step
  healthy  a large matmul chain: the GPU stays busy (the control: no finding but a busy GPU)

Writes DIR/CASE.json (torch.profiler's chrome trace, record_shapes and profile_memory on).
"""
import argparse
import os
import time

import torch


def tiny_step(x):
    for _ in range(300):
        x = x * 1.0001 + 0.0001
    return x.sum()


class SlowDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, index):
        time.sleep(0.02 / 8)  # 8 samples a batch: 20 ms a batch
        return torch.randn(256)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=["tiny", "loader", "leak", "healthy"])
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=12)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda")
    weight = torch.randn(256, 256, device=dev)
    kept = []
    loader = iter(torch.utils.data.DataLoader(SlowDataset(), batch_size=8, num_workers=0))
    big = torch.randn(4096, 4096, device=dev)
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=args.steps)
    with torch.profiler.profile(activities=activities, schedule=schedule, record_shapes=True,
                                profile_memory=True) as prof:
        for _ in range(args.steps + 2):
            if args.case == "tiny":
                tiny_step(torch.randn(1024, device=dev))
            elif args.case == "loader":
                batch = next(loader).to(dev, non_blocking=True)
                (batch @ weight).relu().sum()
            elif args.case == "leak":
                kept.append(torch.randn(1024, 1024, device=dev) @ torch.randn(1024, 1024, device=dev))
            else:
                for _ in range(8):
                    big = (big @ big).clamp_(-1, 1)
            torch.cuda.synchronize()
            prof.step()
    prof.export_chrome_trace(os.path.join(args.out, f"{args.case}.json"))


if __name__ == "__main__":
    main()
