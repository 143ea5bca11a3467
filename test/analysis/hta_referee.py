#!/usr/bin/env python3
"""HTA is the referee: runs the real Holistic Trace Analysis and `kinetrace analyze --json` on
the same traces and sets every figure the two define alike side by side.

    hta_referee.py --kinetrace BIN [--hta-dir DIR] [--out TABLE.txt] TRACE.json[.gz]...

For each trace (one rank each, torch.profiler's or kinetrace's JSON) it runs HTA twice, as
shipped and with its rounding of nanosecond timestamps off (HTA_DISABLE_NS_ROUNDING=1, which
HTA reads once, at import: so each setting runs in a process of its own), and prints a table:
figure, kinetrace, HTA default, HTA no-rounding, diff % (kinetrace against each), verdict.

A figure agrees when it is within 0.5% of HTA's with the rounding off (the setting that
defines it as kinetrace does; the default's difference is shown beside it and named). A
figure the two define differently is named with its cause (docs/ANALYSIS.md's list of
differences with HTA, "How kinetrace analyze relates to HTA"), and where the cause can be
taken out a row follows that takes it out and must agree. Anything else is an unexplained
difference.

HTA's location: --hta-dir, else $HTA_DIR, else ../shared/refs/hta beside the repository,
else an importable `hta`. HTA needs pandas (Debian's python3-pandas) and PyYAML; plotly,
networkx and psutil are imported when HTA loads but not used by the analyses run here, so
stand-ins take their place where they are not installed (see stand_in_modules()).

Exit status: 0 when every figure agrees or differs by a named cause, 1 on an unexplained
difference, 2 when a trace or a run fails, 77 (ctest's skip) when pandas or HTA is absent.
"""

import argparse
import decimal
import gzip
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77
TOLERANCE = 0.005  # relative: 0.5%
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Named differences: docs/ANALYSIS.md's list ("How kinetrace analyze relates to HTA"), by key.
# Each row that differs by one says which.
NAMED = {
    "rounding": "HTA as shipped rounds each event's start up and its end down to whole "
                "microseconds (HTA_DISABLE_NS_ROUNDING=1 turns it off)",
    "syncs": "HTA's temporal breakdown counts cuda_sync records that carry a stream as GPU "
             "work; kinetrace does not (a sync is not work)",
    "per-stream": "HTA's idle-time breakdown is per stream, kinetrace's per device (a stream "
                  "waiting while another keeps the GPU busy is not idle GPU time)",
    "window": "kinetrace's window is the whole trace, HTA's span runs from the first GPU "
              "operation to the last",
    "step-filter": "with two or more ProfilerSteps HTA keeps only the GPU operations launched "
                   "by CPU events within the steps; kinetrace uses every event",
    "truncation": "HTA's kernel-type split (get_gpu_kernel_breakdown) cuts each interval "
                  "between two changes of what runs to whole microseconds (astype(int)), "
                  "rounding or not: under 1 us lost per interval",
    "queue-calls": "HTA's queue length counts only the operations of cudaLaunchKernel(ExC), "
                   "cuLaunchKernel(Ex), cudaMemcpyAsync and cudaMemsetAsync; kinetrace's every "
                   "launch call's (cudaGraphLaunch with each node it runs, cooperative "
                   "launches, synchronous copies)",
    "overlap": "operations that overlap on one stream (a kernel starting before the previous "
               "one ended, in torch.profiler's timestamps): HTA's idle-time breakdown takes "
               "the negative gap as kernel wait, so its kernel wait is lower by the overlap",
    "devices": "HTA's temporal breakdown takes a rank's devices together (time when any "
               "device is busy); kinetrace sums each device's figures",
    "launch": "kinetrace's launch latency runs start to start for every launch call; HTA's "
              "launch delay from the end of a runtime launch call, clipped at 0",
    "residue": "HTA's summed copy bandwidth falls back through float subtraction and can stop "
               "at 1e-14 GB/s instead of 0, which its summary counts as a value; kinetrace's "
               "sum is 0 when no copy of the kind runs",
    "annotation-spans": "the trace's gpu_user_annotation spans are not on the operations' "
                        "streams (kinetrace's own traces): HTA attributes no operation; "
                        "kinetrace attributes each by the annotation range around its launch",
    "first-event": "HTA's call tree links no GPU operation to a launch call that is the trace's "
                   "first event (its row index, 0, reads as no link): HTA's kernel sequences "
                   "leave that operation out",
    "sync-work": "HTA's kernel lists (GPUKernelFilter, its call tree) hold the cuda_sync "
                 "records that carry a stream and a correlation; kinetrace's hold kernels, "
                 "copies and memsets only",
}

# The operators whose kernel sequences are compared (HTA's get_frequent_cuda_kernel_sequences,
# kinetrace analyze --sequence-op), and the launch-queue limits (HTA's max_queue_length).
SEQUENCE_OPERATORS = ("aten::", "autograd::", "## backward ##", "ProfilerStep")
QUEUE_LIMITS = (1024, 4)
# A kernel's pattern as HTA writes it: its operator and operations joined by "|".
PATTERN_NAMES_KEPT = 32  # kinetrace keeps the first 32 names of a sequence

GPU_OP_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "cuda_graph")
CALL_CATEGORIES = ("cuda_runtime", "cuda_driver")
WINDOW_PHASES = ("X", "i", "I", "C", "s", "f")  # what kinetrace's reader counts in a window
# The launch calls HTA's queue length counts (TraceSymbolTable.get_runtime_launch_events_mask).
QUEUE_CALLS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
               "cudaMemcpyAsync", "cudaMemsetAsync"}


# ---- HTA, in a process of its own per setting ---------------------------------------------

def stand_in_modules():
    """HTA imports plotly (charts), networkx (critical path) and psutil (free memory) when it
    loads; none is used with visualize=False by the analyses run here. Where one is not
    installed, an empty module of that name stands in, so Debian's python3-pandas is all
    HTA needs."""
    import importlib.machinery
    import importlib.util
    import types

    def stub(name, **attrs):
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        module.__dict__.update(attrs)
        sys.modules[name] = module
        return module

    if importlib.util.find_spec("plotly") is None:
        plotly = stub("plotly")
        plotly.express = stub("plotly.express")
        plotly.graph_objects = stub("plotly.graph_objects")
        plotly.subplots = stub("plotly.subplots", make_subplots=None)
        plotly.io = stub("plotly.io", to_html=None)
    if importlib.util.find_spec("networkx") is None:
        # critical_path_analysis subclasses networkx.DiGraph at import.
        stub("networkx", DiGraph=type("DiGraph", (), {}))
    if importlib.util.find_spec("psutil") is None:
        stub("psutil")


def hta_figures(ta, rank):
    """What HTA says of one rank, in HTA's units (microseconds). Each analysis apart, so one
    that raises leaves the others."""
    figures = {}

    def attempt(key, compute):
        try:
            figures[key] = compute()
        except Exception as error:  # HTA's own failure, reported as such
            figures[key] = {"error": f"{type(error).__name__}: {error}"}

    def temporal():
        row = ta.get_temporal_breakdown(visualize=False).iloc[0]
        return {"span": float(row["kernel_time(us)"]), "idle": float(row["idle_time(us)"]),
                "compute": float(row["compute_time(us)"]),
                "non_compute": float(row["non_compute_time(us)"])}

    def kernels():
        # Every kernel on its own row: no "others" (duration_ratio 1, no row limit).
        by_type, per_kernel = ta.get_gpu_kernel_breakdown(
            visualize=False, duration_ratio=1.0, num_kernels=1 << 30, include_memory_kernels=True)
        rows = {}
        for _, row in per_kernel.iterrows():
            total, mean = float(row["sum (us)"]), float(row["mean (us)"])
            rows[str(row["name"])] = {"type": str(row["kernel_type"]), "sum": total,
                                      "count": int(round(total / mean)) if mean else 0}
        return {"type_time": {str(r["kernel_type"]): float(r["sum"]) for _, r in by_type.iterrows()},
                "kernels": rows}

    def idle():
        frame, _ = ta.get_idle_time_breakdown(ranks=[rank], visualize=False)
        streams = {}
        for _, row in frame.iterrows():
            streams.setdefault(str(int(row["stream"])), {})[str(row["idle_category"])] = \
                float(row["idle_time"])
        return streams

    def queue():
        frame = ta.get_queue_length_summary(ranks=[rank])
        if frame is None:
            return {}
        maxima = frame[("queue_length", "max")]  # indexed by (rank, stream)
        return {str(int(stream)): int(value) for (_, stream), value in maxima.items()}

    def launches():
        frame = ta.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
        return {"count": int(len(frame)),
                "delay_mean": float(frame["launch_delay"].mean()) if len(frame) else 0.0}

    attempt("temporal", temporal)
    attempt("kernels", kernels)
    attempt("idle", idle)
    attempt("queue", queue)
    attempt("launches", launches)
    workload_figures(ta, rank, attempt)
    return figures


def workload_figures(ta, rank, attempt):
    """HTA's figures for kinetrace's workload passes: GPU time per annotation, time at a full
    launch queue, copy bandwidth and (last: its call graph changes the trace's frame) kernel
    sequences."""
    import shutil

    def annotations():
        spans = {}
        frame = ta.get_gpu_user_annotation_breakdown(visualize=False, duration_ratio=1.0,
                                                     num_kernels=1 << 30)
        for _, row in (frame.iterrows() if frame is not None else ()):
            total, mean = float(row["sum (us)"]), float(row["mean (us)"])
            spans[str(row["name"])] = {"sum": total,
                                       "count": int(round(total / mean)) if mean else None}
        kernels = {}
        frame = ta.get_gpu_kernels_with_user_annotations(rank, expand_names=True,
                                                         shorten_names=False)
        if frame is not None:
            for name, group in frame.groupby("s_user_annotation"):
                kernels[str(name)] = {"count": int(len(group)), "sum": float(group["dur"].sum())}
        return {"spans": spans, "kernels": kernels}

    def full_queue():
        series = ta.get_queue_length_time_series(ranks=[rank])
        out = {}
        for limit in QUEUE_LIMITS:
            frame = ta.get_time_spent_blocked_on_full_queue(series, max_queue_length=limit) \
                if series else None
            out[str(limit)] = None
            if frame is not None and len(frame):
                row = frame.iloc[0]
                out[str(limit)] = {"stream": int(row["stream"]),
                                   "duration": float(row["duration_at_max_queue_length"]),
                                   "relative": float(row["relative_duration_at_max_queue_length"])}
        return out

    def describe(values):
        frame = values.describe()
        return {"count": int(frame["count"]), "mean": float(frame["mean"]),
                "std": float(frame["std"]) if frame["count"] > 1 else 0.0,
                "min": float(frame["min"]), "p25": float(frame["25%"]),
                "p50": float(frame["50%"]), "p75": float(frame["75%"]),
                "max": float(frame["max"])}

    def memory_bw():
        summary, clean = {}, {}
        series = ta.get_memory_bw_time_series(ranks=[rank]).get(rank)
        if series is not None:
            # HTA's summary (get_memory_bw_summary: describe() of the values above 0), and the
            # same without the float residue of a sum that came back to 0.
            for kind, group in series.groupby("name"):
                values = group["memory_bw_gbps"]
                if (values > 0).any():
                    summary[str(kind)] = describe(values[values > 0])
                if (values > 1e-9).any():
                    clean[str(kind)] = describe(values[values > 1e-9])
        return {"summary": summary, "without_residue": clean}

    def sequences():
        out = {}
        directory = tempfile.mkdtemp()
        try:
            for op in SEQUENCE_OPERATORS:
                frame = ta.get_frequent_cuda_kernel_sequences(op, directory, min_pattern_len=3,
                                                              rank=rank, visualize=False)
                out[op] = [{"pattern": str(row["pattern"]), "count": int(row["count"]),
                            "gpu": float(row["GPU kernel duration (us)"]),
                            "cpu": float(row["CPU op duration (us)"])}
                           for _, row in frame.iterrows()] if len(frame) else []
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        return out

    attempt("annotations", annotations)
    attempt("full_queue", full_queue)
    attempt("memory_bw", memory_bw)
    attempt("sequences", sequences)


def hta_worker(hta_dir, traces):
    """The child process: HTA on each trace, its figures as JSON on stdout."""
    import logging

    stand_in_modules()
    if hta_dir:
        sys.path.insert(0, hta_dir)
    from hta.configs.config import logger
    from hta.trace_analysis import TraceAnalysis

    logger.setLevel(logging.ERROR)  # HTA logs every parse at warning level
    result = {}
    for path, rank in traces:
        try:
            # {rank: file} points HTA at one trace (given a directory, HTA reads each file's
            # rank from its distributedInfo). Every step: kinetrace uses every event (HTA's
            # default leaves out the last step's).
            ta = TraceAnalysis(trace_files={rank: path}, include_last_profiler_step=True)
            result[path] = hta_figures(ta, rank)
        except Exception as error:
            result[path] = {"error": f"{type(error).__name__}: {error}"}
    json.dump(result, sys.stdout)
    return 0


def run_hta(hta_dir, traces, no_rounding):
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1" if no_rounding else "0")
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--hta-worker", "--hta-dir", hta_dir or "",
             "--sequence-ops", ",".join(SEQUENCE_OPERATORS),
             "--", *[f"{rank}:{path}" for path, rank in traces]],
            stdout=subprocess.PIPE, stderr=log, env=env, text=True)
        if process.returncode != 0:
            log.seek(0)
            raise RuntimeError(f"HTA (rounding {'off' if no_rounding else 'on'}) failed:\n"
                               + log.read()[-3000:])
    return json.loads(process.stdout)


# ---- what kinetrace needs known of the trace itself -------------------------------------

def micros_to_ns(value):
    return int((decimal.Decimal(str(value)) * 1000).to_integral_value(decimal.ROUND_HALF_EVEN))


# An integer as C's strtoll reads it whole (base 0: decimal, 0x hex, 0 octal).
C_INTEGER = re.compile(r"\s*[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def read_by_kinetrace(event):
    """Whether kinetrace's JSON reader (src/analysis/chrome_trace_reader.cpp) takes the event
    into its window: a phase it knows, a pid and tid that are numbers (or absent), a numeric
    ts, and a flow's numeric id. torch.profiler's "Spans" and "Record Window End" markers,
    whose pids are names, are not taken."""
    def number(key, absent_ok):
        if key not in event:
            return absent_ok
        value = event[key]
        if isinstance(value, bool):
            return False
        if isinstance(value, str):
            return bool(C_INTEGER.fullmatch(value))
        return isinstance(value, int)

    phase = event.get("ph")
    if phase not in WINDOW_PHASES or not number("pid", True) or not number("tid", True):
        return False
    ts = event.get("ts")
    if isinstance(ts, bool) or not isinstance(ts, (int, decimal.Decimal)):
        return False
    return phase not in ("s", "f") or number("id", False)


class TraceFacts:
    """What the comparison needs besides the two analyses: kinetrace's window, each device's
    first and last operation (the time outside HTA's span), the streams, the syncs."""

    def __init__(self, path):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            document = json.load(f, parse_float=decimal.Decimal)
        info = document.get("distributedInfo") or {}
        self.rank = int(info.get("rank", 0)) if isinstance(info.get("rank"), int) else 0
        self.window = None  # [first, last] ns
        self.devices = {}  # device -> {"first": (start, correlation), "last_end", "streams"}
        calls = {}
        self.syncs_on_streams = 0
        self.launched_on = {}  # stream -> its operations' correlation ids
        self.profiler_steps = 0
        events = document.get("traceEvents", [])
        first = events[0] if events and isinstance(events[0], dict) else {}
        self.first_event_launch = first.get("cat") in CALL_CATEGORIES and \
            "correlation" in (first.get("args") or {})
        for event in events:
            if not read_by_kinetrace(event):
                continue
            phase = event["ph"]
            start = micros_to_ns(event["ts"])
            end = start + (micros_to_ns(event.get("dur", 0)) if phase == "X" else 0)
            self.window = [min(self.window[0], start), max(self.window[1], end)] \
                if self.window else [start, end]
            if phase != "X":
                continue
            category, args = event.get("cat", ""), event.get("args") or {}
            if category in GPU_OP_CATEGORIES:
                device = args.get("device", event.get("pid"))
                d = self.devices.setdefault(device, {"first": None, "last_end": end,
                                                     "streams": set()})
                stream = args.get("stream", event.get("tid"))
                d["streams"].add(stream)
                if category != "cuda_graph":  # what HTA's idle-time breakdown reads
                    d.setdefault("intervals", {}).setdefault(stream, []).append((start, end))
                self.launched_on.setdefault(stream, []).append(args.get("correlation"))
                if d["first"] is None or start < d["first"][0]:
                    d["first"] = (start, args.get("correlation"))
                d["last_end"] = max(d["last_end"], end)
            elif category in CALL_CATEGORIES and "correlation" in args:
                calls[args["correlation"]] = (start, event.get("name"))
            elif category == "cuda_sync" and isinstance(args.get("stream"), int) \
                    and args["stream"] >= 0:
                self.syncs_on_streams += 1
            elif str(event.get("name", "")).startswith("ProfilerStep#"):
                self.profiler_steps += 1
        for d in self.devices.values():
            d["first_has_call"] = d["first"][1] in calls
            # Operations that overlap on one stream (torch.profiler's timestamps have them):
            # HTA takes each one's start minus the previous one's end, below 0 here, as kernel
            # wait.
            d["overlap"] = 0
            for intervals in d.pop("intervals", {}).values():
                intervals.sort()
                for (_, previous_end), (start, _) in zip(intervals, intervals[1:]):
                    d["overlap"] += min(0, start - previous_end)
        # Each stream's launch calls that HTA's queue length leaves out.
        self.other_launches = {
            stream: sorted({calls[c][1] for c in correlations if c in calls} - QUEUE_CALLS)
            for stream, correlations in self.launched_on.items()}

    def outside_span(self, device):
        """kinetrace's idle before the device's first operation and after its last."""
        d = self.devices[device]
        return d["first"][0] - self.window[0], self.window[1] - d["last_end"]


# ---- the comparison -----------------------------------------------------------------------

class Row:
    def __init__(self, figure, kinetrace, default, no_rounding, verdict, unit="ns"):
        self.figure, self.kinetrace = figure, kinetrace
        self.default, self.no_rounding = default, no_rounding
        self.verdict, self.unit = verdict, unit

    @property
    def unexplained(self):
        return self.verdict.startswith("DIFFERS")


def differs(a, b, absolute):
    if a is None or b is None:
        return True
    return abs(a - b) > max(absolute, TOLERANCE * max(abs(a), abs(b)))


def diff_pct(kinetrace, hta):
    if kinetrace is None or hta is None:
        return "-"
    if hta == 0:
        return "0.00" if kinetrace == 0 else "inf"
    return f"{100.0 * (kinetrace - hta) / hta:+.2f}"


class Comparison:
    def __init__(self, name, facts):
        self.name, self.facts, self.rows = name, facts, []
        self.left_out = None  # the cause of operations HTA left out, if it left some out

    def add(self, figure, kinetrace, default, no_rounding, named=None, unit="ns", absolute=None,
            explains=None):
        """named: the key of the difference this figure has by definition (None: must agree);
        explains(kinetrace, hta): whether that cause accounts for the difference found (its
        direction, its bound), where it can be told."""
        if absolute is None:
            absolute = 10 if unit == "ns" else 0  # HTA rounds its idle breakdown to 10 ns
        if no_rounding is None:
            verdict = "HTA gave none"
            if kinetrace not in (None, 0):
                verdict = f"named: {self.left_out}" if self.left_out else "DIFFERS (HTA gave none)"
        elif not differs(kinetrace, no_rounding, absolute):
            verdict = "agree"
        elif named and (explains is None or explains(kinetrace, no_rounding)):
            verdict = f"named: {named}"
        elif self.left_out:
            verdict = f"named: {self.left_out}"  # every figure of the operations HTA kept
        elif named:
            verdict = f"DIFFERS (more than {named} explains)"
        else:
            verdict = "DIFFERS"
        # The default run differs from the other only by HTA's rounding.
        if not verdict.startswith("DIFFERS") and default is not None and \
                no_rounding is not None and differs(default, no_rounding, absolute):
            verdict += "; default: named: rounding"
        self.rows.append(Row(figure, kinetrace, default, no_rounding, verdict, unit))

    def note(self, figure, kinetrace, default, no_rounding, named, unit="ns"):
        """A figure each defines its own way: shown, not compared."""
        self.rows.append(Row(figure, kinetrace, default, no_rounding, f"by definition: {named}",
                             unit))


def ns(value_us):
    return None if value_us is None else value_us * 1000.0


def section(figures, key):
    """One of HTA's analyses from a worker's answer, or None where it raised."""
    value = figures.get(key)
    return None if value is None or "error" in value else value


class Context:
    """One trace's two answers and what the comparisons share."""

    def __init__(self, comparison, facts, rank, hta_default, hta_exact):
        self.comparison, self.facts, self.rank = comparison, facts, rank
        self.add = comparison.add
        self.default, self.exact = hta_default, hta_exact
        self.kt = rank["gpu_time"]
        self.device_ids = sorted(facts.devices, key=str)
        self.devices = {str(d["device"]): d for d in rank.get("devices", [])}
        self.several_devices = len(self.device_ids) > 1
        self.step_filter = facts.profiler_steps >= 2
        self.devices_named = "devices" if self.several_devices else None

    def parts(self, key):
        """HTA's answer of one analysis at each setting (None where it raised)."""
        return section(self.default, key), section(self.exact, key)

    @staticmethod
    def hta(parts, get):
        """A figure of HTA's at each setting, in ns."""
        return tuple(ns(get(part)) if part else None for part in parts)


# ---- the workload passes: sequences, annotations, full queue, copy bandwidth -------------

def compare_workload(c, runs):
    """kinetrace's workload figures (runs: its reports with --top large and the queue limit
    of 4, "workload", and with --sequence-op OP, by OP) against HTA's."""
    compare_annotations(c, runs["workload"]["ranks"][0])
    compare_full_queue(c, {1024: c.rank, 4: runs["workload"]["ranks"][0]})
    compare_copy_bandwidth(c, runs["workload"]["ranks"][0])
    for op in SEQUENCE_OPERATORS:
        compare_sequences(c, op, runs[op]["ranks"][0])


def compare_annotations(c, rank):
    """Each annotation's spans (HTA's get_gpu_user_annotation_breakdown) and the GPU
    operations attributed to it (get_gpu_kernels_with_user_annotations), the 20 HTA gives
    most time to."""
    parts = c.parts("annotations")
    if not any(parts):
        return
    kt = rank.get("annotations", {})
    rows = {row["name"]: row for row in kt.get("rows", [])}
    syncs = "sync-work" if c.facts.syncs_on_streams else None
    filtered = c.comparison.left_out
    _, exact = parts
    reference = exact or parts[0]
    spans = sorted(reference["spans"].items(), key=lambda item: -item[1]["sum"])[:20]
    for name, _ in spans:
        row = rows.get(name, {})
        short = name if len(name) <= 40 else name[:37] + "..."
        c.add(f"annotation {short}: spans", row.get("spans", 0),
              *(p and p["spans"].get(name, {}).get("count") for p in parts), unit="",
              named=filtered)
        c.add(f"annotation {short}: span time", row.get("span_ns", 0),
              *(ns(p and p["spans"].get(name, {}).get("sum")) for p in parts), named=filtered)
    kernels = sorted(((n, v) for n, v in reference["kernels"].items() if n),
                     key=lambda item: -item[1]["sum"])[:20]
    if kt.get("attributed_by") == "host ranges":
        c.comparison.note("operations attributed to an annotation",
                          kt.get("attributed_operations"), None,
                          sum(v["count"] for n, v in reference["kernels"].items() if n),
                          "annotation-spans", unit="")
        return
    for name, _ in kernels:
        row = rows.get(name, {})
        short = name if len(name) <= 40 else name[:37] + "..."
        c.add(f"annotation {short}: operations", row.get("operations", 0),
              *(p and p["kernels"].get(name, {}).get("count", 0) for p in parts), unit="",
              named=syncs or filtered)
        c.add(f"annotation {short}: GPU time", row.get("gpu_ns", 0),
              *(ns(p and p["kernels"].get(name, {}).get("sum", 0)) for p in parts),
              named=syncs or filtered)


def compare_full_queue(c, ranks):
    """HTA's time at a full queue: one stream per rank (its last with any), in ns, and its
    share of HTA's duration (the first event's start to the last's)."""
    parts = c.parts("full_queue")
    if not any(parts):
        return
    for limit in QUEUE_LIMITS:
        kt = ranks[limit].get("launch_queue_full", {})
        answers = [p and p.get(str(limit)) for p in parts]
        reference = answers[1] or answers[0]
        streams = {(s["stream"]): s for s in kt.get("streams", [])}
        if reference is None:
            # HTA finds no stream at the limit; kinetrace's time there is named where those
            # streams' queues hold operations HTA does not count (a CUDA graph's launches).
            named = "queue-calls" if any(c.facts.other_launches.get(s) for s in streams) else None
            c.add(f"stream time at {limit} queued (HTA: none)", kt.get("full_ns", 0), 0, 0,
                  named=named)
            continue
        stream = reference["stream"]
        row = streams.get(stream, {})
        named = "queue-calls" if c.facts.other_launches.get(stream) else None
        c.add(f"stream {stream} time at {limit} queued", row.get("full_ns", 0),
              *(ns(a and a["duration"]) for a in answers), named=named)
        c.comparison.note(f"stream {stream} time at {limit} queued, share", row.get(
            "window_share"), *(a and a["relative"] for a in answers), "window", unit="share")


def compare_copy_bandwidth(c, rank):
    """HTA's memory bandwidth summary, kind by kind; where HTA's sum stopped at a float
    residue, the same figures without it must agree."""
    parts = c.parts("memory_bw")
    if not any(parts):
        return
    kinds = {k["kind"]: k for k in rank.get("copy_bandwidth", {}).get("kinds", [])}
    reference = parts[1] or parts[0]
    for kind in sorted(reference["summary"]):
        k = kinds.get(kind, {})
        for stat, key, unit in (("count", "samples", ""), ("mean", "mean_gbps", "GB/s"),
                                ("std", "std_gbps", "GB/s"), ("min", "min_gbps", "GB/s"),
                                ("p25", "p25_gbps", "GB/s"), ("p50", "p50_gbps", "GB/s"),
                                ("p75", "p75_gbps", "GB/s"), ("max", "max_gbps", "GB/s")):
            def of(part, which="summary", stat=stat):
                value = part and part[which].get(kind, {}).get(stat)
                return value

            clean = of(parts[1] or parts[0], "without_residue")
            c.add(f"{kind} bandwidth {stat}", k.get(key, 0), of(parts[0]), of(parts[1]),
                  unit=unit, absolute=1e-9 if unit else 0, named="residue",
                  explains=lambda kinetrace, h, clean=clean, unit=unit: clean is not None and
                  not differs(kinetrace, clean, 1e-9 if unit else 0))


def sequence_key(names, length):
    """A sequence as both can name it: its operator, its first names (kinetrace keeps 32) and
    its length."""
    return (names[0], tuple(names[1:1 + PATTERN_NAMES_KEPT]), length)


def compare_sequences(c, op, rank):
    """HTA's frequent kernel sequences of `op` (kinetrace analyze --sequence-op): how many,
    and each one's count, GPU time and operator time."""
    parts = c.parts("sequences")
    if not any(parts):
        return
    kt = rank.get("kernel_sequences", {})
    found = {sequence_key([r["issuer"]] + r["kernels"], r["length"]): r
             for r in kt.get("rows", [])}
    answers = [p and p.get(op) for p in parts]
    named = "sync-work" if c.facts.syncs_on_streams else \
        "first-event" if c.facts.first_event_launch else c.comparison.left_out
    c.add(f"{op} sequences", kt.get("chains", 0),
          *(None if a is None else len(a) for a in answers), unit="", named=named)
    reference = answers[1] if answers[1] is not None else answers[0]
    for hta_row in sorted(reference or [], key=lambda r: (-r["count"], r["pattern"]))[:10]:
        pattern = hta_row["pattern"]
        names = pattern.split("|")
        row = found.get(sequence_key(names, len(names) - 1), {})
        short = pattern if len(pattern) <= 48 else pattern[:45] + "..."

        def of(answer, field, pattern=pattern):
            match = [r for r in (answer or []) if r["pattern"] == pattern]
            return match[0][field] if match else None

        c.add(f"{short}: count", row.get("count", 0), *(of(a, "count") for a in answers),
              unit="", named=named)
        c.add(f"{short}: GPU time", row.get("gpu_ns", 0), *(ns(of(a, "gpu")) for a in answers),
              named=named)
        c.add(f"{short}: operator time", row.get("operator_ns", 0),
              *(ns(of(a, "cpu")) for a in answers), named=named)


def compare(path, facts, report, hta_default, hta_exact, runs=None):
    comparison = Comparison(path, facts)
    ranks = report.get("ranks", [])
    if not ranks:
        raise RuntimeError("kinetrace analyze reported no rank")
    for label, figures in (("default", hta_default), ("no rounding", hta_exact)):
        if "error" in figures:
            raise RuntimeError(f"HTA ({label}) could not analyse the trace: {figures['error']}")
        for key, value in figures.items():
            if isinstance(value, dict) and "error" in value:
                comparison.rows.append(Row(f"HTA {key} ({label})", None, None, None,
                                           f"HTA raised {value['error']}"))
    c = Context(comparison, facts, ranks[0], hta_default, hta_exact)
    note_left_out(c)
    compare_time(c)
    compare_kinds(c)
    for device in c.device_ids:
        if str(device) in c.devices:
            compare_idle(c, device)
    note_launches(c)
    if runs:
        compare_workload(c, runs)
    return comparison


def note_left_out(c):
    """Operations HTA left out (its step filter) change every figure: how many, first."""
    kd, ke = c.parts("kernels")
    if not (c.step_filter and ke):
        return
    kept = sum(r["count"] for r in ke["kernels"].values())
    operations = sum(k["duration"]["count"] for k in c.rank.get("kinds", []))
    if kept < operations:
        c.add("operations (HTA: those it kept)", operations,
              kd and sum(r["count"] for r in kd["kernels"].values()), kept,
              named="step-filter", unit="")
        c.comparison.left_out = "step-filter"


def truncation_bound(c):
    """HTA's kernel-type split loses under 1 us per interval, and there are at most two
    intervals per operation: whether that accounts for a difference."""
    _, ke = c.parts("kernels")
    if not ke or c.several_devices:
        return None
    bound = 2000.0 * sum(r["count"] for r in ke["kernels"].values())
    return lambda kinetrace, h: 0 <= kinetrace - h < bound


def compare_time(c):
    """The temporal breakdown (busy, compute, non-compute, idle) and the kernel-type split."""
    kt, add = c.kt, c.add
    temporal, kernels = c.parts("temporal"), c.parts("kernels")
    syncs = "syncs" if c.facts.syncs_on_streams else None
    gains = (lambda kinetrace, h: h > kinetrace) if syncs else None  # syncs only add time
    truncation = truncation_bound(c)
    cut = c.devices_named or "truncation"
    if any(temporal):
        add("busy (temporal breakdown)", kt["busy_ns"],
            *c.hta(temporal, lambda t: t["span"] - t["idle"]),
            named=syncs or c.devices_named, explains=gains)
    if any(kernels):
        # The kernel types' time, every overlap counted once: no syncs.
        add("busy (kernels, copies, memsets)", kt["busy_ns"],
            *c.hta(kernels, lambda k: sum(k["type_time"].values())),
            named=cut, explains=truncation)
    if any(temporal):
        add("compute", kt["compute_ns"], *c.hta(temporal, lambda t: t["compute"]),
            named=c.devices_named)
        add("non-compute (communication + memory)", kt["communication_ns"] + kt["memory_ns"],
            *c.hta(temporal, lambda t: t["non_compute"]), named=syncs or c.devices_named,
            explains=gains)
        outside = sum(sum(c.facts.outside_span(d)) for d in c.device_ids)
        c.comparison.note("idle (kinetrace's window)", kt["idle_ns"],
                          *c.hta(temporal, lambda t: t["idle"]), "window")
        add("idle within the GPU span", kt["idle_ns"] - outside,
            *c.hta(temporal, lambda t: t["idle"]), named=syncs or c.devices_named)
    if not any(kernels):
        return

    # HTA splits busy time by which types ran together.
    def split(*labels):
        return lambda k: sum(k["type_time"].get(label, 0.0) for label in labels)

    add("communication (alone, or with memory)", kt["communication_ns"],
        *c.hta(kernels, split("COMMUNICATION", "COMMUNICATION overlapping MEMORY")),
        named=cut, explains=truncation)
    add("memory (alone)", kt["memory_ns"], *c.hta(kernels, split("MEMORY")),
        named=cut, explains=truncation)
    add("communication overlapping compute",
        sum(d.get("communication_overlap_ns", 0) for d in c.devices.values()),
        *c.hta(kernels, split("COMPUTATION overlapping COMMUNICATION",
                              "COMPUTATION overlapping COMMUNICATION overlapping MEMORY")),
        named=cut, explains=truncation)


def compare_kinds(c):
    """Each kind's and each top kernel's count and summed time."""
    kd, ke = kernels = c.parts("kernels")
    if not any(kernels):
        return
    filtered = "step-filter" if c.step_filter else None
    drops = lambda kinetrace, h: h < kinetrace  # noqa: E731  (the filter only removes)
    kt_kinds = {k["kind"]: k["duration"] for k in c.rank.get("kinds", [])}
    for kind, hta_type in (("compute", "COMPUTATION"), ("communication", "COMMUNICATION"),
                           ("memory", "MEMORY")):
        def of_type(k, field, hta_type=hta_type):
            return sum(r[field] for r in k["kernels"].values() if r["type"] == hta_type)

        row = kt_kinds.get(kind, {"count": 0, "total_ns": 0})
        c.add(f"{kind} operations", row["count"], kd and of_type(kd, "count"),
              ke and of_type(ke, "count"), named=filtered, unit="", explains=drops)
        c.add(f"{kind} time, summed", row["total_ns"], *c.hta(kernels, lambda k: of_type(k, "sum")),
              named=filtered, explains=drops)
    for row in c.rank.get("kernels", []):
        name = row["name"]
        short = name if len(name) <= 48 else name[:45] + "..."
        rd, re_ = (part["kernels"].get(name) if part else None for part in kernels)
        c.add(f"{short}: count", row["duration"]["count"], rd and rd["count"],
              re_ and re_["count"], named=filtered, unit="", explains=drops)
        c.add(f"{short}: time", row["duration"]["total_ns"], ns(rd and rd["sum"]),
              ns(re_ and re_["sum"]), named=filtered, explains=drops)


def compare_idle(c, device):
    """HTA's idle-time breakdown (per stream; alike on a device with one stream) and its
    queue length (per stream)."""
    d, facts = c.devices[str(device)], c.facts
    t, prefix = d["time"], f"device {device}"
    streams = sorted(facts.devices[device]["streams"], key=str)
    leading, trailing = facts.outside_span(device)

    def per_stream(part, category):
        if not part:
            return None
        return ns(sum(part.get(str(s), {}).get(category, 0.0) for s in streams))

    # The causes this check knows must make up the device's idle time, or a cause was
    # added that it does not map onto HTA's.
    known = ("before_first_op_ns", "host_wait_ns", "launch_ns", "kernel_wait_ns",
             "other_work_wait_ns", "other_idle_ns")
    causes = sum(t.get(key, 0) for key in known)
    if causes != t["idle_ns"]:
        c.comparison.rows.append(Row(f"{prefix} idle causes (kinetrace)", causes, None,
                                     t["idle_ns"], "DIFFERS: kinetrace's causes do not make "
                                     "up its idle time (a cause this check does not know)"))
    # HTA's host wait: the launch call came after the gap opened (kinetrace's host wait and
    # launch); its other: everything else above the threshold (kinetrace's waiting on other
    # work, other, and the launch time of operations queued before the gap).
    launch_queued = t.get("launch_queued_ns", 0)
    host = t["host_wait_ns"] + t["launch_ns"] - launch_queued
    other = t["other_work_wait_ns"] + t["other_idle_ns"] + launch_queued - trailing
    if "before_first_op_ns" in t:
        pass  # the time before the first operation is a cause of its own
    elif facts.devices[device]["first_has_call"]:
        host -= leading  # counted as host wait and launch, up to the first operation
    else:
        other -= leading
    idle = c.parts("idle")
    named = "per-stream" if len(streams) > 1 else None
    overlap = facts.devices[device]["overlap"]
    c.add(f"{prefix} host wait", host, *(per_stream(p, "host_wait") for p in idle), named=named)
    c.add(f"{prefix} kernel wait", t["kernel_wait_ns"],
          *(per_stream(p, "kernel_wait") for p in idle),
          named=named or ("overlap" if overlap else None),
          explains=None if named else lambda kinetrace, h: not differs(kinetrace + overlap, h, 10))
    c.add(f"{prefix} other", other, *(per_stream(p, "other") for p in idle), named=named)

    # Queue length: operations launched and not yet started, at most, per stream.
    queue = c.parts("queue")
    if not any(part is not None for part in queue):
        return
    kt_streams = {str(s["stream"]): s for s in d.get("streams", [])}
    for stream in streams:
        s = kt_streams.get(str(stream))
        if s is None:
            continue
        # A stream none of whose launches HTA counts has no queue in HTA's answer: 0.
        c.add(f"{prefix} stream {stream} queue length, max", s["max_queue_depth"],
              *(None if part is None else part.get(str(stream), 0) for part in queue),
              unit="", named="queue-calls" if facts.other_launches.get(stream) else None,
              explains=lambda kinetrace, h: kinetrace > h)


def note_launches(c):
    """Launches, counted and timed differently: shown, not compared."""
    ld, le = c.parts("launches")
    latency = c.rank.get("launch_latency", {}).get("distribution", {})
    if ld or le:
        c.comparison.note("launches timed", latency.get("count"), ld and ld["count"],
                          le and le["count"], "launch", unit="")
        c.comparison.note("launch latency, mean", latency.get("mean_ns"),
                          ns(ld and ld["delay_mean"]), ns(le and le["delay_mean"]), "launch")


def fmt(value, unit):
    if value is None:
        return "-"
    if unit == "ns":
        return f"{value / 1000.0:,.3f} us"
    if unit == "GB/s":
        return f"{value:,.4f} GB/s"
    if unit == "share":
        return f"{value:.4f}"
    return f"{value:,.0f}"


def table(comparison):
    header = ("figure", "kinetrace", "HTA default", "HTA no-rounding", "diff % default",
              "diff % no-rounding", "verdict")
    lines = [header]
    for r in comparison.rows:
        lines.append((r.figure, fmt(r.kinetrace, r.unit), fmt(r.default, r.unit),
                      fmt(r.no_rounding, r.unit), diff_pct(r.kinetrace, r.default),
                      diff_pct(r.kinetrace, r.no_rounding), r.verdict))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    out = []
    for line in lines:
        cells = [line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:-1], widths[1:])]
        out.append("  ".join(cells + [line[-1]]))
    return "\n".join(out)


def find_hta(argument):
    """The directory holding HTA's `hta` package, or "" for an importable one, or None."""
    candidates = [argument, os.environ.get("HTA_DIR"),
                  os.path.join(os.path.dirname(REPO), "shared", "refs", "hta"),
                  os.path.join(REPO, "shared", "refs", "hta")]
    for i, candidate in enumerate(candidates):
        if candidate and os.path.isfile(os.path.join(candidate, "hta", "trace_analysis.py")):
            return os.path.abspath(candidate)
        if candidate and i < 2:  # named, but not there: an error, not a fallback
            raise ValueError(f"no HTA in {candidate} (no hta/trace_analysis.py there)")
    return "" if importlib.util.find_spec("hta") else None



def ready_hta(prog, argument, modules=("pandas", "yaml")):
    """Where HTA is, once it and the modules it needs here are found: (its directory, None);
    else (None, the exit status), the reason printed: SKIP when something is not installed,
    2 when --hta-dir names no HTA. `prog` starts each line."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        print(f"{prog}: SKIP: HTA needs {', '.join(missing)}, not installed for {sys.executable} "
              f"(Debian: apt-get install {' '.join('python3-' + m for m in missing)})")
        return None, SKIP
    try:
        hta_dir = find_hta(argument)
    except ValueError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return None, 2
    if hta_dir is None:
        print(f"{prog}: SKIP: HTA not found (--hta-dir, $HTA_DIR, ../shared/refs/hta beside the "
              "repository, or an installed hta)")
        return None, SKIP
    return hta_dir, None

def main(argv):
    global SEQUENCE_OPERATORS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", metavar="TRACE")
    parser.add_argument("--kinetrace", help="the kinetrace command")
    parser.add_argument("--hta-dir", help="the directory holding HTA's hta package")
    parser.add_argument("--out", help="also write the tables to this file")
    parser.add_argument("--hta-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sequence-ops", default=",".join(SEQUENCE_OPERATORS),
                        help="the operators whose kernel sequences are compared, by commas "
                             "(\"\" for none: HTA's call graph takes minutes on a large trace)")
    args = parser.parse_args(argv)

    SEQUENCE_OPERATORS = tuple(op for op in args.sequence_ops.split(",") if op)
    if args.hta_worker:
        traces = [(spec.split(":", 1)[1], int(spec.split(":", 1)[0])) for spec in args.traces]
        return hta_worker(args.hta_dir, traces)

    hta_dir, status = ready_hta("hta_referee", args.hta_dir)
    if status is not None:
        return status
    if not args.kinetrace:
        parser.error("--kinetrace is required")

    facts, reports, runs = {}, {}, {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            def analyze(path, *options):
                out = os.path.join(tmp, "report.json")
                process = subprocess.run([args.kinetrace, "analyze", "-q", path, "--json", out,
                                          *options],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         text=True)
                if process.returncode != 0:
                    raise RuntimeError(f"kinetrace analyze {path} failed: {process.stderr}")
                with open(out) as f:
                    return json.load(f)

            for path in args.traces:
                facts[path] = TraceFacts(path)
                reports[path] = analyze(path)
                # The workload passes' figures: every row, the small queue limit, and each
                # operator's kernel sequences as HTA finds them.
                every = ("--top", "1000")
                runs[path] = {"workload": analyze(path, *every, "--max-queue-length",
                                                  str(QUEUE_LIMITS[1]))}
                for op in SEQUENCE_OPERATORS:
                    runs[path][op] = analyze(path, *every, "--sequence-op", op)
        # A trace without GPU operations (a host-only run) has nothing to compare.
        gpu_traces = [path for path in args.traces if facts[path].devices]
        specs = [(os.path.abspath(path), facts[path].rank) for path in gpu_traces]
        hta_default = run_hta(hta_dir, specs, no_rounding=False) if specs else {}
        hta_exact = run_hta(hta_dir, specs, no_rounding=True) if specs else {}
        comparisons = []
        for path in args.traces:
            if path in gpu_traces:
                spec = os.path.abspath(path)
                comparisons.append(compare(path, facts[path], reports[path], hta_default[spec],
                                           hta_exact[spec], runs[path]))
            else:
                comparisons.append(Comparison(path, facts[path]))
                comparisons[-1].rows.append(Row("GPU operations", 0, None, None,
                                                "none in the trace: nothing to compare", ""))
    except (OSError, ValueError, RuntimeError, KeyError) as error:
        print(f"hta_referee: {error}", file=sys.stderr)
        return 2

    text = []
    unexplained = 0
    for comparison in comparisons:
        text.append(f"== {comparison.name} (rank {comparison.facts.rank})")
        text.append(table(comparison))
        text.append("")
        unexplained += sum(1 for r in comparison.rows if r.unexplained)
    named = sorted({r.verdict.split("named: ", 1)[1].split(";")[0]
                    for c in comparisons for r in c.rows if "named: " in r.verdict} |
                   {r.verdict.split("by definition: ", 1)[1] for c in comparisons for r in c.rows
                    if r.verdict.startswith("by definition: ")})
    if named:
        text.append("named differences (docs/ANALYSIS.md, "
                    "\"How kinetrace analyze relates to HTA\"):")
        text += [f"  {key}: {NAMED.get(key, key)}" for key in named]
    rows = sum(len(c.rows) for c in comparisons)
    text.append(f"hta_referee: {len(comparisons)} traces, {rows} figures, "
                f"{unexplained} unexplained differences")
    output = "\n".join(text)
    print(output)
    if args.out:
        with open(args.out, "w") as f:
            f.write(output + "\n")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
