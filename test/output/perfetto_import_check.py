#!/usr/bin/python3
"""Reads a .pftrace as Perfetto's trace processor imports it and checks it against its JSON.

The .pftrace is decoded with Perfetto's own .proto files (compiled here with protoc), then
replayed with trace_processor's import rules for what kinetrace writes:

  - packet sequences: incremental state (interned names, categories, annotation names and
    string values; track and clock defaults) cleared by SEQ_INCREMENTAL_STATE_CLEARED,
    sequence-scoped incremental clocks from clock snapshots, compressed_packets inflated;
  - tracks: TrackDescriptor uuids, thread descriptors, parent tracks (a lane is a child of
    its thread's track and is a track of its own);
  - sorting: every event by timestamp, equal timestamps in file order (TraceSorter);
  - slices (SliceTracker): SLICE_BEGIN pushes on its track's stack, SLICE_END closes the
    innermost open slice, an INSTANT is a slice of no duration that stays on the stack
    until the next begin or end on the track closes it;
  - flows (FlowTracker): legacy flow events 's' / 'f' keyed by (id, category, name), 's'
    bound to the topmost open slice of its track (a second 's' of a key is ignored), every
    'f' an arrow from that slice to the topmost open slice of its own track (the flow stays
    open); flow_ids / terminating_flow_ids of older files as TrackEvent flows.

Then, event by event against the JSON: every X slice's pid, tid, ts, dur, name, category and
args (types included), every instant, and every arrow the JSON draws (from the innermost
slice enclosing an 's' to the one enclosing each 'f' with the same id, category and name).
And the round trip: the .pftrace converted back to JSON holds the input's events and
metadata, types included.

Usage:
  perfetto_import_check.py --kinetrace BIN --protos DIR --self-test
  perfetto_import_check.py --kinetrace BIN --protos DIR TRACE.json[.gz] ...
Exit status 0 when everything agrees, 1 when not, 77 (skipped) when protoc,
python3-protobuf or the .proto files are missing.
"""

import argparse
import bisect
import decimal
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

SKIP = 77


def compile_protos(protos_root, out_dir):
    """Compiles trace.proto and everything it imports; returns the Trace message class."""
    os.makedirs(out_dir, exist_ok=True)
    todo = ["protos/perfetto/trace/trace.proto"]
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        with open(os.path.join(protos_root, name)) as f:
            text = f.read()
        todo += re.findall(r'^import\s+(?:public\s+)?"([^"]+)";', text, re.M)
    result = subprocess.run(["protoc", "-I", protos_root, "--python_out=" + out_dir] + sorted(seen),
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit("protoc failed: " + result.stderr[-2000:])
    sys.path.insert(0, out_dir)
    from protos.perfetto.trace import trace_pb2  # noqa: E402 (generated just now)
    return trace_pb2.Trace


# ---- the JSON side -------------------------------------------------------------------------

def load_json(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        return json.load(f, parse_float=decimal.Decimal)


def us_to_ns(value):
    return int(decimal.Decimal(value) * 1000)


def typed(value):
    """A JSON value with its type: ints and doubles told apart (2 is not 2.0)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int):
        return ("i", value)
    if isinstance(value, decimal.Decimal):
        return ("d", float(value))
    if isinstance(value, str):
        return ("s", value)
    return ("j", json.dumps(plain(value), sort_keys=True))


def plain(value):
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


KEPT_PHASES = ("X", "i", "I", "C", "s", "f", "M")


def kept(e):
    """Whether `kinetrace convert` keeps the event: other phases, and events whose pid or tid
    is not a number (torch.profiler's "Spans" and "Traces" markers), it leaves out and counts."""
    ints = all(isinstance(e.get(k, 0), int) and not isinstance(e.get(k, 0), bool)
               for k in ("pid", "tid"))
    return e.get("ph") in KEPT_PHASES and ints


def json_expectations(trace):
    base = int(trace.get("baseTimeNanoseconds", 0))
    slices, instants, flows = [], [], []
    for order, e in enumerate(trace["traceEvents"]):
        if not kept(e):
            continue
        ph = e.get("ph")
        if ph not in ("X", "i", "I", "s", "f"):
            continue
        pid, tid = e.get("pid"), e.get("tid")
        ts = base + us_to_ns(e["ts"])
        if ph == "X":
            args = tuple((k, typed(v)) for k, v in (e.get("args") or {}).items())
            slices.append((pid, tid, ts, us_to_ns(e.get("dur", 0)), e.get("name", ""),
                           e.get("cat", ""), args))
        elif ph in ("i", "I"):
            args = tuple((k, typed(v)) for k, v in (e.get("args") or {}).items())
            instants.append((pid, tid, ts, e.get("name", ""), e.get("cat", ""), args))
        else:
            flows.append((ts, order, ph, pid, tid, (int(e["id"]), e.get("cat", ""),
                                                    e.get("name", ""))))
    return slices, instants, arrows_of(slices, flows)


def innermost(index, pid, tid, ts):
    """The innermost slice holding ts on (pid, tid): the latest start, then the shortest."""
    starts, items = index.get((pid, tid), ([], []))
    i = bisect.bisect_right(starts, ts)
    best = None
    while i > 0:
        i -= 1
        s = items[i]
        start, dur = s[2], s[3]
        if best is not None and start < best[2]:
            break
        if ts < start + dur or ts == start:
            if best is None or dur < best[3]:
                best = s
    return best


def arrows_of(slices, flows):
    index = {}
    for s in sorted(slices, key=lambda s: s[2]):
        starts, items = index.setdefault((s[0], s[1]), ([], []))
        starts.append(s[2])
        items.append(s)
    sources = {}
    arrows = []
    for ts, _, ph, pid, tid, key in sorted(flows, key=lambda f: (f[0], f[1])):
        at = innermost(index, pid, tid, ts)
        if ph == "s":
            if key not in sources:
                sources[key] = at
        elif sources.get(key) is not None and at is not None:
            arrows.append((ident(sources[key]), ident(at)))
    return arrows


def ident(s):
    return (s[0], s[1], s[2], s[3], s[4])


# ---- the .pftrace side, as trace_processor imports it ----------------------------------------

def packets_of(data, trace_cls):
    trace = trace_cls()
    trace.ParseFromString(data)
    for packet in trace.packet:
        if packet.HasField("compressed_packets"):
            yield from packets_of(zlib.decompress(packet.compressed_packets), trace_cls)
        else:
            yield packet


class Sequence:
    def __init__(self):
        self.clear()
        self.clocks = {}  # id -> [incremental, last reading]

    def clear(self):
        self.names, self.cats, self.ann_names, self.strings = {}, {}, {}, {}
        self.track = None
        self.clock = None


def annotation_value(a, seq):
    kind = a.WhichOneof("value")
    if kind == "int_value":
        return ("i", a.int_value)
    if kind == "uint_value":
        return ("i", a.uint_value)
    if kind == "double_value":
        return ("d", a.double_value)
    if kind == "bool_value":
        return ("b", a.bool_value)
    if kind == "string_value":
        return ("s", a.string_value)
    if kind == "string_value_iid":
        text = seq.strings[a.string_value_iid]
        if a.string_value_iid % 2 == 1:  # kinetrace's interned JSON texts
            return ("j", json.dumps(json.loads(text), sort_keys=True))
        return ("s", text)
    if kind == "legacy_json_value":
        return ("j", json.dumps(json.loads(a.legacy_json_value), sort_keys=True))
    if len(a.array_values) > 0:
        return ("j", json.dumps([annotation_value(v, seq)[1] for v in a.array_values]))
    return ("j", "null")


def replay(data, trace_cls):
    sequences, tracks, events = {}, {}, []
    for order, p in enumerate(packets_of(data, trace_cls)):
        seq = sequences.setdefault(p.trusted_packet_sequence_id, Sequence())
        if p.sequence_flags & 1 or p.incremental_state_cleared:
            seq.clear()
        if p.HasField("trace_packet_defaults"):
            d = p.trace_packet_defaults
            seq.track = d.track_event_defaults.track_uuid if d.HasField("track_event_defaults") else None
            seq.clock = d.timestamp_clock_id if d.HasField("timestamp_clock_id") else None
        if p.HasField("interned_data"):
            i = p.interned_data
            for e in i.event_names:
                seq.names[e.iid] = e.name
            for e in i.event_categories:
                seq.cats[e.iid] = e.name
            for e in i.debug_annotation_names:
                seq.ann_names[e.iid] = e.name
            for e in i.debug_annotation_string_values:
                seq.strings[e.iid] = e.str.decode()
        if p.HasField("clock_snapshot"):
            boot = [c.timestamp for c in p.clock_snapshot.clocks if c.clock_id == 6]
            for c in p.clock_snapshot.clocks:
                if c.clock_id >= 64:
                    seq.clocks[c.clock_id] = [c.is_incremental, c.timestamp - boot[0]]
        if p.HasField("track_descriptor"):
            t = p.track_descriptor
            info = tracks.setdefault(t.uuid, {})
            info["parent"] = t.parent_uuid if t.HasField("parent_uuid") else 0
            if t.HasField("thread"):
                info["thread"] = (t.thread.pid, t.thread.tid)
            if t.HasField("name"):
                info["name"] = t.name
        if not p.HasField("track_event"):
            continue
        clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else seq.clock
        ts = p.timestamp
        if clock is not None and clock >= 64:
            c = seq.clocks[clock]
            if c[0]:
                c[1] += ts
                ts = c[1]
            else:
                ts = ts + c[1]
        e = p.track_event
        name = seq.names.get(e.name_iid) if e.HasField("name_iid") else e.name
        cat = ",".join([seq.cats[c] for c in e.category_iids] + list(e.categories))
        args = tuple((seq.ann_names[a.name_iid] if a.HasField("name_iid") else a.name,
                      annotation_value(a, seq)) for a in e.debug_annotations)
        track = e.track_uuid if e.HasField("track_uuid") else seq.track
        events.append((ts, order, track, e, name, cat, args))
    events.sort(key=lambda x: (x[0], x[1]))  # TraceSorter: time, then arrival

    header = next(x for x in events if x[4] == "trace header")
    timebase = dict(header[6])["timebaseNanoseconds"][1]

    def thread_of(uuid):
        info = tracks.get(uuid, {})
        while "thread" not in info and info.get("parent"):
            info = tracks.get(info["parent"], {})
        return info.get("thread")

    stacks, slices, instants, arrows = {}, [], [], []
    v1, v2 = {}, {}
    stats = {"flow_no_enclosing_slice": 0, "flow_duplicate_id": 0, "flow_end_without_start": 0,
             "unmatched_slice_end": 0, "metadata_instants_outside_span": 0}
    span = [None, None]
    metadata_times = []

    def close_scoped(stack, ts):
        while stack and stack[-1]["scoped"] and stack[-1]["ts"] + stack[-1]["dur"] <= ts:
            stack.pop()

    for ts, _, track, e, name, cat, args in events:
        t = ts + timebase
        if track == 1:  # kinetrace's metadata track
            metadata_times.append(t)
            continue
        stack = stacks.setdefault(track, [])
        thread = thread_of(track)
        if e.HasField("legacy_event") and e.legacy_event.HasField("phase"):
            key = (e.legacy_event.unscoped_id, cat, name)
            top = stack[-1] if stack else None
            if top is None:
                stats["flow_no_enclosing_slice"] += 1
            elif e.legacy_event.phase == ord("s"):
                if key in v1:
                    stats["flow_duplicate_id"] += 1
                else:
                    v1[key] = top
            elif e.legacy_event.phase == ord("f"):
                if key in v1:
                    arrows.append((v1[key], top))
                else:
                    stats["flow_end_without_start"] += 1
            continue
        if e.type == e.TYPE_COUNTER:
            continue
        close_scoped(stack, t)
        if e.type == e.TYPE_SLICE_END:
            if not stack:
                stats["unmatched_slice_end"] += 1
                continue
            s = stack.pop()
            s["dur"] = t - s["ts"]
            current = s
        else:
            current = {"thread": thread, "ts": t, "dur": 0, "name": name, "cat": cat,
                       "args": args, "scoped": e.type == e.TYPE_INSTANT}
            stack.append(current)
            (instants if current["scoped"] else slices).append(current)
        span[0] = t if span[0] is None else min(span[0], t)
        span[1] = t if span[1] is None else max(span[1], t)
        for flow_id in list(e.flow_ids) + list(e.flow_ids_old):
            if flow_id in v2:
                arrows.append((v2[flow_id], current))
            v2[flow_id] = current
        for flow_id in list(e.terminating_flow_ids) + list(e.terminating_flow_ids_old):
            if flow_id in v2:
                arrows.append((v2.pop(flow_id), current))
    if span[0] is not None:
        stats["metadata_instants_outside_span"] = sum(
            1 for m in metadata_times if m < span[0] or m > span[1])
    return slices, instants, arrows, stats


def pf_ident(s):
    return (s["thread"][0], s["thread"][1], s["ts"], s["dur"], s["name"])


# ---- checks --------------------------------------------------------------------------------

def multiset_diff(expected, found):
    counts = {}
    for x in expected:
        counts[x] = counts.get(x, 0) + 1
    for x in found:
        counts[x] = counts.get(x, 0) - 1
    missing = [x for x, c in counts.items() if c > 0]
    extra = [x for x, c in counts.items() if c < 0]
    return missing, extra


def check(json_path, kinetrace, trace_cls, work):
    report = {"trace": os.path.basename(json_path)}
    pftrace = os.path.join(work, "out.pftrace")
    back = os.path.join(work, "back.json")
    subprocess.run([kinetrace, "convert", json_path, pftrace], check=True, capture_output=True)
    subprocess.run([kinetrace, "convert", pftrace, back], check=True, capture_output=True)
    trace = load_json(json_path)
    want_slices, want_instants, want_arrows = json_expectations(trace)
    with open(pftrace, "rb") as f:
        slices, instants, arrows, stats = replay(f.read(), trace_cls)
    got_slices = [(s["thread"][0], s["thread"][1], s["ts"], s["dur"], s["name"], s["cat"],
                   s["args"]) for s in slices]
    got_instants = [(s["thread"][0], s["thread"][1], s["ts"], s["name"], s["cat"], s["args"])
                    for s in instants]
    got_arrows = [(pf_ident(a), pf_ident(b)) for a, b in arrows]
    problems = []
    for what, want, got in (("slices", want_slices, got_slices),
                            ("instants", want_instants, got_instants),
                            ("arrows", want_arrows, got_arrows)):
        missing, extra = multiset_diff(want, got)
        report[what] = len(want)
        report[what + " wrong"] = len(missing) + len(extra)
        for x in missing[:3]:
            problems.append(f"{what}: the JSON's {x} is not in the .pftrace")
        for x in extra[:3]:
            problems.append(f"{what}: the .pftrace has {x}, which the JSON does not")
    if stats["metadata_instants_outside_span"]:
        problems.append(f"{stats['metadata_instants_outside_span']} metadata instants lie outside "
                        "the events' span")
    report["left out by convert"] = sum(1 for e in trace["traceEvents"] if not kept(e))
    report.update(stats)
    report["round trip differences"] = round_trip(trace, load_json(back), problems)
    return report, problems


def round_trip(original, back, problems):
    """The events and metadata read back from the .pftrace, types included."""
    differences = 0
    keys = set(original) | set(back)
    for key in sorted(keys - {"traceEvents", "traceName"}):
        if typed_tree(original.get(key)) != typed_tree(back.get(key)):
            differences += 1
            problems.append(f"round trip: top-level {key!r} differs")
    a, b = [e for e in original["traceEvents"] if kept(e)], back["traceEvents"]
    if len(a) != len(b):
        problems.append(f"round trip: {len(a)} events became {len(b)}")
    for i, (x, y) in enumerate(zip(a, b)):
        if event_form(x) != event_form(y):
            differences += 1
            if differences <= 3:
                problems.append(f"round trip: event {i} {json.dumps(plain(x))[:300]} came back as "
                                f"{json.dumps(plain(y))[:300]}")
    return differences + abs(len(a) - len(b))


def typed_tree(value):
    if isinstance(value, dict):
        return tuple((k, typed_tree(v)) for k, v in value.items())
    if isinstance(value, list):
        return ("list", tuple(typed_tree(v) for v in value))
    return typed(value)


def event_form(e):
    """An event as it reads: times as exact decimals, values with their types."""
    out = {}
    for k, v in e.items():
        if k in ("ts", "dur"):
            out[k] = us_to_ns(v)
        else:
            out[k] = typed_tree(v)
    return tuple(sorted(out.items()))


# ---- hand-made traces ----------------------------------------------------------------------

def self_test_traces():
    """Traces with what broke before: overlaps, multi-f flows, colliding ids, markers, 2.0."""
    base = 1_700_000_000_000_000_000
    far = 5_097_600_000_000.0  # 59 days of microseconds: torch.profiler's clock, not the base's
    def x(name, cat, pid, tid, ts, dur, args=None):
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts,
                "dur": dur, "args": args or {}}
    def flow(ph, cat, fid, pid, tid, ts):
        e = {"ph": ph, "id": fid, "pid": pid, "tid": tid, "ts": ts, "cat": cat, "name": cat}
        if ph == "f":
            e["bp"] = "e"
        return e
    events = [{"ph": "M", "name": "process_name", "pid": 10, "tid": 0, "ts": 0,
               "args": {"name": "python"}},
              {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "ts": 0,
               "args": {"name": "stream 7"}}]
    t = far
    # A forward op and its backward twin share flow id 5 with a launch arrow (fwdbwd, ac2g).
    events += [x("aten::mm", "cpu_op", 10, 10, t, 50, {"External id": 5, "Input Dims": [[8, 8]]}),
               flow("s", "fwdbwd", 5, 10, 10, t),
               x("cudaLaunchKernel", "cuda_runtime", 10, 10, t + 10, 5, {"correlation": 5}),
               flow("s", "ac2g", 5, 10, 10, t + 10),
               x("cudaGraphLaunch", "cuda_runtime", 10, 10, t + 20, 5, {"correlation": 6}),
               flow("s", "ac2g", 6, 10, 10, t + 20),
               x("MmBackward0", "cpu_op", 10, 10, t + 100, 40, {"External id": 9}),
               flow("f", "fwdbwd", 5, 10, 10, t + 100)]
    # Kernels that overlap on stream 7 (torch.profiler's do), 16.0 us each; a graph launch
    # that started three of them (three arrows); doubles with a zero fraction.
    for k, start in enumerate([t + 30, t + 40, t + 44, t + 70, t + 86]):
        events.append(x(f"kernel{k}", "kernel", 0, 7, start, 16.0,
                        {"blocks per SM": 2.0, "warps per SM": 12.5, "grid": [4, 1, 1],
                         "registers per thread": 32}))
    events += [flow("f", "ac2g", 5, 0, 7, t + 30)]
    events += [flow("f", "ac2g", 6, 0, 7, s) for s in (t + 40, t + 70, t + 86)]
    events.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 10,
                   "tid": 10, "ts": t + 25, "args": {"Bytes": 512, "Total Allocated": 1024.0}})
    overlap = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "H200", "numSms": 132}],
               "baseTimeNanoseconds": base, "traceEvents": events,
               "blocks": 2.0, "displayTimeUnit": "ms"}
    return {"overlaps_flows_markers.json": overlap}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinetrace", required=True)
    parser.add_argument("--protos", required=True, help="root of Perfetto's .proto files")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("traces", nargs="*")
    options = parser.parse_args()
    if shutil.which("protoc") is None:
        print("SKIP: protoc is not installed (Debian's protobuf-compiler)")
        return SKIP
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        print("SKIP: python3-protobuf is not installed")
        return SKIP
    if not os.path.exists(os.path.join(options.protos, "protos/perfetto/trace/trace.proto")):
        print(f"SKIP: Perfetto's .proto files are not in {options.protos}")
        return SKIP
    failed = False
    with tempfile.TemporaryDirectory() as work:
        trace_cls = compile_protos(options.protos, os.path.join(work, "py"))
        paths = list(options.traces)
        if options.self_test:
            for name, trace in self_test_traces().items():
                path = os.path.join(work, name)
                with open(path, "w") as f:
                    json.dump(trace, f)
                paths.append(path)
        for path in paths:
            report, problems = check(path, options.kinetrace, trace_cls, work)
            print(json.dumps(report))
            for p in problems:
                print("  " + p)
            failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
