#!/usr/bin/env python3
"""Checks storm_check.py on small hand-made traces, RSS files and STORM lines: exact counts
pass, a silent loss fails, counted losses pass, memory over the cap fails (by RSS and by
kinetrace's own peak), gzip and standard input are read, and unreadable input exits 2."""

import gzip
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20


def trace_text(kernels=3, memcpys=2, memsets=1, dropped=0, extra=None, metadata_at_end=False):
    """A trace as kinetrace writes it: metadata lines, then one event per line."""
    metadata = {"kinetrace_cupti_dropped_records": dropped, "kinetrace_dropped_host_events": 0,
                "kinetrace_memory_cap_bytes": 64 * MiB}
    metadata.update(extra or {})
    meta_lines = [f'  "{key}": {value},' for key, value in metadata.items()]
    events = (['{"ph":"X","cat":"kernel","name":"stormKernel<0>","pid":0,"tid":7,"ts":1,"dur":1},'] * kernels
              + ['{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":7,"ts":2,"dur":1},'] * memcpys
              + ['{"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":3,"dur":1},'] * memsets
              + ['{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":1},',
                 '{"ph":"s","cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":0,"id":1},',
                 '{"ph":"X","cat":"user_annotation","name":"kernel","pid":1,"tid":1,"ts":0,"dur":9}'])
    head = ["{", '  "schemaVersion": 1,', '  "kinetrace_gpu_status": "CUPTI active",']
    body = ['  "traceEvents": ['] + events + ["  ],"]
    tail = ['  "traceName": "storm"', "}"]
    if metadata_at_end:
        return "\n".join(head + body + meta_lines + tail) + "\n"
    return "\n".join(head + meta_lines + body + tail) + "\n"


def rss_text(values_mib):
    return "seconds,rss_bytes\n" + "".join(f"{i}.000,{v * MiB}\n" for i, v in enumerate(values_mib))


def main():
    failures = []
    with tempfile.TemporaryDirectory() as work:
        def write(name, text, compress=False):
            path = os.path.join(work, name)
            with (gzip.open(path, "wt") if compress else open(path, "w")) as f:
                f.write(text)
            return path

        storm = write("storm.log", "kernel_storm: 1 s, ...\nSTORM kernels=3 memcpys=2 memsets=1 seconds=1.0\n")
        baseline = write("baseline.csv", rss_text([100, 120, 110]))
        rss_ok = write("rss_ok.csv", rss_text([100, 150, 170, 175, 176]))
        rss_over = write("rss_over.csv", rss_text([100, 150, 190]))  # 190 - 120 = 70 MiB > 64

        def run(trace, rss=rss_ok, cap=64, stdin=None, extra=()):
            command = [sys.executable, os.path.join(HERE, "storm_check.py"), "--trace", trace, "--storm", storm,
                       "--rss", rss, "--baseline-rss", baseline, "--cap-mb", str(cap), *extra]
            return subprocess.run(command, capture_output=True, text=True, input=stdin)

        def expect(name, result, code, *needles):
            if result.returncode != code:
                failures.append(f"{name}: exit {result.returncode}, expected {code}\n{result.stdout}{result.stderr}")
                return
            for needle in needles:
                if needle not in result.stdout + result.stderr:
                    failures.append(f"{name}: no '{needle}' in\n{result.stdout}{result.stderr}")

        exact = write("exact.json", trace_text())
        md = os.path.join(work, "summary.md")
        expect("exact counts", run(exact, extra=("--md", md)), 0, "| kernels | PASS | launched 3, recorded 3",
               "| memcpys | PASS | launched 2, recorded 2", "| memsets | PASS | launched 1, recorded 1",
               "| memory (RSS) | PASS | max RSS 176.0 MiB - untraced 120.0 MiB = 56.0 MiB, cap 64.0 MiB",
               "RSS growth over the second half | INFO | 6.0 MiB", "\nPASS\n")
        if not os.path.exists(md) or "| kernels | PASS" not in open(md).read():
            failures.append("--md: summary not written")
        expect("metadata after the events", run(write("end.json", trace_text(metadata_at_end=True))), 0, "\nPASS\n")
        expect("gzip trace", run(write("exact.json.gz", trace_text(), compress=True)), 0, "\nPASS\n")
        expect("trace on standard input", run("-", stdin=trace_text()), 0, "\nPASS\n")

        expect("a kernel missing, nothing counted", run(write("silent.json", trace_text(kernels=2))), 1,
               "| kernels | FAIL | launched 3, recorded 2, missing 1",
               "| every missing GPU operation counted as lost | FAIL | missing 1, counted as lost 0", "\nFAIL\n")
        expect("missing kernels counted as dropped", run(write("dropped.json", trace_text(kernels=1, dropped=2))), 0,
               "| kernels | PASS | launched 3, recorded 1, missing 2",
               "| every missing GPU operation counted as lost | PASS | missing 2, counted as lost 2")
        expect("more lost than missing fails", run(write("under.json", trace_text(kernels=0, memcpys=1, dropped=3))),
               1, "| every missing GPU operation counted as lost | FAIL | missing 4, counted as lost 3")
        expect("out-of-window events count as lost",
               run(write("window.json", trace_text(memsets=0, extra={"kinetrace_out_of_window_events": 1}))), 0,
               "counted as lost 1")
        expect("more recorded than launched", run(write("extra.json", trace_text(memsets=2))), 1,
               "| memsets | FAIL | launched 1, recorded 2, missing -1")
        expect("no drop counter", run(write("nodrop.json", trace_text().replace(
            '  "kinetrace_cupti_dropped_records": 0,\n', ""))), 1, "| dropped records reported | FAIL")

        expect("RSS over the cap", run(exact, rss=rss_over), 1, "| memory (RSS) | FAIL | max RSS 190.0 MiB", "\nFAIL\n")
        expect("RSS under a larger cap", run(exact, rss=rss_over, cap=100), 0, "cap 100.0 MiB")
        expect("kinetrace's peak over the cap",
               run(write("peak.json", trace_text(extra={"kinetrace_memory_peak_bytes": 65 * MiB}))), 1,
               "| memory (kinetrace's peak) | FAIL | kinetrace_memory_peak_bytes 65.0 MiB, cap 64.0 MiB")
        expect("kinetrace's peak under the cap",
               run(write("peak_ok.json", trace_text(extra={"kinetrace_memory_peak_bytes": 10 * MiB}))), 0,
               "| memory (kinetrace's peak) | PASS")
        expect("cap in the trace differs", run(exact, cap=100), 0, "(differs from --cap-mb 100)")

        expect("no such trace", run(os.path.join(work, "absent.json")), 2, "cannot read trace")
        bad_storm = write("bad_storm.log", "no storm here\n")
        result = subprocess.run([sys.executable, os.path.join(HERE, "storm_check.py"), "--trace", exact, "--storm",
                                 bad_storm, "--rss", rss_ok, "--baseline-bytes", str(100 * MiB), "--cap-mb", "64"],
                                capture_output=True, text=True)
        expect("no STORM line", result, 2, "no 'STORM kernels=")
        expect("RSS file without samples", run(exact, rss=write("empty.csv", "seconds,rss_bytes\n")), 2,
               "has no RSS samples")
    for failure in failures:
        print("FAIL", failure)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
