#!/usr/bin/env python3
"""Sizes and write times of one trace in each output format, through `kinetrace convert`.

    format_sizes.py KINETRACE OUT.md NAME=TRACE [NAME=TRACE ...] [--rounds N]

For each TRACE (any format kinetrace reads): converts it to kinetrace's JSON once (the
baseline every size is compared with), then to .json, .json.gz and .pftrace, ROUNDS times
each, interleaved (json, json.gz, pftrace, json, ...), and writes a table to OUT.md: the
size of each, its share of the JSON's size, the median wall and CPU time of the conversion
(reading the same input each time, so the differences are the writing; a trace converted in
under 0.1 s gets 41 rounds, its times being mostly noise), and the event count that
`kinetrace convert` reported, which must be the same for every format. Then converts the
.pftrace back to JSON and checks that it holds the same events as the baseline.

Exit status 1 when a conversion fails or the event counts differ.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

FORMATS = ["json", "json.gz", "pftrace"]
SMALL_TRACE_ROUNDS = 41


def convert(kinetrace, source, target):
    """Runs one conversion: (wall seconds, CPU seconds of the process, events written)."""
    start = time.perf_counter()
    child = subprocess.Popen([kinetrace, "convert", source, target],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"kinetrace convert {source} {target} failed: {stderr.strip()}")
    match = re.search(r"wrote .*?: ([\d,]+) (?:of [\d,]+ )?events", stderr)
    if not match:
        raise RuntimeError(f"no event count in: {stderr.strip()}")
    return seconds, usage.ru_utime + usage.ru_stime, int(match.group(1).replace(",", ""))


def events_of(path):
    with open(path) as f:
        trace = json.load(f)
    return sorted(json.dumps(e, sort_keys=True) for e in trace["traceEvents"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kinetrace")
    p.add_argument("out")
    p.add_argument("traces", nargs="+", help="NAME=PATH")
    p.add_argument("--rounds", type=int, default=9)
    args = p.parse_args()

    # Written to a memory file system where there is one: the disk's writeback made the
    # times of writing a 17 MB JSON vary by a fifth from one conversion to the next, more than
    # the formats differ; what is compared is the work of writing each format.
    memory_fs = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    ok = True
    lines = [
        "# One trace in each format: size and write time (`kinetrace convert`)",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
        f"- at least {args.rounds} conversions per format ({SMALL_TRACE_ROUNDS} for a trace converted in",
        "  under 0.1 s), interleaved; times are the medians of the wall time and of the CPU time",
        "  (user + system) of `kinetrace convert SOURCE OUT` (the same reading each time; the",
        "  difference is the writing)",
        f"- files written to {memory_fs or 'the temporary directory'}",
        "",
        "| trace | format | bytes | of the JSON | median wall (ms) | median CPU (ms) | rounds | events |",
        "|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory(dir=memory_fs) as work:
        for spec in args.traces:
            name, _, source = spec.partition("=")
            baseline = os.path.join(work, f"{name}.baseline.json")
            first_seconds, _, baseline_events = convert(args.kinetrace, source, baseline)
            json_bytes = os.path.getsize(baseline)
            # A conversion of a small trace takes a few milliseconds, most of it starting the
            # process, and the file system's noise is as large as the difference between the
            # formats: such traces get more rounds.
            rounds = args.rounds if first_seconds > 0.1 else max(args.rounds, SMALL_TRACE_ROUNDS)
            times = {f: [] for f in FORMATS}
            cpu = {f: [] for f in FORMATS}
            counts = {}
            for _ in range(rounds):
                for fmt in FORMATS:
                    target = os.path.join(work, f"{name}.{fmt}")
                    seconds, cpu_seconds, count = convert(args.kinetrace, baseline, target)
                    times[fmt].append(seconds)
                    cpu[fmt].append(cpu_seconds)
                    counts[fmt] = count
            for fmt in FORMATS:
                size = os.path.getsize(os.path.join(work, f"{name}.{fmt}"))
                lines.append(
                    f"| {name} | .{fmt} | {size:,} | {100.0 * size / json_bytes:.1f}% | "
                    f"{1000 * statistics.median(times[fmt]):.2f} | "
                    f"{1000 * statistics.median(cpu[fmt]):.2f} | {rounds} | {counts[fmt]:,} |")
                if counts[fmt] != baseline_events:
                    ok = False
                    print(f"FAIL: {name}.{fmt} has {counts[fmt]} events, the JSON {baseline_events}")
            back = os.path.join(work, f"{name}.back.json")
            convert(args.kinetrace, os.path.join(work, f"{name}.pftrace"), back)
            if events_of(back) != events_of(baseline):
                ok = False
                print(f"FAIL: {name}: the .pftrace converted back differs from the JSON")
            else:
                lines.append(f"| {name} | .pftrace -> .json | | same {baseline_events:,} events | | | | |")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
