#!/usr/bin/env python3
"""Self-test of check_trace.py without a GPU.

Builds, from a census manifest, the trace kinetrace is expected to write for it (the layout
src/output/trace_events.cpp and src/session/metadata.cpp write: header metadata before
traceEvents and footer metadata after it, the memory cap in
both; GPU operations, syncs and GPU spans on their stream's tracks and lanes; async-range
and CUPTI-overhead lanes; one arrow start per launch call), checks that check_trace.py
passes it, then breaks it one way at a time and checks that the matching check, and only
that, fails (and, for a check that must be skipped, that its INFO line says so).

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
    "memoryPools": {"created": 1, "destroyed": 1, "trimmed": 1},
}


def us(ns):
    return ns / 1000.0


# Track ids as src/output/trace_events.h gives them (restated here, not imported from the
# checker, so that the two are held to the writer independently).
OPS, SYNC, SPANS = 1, 2, 3
SUFFIX = {OPS: "", SYNC: " sync", SPANS: " annotations"}
ASYNC_BASE = 1 << 30
OVERHEAD_DEVICE_BASE = 1 << 30
CAP_BYTES = 64 << 20
ACTIVITIES_ON = "host,kernel,memcpy,memset,sync,memory,overhead,launch"  # as run_all.sh's census
ACTIVITIES_DEFAULT = "host,kernel,memcpy,memset,launch"
# A key the writer puts in both header and footer: in the synthesized trace the header copy
# is this prefix + key, and write_trace() writes it under the bare key, before traceEvents.
HEADER_COPY = "header copy:"


def gpu_tid(stream, kind, lane):
    if kind == OPS and lane == 0:
        return stream
    return (kind << 28) | (min(lane, 255) << 20) | (stream & 0xFFFFF)


def lane_suffix(lane):
    return "" if lane == 0 else f" ({lane + 1})"


def place_on_lanes(slices):
    """[(start, end, payload)] -> [(lane, payload)]: the first lane where the slice overlaps
    nothing, as kinetrace's LaneAllocator places them (slices may touch)."""
    lane_ends = []
    placed = []
    for start, end, payload in sorted(slices, key=lambda s: (s[0], -s[1])):
        lane = next((i for i, last in enumerate(lane_ends) if last <= start), len(lane_ends))
        if lane == len(lane_ends):
            lane_ends.append(end)
        lane_ends[lane] = end
        placed.append((lane, payload))
    return placed


def count_records(events):
    """kinetrace_record_counts for these events, kind by kind as kinetrace counts its records."""
    def n(predicate):
        return sum(1 for e in events if predicate(e))
    return {
        "ranges": n(lambda e: e["ph"] == "X" and e.get("cat") in ("user_annotation", "cpu_op")),
        "instants": n(lambda e: e["ph"] == "i" and e.get("cat") == "user_instant"),
        "counters": n(lambda e: e["ph"] == "C" and e.get("cat") != "gpu_metric"),
        "api_calls": n(lambda e: e["ph"] == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")),
        "kernels": n(lambda e: e["ph"] == "X" and e.get("cat") == "kernel"),
        "memcpys": n(lambda e: e["ph"] == "X" and e.get("cat") == "gpu_memcpy"),
        "memsets": n(lambda e: e["ph"] == "X" and e.get("cat") == "gpu_memset"),
        "syncs": n(lambda e: e["ph"] == "X" and e.get("cat") == "cuda_sync"),
        "memory": n(lambda e: e["ph"] == "i" and e.get("name") == "[memory]"),
        "overheads": n(lambda e: e["ph"] == "X" and e.get("cat") == "overhead"),
        "gpu_spans": n(lambda e: e["ph"] == "X" and e.get("cat") == "gpu_user_annotation"),
        "memory_pools": n(lambda e: e["ph"] == "i" and e.get("cat") == "gpu_memory_pool"),
        # A GPU metric sample is one counter per metric, at the sample's start.
        "metric_samples": len({(e["pid"], e["ts"]) for e in events if e.get("cat") == "gpu_metric"}),
    }


def synthesize(manifest):
    """The trace kinetrace should write for this manifest, recorded with
    KINETRACE_ACTIVITIES=default,sync,memory,overhead: header metadata, events, footer
    metadata, tracks and lanes as src/output/trace_events.cpp and src/session/metadata.cpp
    lay them out. Graph nodes overlap (as with programmatic dependent launch), so the graph's
    stream has a second lane; parent and child ranges' GPU spans overlap, so the annotation
    tracks have lanes too."""
    events = []
    ext_ids = {name: 100 + i for i, name in enumerate(manifest["ranges"])}
    cursor = 1_000  # ns after base time
    correlation = 1
    ranges = []
    gpu = []  # (event, kind, stream, launched) before tids are given
    op_ranges = []  # (range name, stream, start, end) for GPU spans

    def launch(name, range_name, at_ns, ops, graph=False):
        """One launch call at at_ns and its GPU ops (dicts without times), 5 us later."""
        nonlocal correlation
        corr = correlation
        correlation += 1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": HOST_PID, "tid": HOST_TID,
                       "ts": us(at_ns), "dur": us(2_000),
                       "args": {"cbid": 211, "correlation": corr, "External id": ext_ids[range_name]}})
        # One arrow start per call, however many operations it ran (a graph's nodes).
        events.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": HOST_PID,
                       "tid": HOST_TID, "ts": us(at_ns)})
        gpu_ns = at_ns + 5_000
        # Graph nodes overlap each other: the second goes on a lane of its own.
        dur = 2_000 if graph else 1_000
        for op in ops:
            stream = STREAM_IDS[op.pop("slot")]
            op.update({"ph": "X", "pid": 0, "ts": us(gpu_ns), "dur": us(dur)})
            op["args"].update({"correlation": corr, "device": 0, "context": 1, "stream": stream,
                               "External id": ext_ids[range_name]})
            gpu.append((op, OPS, stream, True))
            op_ranges.append((range_name, stream, gpu_ns, gpu_ns + dur))
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
            launch(api, range_name, at, ops, graph=api == "cudaGraphLaunch")
            at += 10_000
        if range_name == manifest["ranges"][-1]:
            # Synchronisations on their stream's sync track (a context-wide one: stream 0).
            for name in (n for n, count in manifest["syncsAtLeast"].items() for _ in range(count)):
                stream = 0 if name == "Context Sync" else STREAM_IDS["0"]
                gpu.append(({"ph": "X", "cat": "cuda_sync", "name": name, "pid": 0, "ts": us(at), "dur": us(500),
                             "args": {"stream": stream, "correlation": 0, "device": 0, "context": 1}},
                            SYNC, stream, False))
                at += 1_000
            for _ in range(manifest.get("allocations", {}).get("mallocs", 0) + manifest.get("allocations", {}).get("frees", 0)):
                events.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": HOST_PID,
                               "tid": HOST_TID, "ts": us(at), "args": {"Bytes": 1048576, "Device Id": 0}})
                at += 1_000
            # The census's pool: an instant per operation on the GPU's "memory pools" thread.
            for op, count in manifest.get("memoryPools", {}).items():
                for _ in range(count):
                    events.append({"ph": "i", "s": "t", "cat": "gpu_memory_pool",
                                   "name": "Memory pool " + op, "pid": 0, "tid": (1 << 30) + 1,
                                   "ts": us(at), "args": {"device": 0, "correlation": 0}})
                    at += 1_000
        ranges.append((range_name, start, at + 20_000))
        cursor = at + 21_000
    ranges.insert(0, (manifest["ranges"][0], 0, cursor))
    for name, start, end in ranges:
        events.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": HOST_PID, "tid": HOST_TID,
                       "ts": us(start), "dur": us(end - start), "args": {"External id": ext_ids[name]}})

    # GPU spans: per range and stream, from its first operation's start to its last's end,
    # counting the operations of the ranges nested in it.
    for name in manifest["ranges"]:
        per_stream = {}
        for op_range, stream, start, end in op_ranges:
            if op_range == name or op_range.startswith(name + "/"):
                low, high = per_stream.get(stream, (start, end))
                per_stream[stream] = (min(low, start), max(high, end))
        for stream, (start, end) in sorted(per_stream.items()):
            gpu.append(({"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": 0, "ts": us(start),
                         "dur": us(end - start), "args": {"External id": ext_ids[name]}}, SPANS, stream, False))

    # Tracks: each kind of track of each stream, lane by lane; arrows end on the op's lane.
    tracks = set()
    by_track = {}
    for event, kind, stream, launched in gpu:
        start = round(event["ts"] * 1000)
        by_track.setdefault((stream, kind), []).append((start, start + round(event["dur"] * 1000),
                                                        (event, launched)))
    for (stream, kind), slices in by_track.items():
        for lane, (event, launched) in place_on_lanes(slices):
            event["tid"] = gpu_tid(stream, kind, lane)
            tracks.add((stream, kind, lane))
            events.append(event)
            if launched:
                events.append({"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g",
                               "id": event["args"]["correlation"], "pid": 0, "tid": event["tid"], "ts": event["ts"]})

    # Async ranges (two overlap: two lanes) and CUPTI overhead (two overlap on the thread).
    for lane, (start, end) in enumerate(((2_000, 9_000), (3_000, 4_000))):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"prefetch {lane}", "pid": HOST_PID,
                       "tid": ASYNC_BASE + lane, "ts": us(start), "dur": us(end - start),
                       "args": {"External id": 900 + lane}})
    overheads = [(HOST_TID, "thread", HOST_TID, 0, 1_500, 3_000), (HOST_TID + (1 << 22), "thread", HOST_TID, 1, 2_000, 2_500),
                 (OVERHEAD_DEVICE_BASE + 0, "device", 0, 0, 1_500, 6_000)]
    for tid, what, object_id, lane, start, end in overheads:
        events.append({"ph": "X", "cat": "overhead", "name": "Activity buffer request", "pid": -1, "tid": tid,
                       "ts": us(start), "dur": us(end - start)})

    events.append({"ph": "C", "name": "loss", "pid": HOST_PID, "tid": HOST_TID, "ts": us(50), "args": {"loss": 1.5}})
    events.append({"ph": "M", "name": "process_name", "pid": HOST_PID, "args": {"name": "census"}})
    events.append({"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": HOST_TID,
                   "args": {"name": f"thread {HOST_TID} (main)"}})
    for lane in range(2):
        events.append({"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": ASYNC_BASE + lane,
                       "args": {"name": "async ranges" if lane == 0 else f"async ranges {lane + 1}"}})
    events.append({"ph": "M", "name": "process_name", "pid": -1, "args": {"name": "CUPTI overhead"}})
    for tid, what, object_id, lane, _, _ in overheads:
        events.append({"ph": "M", "name": "thread_name", "pid": -1, "tid": tid,
                       "args": {"name": f"CUPTI overhead ({what} {object_id}){lane_suffix(lane)}"}})
    events.append({"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}})
    for stream, kind, lane in sorted(tracks):
        events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": gpu_tid(stream, kind, lane),
                       "args": {"name": f"stream {stream}{SUFFIX[kind]}{lane_suffix(lane)}"}})
    if manifest.get("memoryPools"):
        events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": (1 << 30) + 1,
                       "args": {"name": "memory pools"}})

    device = {"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150_000_000_000, "computeMajor": 9,
              "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
              "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132,
              "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448,
              "sharedMemPerMultiprocessor": 233472}
    return {
        # header: before traceEvents
        "schemaVersion": 1,
        "distributedInfo": {"rank": 0, "world_size": 1, "local_rank": 0, "backend": "nccl"},
        "kinetrace_version": "0.1.0", "kinetrace_activities": ACTIVITIES_ON, "kinetrace_host_clock": "tsc",
        HEADER_COPY + "kinetrace_memory_cap_bytes": CAP_BYTES,
        "baseTimeNanoseconds": BASE_NS, "displayTimeUnit": "ms",
        "traceEvents": events,
        # footer: after it
        "deviceProperties": [device],
        "cupti_version": 130001, "cuda_runtime_version": 13000, "cuda_driver_version": 13000,
        "kinetrace_gpu_clock": "cupti_timestamp_callback", "kinetrace_gpu_status": "recording",
        "kinetrace_dropped_host_events": 0, "kinetrace_cupti_dropped_records": 0,
        "kinetrace_cupti_buffers_refused": 0, "kinetrace_cupti_records_undecoded": 0,
        "kinetrace_dropped_assembled_records": 0, "kinetrace_out_of_window_events": 0,
        "kinetrace_gpu_ops_before_launch": 0, "kinetrace_gpu_ops_without_launch": 0,
        "kinetrace_unfinished_ranges": 0,
        "kinetrace_record_counts": count_records(events),
        "kinetrace_window_start_ns": BASE_NS, "kinetrace_window_stop_ns": BASE_NS + cursor,
        "kinetrace_host_clock_drift_ns": -120,
        "kinetrace_memory_peak_bytes": 3 << 20, "kinetrace_memory_cap_bytes": CAP_BYTES,
        "kinetrace_gpu_clock_offset_bound_ns": {"low": -2000, "high": 5000, "meaning": "GPU minus host",
                                                "devices": [{"device": 0, "low": -2000, "high": 5000}]},
        "census_mode": "census",
        "traceName": "synthetic.json",
    }


def write_trace(path, trace):
    """Writes the trace as kinetrace does: one top-level key per line, a key of the header
    copied there under its bare name (so the file has it twice), gzipped for .gz paths."""
    lines = [f"  {json.dumps(k[len(HEADER_COPY):] if k.startswith(HEADER_COPY) else k)}: {json.dumps(v)}"
             for k, v in trace.items()]
    text = "{\n" + ",\n".join(lines) + "\n}\n"
    if path.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)


def find(trace, **match):
    for e in trace["traceEvents"]:
        if all(e.get(k) == v for k, v in match.items()):
            return e
    raise KeyError(match)


def launch_for(trace, op):
    return next(e for e in trace["traceEvents"]
                if e.get("cat") == "cuda_runtime" and e["args"]["correlation"] == op["args"]["correlation"])


# Each case: (description, mutation of the trace, extra arguments, checks that must fail[,
# INFO lines that must appear]). After the mutation the footer's record counts are redone
# from the events, as kinetrace counts what it writes, unless the mutation @breaks_counts.
def breaks_counts(mutation):
    mutation.breaks_counts = True
    return mutation


def remove(t, event):
    t["traceEvents"].remove(event)


def next_on_track(t, event):
    """The slice after `event` on its (pid, tid) track."""
    later = [e for e in t["traceEvents"] if e["ph"] == "X" and e["pid"] == event["pid"]
             and e["tid"] == event["tid"] and e["ts"] > event["ts"]]
    return min(later, key=lambda e: e["ts"])


def drop_kernel(t):
    """kinetrace lost a kernel: neither it nor its arrow is in the trace."""
    op = find(t, cat="kernel", name="censusStreamZeroA")
    remove(t, op)
    remove(t, find(t, ph="f", id=op["args"]["correlation"]))
    remove(t, find(t, ph="s", id=op["args"]["correlation"]))


def kernel_before_launch(t):
    op = find(t, cat="kernel", name="censusStreamOneA")
    flow_end = find(t, ph="f", id=op["args"]["correlation"])
    op["ts"] = flow_end["ts"] = launch_for(t, op)["ts"] - 1.0


def crossing_ranges(t):
    r = find(t, cat="user_annotation", name="census/graph")
    r["dur"] += 30.0  # now ends inside the next range


def clock_bound_without_devices(t):
    """The offset bound is given for the trace only, not for the device that ran the work."""
    del t["kinetrace_gpu_clock_offset_bound_ns"]["devices"]


def empty_device_clock_bound(t):
    t["kinetrace_gpu_clock_offset_bound_ns"]["devices"][0]["low"] = 6000


def overlap_on_gpu_track(t):
    """A kernel runs past the start of the next op on its lane, not past its end."""
    op = find(t, cat="kernel", name="censusStreamOneA")
    after = next_on_track(t, op)
    op["dur"] = after["ts"] - op["ts"] + after["dur"] / 2


def overlap_on_sync_track(t):
    """A second Stream Sync starts inside the first on the same sync track."""
    sync = find(t, cat="cuda_sync", name="Stream Sync")
    again = copy.deepcopy(sync)
    again["ts"] += sync["dur"] / 2
    t["traceEvents"].append(again)


def overlap_on_annotation_track(t):
    """A range's GPU span runs into the next span on its annotation lane."""
    spans = [e for e in t["traceEvents"] if e.get("cat") == "gpu_user_annotation"]
    span = next(s for s in spans if any(o["tid"] == s["tid"] and o["ts"] > s["ts"] for o in spans))
    after = next_on_track(t, span)
    span["dur"] = after["ts"] - span["ts"] + min(after["dur"], 0.001)


def overlap_on_overhead_track(t):
    o = find(t, cat="overhead", pid=-1, tid=HOST_TID)
    again = copy.deepcopy(o)
    again["ts"] += o["dur"] / 2
    t["traceEvents"].append(again)


def sync_on_ops_track(t):
    sync = find(t, cat="cuda_sync", name="Stream Sync")
    sync["tid"] = sync["args"]["stream"]


def op_on_other_streams_lane(t):
    """A kernel whose args say stream 13 sits on lane 2 of stream 14's operations."""
    op = find(t, cat="kernel", name="censusStreamZeroA")
    op["tid"] = find(t, ph="f", id=op["args"]["correlation"])["tid"] = (1 << 28) | (1 << 20) | STREAM_IDS["1"]


def lane_misnamed(t):
    find(t, ph="M", name="thread_name", args={"name": f"stream {STREAM_IDS['0']} (2)"})["args"]["name"] = "stream 13 sync (2)"


def flow_without_bp(t):
    del find(t, ph="f")["bp"]


def orphan_flow_end(t):
    kernel = find(t, cat="kernel")
    t["traceEvents"].append({"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": 99999, "pid": 0,
                             "tid": kernel["tid"], "ts": kernel["ts"]})


def flow_start_without_end(t):
    call = find(t, cat="cuda_runtime")
    t["traceEvents"].append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 99998, "pid": HOST_PID,
                             "tid": HOST_TID, "ts": call["ts"]})


def graph_arrow_started_twice(t):
    node = find(t, cat="kernel", name="censusGraphNodeB")
    t["traceEvents"].append(copy.deepcopy(find(t, ph="s", id=node["args"]["correlation"])))


def distributed_info_last(t):
    info = t.pop("distributedInfo")
    t["distributedInfo"] = info


def wrong_external_id(t):
    find(t, cat="gpu_memcpy")["args"]["External id"] = 101


def drops(t):
    t["kinetrace_cupti_dropped_records"] = 12


def host_drops(t):
    t["kinetrace_dropped_host_events"] = 3


def unnamed_stream(t):
    remove(t, find(t, ph="M", name="thread_name", tid=STREAM_IDS["1"]))


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


@breaks_counts
def counts_mismatch(t):
    t["kinetrace_record_counts"]["kernels"] += 1


@breaks_counts
def counts_absent(t):
    del t["kinetrace_record_counts"]


def peak_above_cap(t):
    """The footer's cap (the one read: the header's copy stays larger) is below the peak."""
    t["kinetrace_memory_cap_bytes"] = t["kinetrace_memory_peak_bytes"] - 1


def no_syncs_or_memory(t):
    for e in [e for e in t["traceEvents"] if e.get("cat") == "cuda_sync" or e.get("name") == "[memory]"
              or (e["ph"] == "M" and " sync" in str(e.get("args", {}).get("name")))]:
        remove(t, e)


def sync_and_memory_off(t):
    """Recorded with the default activities: no syncs and no [memory] events, as it should."""
    t["kinetrace_activities"] = ACTIVITIES_DEFAULT
    no_syncs_or_memory(t)


def activities_unstated(t):
    del t["kinetrace_activities"]
    no_syncs_or_memory(t)


def no_change(t):
    pass


GPU_METRICS = [("TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput", "%"),
               ("dram__bytes_read.sum.per_second", "DRAM read", "bytes/s")]


def with_gpu_metrics(t):
    """Sampled as `--gpu-metrics sm,dram_read` writes it: a counter per metric and sample on
    GPU 0's "GPU metrics" track, every 10 us over the kernels, and each kernel's averages."""
    kernels = [e for e in t["traceEvents"] if e.get("cat") == "kernel"]
    first = min(e["ts"] for e in kernels)
    last = max(e["ts"] + e["dur"] for e in kernels)
    samples, ts = 0, first
    while ts < last:
        for _, display, unit in GPU_METRICS:
            t["traceEvents"].append({"ph": "C", "cat": "gpu_metric", "name": display, "pid": 0, "tid": 1 << 30,
                                     "ts": ts, "args": {unit: 42.5 if unit == "%" else 1.5e12}})
        samples += 1
        ts += 10.0
    t["traceEvents"].append({"ph": "M", "name": "thread_name", "pid": 0, "tid": 1 << 30,
                             "args": {"name": "GPU metrics"}})
    for e in kernels:
        e["args"].update({"SM throughput (%)": 42.5, "DRAM read (bytes/s)": 1.5e12})
    t["kinetrace_gpu_metrics"] = {"metrics": [{"name": n, "display_name": d, "unit": u} for n, d, u in GPU_METRICS],
                                  "interval_ns": 10_000, "samples": samples, "lost": 0, "corrupted": 0,
                                  "setup_dropped": 1, "kernels_without_their_samples": 0}


def metric_counter(t):
    return find(t, cat="gpu_metric", name="DRAM read")


def metric_on_host(t):
    with_gpu_metrics(t)
    metric_counter(t)["pid"] = HOST_PID


def metric_off_its_track(t):
    with_gpu_metrics(t)
    metric_counter(t)["tid"] = STREAM_IDS["0"]


def metric_wrong_unit(t):
    with_gpu_metrics(t)
    metric_counter(t)["args"] = {"%": 3.0}


def metric_sample_missing(t):
    """One metric's counter of one sample is gone; the other metric's is still there."""
    with_gpu_metrics(t)
    remove(t, metric_counter(t))


def metric_track_unnamed(t):
    with_gpu_metrics(t)
    remove(t, find(t, ph="M", name="thread_name", tid=1 << 30, pid=0))


def metrics_undescribed(t):
    with_gpu_metrics(t)
    del t["kinetrace_gpu_metrics"]


def metric_arg_not_number(t):
    with_gpu_metrics(t)
    find(t, cat="kernel")["args"]["SM throughput (%)"] = "high"


def metrics_on_idle_gpu(t):
    """GPU 1 ran nothing but was sampled: its samples are on its own pid, named as a GPU."""
    with_gpu_metrics(t)
    for e in [e for e in t["traceEvents"] if e.get("cat") == "gpu_metric"]:
        t["traceEvents"].append(dict(e, pid=1, args=dict(e["args"])))
    t["traceEvents"].append({"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "GPU 1"}})
    t["traceEvents"].append({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1 << 30, "args": {"name": "GPU metrics"}})
    t["kinetrace_gpu_metrics"]["samples"] *= 2


@breaks_counts
def metric_samples_miscounted(t):
    with_gpu_metrics(t)
    t["kinetrace_record_counts"] = count_records(t["traceEvents"])
    t["kinetrace_record_counts"]["metric_samples"] += 1


METRIC_COUNTERS = "GPU metric counters on a GPU's metrics track, one number keyed by the unit"
SKIPPED = ["synchronisations recorded", "allocations and frees recorded as [memory] instants"]
NESTING = "every track's slices nest (no partial overlap on any (pid, tid))"
CASES = [
    ("census trace as kinetrace should write it", no_change, [], []),
    ("a kernel missing", drop_kernel, [], ["each kernel appears exactly as often as launched", "no unexpected kernels"]),
    ("a kernel before its launch", kernel_before_launch, [], ["GPU ops start at or after their launch call"]),
    ("no clock bound per device", clock_bound_without_devices, [], ["GPU clock offset bound per device"]),
    ("a device's clock bound empty", empty_device_clock_bound, [], ["GPU clock offset bound per device"]),
    ("host ranges crossing", crossing_ranges, [], [NESTING]),
    ("ops overlapping on one GPU lane", overlap_on_gpu_track, [], [NESTING]),
    ("syncs overlapping on a sync track", overlap_on_sync_track, [], [NESTING]),
    ("spans overlapping on an annotation track", overlap_on_annotation_track, [], [NESTING]),
    ("overhead overlapping on its track", overlap_on_overhead_track, [], [NESTING]),
    ("a sync on its stream's operations track", sync_on_ops_track, [],
     ["syncs on their stream's sync track (device/stream args match pid/tid)"]),
    ("an op on a lane of another stream", op_on_other_streams_lane, [],
     ["GPU ops on a lane of their stream (device/stream/correlation args match pid/tid)", "thread_name for every (pid, tid)"]),
    ("a lane named as another track", lane_misnamed, [], ["GPU, async and overhead tracks named after their tids"]),
    ("flow end without bp", flow_without_bp, [], ['flow ends have "bp":"e"']),
    ("flow end without start", orphan_flow_end, [], ["every flow end has a start with its id"]),
    ("flow start without end", flow_start_without_end, [], ["every flow start has at least one end"]),
    ("a graph launch starting two arrows", graph_arrow_started_twice, [], ["one flow start per id"]),
    ("distributedInfo after traceEvents", distributed_info_last, [], ["distributedInfo before traceEvents, with rank"]),
    ("op linked to the wrong range", wrong_external_id, [], ["GPU ops linked to the range that launched them"]),
    ("CUPTI drops reported", drops, [], ["no drops reported"]),
    ("host events dropped", host_drops, [], ["no drops reported"]),
    ("drops expected but none", no_change, ["--expect-drops"], ["drops reported (expected)"]),
    ("drops expected and reported", drops, ["--expect-drops"], []),
    ("drops expected, reported as host events", host_drops, ["--expect-drops"], []),
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
    ("record counts disagree with the events", counts_mismatch, [], ["kinetrace_record_counts agree with the events"]),
    ("record counts absent", counts_absent, [], ["kinetrace_record_counts agree with the events"]),
    ("memory peak above the cap", peak_above_cap, [], ["kinetrace_memory_peak_bytes <= kinetrace_memory_cap_bytes"]),
    ("sync and memory not recorded: their checks skipped", sync_and_memory_off, [], [], SKIPPED),
    ("syncs and [memory] missing though recorded", no_syncs_or_memory, [], SKIPPED),
    ("syncs and [memory] missing, activities unstated", activities_unstated, [], SKIPPED),
    ("GPU metrics sampled", with_gpu_metrics, [], []),
    ("GPU metrics on a GPU without work too", metrics_on_idle_gpu, [], []),
    ("a metric counter on the host process", metric_on_host, [], [METRIC_COUNTERS]),
    ("a metric counter off the metrics track", metric_off_its_track, [], [METRIC_COUNTERS]),
    ("a metric counter keyed by another unit", metric_wrong_unit, [], [METRIC_COUNTERS]),
    ("a metric's counter missing from a sample", metric_sample_missing, [],
     ["one counter per listed metric and sample"]),
    ("the metrics track unnamed", metric_track_unnamed, [], ["each GPU's metrics track named 'GPU metrics'"]),
    ("metric counters without kinetrace_gpu_metrics", metrics_undescribed, [],
     ["kinetrace_gpu_metrics describes the sampling", METRIC_COUNTERS]),
    ("a kernel's metric average not a number", metric_arg_not_number, [], ["kernels' metric averages are numbers"]),
    ("metric samples miscounted in the footer", metric_samples_miscounted, [],
     ["kinetrace_record_counts agree with the events"]),
]


def run_checker(trace_path, manifest_path, extra):
    command = [sys.executable, CHECKER, trace_path] + ([manifest_path] if manifest_path else []) + extra
    result = subprocess.run(command, capture_output=True, text=True)
    lines = result.stdout.splitlines()
    failed = [line[len("FAIL "):].split(": ")[0] for line in lines if line.startswith("FAIL ")]
    infos = [line[len("INFO "):].split(": ")[0] for line in lines if line.startswith("INFO ")]
    return result.returncode, failed, infos, result.stdout + result.stderr


def judge(problems, description, result, expected, expected_infos=()):
    """Prints ok/BAD for one run; BAD when other checks failed, or expected INFO lines are missing."""
    code, failed, infos, output = result
    missing_infos = [i for i in expected_infos if i not in infos]
    ok = sorted(failed) == sorted(expected) and code == (1 if expected else 0) and not missing_infos
    print(f"{'ok  ' if ok else 'BAD '} {description}: exit {code}, failed {failed}"
          + (f", skipped {list(expected_infos)}" if expected_infos else ""))
    if not ok:
        problems.append(description)
        if missing_infos:
            print(f"missing INFO lines: {missing_infos}")
        print(output)


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
        path = os.path.join(tmp, "trace.json")
        for description, mutate, extra, expected, *infos in CASES:
            trace = copy.deepcopy(base)
            mutate(trace)
            if not getattr(mutate, "breaks_counts", False):
                trace["kinetrace_record_counts"] = count_records(trace["traceEvents"])
            write_trace(path, trace)
            judge(problems, description, run_checker(path, manifest_path, extra), expected, *infos)

        # The same passing trace gzipped, and checked without a manifest.
        gz = os.path.join(tmp, "trace.json.gz")
        write_trace(gz, base)
        for description, manifest in (("gzipped trace", manifest_path), ("format checks only", None)):
            judge(problems, description, run_checker(gz, manifest, []), [])

        # Flood mode: some kernels lost, drops reported.
        flood_trace = synthesize({"ranges": ["outer", "flood"], "memcpys": [], "memsets": [], "syncsAtLeast": {},
                                  "kernels": [{"name": "censusFlood", "count": 8, "range": "flood",
                                               "api": "cudaLaunchKernel", "stream": "0", "grid": [1, 1, 1],
                                               "block": [32, 1, 1], "graph": False}]})
        flood_trace["kinetrace_activities"] = ACTIVITIES_DEFAULT
        flood_path = os.path.join(tmp, "flood.json")
        flood_manifest = os.path.join(tmp, "flood_manifest.json")
        for description, drop_counter, launched, expected in (
                ("flood, some kernels dropped", "kinetrace_cupti_dropped_records", 13, []),
                ("flood, drops reported as buffers refused", "kinetrace_cupti_buffers_refused", 13, []),
                ("flood, drops reported as assembled records", "kinetrace_dropped_assembled_records", 13, []),
                ("flood, more kernels than launched", "kinetrace_cupti_dropped_records", 5,
                 ["flood kernels in trace, no more than launched"])):
            trace = copy.deepcopy(flood_trace)
            trace[drop_counter] = 5
            write_trace(flood_path, trace)
            with open(flood_manifest, "w") as f:
                json.dump({"mode": "flood", "device": 0, "ranges": ["flood"], "floodKernel": "censusFlood",
                           "launched": launched}, f)
            judge(problems, description, run_checker(flood_path, flood_manifest, ["--expect-drops"]), expected)

        path = os.path.join(tmp, "broken.json")
        with open(path, "w") as f:
            f.write('{"schemaVersion": 1, "traceEvents": [')
        code, failed, _, _ = run_checker(path, None, [])
        ok = code == 2
        print(f"{'ok  ' if ok else 'BAD '} truncated JSON: exit {code}")
        if not ok:
            problems.append("truncated JSON")

    print(f"{len(problems)} self-test case(s) misbehaved" if problems else "all self-test cases behaved")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
