#!/usr/bin/env python3
"""Checks a kernel-storm trace: every kernel, copy and memset the storm launched is in the
trace or counted as lost, and the tracer's memory stayed under its cap.

    storm_check.py --trace TRACE --storm LOG --rss RSS.csv --cap-mb N
                   (--baseline-rss BASELINE.csv | --baseline-bytes B) [--md OUT.md]

  --trace TRACE         the trace `kinetrace run` wrote (.json, or gzip: detected by content,
                        as `zcat -f` does; "-" reads standard input). Read line by line, never
                        parsed whole: it may be several GB. Events are expected one per line;
                        metadata as top-level lines '  "kinetrace_...": NUMBER,' (before or after
                        traceEvents; the last value of a key counts)
  --storm LOG           output of kernel_storm: its last line 'STORM kernels=K memcpys=M
                        memsets=S seconds=T' gives what was launched
  --rss RSS.csv         kernel_storm --rss of the traced run ("seconds,rss_bytes")
  --baseline-rss CSV    the same from an untraced run: its largest sample is the baseline
  --baseline-bytes B    or the baseline given directly
  --cap-mb N            the cap kinetrace was given (--memory-mb N)
  --md OUT.md           also write the summary there

Checks (each PASS or FAIL):
  kernels / memcpys / memsets   recorded <= launched, and none missing without being counted:
                                launched - recorded over all three <= the trace's loss counters
                                (kinetrace_cupti_dropped_records + kinetrace_out_of_window_events
                                + kinetrace_cupti_records_undecoded, where present); with no
                                losses counted, recorded == launched exactly
  dropped records reported      the trace carries kinetrace_cupti_dropped_records
  memory (RSS)                  max(traced RSS) - baseline <= cap
  memory (kinetrace's peak)     kinetrace_memory_peak_bytes <= cap, when the trace has it
Also reported: kinetrace_memory_cap_bytes, kinetrace_dropped_host_events, and the RSS growth
over the second half of the run (a bounded tracer levels off).

Prints a markdown summary ending in PASS or FAIL; exit status 0 when every check passed, 1
when one failed, 2 when an input cannot be read. Python 3 standard library only.
"""

import argparse
import contextlib
import csv
import gzip
import io
import re
import sys

KINDS = {b"kernel": "kernels", b"gpu_memcpy": "memcpys", b"gpu_memset": "memsets"}
CATEGORY = re.compile(rb'"cat"\s*:\s*"(kernel|gpu_memcpy|gpu_memset)"')
METADATA = re.compile(rb'^\s*"(kinetrace_[A-Za-z0-9_]+)"\s*:\s*(-?[0-9]+)\s*,?\s*$')
STORM = re.compile(r"^STORM kernels=(\d+) memcpys=(\d+) memsets=(\d+) seconds=([0-9.]+)")
LOSS_KEYS = ["kinetrace_cupti_dropped_records", "kinetrace_out_of_window_events",
             "kinetrace_cupti_records_undecoded"]
MiB = 1 << 20


class InputError(Exception):
    pass


def open_trace(path, stack):
    """A binary line stream of the trace, gunzipped when it is gzip (like `zcat -f`)."""
    if path == "-":
        stream = io.BufferedReader(sys.stdin.buffer, buffer_size=1 << 20)
    else:
        stream = stack.enter_context(open(path, "rb", buffering=1 << 20))
    if stream.peek(2)[:2] == b"\x1f\x8b":
        return stack.enter_context(gzip.GzipFile(fileobj=stream))
    return stream


def scan_trace(path):
    """({'kernels': n, 'memcpys': n, 'memsets': n}, {metadata key: int}) from one pass."""
    counts = {name: 0 for name in KINDS.values()}
    metadata = {}
    try:
        with contextlib.ExitStack() as stack:
            for line in open_trace(path, stack):
                if b'"cat"' in line:
                    for match in CATEGORY.finditer(line):
                        counts[KINDS[match.group(1)]] += 1
                elif line.lstrip().startswith(b'"kinetrace_'):
                    match = METADATA.match(line)
                    if match:
                        metadata[match.group(1).decode()] = int(match.group(2))
    except (OSError, EOFError, gzip.BadGzipFile) as error:
        raise InputError(f"cannot read trace {path}: {error}")
    return counts, metadata


def read_storm(path):
    try:
        with open(path, errors="replace") as f:
            lines = [m for m in (STORM.match(line) for line in f) if m]
    except OSError as error:
        raise InputError(f"cannot read {path}: {error}")
    if not lines:
        raise InputError(f"no 'STORM kernels=... memcpys=... memsets=... seconds=...' line in {path}")
    m = lines[-1]
    return {"kernels": int(m.group(1)), "memcpys": int(m.group(2)), "memsets": int(m.group(3)),
            "seconds": float(m.group(4))}


def read_rss(path):
    """[(seconds, rss_bytes)] from kernel_storm's CSV, in order; negative samples skipped."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as error:
        raise InputError(f"cannot read {path}: {error}")
    samples = []
    for row in rows:
        if len(row) != 2 or row[0].strip() == "seconds":
            continue
        try:
            seconds, rss = float(row[0]), int(row[1])
        except ValueError:
            raise InputError(f"{path}: not 'seconds,rss_bytes': {','.join(row)}")
        if rss >= 0:
            samples.append((seconds, rss))
    if not samples:
        raise InputError(f"{path} has no RSS samples")
    return samples


def mib(n):
    return f"{n / MiB:.1f} MiB"


def check(args):
    launched = read_storm(args.storm)
    rss = read_rss(args.rss)
    baseline = args.baseline_bytes if args.baseline_rss is None else max(r for _, r in read_rss(args.baseline_rss))
    recorded, metadata = scan_trace(args.trace)
    cap = args.cap_mb * MiB
    results = []  # (PASS/FAIL/INFO, what, detail)

    def result(ok, what, detail):
        results.append(("PASS" if ok else "FAIL", what, detail))

    losses = {key: metadata[key] for key in LOSS_KEYS if key in metadata}
    lost = sum(losses.values())
    loss_text = ", ".join(f"{k} {v}" for k, v in losses.items()) or "none in the trace"
    result("kinetrace_cupti_dropped_records" in metadata, "dropped records reported",
           f"kinetrace_cupti_dropped_records = {metadata.get('kinetrace_cupti_dropped_records', 'absent')}")
    missing_total = 0
    for kind in ("kernels", "memcpys", "memsets"):
        missing = launched[kind] - recorded[kind]
        missing_total += max(missing, 0)
        result(missing >= 0 and (lost > 0 or missing == 0), kind,
               f"launched {launched[kind]}, recorded {recorded[kind]}, missing {missing}")
    if lost > 0 or missing_total > 0:
        detail = f"missing {missing_total}, counted as lost {lost} ({loss_text})"
        if 0 < missing_total < lost:
            detail += "; the loss counters also cover other records (sync, API), so they may exceed it"
        result(missing_total <= lost, "every missing GPU operation counted as lost", detail)

    peak_rss = max(r for _, r in rss)
    growth = peak_rss - baseline
    result(growth <= cap, "memory (RSS)",
           f"max RSS {mib(peak_rss)} - untraced {mib(baseline)} = {mib(growth)}, cap {mib(cap)}")
    if "kinetrace_memory_peak_bytes" in metadata:
        peak = metadata["kinetrace_memory_peak_bytes"]
        result(peak <= cap, "memory (kinetrace's peak)", f"kinetrace_memory_peak_bytes {mib(peak)}, cap {mib(cap)}")
    else:
        results.append(("INFO", "memory (kinetrace's peak)", "kinetrace_memory_peak_bytes not in the trace"))
    if "kinetrace_memory_cap_bytes" in metadata:
        trace_cap = metadata["kinetrace_memory_cap_bytes"]
        note = "" if trace_cap == cap else f" (differs from --cap-mb {args.cap_mb})"
        results.append(("INFO", "cap in the trace", f"kinetrace_memory_cap_bytes {mib(trace_cap)}{note}"))
    results.append(("INFO", "host events dropped",
                    str(metadata.get("kinetrace_dropped_host_events", "kinetrace_dropped_host_events absent"))))
    end = rss[-1][0]
    first_half = [r for s, r in rss if s <= end / 2]
    second_half = [r for s, r in rss if s > end / 2]
    if first_half and second_half:
        results.append(("INFO", "RSS growth over the second half",
                        f"{mib(max(second_half) - max(first_half))} (max after {end / 2:.0f} s "
                        f"minus max before)"))

    failed = sum(1 for status, _, _ in results if status == "FAIL")
    lines = ["# Kernel storm: tracer memory and event accounting", "",
             f"{launched['kernels']} kernels, {launched['memcpys']} copies, {launched['memsets']} memsets "
             f"in {launched['seconds']:.1f} s ({launched['kernels'] / max(launched['seconds'], 1e-9):.0f} "
             f"kernels/s); {len(rss)} RSS samples; cap {args.cap_mb} MiB.", "",
             "| check | result | detail |", "|---|---|---|"]
    lines += [f"| {what} | {status} | {detail} |" for status, what, detail in results]
    lines += ["", "FAIL" if failed else "PASS"]
    return "\n".join(lines) + "\n", failed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", required=True)
    parser.add_argument("--storm", required=True)
    parser.add_argument("--rss", required=True)
    baseline = parser.add_mutually_exclusive_group(required=True)
    baseline.add_argument("--baseline-rss")
    baseline.add_argument("--baseline-bytes", type=int)
    parser.add_argument("--cap-mb", type=int, required=True)
    parser.add_argument("--md")
    args = parser.parse_args()
    try:
        text, failed = check(args)
    except InputError as error:
        print(f"storm_check.py: {error}", file=sys.stderr)
        return 2
    print(text, end="")
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
