#!/usr/bin/env python3
"""Compares a kinetrace trace with a torch.profiler trace of the same steps of the same
program: GPU operation counts, kernel names, total kernel time.

    compare_torch.py KINETRACE.json[.gz] TORCH.json[.gz] [--time-tolerance 0.05] [--md OUT.md]

Checks (each PASS or FAIL):
  kernels         the same number of kernel events
  memcpys         the same number of gpu_memcpy events
  memsets         the same number of gpu_memset events
  kernel names    the same multiset of kernel names (whitespace-normalised)
  kernel time     total kernel time (sum of durations) within the tolerance (default 5%)

Prints a markdown table and a final PASS/FAIL line; exit status 0 when every check passed,
1 otherwise, 2 when a file cannot be read. Python 3 standard library only.
"""

import argparse
import gzip
import json
import re
import sys
from collections import Counter

CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        print(f"cannot read {path}: {error}", file=sys.stderr)
        sys.exit(2)


def normalise(name):
    return re.sub(r"\s+", " ", name).strip()


def gpu_ops(trace):
    """{'kernel': [(name, dur_us)], 'memcpy': [...], 'memset': [...]} of complete events."""
    ops = {kind: [] for kind in CATEGORIES.values()}
    events = trace.get("traceEvents", trace if isinstance(trace, list) else [])
    for event in events:
        if event.get("ph") != "X":
            continue
        kind = CATEGORIES.get(event.get("cat"))
        if kind is None:
            continue
        ops[kind].append((normalise(event.get("name", "")), float(event.get("dur", 0))))
    return ops


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kinetrace")
    parser.add_argument("torch")
    parser.add_argument("--time-tolerance", type=float, default=0.05)
    parser.add_argument("--md", help="also write the table to this file")
    args = parser.parse_args()

    ours = gpu_ops(load(args.kinetrace))
    theirs = gpu_ops(load(args.torch))
    rows = []
    failed = 0

    def check(name, ours_value, theirs_value, ok, detail=""):
        nonlocal failed
        failed += 0 if ok else 1
        rows.append((name, ours_value, theirs_value, "PASS" if ok else "FAIL", detail))

    for kind in ("kernel", "memcpy", "memset"):
        a, b = len(ours[kind]), len(theirs[kind])
        check(f"{kind} count", a, b, a == b, "" if a == b else f"difference {a - b:+d}")

    names_ours = Counter(name for name, _ in ours["kernel"])
    names_theirs = Counter(name for name, _ in theirs["kernel"])
    only_ours = names_ours - names_theirs
    only_theirs = names_theirs - names_ours
    detail = ""
    if only_ours or only_theirs:
        def show(counter):
            return "; ".join(f"{n[:80]} x{c}" for n, c in counter.most_common(3)) or "-"
        detail = f"only kinetrace: {show(only_ours)} / only torch: {show(only_theirs)}"
    check("kernel names", f"{len(names_ours)} distinct", f"{len(names_theirs)} distinct",
          not only_ours and not only_theirs, detail)

    time_ours = sum(d for _, d in ours["kernel"])
    time_theirs = sum(d for _, d in theirs["kernel"])
    ratio = time_ours / time_theirs if time_theirs > 0 else float("inf")
    check("total kernel time (ms)", f"{time_ours / 1000:.3f}", f"{time_theirs / 1000:.3f}",
          abs(ratio - 1.0) <= args.time_tolerance, f"ratio {ratio:.4f} (tolerance {args.time_tolerance:.0%})")

    lines = [
        f"kinetrace: `{args.kinetrace}`  ",
        f"torch.profiler: `{args.torch}`",
        "",
        "| check | kinetrace | torch.profiler | result | detail |",
        "|---|---|---|---|---|",
    ]
    for name, a, b, result, detail in rows:
        lines.append(f"| {name} | {a} | {b} | {result} | {detail.replace('|', '/')} |")
    lines.append("")
    lines.append(f"{'PASS' if failed == 0 else 'FAIL'}: {len(rows) - failed} of {len(rows)} checks passed")
    text = "\n".join(lines)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
