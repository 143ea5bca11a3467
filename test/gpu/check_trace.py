#!/usr/bin/env python3
"""Checks a kinetrace trace against the layout kinetrace writes (src/output/trace_events.cpp,
src/output/trace_vocabulary.h, src/session/metadata.cpp) and, optionally, a manifest.

    check_trace.py TRACE.json[.gz]                       format checks only
    check_trace.py TRACE.json[.gz] MANIFEST.json         format + what launch_census launched
    check_trace.py TRACE.json MANIFEST.json --expect-drops   (flood mode: drops must be reported)

Prints one line per check ("PASS name: detail" / "FAIL name: detail"; "INFO name: detail" for
facts and for checks skipped), then "N passed, M failed". Exit status 1 when any check
failed, 2 when the files cannot be read.

The layout checked (src/output/trace_events.cpp, src/session/metadata.cpp):
- Top level: header metadata (schemaVersion, distributedInfo, kinetrace_activities, ...)
  before "traceEvents", footer metadata (deviceProperties, loss counters,
  kinetrace_record_counts, kinetrace_memory_peak_bytes, ...) after it. Only distributedInfo's
  place is checked (HTA's fast reader stops at traceEvents); every other key is read
  wherever it is, from its last occurrence when written twice (kinetrace_memory_cap_bytes
  is in both header and footer).
- Tracks: the slices of every (pid, tid) nest. GPU work of stream S on device D is on pid D:
  operations on tid S (lane 0) or (1<<28)|(lane<<20)|(S & 0xFFFFF) for the lanes that
  overlapping operations need ("stream S (2)", ...); synchronisations on
  (2<<28)|(lane<<20)|(S & 0xFFFFF) ("stream S sync"); GPU spans of host ranges on
  (3<<28)|(lane<<20)|(S & 0xFFFFF) ("stream S annotations"). Async host ranges on the
  process's tids (1<<30)+lane ("async ranges", "async ranges 2"); CUPTI overhead on pid -1.
- Flows: one "s" per launch call, at least one "f" per "s" (a graph launch: one per node),
  no "f" without its "s".
- Activities: syncs and [memory] instants exist only when kinetrace_activities lists sync /
  memory; the census checks of them are skipped (INFO) when it does not.
- GPU metrics (`--gpu-metrics`): counters ("ph":"C", cat "gpu_metric") on a GPU's pid, tid
  1<<30 (thread "GPU metrics"), named by a metric's display name, args one number keyed by
  its unit ("%" or "bytes/s"); kinetrace_gpu_metrics lists the metrics and counts the
  samples, one counter per metric and sample; kernels' averages, keyed "<display name>
  (<unit>)", are numbers; kinetrace_record_counts' metric_samples counts the samples.

Times are compared as integer nanoseconds: ts/dur are parsed as Decimal and scaled, so
nesting and ordering checks are exact rather than subject to float rounding.

Python 3 standard library only: it runs on the GPU machine as is.
"""

import argparse
import bisect
import gzip
import json
import re
import sys
from collections import Counter, defaultdict
from decimal import Decimal

GPU_OP_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
GPU_TRACK_CATS = GPU_OP_CATS + ("cuda_sync", "gpu_user_annotation")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
KNOWN_PHASES = {"X", "i", "C", "s", "f", "M"}
DEVICE_PROPERTY_KEYS = (
    "id", "name", "totalGlobalMem", "computeMajor", "computeMinor", "maxThreadsPerBlock",
    "maxThreadsPerMultiprocessor", "regsPerBlock", "warpSize", "sharedMemPerBlock", "numSms",
    "regsPerMultiprocessor", "sharedMemPerBlockOptin", "sharedMemPerMultiprocessor",
)
EPOCH_NS_2001 = 10 ** 18  # any real epoch-ns timestamp is larger

# Track ids (src/output/trace_events.h). A GPU track's tid is the stream id for lane 0 of its
# operations; any other track has its kind in bits 28..29, its lane in bits 20..27 (lanes
# past 255 share 255) and the stream id's low 20 bits below.
OPS_TRACK, SYNC_TRACK, SPAN_TRACK = 1, 2, 3
TRACK_KIND_SHIFT = 28
TRACK_LANE_SHIFT = 20
STREAM_BITS = 0xFFFFF
MAX_LANE = 255
TRACK_OF_CAT = {"kernel": OPS_TRACK, "gpu_memcpy": OPS_TRACK, "gpu_memset": OPS_TRACK,
                "cuda_sync": SYNC_TRACK, "gpu_user_annotation": SPAN_TRACK}
TRACK_SUFFIX = {OPS_TRACK: "", SYNC_TRACK: " sync", SPAN_TRACK: " annotations"}
TRACK_KIND_NAME = {OPS_TRACK: "operations", SYNC_TRACK: "sync", SPAN_TRACK: "annotations"}
ASYNC_LANE_TID_BASE = 1 << 30  # host process: async ranges, lane by lane
OVERHEAD_PID = -1
OVERHEAD_DEVICE_BASE = 1 << 30  # overhead tid: base + (object id & 0x3FFFFF) + (lane << 22)
OVERHEAD_LANE_SHIFT = 22
OVERHEAD_ID_BITS = 0x3FFFFF
GPU_METRIC_CAT = "gpu_metric"
GPU_METRICS_TID = 1 << 30  # a GPU process's "GPU metrics" thread
MEMORY_POOLS_TID = GPU_METRICS_TID + 1  # its "memory pools" thread
MEMORY_POOLS_THREAD = "memory pools"
GPU_METRICS_THREAD = "GPU metrics"
GPU_METRIC_UNITS = ("%", "bytes/s")

# Activity names as kinetrace_activities lists them (src/session/config.cpp).
DEFAULT_ACTIVITIES = {"host", "kernel", "memcpy", "memset", "launch"}
ALL_ACTIVITIES = DEFAULT_ACTIVITIES | {"sync", "memory", "overhead", "cuda_runtime", "cuda_driver"}

# Counters of records lost; "drops reported" is any of them above zero.
DROP_COUNTERS = ("kinetrace_cupti_dropped_records", "kinetrace_cupti_buffers_refused",
                 "kinetrace_dropped_host_events", "kinetrace_dropped_assembled_records")

# kinetrace_record_counts: the kinds of records it counts, and the event each record is.
RECORD_KINDS = ("ranges", "instants", "counters", "api_calls", "kernels", "memcpys", "memsets",
                "syncs", "memory", "overheads", "gpu_spans", "memory_pools")
RECORD_KIND_OF_X_CAT = {
    "user_annotation": "ranges", "cpu_op": "ranges", "cuda_runtime": "api_calls", "cuda_driver": "api_calls",
    "kernel": "kernels", "gpu_memcpy": "memcpys", "gpu_memset": "memsets", "cuda_sync": "syncs",
    "overhead": "overheads", "gpu_user_annotation": "gpu_spans",
}
# Keys the checker adds to each event: ts and ts + dur in integer ns, computed once. No
# trace has keys starting with a NUL character.
TS = "\0ts_ns"
END = "\0end_ns"
EXAMPLES_SHOWN = 3


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""))
        return ok

    def info(self, name, detail):
        print(f"INFO {name}: {detail}")


def is_number(value):
    return isinstance(value, (int, Decimal)) and not isinstance(value, bool)


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def args_of(event):
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def to_ns(value):
    """Microseconds (int or Decimal) to integer nanoseconds."""
    return int((Decimal(value) * 1000).to_integral_value())


def examples(items):
    items = list(items)
    shown = "; ".join(str(i) for i in items[:EXAMPLES_SHOWN])
    return shown + (f"; ... ({len(items)} in all)" if len(items) > EXAMPLES_SHOWN else "")


def load_json(path):
    """The parsed file and, when it is an object, its top-level (key, value) pairs in file
    order, duplicates included (as a dict, a key keeps its first place and its last value).
    The top level is walked here and each value parsed by json's own decoder, so the order
    costs nothing per event."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8")
    decoder = json.JSONDecoder(parse_float=Decimal)
    space = re.compile(r"[ \t\n\r]*")
    at = space.match(text, 0).end()
    if not text.startswith("{", at):
        value, at = decoder.raw_decode(text, at)
        pairs = None
    else:
        pairs = []
        at = space.match(text, at + 1).end()
        while not text.startswith("}", at):
            if pairs:
                if not text.startswith(",", at):
                    raise ValueError(f"expected ',' or '}}' at character {at}")
                at = space.match(text, at + 1).end()
            if not text.startswith('"', at):
                raise ValueError(f"expected a key at character {at}")
            key, at = json.decoder.scanstring(text, at + 1)
            at = space.match(text, at).end()
            if not text.startswith(":", at):
                raise ValueError(f"expected ':' at character {at}")
            value, at = decoder.raw_decode(text, space.match(text, at + 1).end())
            pairs.append((key, value))
            at = space.match(text, at).end()
        at += 1
        value = dict(pairs)
    if space.match(text, at).end() != len(text):
        raise ValueError(f"extra data at character {at}")
    return value, pairs


def gpu_track_of(tid):
    """(kind, lane, stream id bits) of a GPU track's tid, None when no GPU track has it."""
    if not is_int(tid) or tid < 0 or tid >= 1 << 30:
        return None
    if tid < 1 << TRACK_KIND_SHIFT:
        return OPS_TRACK, 0, tid
    return tid >> TRACK_KIND_SHIFT, (tid >> TRACK_LANE_SHIFT) & 0xFF, tid & STREAM_BITS


def gpu_track_tid(stream, kind, lane):
    """The tid kinetrace gives lane `lane` of the `kind` track of `stream` (gpuTrackTid)."""
    if kind == OPS_TRACK and lane == 0:
        return stream
    return (kind << TRACK_KIND_SHIFT) | (min(lane, MAX_LANE) << TRACK_LANE_SHIFT) | (stream & STREAM_BITS)


def gpu_track_problem(event, kind):
    """Why the event's tid is not a track of kind `kind` of the stream its args name; None
    when it is. Events without a "stream" arg (GPU spans) are checked for the kind only."""
    tid = event.get("tid")
    track = gpu_track_of(tid)
    if track is None:
        return f"tid {tid} is no GPU track"
    got_kind, lane, bits = track
    if got_kind != kind:
        return f"tid {tid:#x} is a {TRACK_KIND_NAME.get(got_kind, 'unknown')} track, not {TRACK_KIND_NAME[kind]}"
    if kind == OPS_TRACK and lane == 0 and tid >= 1 << TRACK_KIND_SHIFT:
        return f"tid {tid:#x}: lane 0 of a stream's operations has the stream id itself as tid"
    stream = args_of(event).get("stream")
    if stream is None and kind == SPAN_TRACK:
        return None
    if not is_int(stream):
        return f"stream arg {stream!r} is not an integer"
    if stream & STREAM_BITS != bits or (tid < 1 << TRACK_KIND_SHIFT and tid != stream):
        return f"tid {tid:#x} is a track of stream {bits}, its args say stream {stream}"
    return None


def stream_of(event):
    """The stream a GPU event ran on: its "stream" arg, else what its tid says."""
    stream = args_of(event).get("stream")
    if is_int(stream):
        return stream
    track = gpu_track_of(event.get("tid"))
    return track[2] if track else event.get("tid")


def recorded_activities(top):
    """The activity names kinetrace_activities lists ("default"/"all" expanded), or None
    when the trace does not say (then every check runs)."""
    text = top.get("kinetrace_activities")
    if not isinstance(text, str):
        return None
    names = {n.strip().lower() for n in text.split(",") if n.strip()}
    if "default" in names:
        names |= DEFAULT_ACTIVITIES
    if "all" in names:
        names |= ALL_ACTIVITIES
    return names


def short(event):
    return (f"{event.get('ph')} {event.get('cat')!r} {str(event.get('name'))[:60]!r} "
            f"pid={event.get('pid')} tid={event.get('tid')} ts={event.get('ts')}")


def base_kernel_name(name):
    """'void foo<1>(float*, int)' -> 'foo': extern "C" names pass through unchanged."""
    name = re.sub(r"^void\s+", "", name)
    return re.split(r"[(<]", name, maxsplit=1)[0].strip()


def api_base_name(name):
    """'cudaLaunchKernel_v7000' / 'cudaMemcpyAsync_ptsz' -> the plain API name."""
    return re.sub(r"(_v\d+)?(_pt[sd]z)?$", "", name)


class Trace:
    """The trace's events indexed the ways the checks need them."""

    def __init__(self, top, top_pairs=None):
        self.top = top
        # Top-level keys in file order, duplicates included.
        self.top_keys = [k for k, _ in top_pairs] if top_pairs else list(top.keys())
        self.activities = recorded_activities(top)
        raw = top.get("traceEvents") if isinstance(top.get("traceEvents"), list) else []
        self.events = [e for e in raw if isinstance(e, dict)]
        self.non_objects = len(raw) - len(self.events)
        for e in self.events:
            ts = e.get("ts")
            if is_number(ts):
                e[TS] = to_ns(ts)
                dur = e.get("dur")
                if is_number(dur):
                    e[END] = e[TS] + to_ns(dur)
        self.gpu_ops = [e for e in self.events if e.get("ph") == "X" and e.get("cat") in GPU_OP_CATS]
        self.launches = defaultdict(list)  # correlation -> launch calls
        for e in self.events:
            if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATS and TS in e:
                corr = args_of(e).get("correlation")
                if corr is not None:
                    self.launches[corr].append(e)
        self.gpu_pids = {e.get("pid") for e in self.events
                         if e.get("ph") == "X" and e.get("cat") in GPU_TRACK_CATS}
        self.metric_counters = [e for e in self.events if e.get("ph") == "C" and e.get("cat") == GPU_METRIC_CAT]
        self.process_names = {}  # pid -> name
        self.thread_names = {}  # (pid, tid) -> name
        for e in self.events:
            if e.get("ph") == "M" and e.get("name") == "process_name":
                self.process_names[e.get("pid")] = args_of(e).get("name")
            elif e.get("ph") == "M" and e.get("name") == "thread_name":
                self.thread_names[(e.get("pid"), e.get("tid"))] = args_of(e).get("name")
        # GPUs with metric samples (a GPU may have samples and no work): pids named as GPUs.
        self.metric_pids = {e.get("pid") for e in self.metric_counters
                            if e.get("pid") in self.gpu_pids
                            or self.process_names.get(e.get("pid")) == f"GPU {e.get('pid')}"}
        # (pid, tid) -> X intervals in ns, sorted by start, with a running maximum of ends
        # so "is ts inside some slice" is one bisect.
        self.slices = defaultdict(list)
        for e in self.events:
            if e.get("ph") == "X" and END in e:
                self.slices[(e.get("pid"), e.get("tid"))].append((e[TS], e[END]))
        self.slice_starts = {}
        self.slice_max_ends = {}
        for track, intervals in self.slices.items():
            intervals.sort()
            self.slice_starts[track] = [s for s, _ in intervals]
            running, ends = None, []
            for _, end in intervals:
                running = end if running is None else max(running, end)
                ends.append(running)
            self.slice_max_ends[track] = ends

    def launch_of(self, op):
        calls = self.launches.get(args_of(op).get("correlation"), [])
        return min(calls, key=lambda e: e[TS]) if calls else None

    def track_label(self, track):
        """'pid P tid T (its thread name)' for messages."""
        pid, tid = track
        name = self.thread_names.get(track)
        return f"pid {pid} tid {tid}" + (f" ({name})" if name is not None else "")

    def activity_off(self, activity):
        """True when kinetrace_activities shows that `activity` was not recorded."""
        return self.activities is not None and activity not in self.activities

    def enclosed(self, track, ts_ns):
        starts = self.slice_starts.get(track)
        if not starts:
            return False
        i = bisect.bisect_right(starts, ts_ns) - 1
        return i >= 0 and self.slice_max_ends[track][i] >= ts_ns


# ---- format checks (any trace) ---------------------------------------------------------

def check_top_level(report, trace, expect_drops):
    top = trace.top
    keys = trace.top_keys  # file order, duplicates included
    missing = [k for k in ("schemaVersion", "distributedInfo", "traceEvents", "deviceProperties",
                           "baseTimeNanoseconds") if k not in top]
    report.check("top-level keys", not missing,
                 f"missing {missing}" if missing else f"{len(keys)} keys")
    report.check("schemaVersion is 1", top.get("schemaVersion") == 1, f"got {top.get('schemaVersion')!r}")
    report.check("traceEvents is a list", isinstance(top.get("traceEvents"), list))
    if "traceEvents" in keys:
        at = keys.index("traceEvents")
        report.info("header (before traceEvents)", ", ".join(keys[:at]) or "none")
        report.info("footer (after traceEvents)", ", ".join(keys[at + 1:]) or "none")
    twice = sorted(k for k, n in Counter(keys).items() if n > 1)
    if twice:
        report.info("keys written more than once (the last is read)", ", ".join(twice))

    base = top.get("baseTimeNanoseconds")
    report.check("baseTimeNanoseconds is epoch ns", is_int(base) and base > EPOCH_NS_2001, f"got {base!r}")

    # HTA's fast reader stops at traceEvents: distributedInfo must come before it.
    info = top.get("distributedInfo")
    ok = ("distributedInfo" in keys and "traceEvents" in keys
          and keys.index("distributedInfo") < keys.index("traceEvents"))
    report.check("distributedInfo before traceEvents, with rank",
                 ok and isinstance(info, dict) and "rank" in info, f"{info!r}"[:120])

    props = top.get("deviceProperties")
    bad = []
    if isinstance(props, list):
        for p in props:
            absent = [k for k in DEVICE_PROPERTY_KEYS if not isinstance(p, dict) or k not in p]
            if absent:
                bad.append(f"device {p.get('id') if isinstance(p, dict) else p!r} lacks {absent}")
    report.check("deviceProperties entries complete", isinstance(props, list) and not bad,
                 examples(bad) if bad else f"{len(props) if isinstance(props, list) else 0} device(s)")

    if "displayTimeUnit" in top:
        report.check("displayTimeUnit", top["displayTimeUnit"] in ("ms", "ns"), repr(top["displayTimeUnit"]))

    counters = {k: v for k, v in top.items() if k.startswith("kinetrace_")}
    report.info("kinetrace metadata", ", ".join(f"{k}={v}" for k, v in counters.items()) or "none")
    check_drops(report, top, expect_drops)
    check_record_counts(report, trace)
    check_memory_peak(report, top)
    check_clock_bounds(report, trace)


def check_clock_bounds(report, trace):
    """The GPU clock offset bound, when given, is given per device too: every device with GPU
    work in the trace has its own, and no bound is empty (low above high)."""
    bound = trace.top.get("kinetrace_gpu_clock_offset_bound_ns")
    if bound is None:
        report.info("GPU clock offset bound", "none (no launch joined to its work)")
        return
    devices = bound.get("devices") if isinstance(bound, dict) else None
    if not isinstance(devices, list):
        report.check("GPU clock offset bound per device", False, f"got {bound!r}")
        return
    bounded = {d.get("device") for d in devices if isinstance(d, dict)}
    with_work = {args_of(e).get("device", e.get("pid")) for e in trace.gpu_ops}
    missing = sorted(d for d in with_work if d not in bounded)
    empty = [d for d in [bound] + devices if isinstance(d, dict) and is_int(d.get("low"))
             and is_int(d.get("high")) and d["low"] > d["high"]]
    report.check("GPU clock offset bound per device", not missing and not empty,
                 f"devices without one: {missing}; empty bounds: {examples(empty)}" if missing or empty
                 else ", ".join(f"device {d.get('device')}: [{d.get('low')}, {d.get('high')}] ns" for d in devices))


def check_drops(report, top, expect_drops):
    """Losses are reported by several counters (CUPTI's drops, buffers refused under the
    memory cap, host events and assembled records the cap left no room for): a flood must
    raise at least one; a normal run none."""
    dropped = top.get("kinetrace_cupti_dropped_records")
    report.check("kinetrace_cupti_dropped_records present", is_int(dropped) and dropped >= 0,
                 f"got {dropped!r} (it is written even when 0)")
    buffers = top.get("kinetrace_gpu_buffers")
    if isinstance(buffers, dict):  # said, not judged: how long records waited in CUPTI's hands
        report.info("CUPTI buffers handed over", ", ".join(f"{k} {v}" for k, v in buffers.items()))
    values = {k: top[k] for k in DROP_COUNTERS if is_int(top.get(k))}
    detail = ", ".join(f"{k}={v}" for k, v in values.items()) or "no drop counters"
    if expect_drops:
        report.check("drops reported (expected)", any(v > 0 for v in values.values()), detail)
    else:
        report.check("no drops reported", all(v == 0 for v in values.values()), detail)


def record_kind(event):
    """The kinetrace_record_counts kind the event is one record of; None for flows, metadata."""
    ph, cat = event.get("ph"), event.get("cat")
    if not isinstance(cat, str):
        cat = None
    if ph == "X":
        return RECORD_KIND_OF_X_CAT.get(cat)
    if ph == "C":
        return None if cat == GPU_METRIC_CAT else "counters"  # samples: counted apart
    if ph == "i" and cat == "user_instant":
        return "instants"
    if ph == "i" and event.get("name") == "[memory]":
        return "memory"
    if ph == "i" and cat == "gpu_memory_pool":
        return "memory_pools"
    return None


def check_record_counts(report, trace):
    """The footer's kinetrace_record_counts count what the file holds: each record kind is
    one kind of event (a kernel record is one X event of cat "kernel", ...)."""
    counts = trace.top.get("kinetrace_record_counts")
    name = "kinetrace_record_counts agree with the events"
    if not isinstance(counts, dict):
        report.check(name, False, f"got {counts!r}, expected an object in the footer")
        return
    kinds = Counter(record_kind(e) for e in trace.events)
    found = {kind: kinds.get(kind, 0) for kind in RECORD_KINDS}
    if "metric_samples" in counts:
        # One sample is one counter per metric, all at the sample's start on its GPU.
        found["metric_samples"] = len({(e.get("pid"), e.get(TS)) for e in trace.metric_counters})
    wrong = [f"{key}: footer says {counts.get(key)!r}, the trace has {n}"
             for key, n in found.items() if counts.get(key) != n]
    report.check(name, not wrong, examples(wrong) if wrong else ", ".join(f"{k}={n}" for k, n in found.items()))
    unknown = sorted(set(counts) - set(found))
    if unknown:
        report.info("record counts not checked", ", ".join(f"{k}={counts[k]}" for k in unknown))


def check_memory_peak(report, top):
    """One memory cap holds everything kinetrace keeps: the peak it measured stays within."""
    peak, cap = top.get("kinetrace_memory_peak_bytes"), top.get("kinetrace_memory_cap_bytes")
    ok = is_int(peak) and is_int(cap) and 0 <= peak <= cap
    report.check("kinetrace_memory_peak_bytes <= kinetrace_memory_cap_bytes", ok,
                 f"peak {peak!r} B, cap {cap!r} B" + (f" ({peak / cap:.0%} of it)" if ok and cap else ""))


def check_events(report, trace):
    events = trace.events
    report.info("events", ", ".join(f"{ph}={n}" for ph, n in sorted(Counter(e.get("ph") for e in events).items(), key=str)))

    report.check("every event is a JSON object", trace.non_objects == 0, f"{trace.non_objects} are not")
    bad_phase = [short(e) for e in events if e.get("ph") not in KNOWN_PHASES]
    report.check("known phases only", not bad_phase, examples(bad_phase))

    bad_x = []
    for e in events:
        if e.get("ph") != "X":
            continue
        if not (is_number(e.get("ts")) and is_number(e.get("dur")) and e["dur"] >= 0):
            bad_x.append(short(e) + f" dur={e.get('dur')}")
        elif not (isinstance(e.get("name"), str) and isinstance(e.get("cat"), str)
                  and is_int(e.get("pid")) and is_int(e.get("tid"))):
            bad_x.append(short(e))
    report.check("X events have numeric ts, dur >= 0, string name/cat, integer pid/tid", not bad_x,
                 examples(bad_x) if bad_x else f"{sum(1 for e in events if e.get('ph') == 'X')} slices")

    negative = [short(e) for e in events if e.get("ph") != "M" and e.get(TS, 0) < 0]
    untimed = [short(e) for e in events if e.get("ph") not in ("M", None) and TS not in e]
    report.check("ts numeric and relative to baseTimeNanoseconds (none negative)",
                 not negative and not untimed, examples(negative + untimed))

    bad_instants = [short(e) for e in events if e.get("ph") == "i" and e.get("s") not in ("t", "p", "g")]
    report.check("instants carry a scope", not bad_instants, examples(bad_instants))

    bad_counters = [short(e) for e in events if e.get("ph") == "C" and not (
        isinstance(e.get("args"), dict) and e["args"] and all(is_number(v) for v in e["args"].values()))]
    report.check("counters carry numeric series", not bad_counters, examples(bad_counters))

    missing_ext = [short(e) for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                   and not is_int(args_of(e).get("External id"))]
    report.check("host ranges carry External id", not missing_ext, examples(missing_ext))


def track_kind(trace, track):
    """What a (pid, tid) track is, for the nesting check's summary."""
    pid, tid = track
    if pid == OVERHEAD_PID:
        return "overhead"
    if pid in trace.gpu_pids:
        gpu = gpu_track_of(tid)
        return f"GPU {TRACK_KIND_NAME.get(gpu[0], 'unknown')}" if gpu else "GPU unknown"
    return "async ranges" if is_int(tid) and tid >= ASYNC_LANE_TID_BASE else "host thread"


def check_tracks_nest(report, trace):
    """Every (pid, tid) track -- host threads, async lanes, GPU operations, syncs, annotations,
    CUPTI overhead -- holds properly nested slices: sorted by start (the longer first on a
    tie), each slice ends before the next one starts or contains it. Perfetto mis-draws any
    partial overlap; kinetrace puts overlapping work on lanes of its own to avoid one."""
    tracks = defaultdict(list)
    for e in trace.events:
        if e.get("ph") == "X" and END in e:
            tracks[(e.get("pid"), e.get("tid"))].append((e[TS], e[END], e))
    overlaps = []
    for track, slices in tracks.items():
        slices.sort(key=lambda s: (s[0], -s[1]))
        stack = []  # enclosing slices, innermost last
        for start, end, e in slices:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                outer = stack[-1][2]
                overlaps.append(f"{track_kind(trace, track)} track {trace.track_label(track)}: "
                                f"{e.get('name')!r} [{start}, {end}] ns crosses the end of "
                                f"{outer.get('name')!r} [{stack[-1][0]}, {stack[-1][1]}] ns")
            stack.append((start, end, e))
    kinds = Counter(track_kind(trace, t) for t in tracks)
    report.check("every track's slices nest (no partial overlap on any (pid, tid))", not overlaps,
                 examples(overlaps) if overlaps
                 else f"{len(tracks)} tracks: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))


def check_naming(report, trace):
    pids = {e.get("pid") for e in trace.events if e.get("ph") not in ("M", None)}
    threads = {(e.get("pid"), e.get("tid")) for e in trace.events if e.get("ph") in ("X", "i", "s", "f")}
    unnamed_pids = sorted(pids - set(trace.process_names), key=str)
    unnamed_threads = sorted(threads - set(trace.thread_names), key=str)
    report.check("process_name for every pid", not unnamed_pids, examples(unnamed_pids) or f"{len(pids)} pids")
    report.check("thread_name for every (pid, tid)", not unnamed_threads,
                 examples(unnamed_threads) or f"{len(threads)} threads")

    problems = []
    for pid, name in trace.process_names.items():
        if (pid in trace.gpu_pids or pid in trace.metric_pids) and name != f"GPU {pid}":
            problems.append(f"pid {pid} is named {name!r}, not 'GPU {pid}'")
        elif pid == OVERHEAD_PID and name != "CUPTI overhead":
            problems.append(f"pid {pid} is named {name!r}, not 'CUPTI overhead'")
    named = 0
    for (pid, tid), name in trace.thread_names.items():
        if (pid in trace.gpu_pids or pid in trace.metric_pids) and tid == GPU_METRICS_TID:
            problem = None if name == GPU_METRICS_THREAD else f"{name!r}, expected {GPU_METRICS_THREAD!r}"
        elif pid in trace.gpu_pids and tid == MEMORY_POOLS_TID:
            problem = None if name == MEMORY_POOLS_THREAD else f"{name!r}, expected {MEMORY_POOLS_THREAD!r}"
        elif pid in trace.gpu_pids:
            problem = gpu_track_name_problem(tid, name)
        elif pid == OVERHEAD_PID:
            problem = overhead_track_name_problem(tid, name)
        elif is_int(tid) and tid >= ASYNC_LANE_TID_BASE:
            problem = async_track_name_problem(tid, name)
        else:
            continue  # a host thread: "thread T (name)"
        named += 1
        if problem:
            problems.append(f"pid {pid} tid {tid}: {problem}")
    report.check("GPU, async and overhead tracks named after their tids", not problems,
                 examples(problems) if problems else f"{named} tracks")


def lane_of_suffix(number):
    """Lane of a name's " (N)" suffix: none is lane 0, (2) lane 1, ...; None for (0)/(1)."""
    if number is None:
        return 0
    return int(number) - 1 if int(number) >= 2 else None


def gpu_track_name_problem(tid, name):
    """'stream S', 'stream S (N)', 'stream S sync[ (N)]', 'stream S annotations[ (N)]' must
    name the tid gpuTrackTid gives that stream, kind and lane."""
    m = re.fullmatch(r"stream (\d+)( sync| annotations)?(?: \((\d+)\))?", str(name))
    if not m:
        return f"{name!r} is not 'stream S[ sync| annotations][ (N)]'"
    kind = next(k for k, suffix in TRACK_SUFFIX.items() if suffix == (m.group(2) or ""))
    lane = lane_of_suffix(m.group(3))
    if lane is None:
        return f"{name!r}: a lane suffix starts at (2)"
    want = gpu_track_tid(int(m.group(1)), kind, lane)
    return None if tid == want else f"{name!r} is the name of tid {want}"


def overhead_track_name_problem(tid, name):
    """'CUPTI overhead (thread T)' / '(device D)' / bare, plus a lane suffix, for the tid
    (object id & 0x3FFFFF) + (lane << 22), plus 1<<30 for a device."""
    m = re.fullmatch(r"CUPTI overhead(?: \((thread|device) (\d+)\))?(?: \((\d+)\))?", str(name))
    if not m or not is_int(tid):
        return f"{name!r} is not 'CUPTI overhead[ (thread T| device D)][ (N)]'"
    lane = lane_of_suffix(m.group(3))
    if lane is None:
        return f"{name!r}: a lane suffix starts at (2)"
    if m.group(1) is None:  # an object of no known kind: its id is not in the name
        ok = tid < OVERHEAD_DEVICE_BASE and (tid >> OVERHEAD_LANE_SHIFT) & 0xFF == min(lane, MAX_LANE)
        return None if ok else f"{name!r} does not fit tid {tid}"
    base = OVERHEAD_DEVICE_BASE if m.group(1) == "device" else 0
    want = base + (int(m.group(2)) & OVERHEAD_ID_BITS) + (min(lane, MAX_LANE) << OVERHEAD_LANE_SHIFT)
    return None if tid == want else f"{name!r} is the name of tid {want}"


def async_track_name_problem(tid, name):
    """Async range lanes: tid (1<<30)+lane, named 'async ranges' then 'async ranges 2', ..."""
    lane = tid - ASYNC_LANE_TID_BASE
    want = "async ranges" if lane == 0 else f"async ranges {lane + 1}"
    return None if name == want else f"{name!r}, expected {want!r}"


def check_gpu_metrics(report, trace):
    """GPU metric samples: described by kinetrace_gpu_metrics, one counter per metric and
    sample on a GPU's metrics track, each one number keyed by its metric's unit; the tracks
    named; kernels' averages numbers. Nothing to check (INFO) when none were sampled."""
    counters = trace.metric_counters
    meta = trace.top.get("kinetrace_gpu_metrics")
    if not counters and meta is None:
        report.info("GPU metrics", "not sampled (no gpu_metric counters, no kinetrace_gpu_metrics)")
        return
    listed, problems = {}, []
    if not isinstance(meta, dict):
        problems.append(f"kinetrace_gpu_metrics is {meta!r} though {len(counters)} gpu_metric counters exist")
        meta = {}
    else:
        for m in meta.get("metrics") if isinstance(meta.get("metrics"), list) else []:
            if (isinstance(m, dict) and all(isinstance(m.get(k), str) and m[k] for k in ("name", "display_name", "unit"))
                    and m["unit"] in GPU_METRIC_UNITS):
                listed[m["display_name"]] = m["unit"]
            else:
                problems.append(f"metric entry {m!r} lacks name, display_name or a unit of {GPU_METRIC_UNITS}")
        if not listed:
            problems.append("no metrics listed")
        if not (is_int(meta.get("interval_ns")) and meta["interval_ns"] > 0):
            problems.append(f"interval_ns {meta.get('interval_ns')!r} is not a positive integer")
        problems += [f"{k} {meta.get(k)!r} is not a count" for k in ("samples", "lost", "corrupted", "setup_dropped")
                     if not (is_int(meta.get(k)) and meta[k] >= 0)]
    report.check("kinetrace_gpu_metrics describes the sampling", not problems,
                 examples(problems) if problems else
                 ", ".join(f"{n} ({u})" for n, u in listed.items()) + f" every {meta['interval_ns']} ns")
    report.info("GPU metric samples", ", ".join(f"{k}={meta.get(k)}" for k in ("samples", "lost", "corrupted",
                                                                              "setup_dropped")))

    bad = []
    for e in counters:
        pid, tid, args = e.get("pid"), e.get("tid"), args_of(e)
        unit = listed.get(e.get("name"))
        if tid != GPU_METRICS_TID:
            bad.append(f"{short(e)}: tid is not {GPU_METRICS_TID} (the GPU metrics track)")
        elif pid not in trace.metric_pids:
            bad.append(f"{short(e)}: pid {pid} is no GPU's")
        elif unit is None:
            bad.append(f"{short(e)}: {e.get('name')!r} is not a listed metric")
        elif list(args) != [unit] or not is_number(args[unit]):
            bad.append(f"{short(e)}: args {args} are not one number keyed by {unit!r}")
    report.check("GPU metric counters on a GPU's metrics track, one number keyed by the unit", not bad,
                 examples(bad) if bad else f"{len(counters)} counters on GPU(s) {sorted(trace.metric_pids)}")

    per_metric = Counter(e.get("name") for e in counters)
    wrong = [f"{n}: {per_metric.get(n, 0)} counters" for n in listed if per_metric.get(n, 0) != meta.get("samples")]
    report.check("one counter per listed metric and sample", not wrong,
                 f"samples={meta.get('samples')!r}; " + examples(wrong) if wrong else f"{meta.get('samples')} samples")

    unnamed = [f"GPU {pid}: {trace.thread_names.get((pid, GPU_METRICS_TID))!r}" for pid in sorted(trace.metric_pids)
               if trace.thread_names.get((pid, GPU_METRICS_TID)) != GPU_METRICS_THREAD]
    report.check(f"each GPU's metrics track named {GPU_METRICS_THREAD!r}", not unnamed, examples(unnamed))

    keys = [f"{n} ({u})" for n, u in listed.items()]
    kernels = [e for e in trace.gpu_ops if e.get("cat") == "kernel"]
    bad_args = [short(e) for e in kernels if any(k in args_of(e) and not is_number(args_of(e)[k]) for k in keys)]
    carrying = sum(1 for e in kernels if all(k in args_of(e) for k in keys))
    report.check("kernels' metric averages are numbers", not bad_args,
                 examples(bad_args) if bad_args else f"{carrying} of {len(kernels)} kernels carry all of {keys}")


def check_flows(report, trace):
    """Arrows from launch calls to GPU work: one start ("s") per call, one end ("f") per GPU
    operation (several for a graph launch), each bound to a slice of its track."""
    starts = defaultdict(list)
    finishes = []
    for e in trace.events:
        if e.get("ph") == "s":
            starts[e.get("id")].append(e)
        elif e.get("ph") == "f":
            finishes.append(e)
    bad = [short(e) for e in finishes if e.get("bp") != "e"]
    report.check('flow ends have "bp":"e"', not bad, examples(bad))
    orphans = [f"id={e.get('id')}" for e in finishes if e.get("id") not in starts]
    report.check("every flow end has a start with its id", not orphans,
                 examples(orphans) if orphans else f"{len(finishes)} flow ends, {len(starts)} starts")
    bad_cat = [short(e) for e in finishes + [s for v in starts.values() for s in v] if e.get("cat") != "ac2g"]
    report.check('flows are cat "ac2g"', not bad_cat, examples(bad_cat))
    dup = [i for i, v in starts.items() if len(v) > 1]
    report.check("one flow start per id", not dup, examples(f"id={i}" for i in dup))
    # The assembler writes a start only once a GPU operation of its call is in the trace.
    ended = {e.get("id") for e in finishes}
    unended = [short(v[0]) for i, v in starts.items() if i not in ended]
    report.check("every flow start has at least one end", not unended, examples(unended))
    # Perfetto binds a flow event to the slice enclosing its timestamp on its track.
    unbound = [short(e) for e in finishes + [s for v in starts.values() for s in v]
               if TS not in e or not trace.enclosed((e.get("pid"), e.get("tid")), e[TS])]
    report.check("every flow event lies inside a slice of its track", not unbound, examples(unbound))


def check_gpu_tracks(report, trace):
    """Each GPU event is on its device's pid and on a track of its own stream and kind:
    operations on the stream's lanes, syncs on its sync track, spans on its annotations."""
    events = [e for e in trace.events if e.get("ph") == "X" and e.get("cat") in GPU_TRACK_CATS]
    by_kind = {OPS_TRACK: [], SYNC_TRACK: [], SPAN_TRACK: []}
    for e in events:
        kind = TRACK_OF_CAT[e.get("cat")]
        args = args_of(e)
        wanted = ("correlation", "device", "stream") if kind != SPAN_TRACK else ()
        problems = [f"{k} arg missing or not an integer" for k in wanted if not is_int(args.get(k))]
        if not problems:
            if kind != SPAN_TRACK and args["device"] != e.get("pid"):
                problems.append(f"device {args['device']} != pid {e.get('pid')}")
            problem = gpu_track_problem(e, kind)
            if problem:
                problems.append(problem)
        by_kind[kind].append(f"{short(e)}: {problems}" if problems else None)
    for kind, name in ((OPS_TRACK, "GPU ops on a lane of their stream (device/stream/correlation args match pid/tid)"),
                       (SYNC_TRACK, "syncs on their stream's sync track (device/stream args match pid/tid)"),
                       (SPAN_TRACK, "GPU spans on their stream's annotation track")):
        bad = [b for b in by_kind[kind] if b]
        report.check(name, not bad, examples(bad) if bad else f"{len(by_kind[kind])} events")

    lanes = defaultdict(set)  # (device, stream, kind) -> lanes used
    for e in events:
        track = gpu_track_of(e.get("tid"))
        if track:
            lanes[(e.get("pid"), stream_of(e) if track[0] != SPAN_TRACK else track[2], track[0])].add(track[1])
    extra = [f"device {d} stream {s} {TRACK_KIND_NAME.get(k, k)}: {len(l)} lanes"
             for (d, s, k), l in sorted(lanes.items(), key=str) if len(l) > 1]
    report.info("GPU tracks", f"{len(lanes)} (device, stream, kind) tracks"
                + (f"; with more than one lane: {', '.join(extra)}" if extra else ", one lane each"))


def check_gpu_ops(report, trace, strict):
    """strict: every GPU op must have its launch call in the trace (census traces)."""
    ops = trace.gpu_ops
    report.info("GPU ops", ", ".join(f"{c}={n}" for c, n in Counter(e.get("cat") for e in ops).items()) or "none")

    check_gpu_tracks(report, trace)

    without_launch = [short(e) for e in ops if trace.launch_of(e) is None]
    if strict:
        report.check("every GPU op has its launch call", not without_launch, examples(without_launch))
    else:
        report.info("GPU ops without a launch call in the trace", str(len(without_launch)))

    early = []
    worst = 0
    for e in ops:
        launch = trace.launch_of(e)
        if launch is not None and TS in e:
            lead = launch[TS] - e[TS]
            if lead > 0:
                early.append(f"{short(e)} starts {lead} ns before {launch.get('name')!r}")
                worst = max(worst, lead)
    report.check("GPU ops start at or after their launch call", not early,
                 f"{len(early)} violate, worst {worst} ns: {examples(early)}" if early
                 else f"{len(ops) - len(without_launch)} ops with launch calls")

    before = trace.top.get("kinetrace_gpu_ops_before_launch")
    if before is not None:
        report.check("kinetrace_gpu_ops_before_launch is 0", before == 0, f"got {before!r}")


# ---- manifest checks (launch_census traces) ---------------------------------------------

def check_ranges(report, trace, manifest):
    """Returns range name -> External id for the ranges the manifest names."""
    by_name = defaultdict(list)
    for e in trace.events:
        if e.get("ph") == "X" and e.get("cat") == "user_annotation":
            by_name[e.get("name")].append(e)
    problems = []
    ids = {}
    for name in manifest.get("ranges", []):
        found = by_name.get(name, [])
        if len(found) != 1:
            problems.append(f"{name!r} appears {len(found)} times")
        else:
            ids[name] = args_of(found[0]).get("External id")
    report.check("each census range appears once", not problems,
                 examples(problems) if problems else f"{len(ids)} ranges")
    values = [v for v in ids.values()]
    report.check("range External ids are distinct and non-zero",
                 len(set(values)) == len(values) and all(is_int(v) and v != 0 for v in values), f"{ids}")
    return ids


def check_external_ids(report, what, matched, range_ids):
    """matched: (manifest entry, [trace events]) pairs."""
    wrong = []
    for entry, found in matched:
        want = range_ids.get(entry["range"])
        for e in found:
            got = args_of(e).get("External id")
            if got != want:
                wrong.append(f"{short(e)} External id {got!r}, its range {entry['range']!r} has {want!r}")
    total = sum(len(f) for _, f in matched)
    report.check(f"{what} linked to the range that launched them", not wrong,
                 examples(wrong) if wrong else f"{total} ops")


def check_launch_apis(report, what, matched, trace):
    wrong = []
    for entry, found in matched:
        for e in found:
            launch = trace.launch_of(e)
            if launch is None:
                continue  # reported by "every GPU op has its launch call"
            name = str(launch.get("name"))
            # A driver-level launch is also acceptable: the runtime may be bypassed.
            ok = api_base_name(name) == entry["api"] or (
                launch.get("cat") == "cuda_driver" and re.match(r"^cu[A-Z]\w*", name))
            if not ok:
                wrong.append(f"{short(e)} launched by {name!r}, expected {entry['api']!r}")
    report.check(f"{what} launched by the expected API", not wrong, examples(wrong))


def check_device(report, what, found, device):
    wrong = [short(e) for e in found if e.get("pid") != device or args_of(e).get("device") != device]
    report.check(f"{what} on device {device}", not wrong, examples(wrong))


def check_census(report, trace, manifest):
    device = manifest.get("device", 0)
    props = trace.top.get("deviceProperties")
    report.check(f"deviceProperties lists device {device}",
                 isinstance(props, list) and any(isinstance(p, dict) and p.get("id") == device for p in props))
    range_ids = check_ranges(report, trace, manifest)
    check_gpu_ops(report, trace, strict=True)

    kernels = [e for e in trace.gpu_ops if e.get("cat") == "kernel"]
    memcpys = [e for e in trace.gpu_ops if e.get("cat") == "gpu_memcpy"]
    memsets = [e for e in trace.gpu_ops if e.get("cat") == "gpu_memset"]

    # Kernels, by name.
    by_name = defaultdict(list)
    for e in kernels:
        by_name[base_kernel_name(str(e.get("name")))].append(e)
    kernel_matches = [(k, by_name.get(k["name"], [])) for k in manifest["kernels"]]
    wrong = [f"{k['name']}: {len(f)} (expected {k['count']})" for k, f in kernel_matches if len(f) != k["count"]]
    report.check("each kernel appears exactly as often as launched", not wrong,
                 examples(wrong) if wrong else f"{len(kernel_matches)} kernel names")
    expected_total = sum(k["count"] for k in manifest["kernels"])
    others = sorted(set(by_name) - {k["name"] for k in manifest["kernels"]})
    report.check("no unexpected kernels", len(kernels) == expected_total,
                 f"{len(kernels)} kernels in trace, {expected_total} launched"
                 + (f"; not launched by the census: {examples(others)}" if others else ""))
    check_device(report, "kernels", kernels, device)
    wrong = []
    for k, found in kernel_matches:
        for e in found:
            grid, block = args_of(e).get("grid"), args_of(e).get("block")
            if grid != k["grid"] or block != k["block"]:
                wrong.append(f"{k['name']}: grid {grid} block {block}, launched {k['grid']} {k['block']}")
    report.check("kernel grid and block as launched", not wrong, examples(wrong))

    # Copies, by direction and size (each kind of copy has its own size).
    memcpy_matches = []
    for m in manifest["memcpys"]:
        found = [e for e in memcpys if str(e.get("name")).startswith(f"Memcpy {m['direction']}")
                 and args_of(e).get("bytes") == m["bytes"]]
        memcpy_matches.append((m, found))
    wrong = [f"{m['name']} {m['bytes']} B: {len(f)} (expected {m['count']})"
             for m, f in memcpy_matches if len(f) != m["count"]]
    report.check("each copy appears exactly as often as issued", not wrong,
                 examples(wrong) if wrong else f"{len(memcpy_matches)} kinds of copy")
    for direction in ("HtoD", "DtoH", "DtoD"):
        want = sum(m["count"] for m in manifest["memcpys"] if m["direction"] == direction)
        got = sum(1 for e in memcpys if str(e.get("name")).startswith(f"Memcpy {direction}"))
        report.check(f"Memcpy {direction} count", got == want, f"{got} in trace, {want} issued")
    other = [short(e) for e in memcpys if not re.match(r"^Memcpy (HtoD|DtoH|DtoD) ", str(e.get("name")))]
    report.check("no copies of other directions", not other, examples(other))
    wrong = [f"{e.get('name')!r}, expected {m['name']!r}" for m, f in memcpy_matches for e in f
             if e.get("name") != m["name"]]
    report.check("copy names give the memory kinds (Pageable/Pinned/Device)", not wrong, examples(wrong))
    check_device(report, "copies", memcpys, device)

    # Memsets, by size.
    memset_matches = [(m, [e for e in memsets if args_of(e).get("bytes") == m["bytes"]])
                      for m in manifest["memsets"]]
    wrong = [f"{m['bytes']} B: {len(f)} (expected {m['count']})" for m, f in memset_matches if len(f) != m["count"]]
    want = sum(m["count"] for m in manifest["memsets"])
    report.check("memsets appear exactly as often as issued", not wrong and len(memsets) == want,
                 examples(wrong) if wrong else f"{len(memsets)} in trace, {want} issued")
    bad_names = [short(e) for e in memsets if not str(e.get("name")).startswith("Memset")]
    report.check('memset names start "Memset"', not bad_names, examples(bad_names))
    check_device(report, "memsets", memsets, device)

    check_streams(report, kernel_matches + memcpy_matches + memset_matches)
    if "streamOrder" in manifest:
        check_stream_order(report, manifest["streamOrder"], kernel_matches, memcpy_matches, memset_matches)

    all_matches = kernel_matches + memcpy_matches + memset_matches
    check_external_ids(report, "GPU ops", all_matches, range_ids)
    check_launch_apis(report, "GPU ops", all_matches, trace)
    check_op_flows(report, trace, [e for _, f in all_matches for e in f])

    check_syncs(report, trace, manifest)
    check_memory_events(report, trace, manifest)
    check_memory_pool_events(report, trace, manifest)


def skipped_for(report, trace, activity, name):
    """True (and an INFO line) when the trace says `activity` was not recorded."""
    if not trace.activity_off(activity):
        return False
    report.info(name, f"skipped: kinetrace_activities is {trace.top.get('kinetrace_activities')!r}, "
                      f"without {activity!r}")
    return True


def check_syncs(report, trace, manifest):
    """Every kind of synchronisation the census did is in the trace (sync activity only)."""
    name = "synchronisations recorded"
    if skipped_for(report, trace, "sync", name):
        return
    syncs = Counter(e.get("name") for e in trace.events if e.get("ph") == "X" and e.get("cat") == "cuda_sync")
    wrong = [f"{kind}: {syncs.get(kind, 0)} (at least {n})" for kind, n in manifest.get("syncsAtLeast", {}).items()
             if syncs.get(kind, 0) < n]
    report.check(name, not wrong, examples(wrong) if wrong else dict(syncs))


def check_memory_events(report, trace, manifest):
    """The census's cudaMalloc and cudaFree are [memory] instants (memory activity only)."""
    name = "allocations and frees recorded as [memory] instants"
    if skipped_for(report, trace, "memory", name):
        return
    alloc = manifest.get("allocations", {})
    memory = [e for e in trace.events if e.get("ph") == "i" and e.get("name") == "[memory]"]
    want = alloc.get("mallocs", 0) + alloc.get("frees", 0)
    report.check(name, len(memory) >= want, f"{len(memory)} [memory] events, at least {want} expected")


def check_memory_pool_events(report, trace, manifest):
    """The census's own pool is created, trimmed and destroyed: an instant each on its GPU's
    "memory pools" thread (memory activity only; other pools, the default one, may add
    more)."""
    name = "memory pool operations recorded as instants"
    if skipped_for(report, trace, "memory", name):
        return
    want = manifest.get("memoryPools", {})
    names = {"created": "Memory pool created", "trimmed": "Memory pool trimmed",
             "destroyed": "Memory pool destroyed"}
    found = Counter(e.get("name") for e in trace.events
                    if e.get("ph") == "i" and e.get("cat") == "gpu_memory_pool")
    wrong = [f"{op}: {found.get(names[op], 0)} (at least {n})" for op, n in want.items()
             if found.get(names[op], 0) < n]
    report.check(name, not wrong, examples(wrong) if wrong else dict(found))


def check_streams(report, matches):
    """Each stream slot maps to one stream id; the slots' ids differ from each other. The id
    is the stream's, whichever of its lanes (tids) an op is on."""
    ids = defaultdict(set)
    graph_ids = set()
    for entry, found in matches:
        for e in found:
            (graph_ids if entry.get("graph") else ids[entry["stream"]]).add(stream_of(e))
    shape = {slot: sorted(t, key=str) for slot, t in ids.items()}
    report.check("ops of each stream share one stream id", all(len(t) == 1 for t in ids.values()), f"{shape}")
    single = {slot: next(iter(t)) for slot, t in ids.items() if len(t) == 1}
    report.check("the two created streams and the legacy stream have distinct ids",
                 len(single) == 3 and len(set(single.values())) == 3, f"{single}")
    # Graph kernels run on the stream the graph was launched into (slot 0 in the census).
    report.check("graph kernels on the graph's launch stream",
                 not graph_ids or graph_ids == {single.get("0")},
                 f"graph kernels on {sorted(graph_ids, key=str)}, launch stream {single.get('0')}")


def check_stream_order(report, expected, kernel_matches, memcpy_matches, memset_matches):
    """A stream runs its work in launch order: sorted by start time, each stream's ops, on
    all of its lanes together, must read exactly as the manifest's streamOrder lists them."""
    seen = defaultdict(list)  # slot -> [(ts, identity)]
    for k, found in kernel_matches:
        if not k.get("graph"):
            seen[k["stream"]] += [(e.get(TS), f"kernel {k['name']}") for e in found]
    for m, found in memcpy_matches:
        seen[m["stream"]] += [(e.get(TS), f"memcpy {m['direction']} {m['bytes']}") for e in found]
    for m, found in memset_matches:
        seen[m["stream"]] += [(e.get(TS), f"memset {m['bytes']}") for e in found]
    wrong = []
    for slot, want in expected.items():
        got = [identity for _, identity in sorted((p for p in seen.get(slot, []) if p[0] is not None),
                                                  key=lambda p: p[0])]
        if sorted(got) != sorted(want):
            # Missing or extra ops fail the count checks; order is judged on complete streams.
            report.info("each stream's ops in launch order", f"stream {slot} not judged: its ops differ from the launches")
            continue
        if got != want:
            at = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
            wrong.append(f"stream {slot}: op {at} is {got[at] if at < len(got) else 'missing'!r}, "
                         f"launched {want[at] if at < len(want) else 'nothing'!r}")
    report.check("each stream's ops in launch order", not wrong,
                 examples(wrong) if wrong else f"{sum(len(v) for v in expected.values())} ops on {len(expected)} streams")


def check_op_flows(report, trace, ops):
    """Each op with a launch call has an ac2g arrow from that call to the op."""
    flows = defaultdict(lambda: {"s": [], "f": []})
    for e in trace.events:
        if e.get("ph") in ("s", "f"):
            flows[e.get("id")][e["ph"]].append(e)
    missing = []
    for op in ops:
        launch = trace.launch_of(op)
        if launch is None:
            continue
        corr = args_of(op)["correlation"]
        flow = flows.get(corr, {"s": [], "f": []})
        if not any(s.get("pid") == launch.get("pid") and s.get("tid") == launch.get("tid") for s in flow["s"]):
            missing.append(f"no flow start for correlation {corr} on {launch.get('name')!r}")
        if not any(f.get("pid") == op.get("pid") and f.get("tid") == op.get("tid")
                   and TS in f and f[TS] == op.get(TS) for f in flow["f"]):
            missing.append(f"no flow end at {short(op)}")
    report.check("launch -> GPU op flows present", not missing, examples(missing) if missing else f"{len(ops)} ops")


def check_flood(report, trace, manifest):
    launched = manifest["launched"]
    name = manifest["floodKernel"]
    found = sum(1 for e in trace.gpu_ops if e.get("cat") == "kernel" and base_kernel_name(str(e.get("name"))) == name)
    report.check("flood kernels in trace, no more than launched", 0 < found <= launched,
                 f"{found} of {launched} launched")
    check_gpu_ops(report, trace, strict=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", help="trace file (.json or .json.gz)")
    parser.add_argument("manifest", nargs="?", help="manifest written by launch_census")
    parser.add_argument("--expect-drops", action="store_true",
                        help="require a drop counter > 0 (flood mode): " + ", ".join(DROP_COUNTERS))
    args = parser.parse_args()

    try:
        top, top_pairs = load_json(args.trace)
        manifest = load_json(args.manifest)[0] if args.manifest else None
    except (OSError, ValueError) as error:
        print(f"FAIL cannot load: {error}")
        print("0 passed, 1 failed")
        return 2
    if not isinstance(top, dict):
        print("FAIL trace is not a JSON object")
        print("0 passed, 1 failed")
        return 1

    report = Report()
    report.check("trace loads as JSON", True, args.trace)
    trace = Trace(top, top_pairs)
    check_top_level(report, trace, args.expect_drops)
    check_events(report, trace)
    check_tracks_nest(report, trace)
    check_naming(report, trace)
    check_gpu_metrics(report, trace)
    check_flows(report, trace)
    if manifest is None:
        check_gpu_ops(report, trace, strict=False)
    elif manifest.get("mode") == "flood":
        check_flood(report, trace, manifest)
    else:
        check_census(report, trace, manifest)

    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
