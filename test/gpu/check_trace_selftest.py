#!/usr/bin/env python3
"""Self-test of check_trace.py without a GPU.

Builds, from a census manifest, the trace kinetrace is expected to write for it (the layout
of shared/TRACE_FORMAT.md), checks that check_trace.py passes it, then breaks it one way at
a time and checks that the matching check, and only a check, fails.

    python3 test/gpu/check_trace_selftest.py        exit 0 when every case behaves
    python3 test/gpu/check_trace_selftest.py --manifest census_manifest.json
        the same with a manifest launch_census wrote, to prove the two agree on its format
"""

import copy
import gzip
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_trace.py")

HOST_PID, HOST_TID = 4242, 4243
STREAM_IDS = {"0": 13, "1": 14, "legacy": 7}
BASE_NS = 1_700_000_000_000_000_000

MANIFEST = {
    "mode": "census",
    "device": 0,
    "ranges": ["census", "census/kernels", "census/graph", "census/copies", "census/memsets", "census/syncs"],
    "kernels": [
        {"name": "censusStreamZeroA", "count": 2, "range": "census/kernels", "api": "cudaLaunchKernel",
         "stream": "0", "grid": [2, 1, 1], "block": [128, 1, 1], "graph": False},
        {"name": "censusStreamOneA", "count": 1, "range": "census/kernels", "api": "cudaLaunchKernelExC",
         "stream": "1", "grid": [5, 1, 1], "block": [128, 1, 1], "graph": False},
        {"name": "censusLegacyDefault", "count": 1, "range": "census/kernels", "api": "cudaLaunchKernel",
         "stream": "legacy", "grid": [1, 1, 1], "block": [128, 1, 1], "graph": False},
        {"name": "censusGraphNodeA", "count": 1, "range": "census/graph", "api": "cudaGraphLaunch",
         "stream": "0", "grid": [4, 1, 1], "block": [128, 1, 1], "graph": True},
        {"name": "censusGraphNodeB", "count": 1, "range": "census/graph", "api": "cudaGraphLaunch",
         "stream": "0", "grid": [4, 1, 1], "block": [128, 1, 1], "graph": True},
    ],
    "memcpys": [
        {"direction": "HtoD", "bytes": 16384, "name": "Memcpy HtoD (Pageable -> Device)", "count": 2,
         "range": "census/copies", "api": "cudaMemcpyAsync", "stream": "0"},
        {"direction": "DtoH", "bytes": 8192, "name": "Memcpy DtoH (Device -> Pinned)", "count": 1,
         "range": "census/copies", "api": "cudaMemcpyAsync", "stream": "1"},
        {"direction": "DtoD", "bytes": 65536, "name": "Memcpy DtoD (Device -> Device)", "count": 1,
         "range": "census/copies", "api": "cudaMemcpyAsync", "stream": "0"},
    ],
    "memsets": [
        {"bytes": 32768, "name": "Memset (Device)", "count": 2, "range": "census/memsets",
         "api": "cudaMemsetAsync", "stream": "1"},
    ],
    "syncsAtLeast": {"Stream Sync": 1, "Context Sync": 1},
    "streamOrder": {
        "0": ["kernel censusStreamZeroA", "kernel censusStreamZeroA", "memcpy HtoD 16384", "memcpy DtoD 65536",
              "memcpy HtoD 16384"],
        "1": ["kernel censusStreamOneA", "memcpy DtoH 8192", "memset 32768", "memset 32768"],
        "legacy": ["kernel censusLegacyDefault"],
    },
    "allocations": {"mallocs": 1, "frees": 1},
}


def us(ns):
    return ns / 1000.0


def synthesize(manifest):
    """The trace kinetrace should write for this manifest."""
    events = []
    ext_ids = {name: 100 + i for i, name in enumerate(manifest["ranges"])}
    cursor = 1_000  # ns after base time
    correlation = 1
    ranges = []

    def launch(name, range_name, at_ns, ops):
        """One launch call at at_ns and its GPU ops (dicts without times), 5 us later."""
        nonlocal correlation
        corr = correlation
        correlation += 1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": HOST_PID, "tid": HOST_TID,
                       "ts": us(at_ns), "dur": us(2_000),
                       "args": {"cbid": 211, "correlation": corr, "External id": ext_ids[range_name]}})
        events.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": HOST_PID,
                       "tid": HOST_TID, "ts": us(at_ns)})
        gpu_ns = at_ns + 5_000
        for op in ops:
            stream = STREAM_IDS[op.pop("slot")]
            op.update({"ph": "X", "pid": 0, "tid": stream, "ts": us(gpu_ns), "dur": us(1_000)})
            op["args"].update({"correlation": corr, "device": 0, "context": 1, "stream": stream,
                               "External id": ext_ids[range_name]})
            events.append(op)
            events.append({"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 0,
                           "tid": stream, "ts": us(gpu_ns)})
            gpu_ns += 1_500

    # Launch order: each stream's operations in the manifest's streamOrder (the order the
    # program launched them in), graph launches last in their range.
    unused = {slot: list(ops) for slot, ops in manifest.get("streamOrder", {}).items()}

    def order_key(identity, slot):
        ops = unused.get(slot, [])
        if identity in ops:
            i = ops.index(identity)
            ops[i] = None
            return i
        return len(ops)

    for range_name in manifest["ranges"][1:]:
        start = cursor
        at = cursor + 1_000
        pending = []  # (order key, api, ops)
        graph_ops = []
        for k in manifest["kernels"]:
            if k["range"] != range_name:
                continue
            for _ in range(k["count"]):
                op = {"cat": "kernel", "name": k["name"], "slot": k["stream"],
                      "args": {"grid": k["grid"], "block": k["block"], "queued": 0}}
                if k["graph"]:
                    graph_ops.append(op)
                else:
                    pending.append((order_key(f"kernel {k['name']}", k["stream"]), k["api"], [op]))
        for m in manifest["memcpys"]:
            if m["range"] == range_name:
                for _ in range(m["count"]):
                    pending.append((order_key(f"memcpy {m['direction']} {m['bytes']}", m["stream"]), m["api"],
                                    [{"cat": "gpu_memcpy", "name": m["name"], "slot": m["stream"],
                                      "args": {"bytes": m["bytes"]}}]))
        for m in manifest["memsets"]:
            if m["range"] == range_name:
                for _ in range(m["count"]):
                    pending.append((order_key(f"memset {m['bytes']}", m["stream"]), m["api"],
                                    [{"cat": "gpu_memset", "name": m["name"], "slot": m["stream"],
                                      "args": {"bytes": m["bytes"]}}]))
        if graph_ops:
            pending.append((float("inf"), "cudaGraphLaunch", graph_ops))
        for _, api, ops in sorted(pending, key=lambda p: p[0]):
            launch(api, range_name, at, ops)
            at += 10_000
        if range_name == "census/syncs":
            for name in (n for n, count in manifest["syncsAtLeast"].items() for _ in range(count)):
                events.append({"ph": "X", "cat": "cuda_sync", "name": name, "pid": 0, "tid": STREAM_IDS["0"],
                               "ts": us(at), "dur": us(500), "args": {"stream": STREAM_IDS["0"], "correlation": 0,
                                                                     "device": 0, "context": 1}})
                at += 1_000
            for sign in (1, -1):
                events.append({"ph": "i", "s": "t", "name": "[memory]", "pid": HOST_PID, "tid": HOST_TID,
                               "ts": us(at), "args": {"Bytes": sign * 1048576, "Device Id": 0}})
                at += 1_000
        ranges.append((range_name, start, at + 20_000))
        cursor = at + 21_000
    ranges.insert(0, (manifest["ranges"][0], 0, cursor))
    for name, start, end in ranges:
        events.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": HOST_PID, "tid": HOST_TID,
                       "ts": us(start), "dur": us(end - start), "args": {"External id": ext_ids[name]}})
    events.append({"ph": "C", "name": "loss", "pid": HOST_PID, "ts": us(50), "args": {"loss": 1.5}})
    events.append({"ph": "M", "name": "process_name", "pid": HOST_PID, "args": {"name": "census"}})
    events.append({"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}})
    events.append({"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": HOST_TID,
                   "args": {"name": f"thread {HOST_TID} (main)"}})
    for stream in STREAM_IDS.values():
        events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": stream, "args": {"name": f"stream {stream}"}})

    device = {"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150_000_000_000, "computeMajor": 9,
              "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
              "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132,
              "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448,
              "sharedMemPerMultiprocessor": 233472}
    return {"schemaVersion": 1, "deviceProperties": [device],
            "distributedInfo": {"rank": 0, "world_size": 1, "backend": "nccl"},
            "cupti_version": 130001, "displayTimeUnit": "ms", "baseTimeNanoseconds": BASE_NS,
            "kinetrace_cupti_dropped_records": 0, "kinetrace_gpu_ops_before_launch": 0,
            "kinetrace_out_of_window_events": 0, "traceEvents": events, "traceName": "synthetic.json"}


def find(trace, **match):
    for e in trace["traceEvents"]:
        if all(e.get(k) == v for k, v in match.items()):
            return e
    raise KeyError(match)


def launch_for(trace, op):
    return next(e for e in trace["traceEvents"]
                if e.get("cat") == "cuda_runtime" and e["args"]["correlation"] == op["args"]["correlation"])


# Each case: (description, mutation of the trace, extra arguments, checks that must fail).
def drop_kernel(t):
    op = find(t, cat="kernel", name="censusStreamZeroA")
    t["traceEvents"].remove(op)
    t["traceEvents"].remove(find(t, ph="f", id=op["args"]["correlation"]))


def kernel_before_launch(t):
    op = find(t, cat="kernel", name="censusStreamOneA")
    flow_end = find(t, ph="f", id=op["args"]["correlation"])
    op["ts"] = flow_end["ts"] = launch_for(t, op)["ts"] - 1.0


def crossing_ranges(t):
    r = find(t, cat="user_annotation", name="census/graph")
    r["dur"] += 30.0  # now ends inside the next range


def flow_without_bp(t):
    del find(t, ph="f")["bp"]


def orphan_flow_end(t):
    t["traceEvents"].append({"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": 99999, "pid": 0,
                             "tid": STREAM_IDS["0"], "ts": find(t, cat="kernel")["ts"]})


def distributed_info_last(t):
    info = t.pop("distributedInfo")
    t["distributedInfo"] = info


def wrong_external_id(t):
    find(t, cat="gpu_memcpy")["args"]["External id"] = 101


def drops(t):
    t["kinetrace_cupti_dropped_records"] = 12


def unnamed_stream(t):
    t["traceEvents"].remove(find(t, ph="M", name="thread_name", tid=STREAM_IDS["1"]))


def mixed_streams(t):
    op = find(t, cat="kernel", name="censusStreamZeroA")
    op["tid"] = op["args"]["stream"] = 21
    find(t, ph="f", id=op["args"]["correlation"])["tid"] = 21
    t["traceEvents"].append({"ph": "M", "name": "thread_name", "pid": 0, "tid": 21, "args": {"name": "stream 21"}})


def string_ts(t):
    op = find(t, cat="kernel")
    op["ts"] = str(op["ts"])


def wrong_copy_kind(t):
    find(t, cat="gpu_memcpy", name="Memcpy HtoD (Pageable -> Device)")["name"] = "Memcpy HtoD (Pinned -> Device)"


def extra_memset(t):
    m = copy.deepcopy(find(t, cat="gpu_memset"))
    m["ts"] += 0.5
    m["dur"] = 0.1
    t["traceEvents"].append(m)


def missing_dropped_counter(t):
    del t["kinetrace_cupti_dropped_records"]


def swapped_on_stream(t):
    """The first pageable copy on stream 0 and the device-to-device copy after it swap places."""
    a = find(t, cat="gpu_memcpy", name="Memcpy HtoD (Pageable -> Device)")
    b = find(t, cat="gpu_memcpy", name="Memcpy DtoD (Device -> Device)")
    fa, fb = find(t, ph="f", id=a["args"]["correlation"]), find(t, ph="f", id=b["args"]["correlation"])
    a["ts"], b["ts"] = b["ts"], a["ts"]
    fa["ts"], fb["ts"] = fb["ts"], fa["ts"]


def no_change(t):
    pass


CASES = [
    ("census trace as kinetrace should write it", no_change, [], []),
    ("a kernel missing", drop_kernel, [], ["each kernel appears exactly as often as launched", "no unexpected kernels"]),
    ("a kernel before its launch", kernel_before_launch, [], ["GPU ops start at or after their launch call"]),
    ("host ranges crossing", crossing_ranges, [], ["host slices nest per (pid, tid)"]),
    ("flow end without bp", flow_without_bp, [], ['flow ends have "bp":"e"']),
    ("flow end without start", orphan_flow_end, [], ["every flow end has a start with its id"]),
    ("distributedInfo after traceEvents", distributed_info_last, [], ["distributedInfo before traceEvents, with rank"]),
    ("op linked to the wrong range", wrong_external_id, [], ["GPU ops linked to the range that launched them"]),
    ("drops reported", drops, [], ["no CUPTI drops"]),
    ("drops expected but none", no_change, ["--expect-drops"], ["CUPTI drops reported (expected)"]),
    ("drops expected and reported", drops, ["--expect-drops"], []),
    ("stream without thread_name", unnamed_stream, [], ["thread_name for every (pid, tid)"]),
    ("one stream's ops on two ids", mixed_streams, [], ["ops of each stream share one stream id",
                                                        "the two created streams and the legacy stream have distinct ids",
                                                        "graph kernels on the graph's launch stream"]),
    ("ts as a string", string_ts, [], ["X events have numeric ts, dur >= 0, string name/cat, integer pid/tid",
                                       "ts numeric and relative to baseTimeNanoseconds (none negative)",
                                       "every flow event lies inside a slice of its track",
                                       "launch -> GPU op flows present"]),
    ("pageable copy named pinned", wrong_copy_kind, [], ["copy names give the memory kinds (Pageable/Pinned/Device)"]),
    # The copy shares its original's launch, but no arrow ends at it.
    ("one memset too many", extra_memset, [], ["memsets appear exactly as often as issued",
                                               "launch -> GPU op flows present"]),
    ("a stream's ops out of launch order", swapped_on_stream, [], ["each stream's ops in launch order",
                                                                    "GPU ops start at or after their launch call"]),
    ("dropped-records counter absent", missing_dropped_counter, [], ["kinetrace_cupti_dropped_records present"]),
]


def run_checker(trace_path, manifest_path, extra):
    command = [sys.executable, CHECKER, trace_path] + ([manifest_path] if manifest_path else []) + extra
    result = subprocess.run(command, capture_output=True, text=True)
    failed = [line[len("FAIL "):].split(": ")[0] for line in result.stdout.splitlines() if line.startswith("FAIL ")]
    return result.returncode, failed, result.stdout


def main():
    manifest = MANIFEST
    if len(sys.argv) == 3 and sys.argv[1] == "--manifest":
        with open(sys.argv[2]) as f:
            manifest = json.load(f)
    elif len(sys.argv) != 1:
        print(__doc__)
        return 2
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        manifest_path = os.path.join(tmp, "manifest.json")
        with open(manifest_path, "w") as f:
            json.dump(manifest, f)
        base = synthesize(manifest)
        for description, mutate, extra, expected in CASES:
            trace = copy.deepcopy(base)
            mutate(trace)
            path = os.path.join(tmp, "trace.json")
            with open(path, "w") as f:
                json.dump(trace, f)
            code, failed, output = run_checker(path, manifest_path, extra)
            ok = sorted(failed) == sorted(expected) and code == (1 if expected else 0)
            print(f"{'ok  ' if ok else 'BAD '} {description}: exit {code}, failed {failed}")
            if not ok:
                problems.append(description)
                print(output)

        # The same passing trace gzipped, and checked without a manifest.
        gz = os.path.join(tmp, "trace.json.gz")
        with gzip.open(gz, "wt") as f:
            json.dump(base, f)
        for description, manifest in (("gzipped trace", manifest_path), ("format checks only", None)):
            code, failed, output = run_checker(gz, manifest, [])
            ok = code == 0 and not failed
            print(f"{'ok  ' if ok else 'BAD '} {description}: exit {code}, failed {failed}")
            if not ok:
                problems.append(description)
                print(output)

        # Flood mode: some kernels lost, drops reported.
        flood_trace = synthesize({"ranges": ["outer", "flood"], "memcpys": [], "memsets": [], "syncsAtLeast": {},
                                  "kernels": [{"name": "censusFlood", "count": 8, "range": "flood",
                                               "api": "cudaLaunchKernel", "stream": "0", "grid": [1, 1, 1],
                                               "block": [32, 1, 1], "graph": False}]})
        flood_trace["kinetrace_cupti_dropped_records"] = 5
        flood_path = os.path.join(tmp, "flood.json")
        with open(flood_path, "w") as f:
            json.dump(flood_trace, f)
        for description, launched, expected in (("flood, some kernels dropped", 13, []),
                                                ("flood, more kernels than launched", 5,
                                                 ["flood kernels in trace, no more than launched"])):
            flood_manifest = os.path.join(tmp, "flood_manifest.json")
            with open(flood_manifest, "w") as f:
                json.dump({"mode": "flood", "device": 0, "ranges": ["flood"], "floodKernel": "censusFlood",
                           "launched": launched}, f)
            code, failed, output = run_checker(flood_path, flood_manifest, ["--expect-drops"])
            ok = sorted(failed) == sorted(expected) and code == (1 if expected else 0)
            print(f"{'ok  ' if ok else 'BAD '} {description}: exit {code}, failed {failed}")
            if not ok:
                problems.append(description)
                print(output)

        path = os.path.join(tmp, "broken.json")
        with open(path, "w") as f:
            f.write('{"schemaVersion": 1, "traceEvents": [')
        code, failed, _ = run_checker(path, None, [])
        ok = code == 2
        print(f"{'ok  ' if ok else 'BAD '} truncated JSON: exit {code}")
        if not ok:
            problems.append("truncated JSON")

    print(f"{len(problems)} self-test case(s) misbehaved" if problems else "all self-test cases behaved")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
