#!/usr/bin/env python3
"""HTA is the referee of `kinetrace diff`: runs the real Holistic Trace Analysis's TraceDiff
and `kinetrace diff --json` on the same pairs of traces and sets every row side by side.

    hta_diff_referee.py --kinetrace BIN [--hta-dir DIR] [--out TABLE.txt] BASE NEW [BASE NEW]...

(BASE and NEW as `kinetrace diff` takes them: a trace, or a directory of one job's traces.)

For each pair and rank, kinetrace says which steps it compared (matched by number, or each
run's own where they share none) and, over those steps, each kernel's, operator's,
annotation's and runtime call's count and total time. HTA is asked for the same iterations
of the same rank: LabeledTrace.extract_ops and get_ops_summary (what TraceDiff.compare_traces
sums, by category and name) give the rows (kernels, copies and memsets; cpu_op;
user_annotation; cuda_runtime and cuda_driver calls), compare_traces (device_type GPU) the
kernels' differences and ops_diff (GPU) the kernels added and deleted; the ProfilerStep
ranges' own rows give the step time. Runs compared whole (no steps) are set against HTA's
summary of the whole trace, as TraceDiff needs iterations.

HTA runs twice, as shipped and with its rounding of nanosecond timestamps off
(HTA_DISABLE_NS_ROUNDING=1, read once at import: a process per setting). A figure agrees when
counts are equal and times are within 0.5% of HTA's with the rounding off; the default's
difference is shown beside it (named: rounding). Anything else is an unexplained difference.

HTA's location: --hta-dir, else $HTA_DIR, else ../shared/refs/hta beside the repository, else
an importable `hta`; it needs pandas and PyYAML (Debian: python3-pandas, python3-yaml).

Exit status: 0 when every figure agrees, 1 on an unexplained difference, 2 when a trace or a
run fails, 77 (ctest's skip) when pandas or HTA is absent.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77
TOLERANCE = 0.005  # relative: 0.5%
ABSOLUTE_NS = 10.0
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hta_referee import ready_hta, stand_in_modules  # noqa: E402  (the same HTA, found alike)

KERNEL_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "cuda_graph")
# The host ranges kinetrace diff tabulates, by the category HTA's rows carry.
KINDS = {"kernels": KERNEL_CATEGORIES, "ops": ("cpu_op",), "annotations": ("user_annotation",),
         "calls": ("cuda_runtime", "cuda_driver")}
# A step's range, as kinetrace's collector tells them (trace_collector.cpp, isStep): not an
# annotation, but the step time.
STEP_NAME = re.compile(r"^(ProfilerStep#|[Ss][Tt][Ee][Pp][ #_:\-]*[0-9])")


# ---- HTA, in a process of its own per setting ---------------------------------------------

def hta_rows(summary):
    """get_ops_summary's frame as {kind: {name: [count, total_us]}}, and the step ranges."""
    rows = {kind: {} for kind in KINDS}
    steps = []
    for _, row in summary.iterrows():
        category, name = str(row["cat"]), str(row["name"])
        count, total = int(row["counts"]), float(row["total_duration"])
        if category == "user_annotation" and STEP_NAME.match(name):
            if name.startswith("ProfilerStep#"):
                steps.append([name, count, total])
            continue
        for kind, categories in KINDS.items():
            if category in categories:
                entry = rows[kind].setdefault(name, [0, 0.0])
                entry[0] += count
                entry[1] += total
    return rows, steps


def hta_side(labeled, rank, iterations):
    from hta.trace_diff import DeviceType
    if iterations is None:  # compared whole: every event of the rank
        ops = labeled.t.get_trace(rank)
    else:
        ops = labeled.extract_ops(rank, iterations, DeviceType.ALL)
    rows, steps = hta_rows(labeled.get_ops_summary(ops))
    return {"rows": rows, "steps": steps}


def hta_pair(hta, base, new, rank, base_iterations, new_iterations):
    """HTA's answer for one pair and rank: each side's rows, and TraceDiff's kernel diff."""
    from hta.common.trace import Trace
    from hta.trace_diff import DeviceType, LabeledTrace, TraceDiff

    def labeled(label, path):
        trace = Trace(trace_files={rank: os.path.abspath(path)},
                      trace_dir=os.path.dirname(os.path.abspath(path)))
        return LabeledTrace(label=label, t=trace)

    lb, ln = labeled("base", base), labeled("new", new)
    out = {"base": hta_side(lb, rank, base_iterations), "new": hta_side(ln, rank, new_iterations)}
    if base_iterations is not None and new_iterations is not None:
        frame = TraceDiff.compare_traces(lb, ln, rank, rank, base_iterations, new_iterations,
                                         DeviceType.GPU)
        out["compare"] = {str(name): {"diff_counts": float(row["diff_counts"]),
                                      "diff_duration": float(row["diff_duration"])}
                          for name, row in frame.iterrows()}
        changes = TraceDiff.ops_diff(lb, ln, rank, rank, base_iterations, new_iterations,
                                     DeviceType.GPU)
        out["ops_diff"] = {key: sorted(str(n) for n in changes[key]) for key in ("added", "deleted")}
    return out


def hta_worker(hta_dir, jobs):
    import logging

    stand_in_modules()
    if hta_dir:
        sys.path.insert(0, hta_dir)
    from hta.configs.config import logger
    logger.setLevel(logging.ERROR)
    result = []
    for job in jobs:
        try:
            result.append(hta_pair(None, job["base"], job["new"], job["rank"],
                                   job["base_iterations"], job["new_iterations"]))
        except Exception as error:  # HTA's own failure, reported as such
            result.append({"error": f"{type(error).__name__}: {error}"})
    json.dump(result, sys.stdout)
    return 0


def run_hta(hta_dir, jobs, no_rounding):
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1" if no_rounding else "0")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as spec:
        json.dump(jobs, spec)
    try:
        with tempfile.TemporaryFile("w+") as log:
            process = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--hta-worker", spec.name,
                 "--hta-dir", hta_dir or ""],
                stdout=subprocess.PIPE, stderr=log, env=env, text=True)
            if process.returncode != 0:
                log.seek(0)
                raise RuntimeError(f"HTA (rounding {'off' if no_rounding else 'on'}) failed:\n"
                                   + log.read()[-3000:])
    finally:
        os.unlink(spec.name)
    return json.loads(process.stdout)


# ---- kinetrace ----------------------------------------------------------------------------

def kinetrace_diff(binary, base, new, tmp):
    out = os.path.join(tmp, "diff.json")
    process = subprocess.run([binary, "diff", "-q", base, new, "--json", out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if process.returncode != 0:
        raise RuntimeError(f"kinetrace diff {base} {new} failed: {process.stderr}")
    with open(out) as f:
        return json.load(f)


def iterations_of(rank_report, side):
    """The iterations HTA is asked for: the steps kinetrace compared (None: the whole trace)."""
    if rank_report["match"] == "whole":
        return None
    return sorted(rank_report[side]["compared_numbers"])


# ---- the comparison -----------------------------------------------------------------------

class Table:
    def __init__(self):
        self.rows = []

    def add(self, where, figure, kinetrace, default, exact, unit):
        if exact is None:
            verdict = "agree" if kinetrace in (None, 0) else "DIFFERS (HTA has none)"
        elif kinetrace is None:
            verdict = "agree" if exact == 0 else "DIFFERS (kinetrace has none)"
        elif unit == "ns":
            tolerance = max(ABSOLUTE_NS, TOLERANCE * max(abs(kinetrace), abs(exact)))
            verdict = "agree" if abs(kinetrace - exact) <= tolerance else "DIFFERS"
        else:
            verdict = "agree" if kinetrace == exact else "DIFFERS"
        if verdict == "agree" and default is not None and kinetrace is not None and unit == "ns" \
                and abs(default - kinetrace) > max(ABSOLUTE_NS, TOLERANCE * abs(kinetrace)):
            verdict += "; default: named: rounding"
        self.rows.append((where, figure, kinetrace, default, exact, unit, verdict))

    def text(self):
        def shown(value, unit):
            if value is None:
                return "-"
            return f"{value / 1000.0:,.3f} us" if unit == "ns" else f"{value:,.0f}"

        lines = [("where", "figure", "kinetrace", "HTA default", "HTA no-rounding", "verdict")]
        for where, figure, kt, default, exact, unit, verdict in self.rows:
            lines.append((where, figure, shown(kt, unit), shown(default, unit), shown(exact, unit),
                          verdict))
        widths = [min(70, max(len(line[i]) for line in lines)) for i in range(5)]
        out = []
        for line in lines:
            cells = [line[0].ljust(widths[0]), line[1][:widths[1]].ljust(widths[1])]
            cells += [c.rjust(w) for c, w in zip(line[2:5], widths[2:5])]
            out.append("  ".join(cells + [line[5]]))
        return "\n".join(out)

    def unexplained(self):
        return sum(1 for row in self.rows if row[6].startswith("DIFFERS"))


def us_to_ns(value):
    return None if value is None else value * 1000.0


def compare_rank(table, where, report, default, exact):
    for answer, label in ((default, "default"), (exact, "no rounding")):
        if "error" in answer:
            raise RuntimeError(f"HTA ({label}) failed on {where}: {answer['error']}")
    for side, key in (("base", "base"), ("new", "new")):
        for kind in KINDS:
            kt_rows = {row["name"]: row for row in report[kind]}
            hd, he = default[side]["rows"][kind], exact[side]["rows"][kind]
            for name in sorted(set(kt_rows) | set(he) | set(hd)):
                row = kt_rows.get(name)
                kt_count = row[f"{key}_count"] if row else None
                kt_ns = row[f"{key}_ns"] if row else None
                short = name if len(name) <= 60 else name[:57] + "..."
                label = f"{where} {side} {kind[:-1]}"
                table.add(label, f"{short}: count", kt_count or 0, hd.get(name, [0])[0],
                          he.get(name, [0])[0], "")
                table.add(label, f"{short}: time", kt_ns or 0, us_to_ns(hd.get(name, [0, 0.0])[1]),
                          us_to_ns(he.get(name, [0, 0.0])[1]), "ns")
        # The step time: the mean of the step ranges' own durations over the steps compared.
        steps_d, steps_e = default[side]["steps"], exact[side]["steps"]
        if steps_e and report["match"] != "whole":  # whole: a step is the trace's length
            mean = lambda steps: us_to_ns(sum(s[2] for s in steps) / sum(s[1] for s in steps))  # noqa: E731
            table.add(f"{where} {side}", "step time (mean)", report["step_time"][f"{key}_ns"],
                      mean(steps_d), mean(steps_e), "ns")
    # TraceDiff itself: its kernel differences and the kernels it finds added and deleted.
    # Its GPU rows hold synchronisation records too (cuda_sync on a stream), which diff does
    # not tabulate: only the names HTA's own rows say are kernels, copies or memsets compare.
    if "compare" in exact:
        kt_rows = {row["name"]: row for row in report["kernels"]}
        kernels = set(exact["base"]["rows"]["kernels"]) | set(exact["new"]["rows"]["kernels"])
        for name, hta in sorted(exact["compare"].items()):
            if name not in kernels:
                continue
            row = kt_rows.get(name)
            short = name if len(name) <= 60 else name[:57] + "..."
            hta_default = default.get("compare", {}).get(name, {})
            table.add(f"{where} TraceDiff", f"{short}: diff_counts",
                      row and row["new_count"] - row["base_count"],
                      hta_default.get("diff_counts"), hta["diff_counts"], "")
            table.add(f"{where} TraceDiff", f"{short}: diff_duration",
                      row and row["new_ns"] - row["base_ns"],
                      us_to_ns(hta_default.get("diff_duration")), us_to_ns(hta["diff_duration"]),
                      "ns")
        for change, hta_key in (("added", "added"), ("removed", "deleted")):
            kt = sorted(r["name"] for r in report["kernels"] if r["change"] == change)
            hta = [name for name in exact["ops_diff"][hta_key] if name in kernels]
            hta_default = [name for name in default["ops_diff"][hta_key] if name in kernels]
            table.add(f"{where} ops_diff", f"kernels {hta_key}", len(kt), len(hta_default),
                      len(hta), "")
            if kt != hta:
                table.rows.append((f"{where} ops_diff", f"kernels {hta_key}: names", None, None,
                                   None, "", f"DIFFERS: kinetrace {kt}, HTA {hta}"))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", metavar="TRACE")
    parser.add_argument("--kinetrace", help="the kinetrace command")
    parser.add_argument("--hta-dir", help="the directory holding HTA's hta package")
    parser.add_argument("--out", help="also write the table to this file")
    parser.add_argument("--hta-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.hta_worker:
        with open(args.traces[0]) as f:
            return hta_worker(args.hta_dir, json.load(f))

    hta_dir, status = ready_hta("hta_diff_referee", args.hta_dir)
    if status is not None:
        return status
    if not args.kinetrace:
        parser.error("--kinetrace is required")
    if len(args.traces) % 2 != 0:
        parser.error("give the traces in pairs: BASE NEW [BASE NEW]...")

    table = Table()
    try:
        jobs, reports = [], []
        with tempfile.TemporaryDirectory() as tmp:
            for base, new in zip(args.traces[0::2], args.traces[1::2]):
                document = kinetrace_diff(args.kinetrace, base, new, tmp)
                for rank_report in document["ranks"]:
                    rank = max(0, rank_report["rank"])
                    # Each rank's own file (a run may be a directory of a job's traces).
                    jobs.append({"base": rank_report["base"]["path"],
                                 "new": rank_report["new"]["path"], "rank": rank,
                                 "base_iterations": iterations_of(rank_report, "base"),
                                 "new_iterations": iterations_of(rank_report, "new")})
                    reports.append((f"{os.path.basename(base)}->{os.path.basename(new)} "
                                    f"r{rank}", rank_report))
        default = run_hta(hta_dir, jobs, no_rounding=False)
        exact = run_hta(hta_dir, jobs, no_rounding=True)
        for (where, report), d, e in zip(reports, default, exact):
            compare_rank(table, where, report, d, e)
    except (OSError, ValueError, RuntimeError, KeyError) as error:
        print(f"hta_diff_referee: {error}", file=sys.stderr)
        return 2

    unexplained = table.unexplained()
    output = table.text() + (f"\nhta_diff_referee: {len(jobs)} rank pairs, {len(table.rows)} "
                             f"figures, {unexplained} unexplained differences")
    print(output)
    if args.out:
        with open(args.out, "w") as f:
            f.write(output + "\n")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
