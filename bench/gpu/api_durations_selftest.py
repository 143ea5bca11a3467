#!/usr/bin/env python3
"""Checks api_durations.py on a hand-made trace: per-API statistics, and gaps that skip
calls nested inside another and are kept per thread."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def call(name, ts, dur, tid=1, cat="cuda_runtime"):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 7, "tid": tid}


def main():
    events = [
        call("cudaLaunchKernel", 0, 5),       # thread 1: calls at 0-5, 15-20, 40-46
        call("cudaLaunchKernel", 15, 5),
        call("cuLaunchKernel", 16, 2, cat="cuda_driver"),  # nested in the previous call
        call("cudaMemcpyAsync", 40, 6),
        call("cudaLaunchKernel", 100, 3, tid=2),  # thread 2: one gap of 7
        call("cudaLaunchKernel", 110, 3, tid=2),
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "pid": 0, "tid": 7},
    ]
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "trace.json")
        with open(path, "w") as f:
            json.dump({"traceEvents": events}, f)
        run = lambda *args: subprocess.run([sys.executable, os.path.join(HERE, "api_durations.py"), path, *args],
                                           capture_output=True, text=True)
        one = run("--name", "cudaLaunchKernel", "--gaps")
        failures = []
        if one.returncode != 0:
            failures.append(f"exit {one.returncode}: {one.stderr}")
        lines = one.stdout.splitlines()
        # Gaps: thread 1 -> 10 (5..15) and 20 (20..40); thread 2 -> 7. Median 10, total 37.
        if not lines or not lines[0].startswith("GAPS count=3 median_us=10.00") or "total_ms=0.0" not in lines[0]:
            failures.append(f"gaps line: {lines[:1]}")
        if len(lines) < 2 or not lines[1].startswith("API name=cudaLaunchKernel count=4 median_us=4.00"):
            failures.append(f"API line: {lines[1:2]}")
        missing = run("--name", "cudaNothing")
        if missing.returncode == 0 or "no cudaNothing calls" not in missing.stderr:
            failures.append(f"unknown API not refused: {missing.returncode} {missing.stderr}")
        everything = run()
        if [line.split()[1] for line in everything.stdout.splitlines()] != [
                "name=cudaLaunchKernel", "name=cuLaunchKernel", "name=cudaMemcpyAsync"]:
            failures.append(f"listing (most calls first, then by name): {everything.stdout}")
    for failure in failures:
        print("FAIL", failure)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
