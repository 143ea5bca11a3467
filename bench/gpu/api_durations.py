#!/usr/bin/env python3
"""How long the program's CUDA calls took inside a kinetrace trace: per API name, the count
and the median, 10th and 90th percentile and total of their durations (the time from the
call's entry to its return, as kinetrace's launch callbacks saw it).

    api_durations.py TRACE.json[.gz] [--name cudaLaunchKernel] [--gaps]

With --name, prints one line for that API only:

    API name=cudaLaunchKernel count=24942 median_us=7.47 p10_us=5.15 p90_us=10.90

With --gaps, also the program's own time between consecutive CUDA calls of a thread (from
one call's return to the next call's entry), over all threads:

    GAPS count=35000 median_us=21.3 p10_us=4.1 p90_us=80.2 total_ms=1234.5

A tracer that slows the program's own code (caches, memory) between its calls shows up
there rather than in the calls.

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


def gaps(trace):
    """Time between the return of a thread's CUDA call and its next call's entry."""
    by_thread = collections.defaultdict(list)
    for event in trace.get("traceEvents", []):
        if event.get("cat") in ("cuda_runtime", "cuda_driver") and event.get("ph") == "X":
            by_thread[(event.get("pid"), event.get("tid"))].append(
                (float(event["ts"]), float(event["ts"]) + float(event.get("dur", 0.0))))
    out = []
    for calls in by_thread.values():
        calls.sort()
        end = None
        for start, stop in calls:
            if end is not None and start >= end:  # calls nested in another are not gaps
                out.append(start - end)
            end = stop if end is None else max(end, stop)
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
    parser.add_argument("--gaps", action="store_true", help="also the time between calls")
    args = parser.parse_args()
    try:
        trace = load(args.trace)
    except (OSError, ValueError) as error:
        sys.exit(f"api_durations.py: cannot read {args.trace}: {error}")
    calls = durations(trace)
    if args.gaps:
        between = gaps(trace)
        if between:
            print(describe("-", between).replace("API name=- ", "GAPS "))
    if args.name:
        if args.name not in calls:
            sys.exit(f"api_durations.py: no {args.name} calls in {args.trace}")
        print(describe(args.name, calls[args.name]))
        return
    for name, values in sorted(calls.items(), key=lambda item: (-len(item[1]), item[0])):
        print(describe(name, values))


if __name__ == "__main__":
    main()
