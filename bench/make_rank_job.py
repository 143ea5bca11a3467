#!/usr/bin/env python3
"""A many-rank job's traces made from one real trace: the job that `kinetrace analyze` and
`kinetrace diff` are timed on beside HTA (bench/job_scale.sh).

    make_rank_job.py TRACE.json[.gz] OUT_DIR [--ranks 64] [--seed 1] [--slow-rank R]
                     [--slow-us 2000]

Rank r's trace is TRACE with every timestamp shifted by a few hundred microseconds (ranks
do not start together), every GPU operation's and host range's duration scaled by a factor
drawn from [0.97, 1.03] (ranks differ as real ranks do, so no two files are equal), and
distributedInfo saying rank r of the job's world size; with --slow-rank, that rank's steps
also start --slow-us later each (a straggler). Written as OUT_DIR/rank{r}.json, each the
size of the input.
"""
import argparse
import gzip
import json
import os
import random
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def perturbed(trace, rank, world, rng, slow_us):
    """A copy of `trace` as rank `rank` of `world` would have written it."""
    shift = rng.uniform(0.0, 500.0)
    events = []
    step = 0
    for event in trace.get("traceEvents", []):
        copy = dict(event)
        if isinstance(copy.get("ts"), (int, float)):
            name = copy.get("name", "")
            if isinstance(name, str) and name.startswith("ProfilerStep#") and copy.get("ph") == "X":
                step += 1
            copy["ts"] = round(copy["ts"] + shift + step * slow_us, 3)
        if copy.get("ph") == "X" and isinstance(copy.get("dur"), (int, float)):
            copy["dur"] = round(copy["dur"] * rng.uniform(0.97, 1.03), 3)
        events.append(copy)
    out = {key: value for key, value in trace.items() if key != "traceEvents"}
    info = dict(out.get("distributedInfo") or {})
    info.update({"backend": info.get("backend", "nccl"), "rank": rank, "world_size": world})
    out["distributedInfo"] = info
    out["traceEvents"] = events
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace")
    p.add_argument("out_dir")
    p.add_argument("--ranks", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-us", type=float, default=2000.0)
    args = p.parse_args()
    if args.ranks <= 0:
        p.error("--ranks must be positive")
    trace = load(args.trace)
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        sys.exit(f"make_rank_job.py: {args.trace} is not a Chrome trace with traceEvents")
    os.makedirs(args.out_dir, exist_ok=True)
    for rank in range(args.ranks):
        rng = random.Random(args.seed * 100003 + rank)
        slow = args.slow_us if rank == args.slow_rank else 0.0
        with open(os.path.join(args.out_dir, f"rank{rank}.json"), "w") as f:
            json.dump(perturbed(trace, rank, args.ranks, rng, slow), f)
    print(f"{args.ranks} ranks written to {args.out_dir}")


if __name__ == "__main__":
    main()
