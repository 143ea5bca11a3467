#!/usr/bin/env python3
"""HTA is the referee of the critical path: runs the real Holistic Trace Analysis's
critical_path_analysis and `kinetrace analyze --critical-path --json` on the same traces, step
by step, and sets the lengths side by side.

    hta_critical_path_referee.py --kinetrace BIN [--hta-dir DIR] [--out TABLE.txt]
        [--step-timeout S] [--max-steps N] [--rounding] TRACE.json[.gz]...

For each trace (one rank, torch.profiler's or kinetrace's JSON) and each of its steps
(ProfilerStep#N, "step N"; without steps the whole trace, HTA's annotation ""), HTA's critical
path is found with its rounding of nanosecond timestamps off (HTA_DISABLE_NS_ROUNDING=1; with
--rounding, also as shipped), in a process of its own per trace and setting, each step with a
timeout (HTA's graph is networkx's: slow on large steps). The table: step, kinetrace's length,
kinetrace's length with HTA's weights, HTA's length, their difference, and the verdict.

kinetrace's length weighs the waiting HTA weighs as nothing (a host gap between operators, a
sync's wake-up, a blocking call with no record of what it waited for); its "HTA-weighted"
length is the same graph's longest path with HTA's weights, and that is the figure HTA's must
equal: within 0.1% or 1 us, else the difference must have a named cause (docs/ANALYSIS.md,
"Critical path"), or it is unexplained. A cause that can be taken out is, and the rest must
then agree: HTA's negative weights on its path are summed; where HTA keeps one GPU operation
of a call's several, kinetrace runs again on the trace without the others.

HTA's location: --hta-dir, else $HTA_DIR, else ../shared/refs/hta beside the repository, else
an importable `hta` (hta_referee.py's ready_hta). HTA needs pandas and networkx (Debian's
python3-pandas, python3-networkx) and PyYAML.

Exit status: 0 when every step agrees or differs by a named cause, 1 on an unexplained
difference, 2 when a trace or a run fails, 77 (ctest's skip) when pandas, networkx or HTA is
absent.
"""

import argparse
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
RELATIVE = 0.001
ABSOLUTE_NS = 1000
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hta_referee import ready_hta, stand_in_modules  # noqa: E402  (the same HTA, found alike)

NAMED = {
    "waiting": "kinetrace's length weighs waiting that HTA weighs as nothing (host gaps "
               "between operators, syncs' wake-ups, blocking calls with no record of what "
               "they waited for): its HTA-weighted length is compared",
    "rounding": "HTA as shipped rounds each event's start up and its end down to whole "
                "microseconds (HTA_DISABLE_NS_ROUNDING=1 turns it off)",
    "hta-refused": "HTA refuses a graph with a cycle or with a Stream Wait Event between two "
                   "operations of one stream, and finds no path; kinetrace breaks the cycle "
                   "(or leaves the edge out) and counts it",
    "timeout": "HTA did not finish the step within --step-timeout",
    "one-operation-per-call": "HTA's critical path keeps one GPU operation per call (the last "
                              "with its correlation id): of a CUDA graph's kernels, launched by "
                              "one cudaGraphLaunch, the others are not in its graph",
    "no-launch-queue": "HTA's critical path needs its launch-queue series, which it builds "
                       "only from the launch calls it counts (cudaLaunchKernel(ExC), "
                       "cuLaunchKernel(Ex), cudaMemcpyAsync, cudaMemsetAsync): on a trace whose "
                       "GPU work all comes from cudaGraphLaunch it stops (AssertionError); "
                       "compared on a copy with those launches read as cudaLaunchKernel and one "
                       "operation a call",
    "negative-weights": "HTA weighs an edge running backwards by less than 1 us (a child "
                        "ending after its parent, in nanoseconds) at its negative time; "
                        "kinetrace weighs every backward edge 0",
}


class Timeout(Exception):
    pass


def instance_of(ta, rank, step):
    """HTA picks a step by an annotation (names holding it) and an instance (a place among the
    events so named, in the trace's order): the step's own name, and its place."""
    trace_df = ta.t.get_trace(rank)
    sym_index = ta.t.symbol_table.get_sym_id_map()
    ids = [i for name, i in sym_index.items() if step in name]
    exact = sym_index.get(step)
    named = trace_df[trace_df.name.isin(ids)]
    positions = [k for k, name in enumerate(named.name.tolist()) if name == exact]
    return positions[0] if positions else None


def path_weights_us(cp_graph):
    """The weights along the path as networkx found it (HTA sets weights of -1 us or less to 0
    in the graph, not in its edge objects)."""
    nodes = cp_graph.critical_path_nodes
    return [float(cp_graph.edges[u, v]["weight"]) for u, v in zip(nodes, nodes[1:])]


def hta_worker(hta_dir, path, rank, steps, timeout):
    import logging

    stand_in_modules()
    if hta_dir:
        sys.path.insert(0, hta_dir)
    from hta.configs.config import logger
    from hta.trace_analysis import TraceAnalysis

    # HTA says why it refuses a graph only in its log: kept, step by step.
    said = []

    class Keep(logging.Handler):
        def emit(self, record):
            said.append(record.getMessage())

    logger.handlers[:] = [Keep()]
    logger.propagate = False
    logger.setLevel(logging.ERROR)
    logging.getLogger().setLevel(logging.CRITICAL)  # HTA also logs through the root logger

    def on_alarm(signum, frame):
        raise Timeout()

    signal.signal(signal.SIGALRM, on_alarm)
    result = {}
    started = time.time()
    ta = TraceAnalysis(trace_files={rank: path}, include_last_profiler_step=True)
    result["_load_s"] = time.time() - started
    for step in steps:
        started = time.time()
        said.clear()
        try:
            signal.alarm(timeout)
            if step == "":
                annotation, instance = "", 0
            else:
                annotation, instance = step, instance_of(ta, rank, step)
            if instance is None:
                result[step] = {"error": "HTA finds no such annotation"}
                continue
            found = ta.critical_path_analysis(rank=rank, annotation=annotation,
                                              instance_id=instance)
            signal.alarm(0)
            if found is None:
                result[step] = {"error": "HTA found no window"}
            elif not found[1]:
                text = " ".join(said)
                reason = ("a cycle" if "cycles" in text else
                          "a sync within one stream" if "same stream" in text else
                          "negative weights" if "negative weight" in text else "unsaid")
                result[step] = {"refused": reason}
            else:
                cp_graph = found[0]
                breakdown = {}
                frame = cp_graph.get_critical_path_breakdown()
                if frame is not None:
                    for bound, duration in frame.groupby("bound_by").duration.sum().items():
                        breakdown[str(bound) or "dependency"] = float(duration)
                weights = path_weights_us(cp_graph)
                result[step] = {"length_us": sum(weights),
                                "negative_us": sum(w for w in weights if w < 0),
                                "breakdown": breakdown,
                                "nodes": cp_graph.number_of_nodes(),
                                "edges": cp_graph.number_of_edges()}
        except Timeout:
            result[step] = {"timeout": True}
        except Exception as error:  # HTA's own failure, reported as such
            signal.alarm(0)
            result[step] = {"error": f"{type(error).__name__}: {error}"}
        result[step]["seconds"] = round(time.time() - started, 2)
    json.dump(result, sys.stdout)
    return 0


def run_hta(hta_dir, path, rank, steps, timeout, no_rounding):
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1" if no_rounding else "0")
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--hta-worker", "--hta-dir", hta_dir or "",
             "--rank", str(rank), "--step-timeout", str(timeout), "--steps-json",
             json.dumps(steps), "--", path],
            stdout=subprocess.PIPE, stderr=log, env=env, text=True)
        if process.returncode != 0:
            log.seek(0)
            raise RuntimeError(f"HTA (rounding {'off' if no_rounding else 'on'}) failed on "
                               f"{path}:\n" + log.read()[-3000:])
    return json.loads(process.stdout)


def kinetrace_steps(kinetrace, path):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.json")
        started = time.time()
        process = subprocess.run([kinetrace, "analyze", "-q", "--critical-path", path,
                                  "--json", out], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        seconds = time.time() - started
        if process.returncode != 0:
            raise RuntimeError(f"kinetrace analyze {path} failed: {process.stderr}")
        with open(out) as f:
            report = json.load(f)
    ranks = report["ranks"]
    if len(ranks) != 1:
        raise RuntimeError(f"{path}: {len(ranks)} ranks; give one rank's trace")
    path_report = ranks[0].get("critical_path") or {}
    if path_report.get("failed"):
        raise RuntimeError(f"{path}: kinetrace found no path: {path_report['failed']}")
    rank = ranks[0]["rank"] if ranks[0]["rank"] >= 0 else 0
    return rank, path_report.get("per_step", []), path_report.get("left_out", {}), seconds


GPU_OP_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "cuda_graph")


def one_operation_per_call(path, out):
    """The trace as HTA's critical path sees it: of GPU operations sharing a correlation id
    (a CUDA graph's kernels, launched by one cudaGraphLaunch), only the last in the trace's
    order, the one HTA's index_correlation keeps. Writes it to `out`; returns how many
    operations it left out."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        document = json.load(f)
    events = document.get("traceEvents", [])
    last = {}
    for i, e in enumerate(events):
        args = e.get("args") or {}
        if e.get("ph") == "X" and e.get("cat") in GPU_OP_CATEGORIES and "correlation" in args:
            last[args["correlation"]] = i
    kept = []
    for i, e in enumerate(events):
        args = e.get("args") or {}
        if (e.get("ph") == "X" and e.get("cat") in GPU_OP_CATEGORIES and "correlation" in args
                and last[args["correlation"]] != i):
            continue
        kept.append(e)
    document["traceEvents"] = kept
    with open(out, "w") as f:
        json.dump(document, f)
    return len(events) - len(kept)


def graph_launches_as_kernel_launches(path, out):
    """The trace with each cudaGraphLaunch renamed cudaLaunchKernel, one GPU operation a call
    kept (one_operation_per_call): what HTA can build a critical path of when all the GPU work
    is graphs'. Writes it to `out`; returns how many launches it renamed."""
    with tempfile.TemporaryDirectory() as tmp:
        single = os.path.join(tmp, "one_per_call.json")
        one_operation_per_call(path, single)
        with open(single) as f:
            document = json.load(f)
    renamed = 0
    for e in document.get("traceEvents", []):
        if e.get("ph") == "X" and e.get("name") in ("cudaGraphLaunch", "cudaGraphLaunch_v10000"):
            e["name"] = "cudaLaunchKernel"
            renamed += 1
    with open(out, "w") as f:
        json.dump(document, f)
    return renamed


def agrees(a_ns, b_ns):
    return abs(a_ns - b_ns) <= max(ABSOLUTE_NS, RELATIVE * max(abs(a_ns), abs(b_ns)))


def us(ns):
    return f"{ns / 1000:.3f}"


def graph_only_verdict(args, hta_dir, path, rank, step_name, hta_name):
    """HTA stopped for want of a launch-queue series (no launch call it counts): the step
    compared again on the trace with its graph launches read as kernel launches."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "graph_launches_renamed.json")
        renamed = graph_launches_as_kernel_launches(path, copy)
        if renamed == 0:
            return "UNEXPLAINED: HTA found no launch-queue series, and the trace has no graph launch"
        ours = {s["name"]: s for s in kinetrace_steps(args.kinetrace, copy)[1]}.get(step_name, {})
        theirs = run_hta(hta_dir, copy, rank, [hta_name], args.step_timeout, True).get(hta_name, {})
    if "length_us" not in theirs or "hta_length_ns" not in ours:
        return (f"UNEXPLAINED: HTA found no launch-queue series, and none on the copy either "
                f"({theirs.get('error', 'no result')})")
    hta_ns = round(theirs["length_us"] * 1000)
    same = agrees(ours["hta_length_ns"], hta_ns)
    return (f"{'' if same else 'UNEXPLAINED: '}named: no-launch-queue; with its {renamed} graph "
            f"launches read as kernel launches: kinetrace {us(ours['hta_length_ns'])} us, HTA "
            f"{us(hta_ns)} us, {'agree' if same else 'differ'}")


def compare_trace(args, hta_dir, path):
    rank, steps, left_out, kinetrace_s = kinetrace_steps(args.kinetrace, path)
    if args.max_steps:
        steps = steps[:args.max_steps]
    names = ["" if s["name"] == "the window" else s["name"] for s in steps]
    exact = run_hta(hta_dir, os.path.abspath(path), rank, names, args.step_timeout, True)
    default = (run_hta(hta_dir, os.path.abspath(path), rank, names, args.step_timeout, False)
               if args.rounding else {})
    # HTA keeps one GPU operation per call: where that is what differs, the trace with the
    # others taken out must agree.
    as_hta_sees = {}

    def without_other_operations():
        if not as_hta_sees:
            with tempfile.TemporaryDirectory() as tmp:
                filtered = os.path.join(tmp, "one_per_call.json")
                as_hta_sees["left_out"] = one_operation_per_call(path, filtered)
                as_hta_sees["steps"] = {
                    s["name"]: s for s in kinetrace_steps(args.kinetrace, filtered)[1]}
        return as_hta_sees

    rows = []
    unexplained = 0
    for step, name in zip(steps, names):
        found = exact.get(name, {})
        cells = [step["name"], us(step["length_ns"]), us(step["hta_length_ns"])]
        if step.get("skipped"):
            rows.append(cells + ["", "", "", f"kinetrace skipped: {step['skipped']}"])
            continue
        if "length_us" in found:
            hta_ns = round(found["length_us"] * 1000)
            diff = step["hta_length_ns"] - hta_ns
            cells += [us(hta_ns), us(diff)]
            verdict = "agrees" if agrees(step["hta_length_ns"], hta_ns) else "UNEXPLAINED"
            if verdict == "UNEXPLAINED" and without_other_operations()["left_out"] > 0:
                again = without_other_operations()["steps"].get(step["name"], {})
                if "hta_length_ns" in again and agrees(again["hta_length_ns"], hta_ns):
                    verdict = (f"agrees without the {without_other_operations()['left_out']} "
                               f"operations HTA leaves out ({us(again['hta_length_ns'])} us): "
                               "named: one-operation-per-call")
            # HTA keeps the weights of edges running backwards by less than 1 us, which
            # kinetrace weighs 0: with them taken out the two must agree to the nanosecond.
            negative_ns = round(found.get("negative_us", 0) * 1000)
            if negative_ns < 0:
                whole = abs(step["hta_length_ns"] - (hta_ns - negative_ns)) <= 2
                verdict += (f"; {us(-negative_ns)} us of HTA's path runs backwards: named: "
                            f"negative-weights{'' if whole else ' (not all of the difference)'}")
            if step["length_ns"] != step["hta_length_ns"]:
                verdict += (f"; kinetrace's length +"
                            f"{us(step['length_ns'] - step['hta_length_ns'])} us: ") + \
                           "named: waiting"
        elif found.get("refused"):
            cells += ["refused", ""]
            reason = found["refused"]
            # Named when kinetrace met what HTA refused: it broke the cycle, or left out the
            # wait within one stream.
            met = ((reason == "a cycle" and step.get("cycle_edges", 0) > 0) or
                   (reason == "a sync within one stream" and step.get("same_stream_waits", 0) > 0))
            verdict = (f"named: hta-refused ({reason})" if met else
                       f"UNEXPLAINED: HTA refused the graph ({reason})")
        elif found.get("timeout"):
            cells += ["timeout", ""]
            verdict = "named: timeout"
        elif "Queue length time series is required" in found.get("error", ""):
            cells += ["error", ""]
            verdict = graph_only_verdict(args, hta_dir, path, rank, step["name"], name)
        else:
            cells += ["error", ""]
            verdict = f"UNEXPLAINED: HTA: {found.get('error', 'no result')}"
        rounded = default.get(name, {})
        cells.append(us(round(rounded["length_us"] * 1000)) if "length_us" in rounded else "")
        if "length_us" in rounded:
            verdict += "; as shipped: named: rounding"
        cells.append(f"{verdict} ({found.get('seconds', '?')} s)")
        unexplained += verdict.startswith("UNEXPLAINED")
        rows.append(cells)
    header = ["step", "kinetrace us", "kt HTA-weighted", "HTA us", "diff us", "HTA as shipped",
              "verdict (HTA's time)"]
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header) - 1)]
    lines = [f"== {path} (rank {rank}; kinetrace {kinetrace_s:.1f} s; HTA loaded in "
             f"{exact.get('_load_s', 0):.1f} s)"]
    for r in [header] + rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)) + "  " + str(r[-1]))
    for why, count in left_out.items():
        lines.append(f"  kinetrace left out or changed: {count} {why}")
    return lines, unexplained, len(rows)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", metavar="TRACE")
    parser.add_argument("--kinetrace", help="the kinetrace command")
    parser.add_argument("--hta-dir", help="the directory holding HTA's hta package")
    parser.add_argument("--out", help="also write the tables to this file")
    parser.add_argument("--step-timeout", type=int, default=300,
                        help="seconds HTA may take over one step (default 300)")
    parser.add_argument("--max-steps", type=int, default=0, help="only the first N steps")
    parser.add_argument("--rounding", action="store_true",
                        help="also run HTA as shipped (its rounding on)")
    parser.add_argument("--hta-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--steps-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.hta_worker:
        return hta_worker(args.hta_dir, args.traces[0], args.rank, json.loads(args.steps_json),
                          args.step_timeout)

    hta_dir, status = ready_hta("hta_critical_path_referee", args.hta_dir,
                                ("pandas", "yaml", "networkx"))
    if status is not None:
        return status
    if not args.kinetrace:
        parser.error("--kinetrace is required")

    text, unexplained, steps = [], 0, 0
    try:
        for path in args.traces:
            lines, bad, count = compare_trace(args, hta_dir, path)
            text += lines + [""]
            unexplained += bad
            steps += count
    except (OSError, ValueError, RuntimeError, KeyError) as error:
        print(f"hta_critical_path_referee: {error}", file=sys.stderr)
        return 2
    named = sorted({key for key in NAMED for line in text if f"named: {key}" in line})
    if named:
        text.append("named differences (docs/ANALYSIS.md, \"Critical path\"):")
        text += [f"  {key}: {NAMED[key]}" for key in named]
    text.append(f"hta_critical_path_referee: {len(args.traces)} traces, {steps} steps, "
                f"{unexplained} unexplained differences")
    output = "\n".join(text)
    print(output)
    if args.out:
        with open(args.out, "w") as f:
            f.write(output + "\n")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
