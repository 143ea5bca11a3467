#!/usr/bin/env python3
"""Checks hta_reference.py on three hand-made traces whose HTA figures are known by
construction, and its comparison on a hand-written analyze report (one figure changed must
fail, exit status 1). With KINETRACE_BIN set (the kinetrace command), also runs
`kinetrace analyze --json` on each trace and checks that every comparable figure agrees.

  one stream    a host-wait gap, a 20 ns gap after an early launch (kernel wait in both),
                a 10 us one (HTA: other; kinetrace: waiting on other work), a memcpy, time
                before and after the GPU work
  two streams   compute and an ncclKernel overlapping, a memset overlapping the
                communication, a kernel waiting on another stream
  two steps     two ProfilerSteps (HTA drops the last one's work), an ncclDevKernel (no
                "ncclKernel" in its name), a cuLaunchKernel launch, two devices
"""

import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hta_reference as hta  # noqa: E402


def gpu_op(name, ts, dur, correlation, stream=7, device=0, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "pid": device, "tid": stream, "ts": ts, "dur": dur,
            "args": {"device": device, "stream": stream, "correlation": correlation}}


def call(name, ts, dur, correlation):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 100, "tid": 100, "ts": ts,
            "dur": dur, "args": {"correlation": correlation}}


def host(name, ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": 100, "tid": 100, "ts": ts,
            "dur": dur}


def trace_document(events):
    return {"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1},
            "traceEvents": events}


# Times in microseconds, as the trace writes them.
ONE_STREAM = trace_document([
    host("forward", 95, 75),                                   # the window: 95 .. 170
    call("cudaLaunchKernel", 100, 5, 1), gpu_op("gemm_kernel", 110, 10, 1),
    call("cudaLaunchKernel", 125, 5, 2), gpu_op("relu_kernel", 132, 8, 2),     # host wait 12 us
    call("cudaMemcpyAsync", 126, 2, 3),
    gpu_op("Memcpy HtoD (Pageable -> Device)", 140.02, 9.98, 3, cat="gpu_memcpy"),  # 20 ns gap
    call("cudaLaunchKernel", 128, 3, 4), gpu_op("tiny_kernel", 160, 1, 4),     # 10 us gap
])

TWO_STREAMS = trace_document([
    host("train", 0, 65),
    call("cudaLaunchKernel", 0, 2, 11), gpu_op("gemm_kernel", 10, 20, 11),
    call("cudaLaunchKernel", 3, 2, 12), gpu_op("gemm2_kernel", 50, 10, 12),    # waits on stream 20
    call("cudaLaunchKernel", 5, 2, 13),
    gpu_op("ncclKernel_AllReduce_RING_LL_Sum_float", 20, 25, 13, stream=20),
    call("cudaMemsetAsync", 6, 1, 14),
    gpu_op("Memset (Device)", 40, 8, 14, stream=21, cat="gpu_memset"),
])

TWO_STEPS = trace_document([
    host("ProfilerStep#1", 0, 50), host("ProfilerStep#2", 50, 50),
    call("cudaLaunchKernel", 1, 2, 21),
    gpu_op("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 10, 10, 21),
    call("cuLaunchKernel", 55, 2, 22), gpu_op("triton_poi_fused", 60, 10, 22),  # in the last step
    call("cudaLaunchKernel", 2, 2, 23), gpu_op("gemm_kernel", 12, 18, 23, stream=9, device=1),
    call("cudaLaunchKernel", 31, 2, 24), gpu_op("gemm_kernel", 40, 5, 24, stream=9, device=1),
])

# What kinetrace's definitions give for ONE_STREAM, worked out by hand (nanoseconds): the
# window is 75 us; before the first kernel, 5 us host wait and 10 us launch; the 12 us gap
# is 5 us host wait and 7 us launch; of the gaps after early launches, the 20 ns one is
# kernel wait and the 10 us one waiting on other work; the 9 us after the last operation is
# other. The queue holds at most 3 launched, not yet started operations (at 128 us).
ONE_STREAM_REPORT = {"ranks": [{
    "path": "one_stream.json", "rank": 0,
    "devices": [{"device": 0, "communication_overlap_ns": 0,
                 "time": {"window_ns": 75000, "busy_ns": 28980, "compute_ns": 19000,
                          "communication_ns": 0, "memory_ns": 9980, "idle_ns": 46020,
                          "host_wait_ns": 10000, "launch_ns": 17000, "kernel_wait_ns": 20,
                          "other_work_wait_ns": 10000, "other_idle_ns": 9000},
                 "streams": [{"stream": 7, "operations": 4, "busy_ns": 28980,
                              "max_queue_depth": 3}]}],
    "kinds": [{"kind": "compute", "duration": {"count": 3, "total_ns": 19000}},
              {"kind": "memory", "duration": {"count": 1, "total_ns": 9980}}],
    "launch_latency": {"distribution": {"count": 4, "total_ns": 63020}},
    "tiny_kernels": {"launch_longer_count": 1}}]}


class Checks:
    def __init__(self):
        self.failures = []

    def equal(self, what, actual, expected):
        if actual != expected:
            self.failures.append(f"{what}: got {actual!r}, expected {expected!r}")

    def found(self, rows, metric):
        found = [r for r in rows if r.metric == metric]
        if not found:
            self.failures.append(f"no row {metric!r}")
        return found[0] if found else None

    def status(self, rows, metric, expected):
        row = self.found(rows, metric)
        if row is not None:
            self.equal(f"status of {metric!r} (HTA {row.hta}, kinetrace {row.kinetrace})",
                       row.status, expected)

    def row(self, rows, metric, hta_value, kinetrace_value):
        row = self.found(rows, metric)
        if row is not None:
            self.equal(f"{metric!r} (HTA, kinetrace)", (row.hta, row.kinetrace),
                       (hta_value, kinetrace_value))


def write_trace(work, name, document):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        json.dump(document, f)
    return path


def check_one_stream(checks, trace):
    fig = hta.hta_figures(trace.ops, trace.calls)
    checks.equal("one stream: temporal", fig["temporal"],
                 {"span": 51000, "busy": 28980, "idle": 22020, "compute": 19000,
                  "non_compute": 9980})
    checks.equal("one stream: kernel type time", fig["kernel_type_time"],
                 {"COMPUTATION": 19000, "MEMORY": 9980})
    stream = fig["streams"][7]
    checks.equal("one stream: idle breakdown", stream["idle"],
                 {"host_wait": 12000, "kernel_wait": 20, "other": 10000})
    checks.equal("one stream: queue length max", stream["queue_max"], 3)
    launch = fig["launch"]
    checks.equal("one stream: launches", launch["count"], 4)
    checks.equal("one stream: launch delay as coded", launch["delay_as_coded_total"], 78020)
    checks.equal("one stream: launch delay as documented", launch["delay_as_documented_total"], 48020)
    checks.equal("one stream: short kernels", launch["short_kernels"], 1)


def check_two_streams(checks, trace):
    fig = hta.hta_figures(trace.ops, trace.calls)
    checks.equal("two streams: temporal", fig["temporal"],
                 {"span": 50000, "busy": 48000, "idle": 2000, "compute": 30000,
                  "non_compute": 18000})
    checks.equal("two streams: kernel type time", fig["kernel_type_time"],
                 {"COMPUTATION": 20000, "COMPUTATION overlapping COMMUNICATION": 10000,
                  "COMMUNICATION": 10000, "COMMUNICATION overlapping MEMORY": 5000,
                  "MEMORY": 3000})
    # Stream 7 waits 20 us for the all-reduce; the device is idle 2 us of it.
    checks.equal("two streams: stream 7 idle", fig["streams"][7]["idle"],
                 {"host_wait": 0, "kernel_wait": 0, "other": 20000})
    checks.equal("two streams: stream 7 busy", fig["streams"][7]["busy"], 30000)
    checks.equal("two streams: stream 7 queue", fig["streams"][7]["queue_max"], 2)


def check_two_steps(checks, trace):
    ops, calls = hta.last_step_filter(trace)
    checks.equal("two steps: operations HTA keeps", sorted(op.name for op in ops),
                 ["gemm_kernel", "gemm_kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"])
    kept_with_last, _ = hta.last_step_filter(trace, include_last_step=True)
    checks.equal("two steps: include_last_profiler_step keeps only work launched at its start",
                 len(kept_with_last), 3)
    fig = hta.hta_figures(trace.ops, trace.calls)
    checks.equal("two steps: ncclDevKernel is COMPUTATION to HTA",
                 fig["kernel_type_sums"]["COMMUNICATION"], [0, 0])
    checks.equal("two steps: launch stats leave cuLaunchKernel out", fig["launch"]["count"], 3)
    device1 = hta.hta_figures([op for op in trace.ops if op.device == 1], trace.calls)
    checks.equal("two steps: device 1 host wait", device1["streams"][9]["idle"],
                 {"host_wait": 10000, "kernel_wait": 0, "other": 0})


def check_idle_split_reasons(checks):
    """The two one-stream cases where HTA's idle split and kinetrace's still differ."""
    def kernel(name, start, end, correlation):  # nanoseconds, device 0, stream 7
        return hta.GpuOp(name, "kernel", start, end, 0, 7, correlation)

    boundary = [kernel("a", 10_000, 20_000, 1), kernel("b", 25_000, 30_000, 2)]
    calls = {1: hta.Call("cudaLaunchKernel", 0, 2_000, 1),
             2: hta.Call("cudaLaunchKernel", 20_000, 22_000, 2)}
    checks.equal("call at the previous op's end: HTA's other",
                 hta.idle_breakdown_of_stream(boundary, calls),
                 {"host_wait": 0, "kernel_wait": 0, "other": 5000})
    if not hta.idle_split_mismatch(hta.by_stream(boundary), boundary, calls):
        checks.failures.append("call at the previous op's end: not marked as differing by definition")
    short = [kernel("a", 0, 1_000, 1), kernel("b", 1_020, 2_000, 0)]
    if not hta.short_gap_mismatch(short, {1: calls[1]}):
        checks.failures.append("20 ns gap with no known call: not marked as differing by definition")


def check_hand_report(checks, work, path, trace):
    rows = hta.comparison_rows(trace, ONE_STREAM_REPORT, path, 0.01)
    for r in rows:
        if r.status == hta.DISAGREE:
            checks.failures.append(f"hand report: {r.metric}: HTA {r.hta}, kinetrace {r.kinetrace}")
    for metric in ("device 0 host wait", "device 0 kernel wait", "device 0 other",
                   "device 0 stream 7 queue length max", "device 0 GPU span (first op to last)"):
        checks.status(rows, metric, hta.AGREE)
    for metric in ("device 0 GPU span vs window", "device 0 host wait without launch",
                   "launch delay total", "short kernels"):
        checks.status(rows, metric, hta.BY_DEFINITION)
    checks.row(rows, "device 0 kernel wait", 20, 20)
    checks.row(rows, "device 0 other", 10000, 10000)
    report = os.path.join(work, "one_stream.analyze.json")
    with open(report, "w") as f:
        json.dump(ONE_STREAM_REPORT, f)
    script = os.path.join(HERE, "hta_reference.py")
    result = subprocess.run([sys.executable, script, path, "--analyze-json", report],
                            capture_output=True, text=True)
    checks.equal("command on the hand report: exit status", result.returncode, 0)
    changed = json.loads(json.dumps(ONE_STREAM_REPORT))
    changed["ranks"][0]["devices"][0]["time"]["busy_ns"] += 1000
    with open(report, "w") as f:
        json.dump(changed, f)
    result = subprocess.run([sys.executable, script, path, "--analyze-json", report],
                            capture_output=True, text=True)
    checks.equal("command with busy_ns off by 1 us: exit status", result.returncode, 1)
    if "DISAGREE" not in result.stdout:
        checks.failures.append("command with busy_ns off: no DISAGREE row printed")


def kinetrace_rows(kinetrace, work, path, trace):
    out = path + ".analyze.json"
    result = subprocess.run([kinetrace, "analyze", "-q", path, "--json", out],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"kinetrace analyze {path}: {result.stderr.strip()}")
    return hta.comparison_rows(trace, hta.load_json(out), path, 0.01)


def check_with_kinetrace(checks, kinetrace, work, traces):
    expected_statuses = {
        "one_stream.json": {"device 0 host wait": hta.AGREE,
                            "device 0 kernel wait": hta.AGREE,
                            "device 0 other": hta.AGREE,
                            "device 0 stream 7 queue length max": hta.AGREE,
                            "device 0 host wait without launch": hta.BY_DEFINITION},
        "two_streams.json": {"device 0 COMPUTATION overlapping COMMUNICATION": hta.AGREE,
                             "device 0 COMMUNICATION (+ overlapping MEMORY)": hta.AGREE,
                             "device 0 COMMUNICATION, all of it": hta.BY_DEFINITION,
                             "device 0 host wait": hta.BY_DEFINITION,
                             "device 0 other": hta.BY_DEFINITION,
                             "device 0 stream 7 queue length max": hta.AGREE,
                             "device 0 stream 20 queue length max": hta.AGREE},
        "two_steps.json": {"device 0 compute": hta.BY_DEFINITION,
                           "device 0 compute [kinetrace's classes]": hta.AGREE,
                           "device 1 host wait": hta.AGREE,
                           "GPU operations analyzed": hta.BY_DEFINITION,
                           "launches with a known call": hta.BY_DEFINITION},
    }
    expected_values = {"one_stream.json": {"device 0 kernel wait": (20, 20),
                                           "device 0 other": (10000, 10000)}}
    for name, (path, trace) in traces.items():
        rows = kinetrace_rows(kinetrace, work, path, trace)
        print(f"--- {name} against kinetrace")
        hta.print_rows(rows, sys.stdout)
        for r in rows:
            if r.status == hta.DISAGREE:
                checks.failures.append(f"{name}: {r.metric}: HTA {r.hta}, kinetrace {r.kinetrace}")
        for metric, status in expected_statuses[name].items():
            checks.status(rows, metric, status)
        for metric, (hta_value, kinetrace_value) in expected_values.get(name, {}).items():
            checks.row(rows, metric, hta_value, kinetrace_value)
        statuses = collections.Counter(r.status for r in rows)
        print(f"{name}: {statuses[hta.AGREE]} rows agree, {statuses[hta.BY_DEFINITION]} differ "
              f"by definition, {statuses[hta.DISAGREE]} disagree")


def main():
    checks = Checks()
    with tempfile.TemporaryDirectory() as work:
        traces = {}
        for name, document in (("one_stream.json", ONE_STREAM), ("two_streams.json", TWO_STREAMS),
                               ("two_steps.json", TWO_STEPS)):
            path = write_trace(work, name, document)
            traces[name] = (path, hta.read_trace(path))
        check_one_stream(checks, traces["one_stream.json"][1])
        check_two_streams(checks, traces["two_streams.json"][1])
        check_two_steps(checks, traces["two_steps.json"][1])
        check_idle_split_reasons(checks)
        check_hand_report(checks, work, *traces["one_stream.json"])
        kinetrace = os.environ.get("KINETRACE_BIN")
        if kinetrace:
            check_with_kinetrace(checks, kinetrace, work, traces)
        else:
            print("KINETRACE_BIN not set: kinetrace's own figures not checked")
    for failure in checks.failures:
        print(f"FAIL {failure}")
    print("hta_reference selftest: " + ("FAILED" if checks.failures else "passed"))
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
