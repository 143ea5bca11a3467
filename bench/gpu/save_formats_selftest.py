#!/usr/bin/env python3
"""Checks save_formats.py --table on hand-made save records: medians per format, each
format's size against the JSON's, the speed ratio, and the exit status (1 only when the
.pftrace's median is over the JSON's); no torch or GPU needed."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def record(json_ms, gz_ms, pftrace_ms):
    saves = []
    for round_, (j, g, p) in enumerate(zip(json_ms, gz_ms, pftrace_ms)):
        saves += [{"format": "json", "round": round_, "wall_ms": j, "cpu_ms": j / 2, "bytes": 1000},
                  {"format": "json.gz", "round": round_, "wall_ms": g, "cpu_ms": g, "bytes": 170},
                  {"format": "pftrace", "round": round_, "wall_ms": p, "cpu_ms": p, "bytes": 220}]
    return {"rounds": len(json_ms), "saves": saves}


def table(rec):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "saves.json")
        with open(path, "w") as f:
            json.dump(rec, f)
        run = subprocess.run([sys.executable, os.path.join(HERE, "save_formats.py"), "--table", path,
                              "--name", "hand-made"], capture_output=True, text=True)
    return run.returncode, run.stdout, run.stderr


def main():
    failures = []

    # Medians, not means: one slow save (9.0) does not move the JSON's 1.0.
    status, out, err = table(record([1.0, 9.0, 1.0], [2.0, 2.0, 3.0], [0.5, 0.4, 0.6]))
    if status != 0:
        failures.append(f"a faster .pftrace exits {status}: {err}")
    for row in ["| json | 1,000 | 100.0% | 1.000 | 0.500 | 1.00x |",
                "| json.gz | 170 | 17.0% | 2.000 | 2.000 | 0.50x |",
                "| pftrace | 220 | 22.0% | 0.500 | 0.500 | 2.00x |"]:
        if row not in out:
            failures.append(f"missing row {row!r} in:\n{out}")
    if "medians of 3 interleaved saves" not in out:
        failures.append(f"the round count is not said:\n{out}")

    # A slower .pftrace is shown and is the exit status.
    status, out, err = table(record([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [2.0, 2.0, 2.0]))
    if status != 1 or "slower than the JSON" not in err or "| pftrace | 220 | 22.0% | 2.000 |" not in out:
        failures.append(f"a slower .pftrace: status {status}, stderr {err!r}, table:\n{out}")

    for failure in failures:
        print("FAIL:", failure)
    print("save_formats selftest:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
