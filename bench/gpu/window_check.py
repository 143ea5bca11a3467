#!/usr/bin/env python3
"""Checks one recording window of a kernel storm (kernel_storm --nvtx-steps 1) traced on
demand: the trace is complete, holds what the window asked for, and lost nothing.

    window_check.py TRACE [--steps N [--first S]] [--seconds T] [--kernels-per-step K]
                          [--rate R] [--cap-mb M] [--label TEXT]

  TRACE               a kinetrace JSON trace (gzip detected by content). Read line by line,
                      never parsed whole: a 10-minute window is gigabytes
  --steps N           the window was N steps: exactly N step ranges "step K", consecutive
                      (from S when --first is given), and K kernels in each step (some
                      kernels, without --kernels-per-step)
  --seconds T         the window was T seconds: its length within 5% (or 0.1 s), and its
                      kernels R per second within 5%
  --kernels-per-step  kernels kernel_storm launches per step (rate x slice)
  --rate R            with --seconds: kernels per second expected
  --cap-mb M          kinetrace's own peak memory must stay under M MiB

Prints one markdown table row: label | window s | steps (first..last) | kernels |
expected | dropped | peak MiB | PASS/FAIL, and exits 0 on PASS, 1 on FAIL, 2 when the trace
cannot be read or is incomplete (no closing brace: not a whole file).
"""

import argparse
import gzip
import json
import re
import sys

KERNEL = re.compile(rb'"cat":"kernel"')
STEP = re.compile(rb'"cat":"user_annotation","name":"step (\d+)"')
NUMBER = re.compile(rb'^\s*"(kinetrace_[A-Za-z0-9_]+)"\s*:\s*(-?[0-9]+)\s*,?\s*$')
OBJECT = re.compile(rb'^\s*"(kinetrace_steps)"\s*:\s*(\{.*\})\s*,?\s*$')
LOSSES = ["kinetrace_cupti_dropped_records", "kinetrace_dropped_host_events",
          "kinetrace_cupti_records_undecoded", "kinetrace_dropped_assembled_records"]


def scan(path):
    with open(path, "rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
    stream = gzip.open(path, "rb") if gz else open(path, "rb")
    kernels, steps, meta, last = 0, [], {}, b""
    with stream:
        for line in stream:
            if KERNEL.search(line):
                kernels += 1
                continue
            m = STEP.search(line)
            if m:
                steps.append(int(m.group(1)))
                continue
            m = NUMBER.match(line)
            if m:
                meta[m.group(1).decode()] = int(m.group(2))
                continue
            m = OBJECT.match(line)
            if m:
                meta[m.group(1).decode()] = json.loads(m.group(2))
            if line.strip():
                last = line.strip()
    return kernels, sorted(steps), meta, last == b"}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace")
    p.add_argument("--steps", type=int)
    p.add_argument("--first", type=int)
    p.add_argument("--seconds", type=float)
    p.add_argument("--kernels-per-step", type=int)
    p.add_argument("--rate", type=int)
    p.add_argument("--cap-mb", type=int)
    p.add_argument("--label", default="")
    a = p.parse_args()
    try:
        kernels, steps, meta, whole = scan(a.trace)
    except OSError as e:
        print(f"| {a.label} | cannot read {a.trace}: {e} |")
        return 2
    if not whole:
        print(f"| {a.label} | {a.trace} is not a whole trace (no closing brace) |")
        return 2
    window = (meta.get("kinetrace_window_stop_ns", 0) - meta.get("kinetrace_window_start_ns", 0)) / 1e9
    dropped = sum(meta.get(k, 0) for k in LOSSES)
    peak = meta.get("kinetrace_memory_peak_bytes", 0) / (1 << 20)
    ok = dropped == 0
    expected = "-"
    if a.steps is not None:
        first = steps[0] if steps else -1
        ok &= steps == list(range(first, first + a.steps))
        ok &= a.first is None or first == a.first
        ok &= meta.get("kinetrace_steps", {}).get("count") == a.steps
        if a.kernels_per_step is not None:
            expected = a.steps * a.kernels_per_step
            ok &= kernels == expected
        else:
            ok &= kernels > 0
    if a.seconds is not None:
        ok &= abs(window - a.seconds) <= max(0.1, 0.05 * a.seconds)
        if a.rate:
            expected = round(a.rate * window)
            ok &= abs(kernels - expected) <= 0.05 * expected
    if a.cap_mb is not None:
        ok &= 0 < peak <= a.cap_mb
    span = f"{steps[0]}..{steps[-1]} ({len(steps)})" if steps else "none"
    print(f"| {a.label} | {window:.2f} | {span} | {kernels} | {expected} | {dropped} | "
          f"{peak:.1f} | {'PASS' if ok else 'FAIL'} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
