#!/usr/bin/env python3
"""How long the program's CUDA calls took inside a kinetrace trace: per API name, the count
and the median, 10th and 90th percentile and total of their durations (the time from the
call's entry to its return, as kinetrace's launch callbacks saw it).

    api_durations.py TRACE.json[.gz] [--name cudaLaunchKernel]

With --name, prints one line for that API only:

    API name=cudaLaunchKernel count=24942 median_us=7.47 p10_us=5.15 p90_us=10.90

A launch call's duration is the host cost a tracer adds to every launch: compare it between
activity sets (`launch` alone against `kernel,...,launch`) to see what the records cost.
"""

import argparse
import collections
import gzip
import json
import statistics
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def durations(trace):
    out = collections.defaultdict(list)
    for event in trace.get("traceEvents", []):
        if event.get("cat") in ("cuda_runtime", "cuda_driver") and event.get("ph") == "X":
            out[event["name"]].append(float(event.get("dur", 0.0)))
    return out


def describe(name, values):
    values = sorted(values)
    return (f"API name={name} count={len(values)} median_us={statistics.median(values):.2f} "
            f"p10_us={values[len(values) // 10]:.2f} p90_us={values[9 * len(values) // 10]:.2f} "
            f"total_ms={sum(values) / 1000.0:.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--name", help="print this API's line only")
    args = parser.parse_args()
    try:
        calls = durations(load(args.trace))
    except (OSError, ValueError) as error:
        sys.exit(f"api_durations.py: cannot read {args.trace}: {error}")
    if args.name:
        if args.name not in calls:
            sys.exit(f"api_durations.py: no {args.name} calls in {args.trace}")
        print(describe(args.name, calls[args.name]))
        return
    for name, values in sorted(calls.items(), key=lambda item: -len(item[1])):
        print(describe(name, values))


if __name__ == "__main__":
    main()
