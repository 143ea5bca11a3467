#!/usr/bin/env python3
"""Recomputes Holistic Trace Analysis (HTA) figures from a Chrome trace with HTA's published
definitions, and sets them beside `kinetrace analyze --json`. HTA itself is not installed
where kinetrace is tested, so its definitions are reimplemented here to check that
kinetrace's figures mean what HTA's do.

    hta_reference.py TRACE.json[.gz] [--analyze-json ANALYZE.json] [--tolerance 0.01]

The trace is torch.profiler's or kinetrace's: GPU operations are "X" events of category
kernel, gpu_memcpy, gpu_memset (and cuda_graph) with args device, stream, correlation;
launch calls are "X" events of category cuda_runtime or cuda_driver with args correlation.

Each figure follows the HTA function named beside it (times in nanoseconds):

  temporal breakdown (BreakdownAnalysis.get_temporal_breakdown), per rank
      span      the first GPU operation's start to the last one's end, all devices together
      idle      span minus the union of every GPU operation
      compute   the union of COMPUTATION kernels
      non-compute   span - compute - idle
  kernel types (utils.get_kernel_type): COMMUNICATION if the name holds "ncclKernel",
      else MEMORY if it holds "Memcpy" or "Memset", else COMPUTATION (names only, case
      sensitive)
  kernel type time (BreakdownAnalysis._get_gpu_kernel_type_time): each type's operations
      merged, then the time split by which types ran together ("COMPUTATION overlapping
      COMMUNICATION", ...); overlap is its own bucket, counted once
  idle time breakdown (BreakdownAnalysis._analyze_idle_time_for_stream), per stream
      each gap between consecutive operations of one stream (start minus the previous
      one's end): "host wait" if the launch call started after the previous operation
      ended, else "kernel wait" if the gap is under consecutive_kernel_delay (30 ns), else
      "other"
  launch stats (CudaKernelAnalysis.cuda_kernel_launch_stats), operations launched by
      cudaLaunchKernel(ExC) or cudaMemcpyAsync / cudaMemsetAsync
      launch delay  as HTA computes it: op start - call start + call duration (its
                    documentation says op start - call end; both are printed)
      short kernels op shorter than its call, the call at most 50 us
  queue length (TraceCounters._get_queue_length_time_series_for_rank), per stream
      +1 at a launch call's start (cudaLaunchKernel(ExC), cuLaunchKernel(Ex),
      cudaMemcpyAsync, cudaMemsetAsync), -1 at its operation's start
  iterations (Trace._filter_irrelevant_gpu_kernels): with two or more ProfilerStep
      ranges, HTA keeps only host events before the last step's start and the GPU
      operations they launched (include_last_profiler_step=False)

With --analyze-json, each figure that kinetrace reports is set beside kinetrace's. Where
the definitions agree the figures must too (kinetrace's kernel wait is HTA's; HTA's other is
kinetrace's waiting on other work plus other; both queue lengths count launched, not yet
started operations). Where they differ, the row says "differs by definition" and why, and a
row with the difference accounted for follows where one can be computed. The comparison uses
every event of the trace, as kinetrace does: HTA's last-step filter is shown, not applied.
Exit status: 0 when every comparable figure agrees within the tolerance (relative), 1 when
one does not, 2 on unreadable input.
"""

import argparse
import collections
import decimal
import gzip
import json
import sys

GPU_OP_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "cuda_graph")
CALL_CATEGORIES = ("cuda_runtime", "cuda_driver")

COMPUTATION, COMMUNICATION, MEMORY = "COMPUTATION", "COMMUNICATION", "MEMORY"
# The order HTA builds its overlap labels in (trace_analysis.get_gpu_kernel_breakdown with
# include_memory_kernels=True).
KERNEL_TYPES = (COMPUTATION, COMMUNICATION, MEMORY)

CONSECUTIVE_KERNEL_DELAY_NS = 30  # get_idle_time_breakdown's default
RUNTIME_CUTOFF_NS = 50_000  # get_cuda_kernel_launch_stats' runtime_cutoff (50 us)
LAUNCH_DELAY_CUTOFF_NS = 100_000  # and launch_delay_cutoff (100 us)

# The calls cuda_kernel_launch_stats joins with their operations.
LAUNCH_STATS_CALLS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync",
                      "cudaMemsetAsync"}
# The calls the queue length counts (TraceSymbolTable.get_runtime_launch_events_mask).
QUEUE_CALLS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
               "cudaMemcpyAsync", "cudaMemsetAsync"}

AGREE, DISAGREE, BY_DEFINITION = "agree", "DISAGREE", "differs by definition"


# ---- reading ---------------------------------------------------------------------------

class GpuOp:
    __slots__ = ("name", "category", "start", "end", "device", "stream", "correlation")

    def __init__(self, name, category, start, end, device, stream, correlation):
        self.name, self.category = name, category
        self.start, self.end = start, end
        self.device, self.stream, self.correlation = device, stream, correlation

    @property
    def duration(self):
        return self.end - self.start


class Call:
    __slots__ = ("name", "start", "end", "correlation")

    def __init__(self, name, start, end, correlation):
        self.name, self.start, self.end, self.correlation = name, start, end, correlation

    @property
    def duration(self):
        return self.end - self.start


class Trace:
    """What the figures need of one rank's trace; times in nanoseconds."""

    def __init__(self):
        self.rank = -1
        self.ops = []
        self.calls = {}  # correlation -> Call
        self.step_starts = collections.defaultdict(list)  # ProfilerStep name -> starts
        self.first_ns = None  # the span of every event but metadata: kinetrace's window
        self.last_ns = None
        self.other_stream_events = collections.Counter()  # category -> count


def micros_to_ns(value):
    """Chrome trace microseconds (read as Decimal, so exact) to integer nanoseconds."""
    nanos = decimal.Decimal(value) * 1000
    return int(nanos.to_integral_value(rounding=decimal.ROUND_HALF_UP))


def integer_arg(args, key):
    value = args.get(key)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, decimal.Decimal)):
        return int(value)
    return None


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        # Decimal keeps "1234567.891" exact: a float loses nanoseconds on epoch times.
        return json.load(f, parse_float=decimal.Decimal)


def extend_span(trace, start, end):
    trace.first_ns = start if trace.first_ns is None else min(trace.first_ns, start)
    trace.last_ns = end if trace.last_ns is None else max(trace.last_ns, end)


def read_event(trace, event, base_ns):
    phase = event.get("ph")
    if phase == "M" or "ts" not in event:
        return
    if any(key in event and integer_arg(event, key) is None for key in ("pid", "tid")):
        # kinetrace reads no event whose pid or tid is not a number (torch.profiler's
        # "Spans" rows: the profiler's own span and markers), so they are outside its window.
        return
    start = base_ns + micros_to_ns(event["ts"])
    end = start + (micros_to_ns(event.get("dur", 0)) if phase == "X" else 0)
    extend_span(trace, start, end)
    if phase != "X":
        return
    category, name = event.get("cat", ""), event.get("name", "")
    args = event.get("args") or {}
    if category in GPU_OP_CATEGORIES:
        device = integer_arg(args, "device")
        stream = integer_arg(args, "stream")
        trace.ops.append(GpuOp(name, category, start, end,
                               device if device is not None else integer_arg(event, "pid") or 0,
                               stream if stream is not None else integer_arg(event, "tid") or 0,
                               integer_arg(args, "correlation") or 0))
    elif category in CALL_CATEGORIES:
        correlation = integer_arg(args, "correlation")
        if correlation:
            trace.calls[correlation] = Call(name, start, end, correlation)
    else:
        if "ProfilerStep" in name:
            trace.step_starts[name].append(start)
        if "stream" in args:
            # HTA takes any event with a stream argument for GPU work; these are left out.
            trace.other_stream_events[category] += 1


def read_trace(path):
    document = load_json(path)
    if isinstance(document, list):
        document = {"traceEvents": document}
    trace = Trace()
    rank = (document.get("distributedInfo") or {}).get("rank")
    if isinstance(rank, int):
        trace.rank = rank
    base_ns = int(document.get("baseTimeNanoseconds", 0) or 0)
    for event in document.get("traceEvents", []):
        if isinstance(event, dict):
            read_event(trace, event, base_ns)
    return trace


# ---- intervals ---------------------------------------------------------------------------

def union(intervals):
    """Sorted, merged, non-empty [start, end) intervals."""
    merged = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def length(intervals):
    return sum(end - start for start, end in intervals)


# ---- HTA's definitions -----------------------------------------------------------------

def kernel_type(name):
    if "ncclKernel" in name:
        return COMMUNICATION
    if "Memcpy" in name or "Memset" in name:
        return MEMORY
    return COMPUTATION


def kinetrace_kind(op):
    """How kinetrace's collector classes an operation: by category, then "nccl" anywhere."""
    if op.category == "cuda_graph":
        return COMPUTATION
    if op.category != "kernel":
        return MEMORY
    return COMMUNICATION if "nccl" in op.name.lower() else COMPUTATION


def last_step_filter(trace, include_last_step=False):
    """HTA's Trace._filter_irrelevant_gpu_kernels: the operations and calls it keeps."""
    if len(trace.step_starts) < 2:
        return trace.ops, trace.calls
    last_start = max(max(starts) for starts in trace.step_starts.values())
    kept_calls = {c: call for c, call in trace.calls.items()
                  if call.start < last_start or (include_last_step and call.start == last_start)}
    kept_ops = [op for op in trace.ops if op.correlation in kept_calls]
    return kept_ops, kept_calls


def hta_kind(op):
    return kernel_type(op.name)


def temporal_breakdown(ops, classify=hta_kind):
    busy = union((op.start, op.end) for op in ops)
    if not busy:
        return {"span": 0, "busy": 0, "idle": 0, "compute": 0, "non_compute": 0}
    span = busy[-1][1] - busy[0][0]
    idle = span - length(busy)
    compute = length(union((op.start, op.end) for op in ops if classify(op) == COMPUTATION))
    return {"span": span, "busy": span - idle, "idle": idle, "compute": compute,
            "non_compute": span - compute - idle}


def overlap_label(running):
    return " overlapping ".join(t for t in KERNEL_TYPES if t in running)


def kernel_type_time(ops, classify=hta_kind):
    """Time by the set of kernel types running, each type's operations merged first."""
    changes = []
    for index, kind in enumerate(KERNEL_TYPES):
        for start, end in union((op.start, op.end) for op in ops if classify(op) == kind):
            changes.append((start, index, +1))
            changes.append((end, index, -1))
    changes.sort()
    running, split, previous = collections.Counter(), collections.Counter(), None
    for at, index, step in changes:
        active = {KERNEL_TYPES[i] for i, n in running.items() if n > 0}
        if previous is not None and active and at > previous:
            split[overlap_label(active)] += at - previous
        running[index] += step
        previous = at
    return dict(split)


def kernel_type_sums(ops, classify=hta_kind):
    """Per type, the count and summed duration (get_gpu_kernel_breakdown's per-kernel sums)."""
    sums = {kind: [0, 0] for kind in KERNEL_TYPES}
    for op in ops:
        entry = sums[classify(op)]
        entry[0] += 1
        entry[1] += op.duration
    return sums


def by_stream(ops):
    streams = collections.defaultdict(list)
    for op in ops:
        streams[op.stream].append(op)
    for stream_ops in streams.values():
        stream_ops.sort(key=lambda op: op.start)
    return dict(sorted(streams.items()))


def idle_breakdown_of_stream(ops, calls, delay_ns=CONSECUTIVE_KERNEL_DELAY_NS):
    """HTA's host wait / kernel wait / other of one stream's (start-sorted) operations."""
    idle = {"host_wait": 0, "kernel_wait": 0, "other": 0}
    for previous, op in zip(ops, ops[1:]):
        gap = op.start - previous.end
        call = calls.get(op.correlation)
        if call is not None and call.start > previous.end:
            idle["host_wait"] += gap
        elif gap < delay_ns:
            idle["kernel_wait"] += gap
        else:
            idle["other"] += gap
    return idle


def launch_stats(ops, calls):
    rows = []
    for op in ops:
        call = calls.get(op.correlation)
        if call is None or call.name not in LAUNCH_STATS_CALLS:
            continue
        rows.append({"cpu": call.duration, "gpu": op.duration,
                     "delay_as_coded": op.start - call.start + call.duration,
                     "delay_as_documented": op.start - call.end,
                     "start_to_start": op.start - call.start})
    return {
        "count": len(rows),
        "delay_as_coded_total": sum(r["delay_as_coded"] for r in rows),
        "delay_as_documented_total": sum(r["delay_as_documented"] for r in rows),
        "start_to_start_total": sum(r["start_to_start"] for r in rows),
        "short_kernels": sum(1 for r in rows if r["cpu"] <= RUNTIME_CUTOFF_NS and r["gpu"] < r["cpu"]),
        "runtime_outliers": sum(1 for r in rows if r["cpu"] > RUNTIME_CUTOFF_NS),
        "launch_delay_outliers": sum(1 for r in rows if r["delay_as_coded"] > LAUNCH_DELAY_CUTOFF_NS),
    }


def max_queue(changes):
    """The highest running sum; at equal times the -1s go first, so a launch and an
    unrelated operation's start at one instant do not count as both queued."""
    depth = highest = 0
    for _, step in sorted(changes):
        depth += step
        highest = max(highest, depth)
    return highest


def queue_length_max(ops, calls):
    """HTA: +1 at a launch call of QUEUE_CALLS, -1 at its operation's start."""
    changes = []
    for op in ops:
        call = calls.get(op.correlation)
        if call is not None and call.name in QUEUE_CALLS:
            changes += [(call.start, +1), (op.start, -1)]
    return max_queue(changes)


def stream_figures(ops, calls):
    figures = {}
    for stream, stream_ops in by_stream(ops).items():
        idle = idle_breakdown_of_stream(stream_ops, calls)
        span = max(op.end for op in stream_ops) - stream_ops[0].start
        figures[stream] = {"operations": len(stream_ops), "idle": idle,
                           "busy": span - sum(idle.values()),
                           "queue_max": queue_length_max(stream_ops, calls)}
    return figures


def hta_figures(ops, calls, classify=hta_kind):
    """Every HTA figure of one rank's (or one device's) operations. `classify` replaces
    HTA's kernel types, to check the arithmetic where kinetrace classes an op otherwise."""
    return {"temporal": temporal_breakdown(ops, classify),
            "kernel_type_time": kernel_type_time(ops, classify),
            "kernel_type_sums": kernel_type_sums(ops, classify), "streams": stream_figures(ops, calls),
            "launch": launch_stats(ops, calls)}


# ---- printing -------------------------------------------------------------------------

def print_figures(title, figures, out):
    t = figures["temporal"]
    print(f"{title}", file=out)
    print(f"  temporal: span {t['span']} ns, idle {t['idle']}, compute {t['compute']}, "
          f"non-compute {t['non_compute']}", file=out)
    for label, ns in sorted(figures["kernel_type_time"].items()):
        print(f"  kernel type time: {label}: {ns} ns", file=out)
    for kind, (count, total) in figures["kernel_type_sums"].items():
        print(f"  kernel sums: {kind}: {count} ops, {total} ns", file=out)
    for stream, s in figures["streams"].items():
        idle = s["idle"]
        print(f"  stream {stream}: {s['operations']} ops, idle host wait {idle['host_wait']}, "
              f"kernel wait {idle['kernel_wait']}, other {idle['other']} ns; queue length max "
              f"{s['queue_max']}", file=out)
    launch = figures["launch"]
    print(f"  launch stats: {launch['count']} launches, launch delay total "
          f"{launch['delay_as_coded_total']} ns as coded, {launch['delay_as_documented_total']} "
          f"as documented; short kernels {launch['short_kernels']}, runtime outliers "
          f"{launch['runtime_outliers']}, launch delay outliers {launch['launch_delay_outliers']}",
          file=out)


# ---- comparison with kinetrace -------------------------------------------------------------

class Row:
    def __init__(self, metric, hta, kinetrace, status, note=""):
        self.metric, self.hta, self.kinetrace = metric, hta, kinetrace
        self.status, self.note = status, note


def agreement(hta, kinetrace, tolerance):
    if hta is None or kinetrace is None:
        return DISAGREE
    return AGREE if abs(hta - kinetrace) <= tolerance * max(abs(hta), abs(kinetrace)) else DISAGREE


def compared(metric, hta, kinetrace, tolerance, note="", mismatch=None):
    """A row that must agree unless `mismatch` names why it cannot by definition."""
    if mismatch:
        return Row(metric, hta, kinetrace, BY_DEFINITION, mismatch)
    return Row(metric, hta, kinetrace, agreement(hta, kinetrace, tolerance), note)


def rank_entry(report, trace, path):
    ranks = report.get("ranks", [])
    if len(ranks) == 1:
        return ranks[0]
    for entry in ranks:
        if entry.get("path") == path or (trace.rank >= 0 and entry.get("rank") == trace.rank):
            return entry
    raise ValueError(f"{path}: no rank of the analyze JSON matches this trace (rank {trace.rank})")


def classification_mismatch(ops):
    names = sorted({op.name for op in ops if kernel_type(op.name) != kinetrace_kind(op)})
    if not names:
        return None
    shown = ", ".join(names[:3]) + (" ..." if len(names) > 3 else "")
    return (f"{len(names)} operation name(s) classed differently (HTA by name: 'ncclKernel', "
            f"'Memcpy'/'Memset'; kinetrace by category and 'nccl' in any case): {shown}")


def edges(ops, calls, trace):
    """The trace's time before the device's first operation and after its last: inside
    kinetrace's window, outside HTA's span. Kinetrace classes the leading edge by the first
    operation, as any gap: host wait up to its call's start and launch after it when the
    call is known, else other; the trailing edge is other. Returns (leading, trailing, the
    leading edge's host wait, or None when its call is unknown)."""
    first = min(ops, key=lambda op: op.start)
    leading = first.start - trace.first_ns
    trailing = trace.last_ns - max(op.end for op in ops)
    call = calls.get(first.correlation)
    leading_host = None if call is None else max(0, min(call.start, first.start) - trace.first_ns)
    return leading, trailing, leading_host


def stream_gaps(ops):
    """(previous op, op) of each gap HTA's idle breakdown sees: consecutive ops of a stream."""
    for stream_ops in by_stream(ops).values():
        yield from zip(stream_ops, stream_ops[1:])


def host_wait_boundary_cases(ops, calls):
    """Gaps whose call started exactly when the previous operation ended: HTA's test is
    strict (other or kernel wait), kinetrace's is not (host wait, all of it launch)."""
    count = 0
    for previous, op in stream_gaps(ops):
        call = calls.get(op.correlation)
        if call is not None and call.start == previous.end and op.start > previous.end:
            count += 1
    return count


def short_gaps_without_call(ops, calls):
    """Gaps under the consecutive-kernel delay before an op with no known call: HTA tests
    only the length (kernel wait), kinetrace needs the call to tell it was queued (other)."""
    return sum(1 for previous, op in stream_gaps(ops)
               if op.correlation not in calls
               and 0 < op.start - previous.end < CONSECUTIVE_KERNEL_DELAY_NS)


def short_gap_mismatch(ops, calls):
    short = short_gaps_without_call(ops, calls)
    if not short:
        return None
    return (f"{short} gap(s) under {CONSECUTIVE_KERNEL_DELAY_NS} ns before an op with no known "
            "call: HTA's kernel wait, kinetrace's other")


def idle_split_mismatch(streams, ops, calls):
    """Why HTA's idle breakdown cannot match kinetrace's on these ops, or None."""
    if len(streams) > 1:
        return (f"HTA breaks idle time down per stream ({len(streams)} streams here, gaps "
                "counted while other streams ran); kinetrace over the whole device")
    boundary = host_wait_boundary_cases(ops, calls)
    if boundary:
        return (f"{boundary} gap(s) whose call started exactly as the previous op ended: "
                "HTA's host wait needs call > previous end, kinetrace's call >= gap start")
    return None


def device_rows(device, ops, calls, trace, kt_device, tolerance):
    fig = hta_figures(ops, calls)
    t, kt = fig["temporal"], kt_device["time"]
    prefix = f"device {device}"
    leading, trailing, leading_host = edges(ops, calls, trace)
    rows = [compared(f"{prefix} busy", t["busy"], kt["busy_ns"], tolerance)]
    if leading or trailing:
        rows.append(Row(f"{prefix} GPU span vs window", t["span"], kt["window_ns"], BY_DEFINITION,
                        "HTA: first GPU op to last; kinetrace's window: every event of the trace"))
    rows += [
        compared(f"{prefix} GPU span (first op to last)", t["span"],
                 kt["window_ns"] - leading - trailing, tolerance,
                 "kinetrace: window_ns minus the trace's time before the first op and after the last"),
        compared(f"{prefix} idle within the GPU span", t["idle"],
                 kt["idle_ns"] - leading - trailing, tolerance,
                 "kinetrace: idle_ns minus the trace's edges (HTA's span starts at the first op)"),
    ]
    mismatch = classification_mismatch(ops)
    rows += type_rows(prefix, fig, kt_device, tolerance, "", mismatch)
    if mismatch:
        # HTA's arithmetic on kinetrace's classes: still a check where only the names differ.
        rows += type_rows(prefix, hta_figures(ops, calls, kinetrace_kind), kt_device, tolerance,
                          " [kinetrace's classes]", None)
    rows += idle_rows(prefix, fig, ops, calls, kt, (leading, trailing, leading_host), tolerance)
    rows += stream_rows(prefix, fig["streams"], kt_device.get("streams", []), ops, calls, tolerance)
    return rows


def type_rows(prefix, fig, kt_device, tolerance, suffix, mismatch):
    """The figures that depend on kernel types: temporal compute and the type time split."""
    t, split, kt = fig["temporal"], fig["kernel_type_time"], kt_device["time"]
    communication_alone = split.get(COMMUNICATION, 0) + split.get("COMMUNICATION overlapping MEMORY", 0)
    overlap = (split.get("COMPUTATION overlapping COMMUNICATION", 0)
               + split.get("COMPUTATION overlapping COMMUNICATION overlapping MEMORY", 0))
    rows = [
        compared(f"{prefix} compute{suffix}", t["compute"], kt["compute_ns"], tolerance,
                 mismatch=mismatch),
        compared(f"{prefix} non-compute{suffix}", t["non_compute"],
                 kt["communication_ns"] + kt["memory_ns"], tolerance,
                 "kinetrace: communication_ns + memory_ns", mismatch=mismatch),
    ]
    if overlap:
        rows.append(Row(f"{prefix} COMMUNICATION, all of it{suffix}", communication_alone + overlap,
                        kt["communication_ns"], BY_DEFINITION,
                        "kinetrace counts communication only while no compute ran"))
    rows += [
        compared(f"{prefix} COMMUNICATION (+ overlapping MEMORY){suffix}", communication_alone,
                 kt["communication_ns"], tolerance,
                 "HTA's communication without compute: kinetrace's communication_ns",
                 mismatch=mismatch),
        compared(f"{prefix} MEMORY alone{suffix}", split.get(MEMORY, 0), kt["memory_ns"], tolerance,
                 mismatch=mismatch),
        compared(f"{prefix} COMPUTATION overlapping COMMUNICATION{suffix}", overlap,
                 kt_device["communication_overlap_ns"], tolerance,
                 "kinetrace: communication_overlap_ns", mismatch=mismatch),
    ]
    return rows


def idle_rows(prefix, fig, ops, calls, kt, trace_edges, tolerance):
    """HTA's host wait, kernel wait and other beside kinetrace's idle causes. The same
    definitions on one stream, but for what kinetrace counts outside HTA's span (the
    edges) and its launch share, which HTA's host wait holds."""
    leading, trailing, leading_host = trace_edges
    idle = collections.Counter()
    for s in fig["streams"].values():
        idle.update(s["idle"])
    in_span_host = kt["host_wait_ns"] - (leading_host or 0)
    in_span_launch = kt["launch_ns"] - (0 if leading_host is None else leading - leading_host)
    in_span_other = (kt["other_work_wait_ns"] + kt["other_idle_ns"] - trailing
                     - (leading if leading_host is None else 0))
    split = idle_split_mismatch(fig["streams"], ops, calls)
    waits_split = split or short_gap_mismatch(ops, calls)
    rows = []
    if in_span_launch:
        rows.append(Row(f"{prefix} host wait without launch", idle["host_wait"], in_span_host,
                        BY_DEFINITION, "kinetrace splits call start to op start out as launch_ns; "
                        "HTA's host wait holds it"))
    return rows + [
        compared(f"{prefix} host wait", idle["host_wait"], in_span_host + in_span_launch, tolerance,
                 "kinetrace: host_wait_ns + launch_ns, minus the leading edge", mismatch=split),
        compared(f"{prefix} kernel wait", idle["kernel_wait"], kt["kernel_wait_ns"], tolerance,
                 mismatch=waits_split),
        compared(f"{prefix} other", idle["other"], in_span_other, tolerance,
                 "kinetrace: other_work_wait_ns + other_idle_ns, minus the edges",
                 mismatch=waits_split),
    ]


def queue_mismatch(ops, calls):
    """kinetrace's queue depth counts every launch call; HTA's only the QUEUE_CALLS."""
    others = sorted({calls[op.correlation].name for op in ops if op.correlation in calls
                     and calls[op.correlation].name not in QUEUE_CALLS})
    if not others:
        return None
    return f"HTA's queue length counts only the runtime launch calls, not {', '.join(others)}"


def stream_rows(prefix, streams, kt_streams, ops, calls, tolerance):
    rows = []
    by_id = {s["stream"]: s for s in kt_streams}
    for stream, s in streams.items():
        kt = by_id.get(stream)
        name = f"{prefix} stream {stream}"
        if kt is None:
            rows.append(Row(f"{name} operations", s["operations"], None, DISAGREE,
                            "stream missing from kinetrace's report"))
            continue
        stream_ops = [op for op in ops if op.stream == stream]
        rows += [
            compared(f"{name} operations", s["operations"], kt["operations"], tolerance),
            compared(f"{name} busy (span - HTA idle)", s["busy"], kt["busy_ns"], tolerance),
            compared(f"{name} queue length max", s["queue_max"], kt["max_queue_depth"], tolerance,
                     mismatch=queue_mismatch(stream_ops, calls)),
        ]
    return rows


def kind_sum_rows(sums, entry, tolerance, suffix, mismatch):
    kinetrace_kinds = {"compute": COMPUTATION, "communication": COMMUNICATION, "memory": MEMORY}
    kinds = {kinetrace_kinds.get(k["kind"]): k["duration"] for k in entry.get("kinds", [])}
    rows = []
    for kind, (count, total) in sums.items():
        kt = kinds.get(kind, {"count": 0, "total_ns": 0})
        rows.append(compared(f"{kind} operations{suffix}", count, kt["count"], tolerance,
                             mismatch=mismatch))
        rows.append(compared(f"{kind} summed duration{suffix}", total, kt["total_ns"], tolerance,
                             mismatch=mismatch))
    return rows


def last_step_rows(trace, entry):
    """HTA's default analysis leaves the last ProfilerStep's work out; kinetrace does not
    (and neither does this comparison, which uses every operation)."""
    if len(trace.step_starts) < 2:
        return []
    kept, _ = last_step_filter(trace)
    return [Row("GPU operations analyzed", len(kept),
                sum(k["duration"]["count"] for k in entry.get("kinds", [])), BY_DEFINITION,
                "HTA drops the work launched from the last ProfilerStep on; kinetrace keeps it")]


def launch_rows(ops, calls, launch, entry, tolerance):
    kt_latency = entry["launch_latency"]["distribution"]
    other_calls = sorted({calls[op.correlation].name for op in ops if op.correlation in calls
                          and calls[op.correlation].name not in LAUNCH_STATS_CALLS})
    set_mismatch = None
    if other_calls:
        set_mismatch = ("kinetrace counts every launch call; HTA's launch stats only "
                        f"{'/'.join(sorted(LAUNCH_STATS_CALLS))} (here also: {', '.join(other_calls)})")
    return [
        compared("launches with a known call", launch["count"], kt_latency["count"], tolerance,
                 mismatch=set_mismatch),
        Row("launch delay total", launch["delay_as_coded_total"], kt_latency["total_ns"],
            BY_DEFINITION, "HTA computes op start - call start + call duration (documented: "
            "op start - call end); kinetrace: op start - call start"),
        compared("launch delay - call duration, total", launch["start_to_start_total"],
                 kt_latency["total_ns"], tolerance,
                 "HTA's delay less the call's duration: kinetrace's start-to-start latency",
                 mismatch=set_mismatch),
        Row("short kernels", launch["short_kernels"], entry["tiny_kernels"]["launch_longer_count"],
            BY_DEFINITION, "HTA: any op shorter than its call (call <= 50 us); kinetrace: "
            "launch_longer_count, kernels under the tiny threshold only"),
    ]


def rank_rows(trace, entry, tolerance):
    ops, calls = trace.ops, trace.calls
    fig = hta_figures(ops, calls)
    mismatch = classification_mismatch(ops)
    rows = last_step_rows(trace, entry)
    rows += kind_sum_rows(fig["kernel_type_sums"], entry, tolerance, "", mismatch)
    if mismatch:
        rows += kind_sum_rows(kernel_type_sums(ops, kinetrace_kind), entry, tolerance,
                              " [kinetrace's classes]", None)
    return rows + launch_rows(ops, calls, fig["launch"], entry, tolerance)


def comparison_rows(trace, report, path, tolerance):
    entry = rank_entry(report, trace, path)
    ops, calls = trace.ops, trace.calls
    rows = []
    kt_devices = {d["device"]: d for d in entry.get("devices", [])}
    devices = sorted({op.device for op in ops})
    for device in devices:
        device_ops = [op for op in ops if op.device == device]
        if device not in kt_devices:
            rows.append(Row(f"device {device}", len(device_ops), None, DISAGREE,
                            "device missing from kinetrace's report"))
            continue
        rows += device_rows(device, device_ops, calls, trace, kt_devices[device], tolerance)
    rows += rank_rows(trace, entry, tolerance)
    return rows


def print_rows(rows, out):
    width = max(len(r.metric) for r in rows)
    print(f"{'metric':<{width}}  {'HTA':>14}  {'kinetrace':>14}  {'difference':>12}  status",
          file=out)
    for r in rows:
        diff = r.kinetrace - r.hta if r.hta is not None and r.kinetrace is not None else None
        cells = [f"{r.metric:<{width}}", f"{r.hta if r.hta is not None else '-':>14}",
                 f"{r.kinetrace if r.kinetrace is not None else '-':>14}",
                 f"{diff if diff is not None else '-':>12}", r.status]
        line = "  ".join(cells)
        print(line + (f"  ({r.note})" if r.note and r.status != AGREE else ""), file=out)


# ---- command line ----------------------------------------------------------------------

def report_trace(trace, path, out):
    print(f"{path}: rank {trace.rank}, {len(trace.ops)} GPU operations, {len(trace.calls)} "
          f"launch calls", file=out)
    if trace.other_stream_events:
        listed = ", ".join(f"{cat or '(none)'} x{n}" for cat, n in sorted(trace.other_stream_events.items()))
        print(f"note: other events carry a stream argument ({listed}); HTA would count them as "
              f"GPU time, they are left out here", file=out)
    ops, calls = last_step_filter(trace)
    if len(ops) != len(trace.ops):
        print(f"note: HTA's default drops the last ProfilerStep's work: {len(trace.ops) - len(ops)} "
              f"of {len(trace.ops)} GPU operations; the figures below use what it keeps", file=out)
    print_figures("HTA figures (rank, all devices)", hta_figures(ops, calls), out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--analyze-json", help="kinetrace analyze --json output to compare with")
    parser.add_argument("--tolerance", type=float, default=0.01,
                        help="relative difference allowed (default 0.01)")
    args = parser.parse_args(argv)
    try:
        trace = read_trace(args.trace)
        report = load_json(args.analyze_json) if args.analyze_json else None
    except (OSError, ValueError) as error:
        print(f"hta_reference: {error}", file=sys.stderr)
        return 2
    report_trace(trace, args.trace, sys.stdout)
    if report is None:
        return 0
    if not trace.ops:
        print("no GPU operations: nothing to compare")
        return 0
    try:
        rows = comparison_rows(trace, report, args.trace, args.tolerance)
    except (KeyError, ValueError) as error:
        print(f"hta_reference: analyze JSON: {error}", file=sys.stderr)
        return 2
    devices = len({op.device for op in trace.ops})
    if devices > 1:
        print(f"note: {devices} devices; HTA merges a rank's devices, compared here per device")
    print()
    print_rows(rows, sys.stdout)
    failed = [r for r in rows if r.status == DISAGREE]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} rows agree or differ by definition; "
          f"{len(failed)} disagree")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
