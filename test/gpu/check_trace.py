#!/usr/bin/env python3
"""Checks a kinetrace trace against shared/TRACE_FORMAT.md and, optionally, a manifest.

    check_trace.py TRACE.json[.gz]                       format checks only
    check_trace.py TRACE.json[.gz] MANIFEST.json         format + what launch_census launched
    check_trace.py TRACE.json MANIFEST.json --expect-drops   (flood mode: drops must be reported)

Prints one line per check ("PASS name: detail" / "FAIL name: detail"), then "N passed, M
failed". Exit status 1 when any check failed, 2 when the files cannot be read.

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
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8"), parse_float=Decimal)


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

    def __init__(self, top):
        self.top = top
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

    def enclosed(self, track, ts_ns):
        starts = self.slice_starts.get(track)
        if not starts:
            return False
        i = bisect.bisect_right(starts, ts_ns) - 1
        return i >= 0 and self.slice_max_ends[track][i] >= ts_ns


# ---- format checks (any trace) ---------------------------------------------------------

def check_top_level(report, top, expect_drops):
    keys = list(top.keys())  # json keeps the file's key order
    missing = [k for k in ("schemaVersion", "traceEvents", "deviceProperties", "baseTimeNanoseconds")
               if k not in top]
    report.check("top-level keys", not missing,
                 f"missing {missing}" if missing else f"{len(keys)} keys")
    report.check("schemaVersion is 1", top.get("schemaVersion") == 1, f"got {top.get('schemaVersion')!r}")
    report.check("traceEvents is a list", isinstance(top.get("traceEvents"), list))

    base = top.get("baseTimeNanoseconds")
    report.check("baseTimeNanoseconds is epoch ns", is_int(base) and base > EPOCH_NS_2001, f"got {base!r}")

    if "distributedInfo" in top:
        ok = "traceEvents" in top and keys.index("distributedInfo") < keys.index("traceEvents")
        info = top["distributedInfo"]
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
    dropped = top.get("kinetrace_cupti_dropped_records")
    if report.check("kinetrace_cupti_dropped_records present", is_int(dropped) and dropped >= 0,
                    f"got {dropped!r} (it is written even when 0)"):
        if expect_drops:
            report.check("CUPTI drops reported (expected)", dropped > 0, f"{dropped} dropped")
        else:
            report.check("no CUPTI drops", dropped == 0, f"{dropped} dropped")


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

    # Perfetto draws only properly nested slices per track; host threads must nest.
    host_tracks = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("pid") not in trace.gpu_pids and END in e:
            host_tracks[(e.get("pid"), e.get("tid"))].append((e[TS], e[END], e))
    overlaps = []
    for track, slices in host_tracks.items():
        slices.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        stack = []
        for start, end, e in slices:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                overlaps.append(f"{short(e)} crosses the end of {stack[-1][2].get('name')!r}")
            stack.append((start, end, e))
    report.check("host slices nest per (pid, tid)", not overlaps,
                 examples(overlaps) if overlaps else f"{len(host_tracks)} host tracks")

    missing_ext = [short(e) for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                   and not is_int(args_of(e).get("External id"))]
    report.check("host ranges carry External id", not missing_ext, examples(missing_ext))


def check_naming(report, trace):
    process_names = set()
    thread_names = set()
    for e in trace.events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            process_names.add(e.get("pid"))
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            thread_names.add((e.get("pid"), e.get("tid")))
    pids = {e.get("pid") for e in trace.events if e.get("ph") not in ("M", None)}
    threads = {(e.get("pid"), e.get("tid")) for e in trace.events if e.get("ph") in ("X", "i", "s", "f")}
    unnamed_pids = sorted(pids - process_names, key=str)
    unnamed_threads = sorted(threads - thread_names, key=str)
    report.check("process_name for every pid", not unnamed_pids, examples(unnamed_pids) or f"{len(pids)} pids")
    report.check("thread_name for every (pid, tid)", not unnamed_threads,
                 examples(unnamed_threads) or f"{len(threads)} threads")


def check_flows(report, trace):
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
    # Perfetto binds a flow event to the slice enclosing its timestamp on its track.
    unbound = [short(e) for e in finishes + [s for v in starts.values() for s in v]
               if TS not in e or not trace.enclosed((e.get("pid"), e.get("tid")), e[TS])]
    report.check("every flow event lies inside a slice of its track", not unbound, examples(unbound))


def check_gpu_ops(report, trace, strict):
    """strict: every GPU op must have its launch call in the trace (census traces)."""
    ops = trace.gpu_ops
    report.info("GPU ops", ", ".join(f"{c}={n}" for c, n in Counter(e.get("cat") for e in ops).items()) or "none")

    bad_args = []
    for e in ops:
        args = args_of(e)
        problems = [k for k in ("correlation", "device", "stream") if not is_int(args.get(k))]
        if not problems:
            if args["device"] != e.get("pid"):
                problems.append(f"device {args['device']} != pid {e.get('pid')}")
            if args["stream"] != e.get("tid"):
                problems.append(f"stream {args['stream']} != tid {e.get('tid')}")
        if problems:
            bad_args.append(f"{short(e)}: {problems}")
    report.check("GPU ops: correlation/device/stream args match pid/tid", not bad_args, examples(bad_args))

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

    syncs = Counter(e.get("name") for e in trace.events if e.get("ph") == "X" and e.get("cat") == "cuda_sync")
    wrong = [f"{name}: {syncs.get(name, 0)} (at least {n})" for name, n in manifest.get("syncsAtLeast", {}).items()
             if syncs.get(name, 0) < n]
    report.check("synchronisations recorded", not wrong, examples(wrong) if wrong else dict(syncs))

    alloc = manifest.get("allocations", {})
    memory = [e for e in trace.events if e.get("ph") == "i" and e.get("name") == "[memory]"]
    want = alloc.get("mallocs", 0) + alloc.get("frees", 0)
    report.check("allocations and frees recorded as [memory] instants", len(memory) >= want,
                 f"{len(memory)} [memory] events, at least {want} expected")


def check_streams(report, matches):
    """Each stream slot maps to one stream id; the slots' ids differ from each other."""
    tids = defaultdict(set)
    graph_tids = set()
    for entry, found in matches:
        for e in found:
            (graph_tids if entry.get("graph") else tids[entry["stream"]]).add(e.get("tid"))
    shape = {slot: sorted(t, key=str) for slot, t in tids.items()}
    report.check("ops of each stream share one stream id", all(len(t) == 1 for t in tids.values()), f"{shape}")
    single = {slot: next(iter(t)) for slot, t in tids.items() if len(t) == 1}
    report.check("the two created streams and the legacy stream have distinct ids",
                 len(single) == 3 and len(set(single.values())) == 3, f"{single}")
    # Graph kernels run on the stream the graph was launched into (slot 0 in the census).
    report.check("graph kernels on the graph's launch stream",
                 not graph_tids or graph_tids == {single.get("0")},
                 f"graph kernels on {sorted(graph_tids, key=str)}, launch stream {single.get('0')}")


def check_stream_order(report, expected, kernel_matches, memcpy_matches, memset_matches):
    """A stream runs its work in launch order: sorted by start time, each stream's ops must
    read exactly as the manifest's streamOrder lists them."""
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
                        help="require kinetrace_cupti_dropped_records > 0 (flood mode)")
    args = parser.parse_args()

    try:
        top = load_json(args.trace)
        manifest = load_json(args.manifest) if args.manifest else None
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
    trace = Trace(top)
    check_top_level(report, top, args.expect_drops)
    check_events(report, trace)
    check_naming(report, trace)
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
