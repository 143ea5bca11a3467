#!/usr/bin/env python3
"""Checks metrics_check.py on synthetic traces of metrics_phases and of a training loop: a
trace as kinetrace should write it passes; each way the proof can go wrong (samples lost,
corrupted or silently missing, a phase not bound as expected, a kernel without its metrics,
a track absent, a unit wrong, the window poorly covered, analyze not naming a bound) fails
exactly the checks that say so; gzip is read; an unreadable trace exits 2.

    metrics_check_selftest.py [--kinetrace PATH]

With --kinetrace, the training loop's traces also go through the real `kinetrace analyze
--json`, so that the checker reads what analyze writes, not what this file imagines."""

import argparse
import copy
import gzip
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "metrics_check.py")
INTERVAL_US = 1000.0
PHASE_US = 100_000.0
SETUP_US = 50_000.0
HOST = 4242
METRICS = [("TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput"),
           ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput"),
           ("sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed", "Tensor pipe active"),
           ("gr__cycles_active.avg.pct_of_peak_sustained_elapsed", "GR active")]
# Display name -> value, per phase (what the H200 showed, roughly).
VALUES = {
    "copy": {"DRAM throughput": 82.0, "SM throughput": 6.0, "Tensor pipe active": 0.0, "GR active": 99.0},
    "fma": {"DRAM throughput": 0.5, "SM throughput": 94.6, "Tensor pipe active": 0.0, "GR active": 99.5},
    "gemm": {"DRAM throughput": 30.0, "SM throughput": 70.0, "Tensor pipe active": 93.5, "GR active": 99.8},
    "idle": {"DRAM throughput": 0.0, "SM throughput": 0.0, "Tensor pipe active": 0.0, "GR active": 0.0},
}
KERNELS = {"copy": "copyPhaseKernel", "fma": "fmaPhaseKernel",
           "gemm": "nvjet_sm90_tst_256x128_64x4_2x1_v_bz_coopA_NNT"}
GEMM = KERNELS["gemm"]


def counter(pid, name, ts, value, unit="%"):
    return {"ph": "C", "cat": "gpu_metric", "name": name, "pid": pid, "tid": 1 << 30, "ts": ts,
            "args": {unit: value}}


def kernel(name, ts, dur, values, pid=0):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": pid, "tid": 7, "ts": ts, "dur": dur,
            "args": {"stream": 7, "correlation": int(ts), **{f"{n} ({'%'})": v for n, v in values.items()}}}


def trace_of(events, samples, end_us, start_us=0.0):
    return {"schemaVersion": 1, "traceEvents": events,
            "kinetrace_gpu_metrics": {"metrics": [{"name": n, "display_name": d, "unit": "%"} for n, d in METRICS],
                                      "interval_ns": int(INTERVAL_US * 1000), "samples": samples, "lost": 0,
                                      "corrupted": 0, "setup_dropped": 1, "kernels_without_their_samples": 0},
            "kinetrace_window_start_ns": int(start_us * 1000), "kinetrace_window_stop_ns": int(end_us * 1000)}


def phases_trace(rounds=2):
    """Set-up, then copy, fma, gemm, idle ranges back to back; a sample every interval from
    20 ms on, valued as the phase its middle falls in; kernels of 5 ms through each busy phase."""
    events, spans, t = [], [], SETUP_US
    for _ in range(rounds):
        for phase in ("copy", "fma", "gemm", "idle"):
            events.append({"ph": "X", "cat": "user_annotation", "name": phase, "pid": HOST, "tid": HOST,
                           "ts": t, "dur": PHASE_US, "args": {"External id": len(events)}})
            spans.append((t, t + PHASE_US, phase))
            if phase != "idle":
                k = t + 10.0
                while k + 5000.0 <= t + PHASE_US - 10.0:
                    events.append(kernel(KERNELS[phase], k, 5000.0, VALUES[phase]))
                    k += 5000.0
            t += PHASE_US
    end = t + 10_000.0
    ts, samples = 20_000.0, 0
    while ts + INTERVAL_US <= end:
        middle = ts + INTERVAL_US / 2
        phase = next((p for b, e, p in spans if b <= middle < e), "idle")
        for _, name in METRICS:
            events.append(counter(0, name, ts, VALUES[phase][name]))
        samples += 1
        ts += INTERVAL_US
    return trace_of(events, samples, end)


def samples_of(t, name=None):
    return [e for e in t["traceEvents"] if e.get("cat") == "gpu_metric" and (name is None or e["name"] == name)]


def in_phase(t, phase, round_index=0):
    r = [e for e in t["traceEvents"] if e.get("cat") == "user_annotation" and e["name"] == phase][round_index]
    return r["ts"], r["ts"] + r["dur"]


def set_samples(t, phase, name, value):
    begin, end = in_phase(t, phase)
    for e in samples_of(t, name):
        if begin <= e["ts"] < end:
            e["args"]["%"] = value


def hole(t, count=5):
    begin, _ = in_phase(t, "fma")
    starts = sorted({e["ts"] for e in samples_of(t) if e["ts"] >= begin + 20_000})[:count]
    t["traceEvents"] = [e for e in t["traceEvents"] if not (e.get("cat") == "gpu_metric" and e["ts"] in starts)]
    t["kinetrace_gpu_metrics"]["samples"] -= count


def hole_counted(t):
    hole(t)
    t["kinetrace_gpu_metrics"]["lost"] = 5


def no_gr_track(t):
    t["traceEvents"] = [e for e in t["traceEvents"] if e.get("name") != "GR active"]


def wrong_unit(t):
    e = samples_of(t, "SM throughput")[3]
    e["args"] = {"percent": e["args"]["%"]}


def strip_fma_args(t):
    for e in t["traceEvents"]:
        if e.get("name") == "fmaPhaseKernel":
            e["args"] = {"stream": 7}


def gemm_kernel_low(t):
    for e in t["traceEvents"]:
        if e.get("name") == GEMM:
            e["args"]["Tensor pipe active (%)"] = 12.0


def out_of_range(t):
    samples_of(t, "SM throughput")[0]["args"]["%"] = 250.0  # in the set-up, before any phase


def no_idle_ranges(t):
    t["traceEvents"] = [e for e in t["traceEvents"] if not (e.get("cat") == "user_annotation" and e["name"] == "idle")]


def kernel_in_idle(t):
    begin, _ = in_phase(t, "idle")
    t["traceEvents"].append(kernel("strayKernel", begin + 1000.0, 10.0, VALUES["idle"]))


def minor_gemm_helper(t):
    """cuBLAS adds a short reduction kernel after each GEMM: too little time to be judged."""
    for e in [e for e in t["traceEvents"] if e.get("name") == GEMM]:
        t["traceEvents"].append(kernel("splitKreduce_kernel", e["ts"] + e["dur"] - 100.0, 50.0, VALUES["idle"]))
        e["dur"] -= 100.0


def set_meta(key, value):
    def mutate(t):
        t["kinetrace_gpu_metrics"][key] = value
    return mutate


def window_start(t):
    t["kinetrace_window_start_ns"] = -3 * t["kinetrace_window_stop_ns"]


def no_metadata(t):
    del t["kinetrace_gpu_metrics"]


def no_change(t):
    pass


def chain(*mutations):
    def mutate(t):
        for m in mutations:
            m(t)
    return mutate


ALL_PHASES = ["phase copy as expected (memory)", "phase fma as expected (compute)", "phase gemm as expected (tensor)",
              "phase idle as expected (idle)"]
SAMPLES_EQUAL = "metadata's samples equal the samples in the file"
PHASE_CASES = [
    ("phases trace as it should be", no_change, []),
    ("samples lost", set_meta("lost", 2), ["no samples lost"]),
    ("samples corrupted", set_meta("corrupted", 1), ["no samples corrupted"]),
    ("samples missing, not counted", hole, ["no hole in the samples beyond the counted losses"]),
    ("samples missing, counted as lost", hole_counted, ["no samples lost"]),
    ("copy phase not memory bound", lambda t: set_samples(t, "copy", "DRAM throughput", 30.0),
     ["phase copy as expected (memory)"]),
    ("fma phase reads DRAM", lambda t: set_samples(t, "fma", "DRAM throughput", 50.0), ["phase fma as expected (compute)"]),
    ("idle phase busy", lambda t: set_samples(t, "idle", "GR active", 50.0), ["phase idle as expected (idle)"]),
    ("GEMM kernel without tensor use", gemm_kernel_low, [f"kernel {GEMM[:37]}... in gemm as expected (tensor)"]),
    ("a short helper kernel in the GEMM phase", minor_gemm_helper, []),
    ("FMA kernels without metrics", strip_fma_args, ["kernel fmaPhaseKernel in fma as expected (compute)"]),
    ("no GR active track", no_gr_track, ["a counter track per default metric on every GPU with kernels",
                                         SAMPLES_EQUAL] + ALL_PHASES),
    ("a counter keyed by another unit", wrong_unit,
     ["metric counters well formed (pid, tid 1<<30, one unit-keyed number)", SAMPLES_EQUAL]),
    ("metadata counts one sample too many", set_meta("samples", 10**6), [SAMPLES_EQUAL]),
    ("a value above 110%", out_of_range, ["metric values in range"]),
    ("window four times the samples", window_start, ["samples cover at least 80% of the window"]),
    ("no idle ranges", no_idle_ranges, ["an NVTX range for every phase", "phase idle as expected (idle)"]),
    ("a kernel in the idle phase", kernel_in_idle, ["no kernels in the idle phase"]),
    ("recorded without metrics", no_metadata, ["kinetrace_gpu_metrics present"]),
    ("lost and a busy idle phase", chain(set_meta("lost", 1), lambda t: set_samples(t, "idle", "SM throughput", 40.0)),
     ["no samples lost", "phase idle as expected (idle)"]),
]


def training_trace(tensor=90.0):
    """Kernels of a training loop over 200 ms: a bf16 GEMM, a softmax, an Adam step."""
    kinds = [("nvjet_sm90_tst_bf16_gemm", {"DRAM throughput": 25.0, "SM throughput": 60.0,
                                           "Tensor pipe active": tensor, "GR active": 99.0}),
             ("cunn_SoftMaxForward<4, float>", {"DRAM throughput": 85.0, "SM throughput": 30.0,
                                                 "Tensor pipe active": 0.0, "GR active": 99.0}),
             ("multi_tensor_apply_kernel<FusedAdam>", {"DRAM throughput": 40.0, "SM throughput": 20.0,
                                                       "Tensor pipe active": 0.0, "GR active": 99.0})]
    events, t = [], 0.0
    for _ in range(20):
        for name, values in kinds:
            events.append(kernel(name, t, 3000.0, values))
            t += 3000.0
    samples = 0
    ts = 0.0
    while ts < t:
        for _, name in METRICS:
            events.append(counter(0, name, ts, 50.0))
        samples += 1
        ts += INTERVAL_US
    return trace_of(events, samples, t)


def analyze_json(bounds):
    """The shape `kinetrace analyze --json` writes (the real one is checked by the --kinetrace case)."""
    return {"ranks": [{"rank": 0, "kernels": [{"name": n, "kind": "compute", "share": 0.3,
                                               "gpu_bound": {"bound": b, "described": b}}
                                              for n, b in bounds.items()]}]}


BOUND_CASES = [
    ("analyze names a memory- and a tensor-bound kernel", training_trace(),
     analyze_json({"nvjet_sm90_tst_bf16_gemm": "tensor", "cunn_SoftMaxForward<4, float>": "memory"}), []),
    ("analyze gives no bound", training_trace(), {"ranks": [{"kernels": [{"name": "x"}]}]},
     ["analyze gives its kernels a bound", "a memory-bound kernel named (by analyze)",
      "a tensor-bound kernel named (by analyze)"]),
    ("a bound not where analyze writes it", training_trace(),
     {"ranks": [{"kernels": [{"name": "nvjet_sm90_tst_bf16_gemm", "bound": "tensor"}]}]},
     ["analyze gives its kernels a bound", "a memory-bound kernel named (by analyze)",
      "a tensor-bound kernel named (by analyze)"]),
    ("analyze's names shortened", training_trace(),
     analyze_json({"nvjet_sm90_tst_bf16_gemm": "tensor", "cunn_SoftMaxForward": "memory"}), []),
    ("only a step is memory bound, no kernel", training_trace(),
     dict(analyze_json({"nvjet_sm90_tst_bf16_gemm": "tensor"}), steps=[{"name": "step 3", "bound": "memory"}]),
     ["a memory-bound kernel named (by analyze)"]),
    ("analyze names no memory-bound kernel", training_trace(),
     analyze_json({"nvjet_sm90_tst_bf16_gemm": "tensor", "cunn_SoftMaxForward<4, float>": "neither"}),
     ["a memory-bound kernel named (by analyze)"]),
]

# The same traces through the real `kinetrace analyze --json` (with --kinetrace).
REAL_ANALYZE_CASES = [
    ("real analyze names a memory- and a tensor-bound kernel", training_trace(), []),
    ("real analyze: GEMMs off the tensor cores", training_trace(tensor=10.0),
     ["a tensor-bound kernel named (by analyze)"]),
]


def run(path, extra=()):
    result = subprocess.run([sys.executable, CHECKER, path, *extra], capture_output=True, text=True)
    failed = [line[5:].split(": ")[0] for line in result.stdout.splitlines() if line.startswith("FAIL ")]
    return result.returncode, failed, result.stdout + result.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kinetrace", help="the kinetrace program, for the real analyze cases")
    kinetrace = parser.parse_args().kinetrace
    problems = []

    def judge(description, result, expected, code=None):
        rc, failed, output = result
        want = code if code is not None else (1 if expected else 0)
        ok = sorted(failed) == sorted(expected) and rc == want
        print(f"{'ok  ' if ok else 'BAD '} {description}: exit {rc}, failed {failed}")
        if not ok:
            problems.append(description)
            print(f"expected exit {want}, failed {expected}\n{output}")

    with tempfile.TemporaryDirectory() as tmp:
        base = phases_trace()
        path = os.path.join(tmp, "trace.json")
        md = os.path.join(tmp, "phases.md")
        for description, mutate, expected in PHASE_CASES:
            t = copy.deepcopy(base)
            mutate(t)
            with open(path, "w") as f:
                json.dump(t, f)
            judge(description, run(path, ["--md", md]), expected)
        table = open(md).read()
        for needle in ("| phase | ranges | samples | DRAM | SM | tensor | GR |", "| copy | 2 |", "| idle | 2 |"):
            if needle not in table:
                problems.append(f"--md table lacks {needle!r}")
                print(f"BAD  --md table lacks {needle!r}:\n{table}")

        gz = os.path.join(tmp, "trace.json.gz")
        with gzip.open(gz, "wt") as f:
            json.dump(base, f)
        judge("gzipped trace", run(gz), [])
        with open(path, "w") as f:
            f.write('{"traceEvents": [')
        judge("truncated trace", run(path), ["cannot load"], code=2)

        analyze_path = os.path.join(tmp, "analyze.json")
        for description, t, analyze, expected in BOUND_CASES:
            with open(path, "w") as f:
                json.dump(t, f)
            with open(analyze_path, "w") as f:
                json.dump(analyze, f)
            judge(description, run(path, ["--kernel-bounds", analyze_path]), expected)

        if kinetrace is None:
            print("skip real analyze cases: no --kinetrace given")
        for description, t, expected in REAL_ANALYZE_CASES if kinetrace else []:
            with open(path, "w") as f:
                json.dump(t, f)
            analyzed = subprocess.run([kinetrace, "analyze", "-q", path, "--json", analyze_path],
                                      capture_output=True, text=True)
            if analyzed.returncode != 0:
                problems.append(description)
                print(f"BAD  {description}: kinetrace analyze exited {analyzed.returncode}\n{analyzed.stderr}")
                continue
            judge(description, run(path, ["--kernel-bounds", analyze_path]), expected)

    print(f"{len(problems)} self-test case(s) misbehaved" if problems else "all self-test cases behaved")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
