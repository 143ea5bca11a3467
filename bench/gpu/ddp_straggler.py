#!/usr/bin/env python3
"""A two-rank DDP job in which one rank is slow, traced by torch.profiler on each rank, for
`kinetrace analyze` to find the straggler: the other rank's all-reduces wait for it.

    torchrun --nproc_per_node 2 ddp_straggler.py --out DIR [--slow-rank 1] [--delay-ms 30]
                                                 [--backend nccl|gloo]

NCCL needs a GPU per rank (it refuses two ranks on one device). With gloo both ranks may
share one GPU: the model and its gradients stay on the GPU, and gloo reduces the gradients
through the host, so the collectives are host calls rather than NCCL kernels.

Each step, the slow rank sleeps DELAY_MS before its forward pass (a slow data loader or a
busy host on one machine). Writes DIR/rank{R}.json (torch.profiler's chrome trace, with
ProfilerStep ranges and the distributedInfo PyTorch adds).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--slow-rank", type=int, default=1)
    p.add_argument("--delay-ms", type=float, default=30.0)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--backend", choices=["nccl", "gloo"], default="nccl")
    args = p.parse_args()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    gpu = local_rank % torch.cuda.device_count()
    torch.cuda.set_device(gpu)
    dist.init_process_group(args.backend)
    device = torch.device("cuda", gpu)
    model = nn.Sequential(*[nn.Linear(1024, 1024) for _ in range(8)]).to(device)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[gpu])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(64, 1024, device=device)

    def step():
        if rank == args.slow_rank:
            time.sleep(args.delay_ms / 1000.0)
        optimizer.zero_grad(set_to_none=True)
        ddp(x).square().mean().backward()
        optimizer.step()
        torch.cuda.synchronize()

    for _ in range(3):
        step()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=args.steps)
    with torch.profiler.profile(activities=activities, schedule=schedule) as prof:
        for _ in range(args.steps + 2):
            step()
            prof.step()
    os.makedirs(args.out, exist_ok=True)
    prof.export_chrome_trace(os.path.join(args.out, f"rank{rank}.json"))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
