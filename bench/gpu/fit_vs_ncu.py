#!/usr/bin/env python3
"""Sets `kinetrace analyze`'s per-kernel GPU metrics beside Nsight Compute's for the same
kernels: for each kernel name of the top ones that make --share of the kernel time (as the
analysis's kernel table ranks them), the SM, DRAM and tensor figures kinetrace gives (the
fitted values for kernels shorter than a sample, the kernels' own averages otherwise) and
ncu's mean over that name's kernels it profiled, with the differences. For a name kinetrace
calls unresolved (it shows no number), the fit's value stands in brackets: what it would have
said.

    fit_vs_ncu.py ANALYZE_JSON NCU_CSV [--share 0.8] [--tolerance 5] [--md OUT.md]
                  [--trace TRACE]

ANALYZE_JSON: `kinetrace analyze --json` of the traced run. NCU_CSV: `ncu --csv --page raw
--metrics sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_
sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed` of the
same program. A name counts as agreeing when every figure is within --tolerance points, or
when kinetrace marks it unresolved (it gives no number then). Exit 0 when every compared
name agrees, 1 when one does not, 2 on unreadable input. With --trace (the traced run's
trace, .json or .json.gz), also the start-up gap of sampling: when the first metric sample
came, after the trace's first kernel."""

import argparse
import csv
import gzip
import io
import json
import re
import shutil
import subprocess
import sys

# Each kernel's duration, ncu's weight for its name's mean.
DURATION = "gpu__time_duration.sum"
# kinetrace's metric key -> ncu's metric, the same quantity.
METRICS = [
    ("SM throughput (%)", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM"),
    ("DRAM throughput (%)", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM"),
    ("Tensor pipe active (%)", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
     "tensor"),
]


def base_name(name):
    """A kernel's name without its parameter list: ncu and CUPTI may print those differently.
    The list is the parenthesis that closes the name and the one that opens it, found from the
    end: "(anonymous namespace)" and a template's "(int)3" inside the name are kept."""
    name = name.strip()
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        if name[i] == ")":
            depth += 1
        elif name[i] == "(":
            depth -= 1
            if depth == 0:
                return name[:i].strip()
    return name


def function_name(name):
    """The function's own name, without its scope, template arguments and return type: what
    ncu's default (--print-kernel-base function) shows, and the fallback key."""
    base, depth, end = base_name(name), 0, None
    for i in range(len(base) - 1, -1, -1):  # drop a trailing template argument list
        if base[i] == ">":
            depth += 1
        elif base[i] == "<":
            depth -= 1
            if depth == 0:
                end = i
                break
        elif depth == 0:
            break
    head = base[:end] if end is not None else base
    return re.split(r"[\s:]", head)[-1]


def demangled(name):
    """CUPTI leaves some names mangled ("_ZN17cutlass__5x_cudnn6Kernel..."), which ncu prints
    demangled: c++filt's reading where it is there."""
    if not name.startswith("_Z") or shutil.which("c++filt") is None:
        return name
    out = subprocess.run(["c++filt", name], capture_output=True, text=True)
    return out.stdout.strip() or name


def comparable_name(name):
    """A kernel's name as ncu's and CUPTI's demanglers both print it. They differ in spelling,
    not in the kernel: CUPTI writes "(anonymous namespace)", "{lambda(float)#1}", true/false,
    "3ul" and an enum's cast ("(cudnnKernelDataType_t)2") where ncu writes "<unnamed>",
    "[lambda(float) (instance 1)]", 1/0, "3" and "2"; ncu leaves template parameters
    unsubstituted in nested names ("(T1, T1)"), puts the return type before them and leaves
    out some scopes ("engines_precompiled::" for "cudnn::engines_precompiled::"). So what
    is kept is the function's name and its template arguments, with every parenthesised
    list, scope, return type and space taken out, lambdas by their number."""
    s = demangled(name).replace("(anonymous namespace)", "").replace("<unnamed>", "")
    s = re.sub(r"\[lambda\([^\]]*\) \(instance (\d+)\)\]", r"lambda#\1", s)
    s = re.sub(r"\{lambda\([^}]*\)#(\d+)\}", r"lambda#\1", s)
    while True:  # parenthesised lists, innermost first
        shorter = re.sub(r"\([^()]*\)", "", s)
        if shorter == s:
            break
        s = shorter
    s = re.sub(r"\b(void|const)\b", "", s)
    s = re.sub(r"\btrue\b", "1", re.sub(r"\bfalse\b", "0", s))
    s = re.sub(r"\b(\d+)(?:ull|ul|ll|u|l)\b", r"\1", s, flags=re.IGNORECASE)
    s = re.sub(r"\w*::", "", s)
    return s.replace(" ", "")


def read_ncu(path):
    """{comparable name: {ncu metric: mean}} over the kernels ncu profiled: weighted by each
    kernel's duration where ncu measured it (DURATION), as the fit weighs a name's kernels by
    the time they occupy; else each kernel counts once."""
    with open(path, newline="") as f:
        text = f.read()
    # ncu prints its own lines (==PROF==) before the table; the table starts at its header.
    start = text.find('"ID"')
    if start < 0:
        raise ValueError(f"{path}: no ncu CSV table (a header with \"ID\")")
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    sums = {}
    for row in rows:
        name = row.get("Kernel Name", "")
        if not name or name == "Kernel Name":
            continue
        try:
            weight = float(row.get(DURATION, "").replace(",", ""))
        except ValueError:
            weight = 1.0  # no duration measured, or the units row
        entry = sums.setdefault(comparable_name(name), {})
        for _, metric, _ in METRICS:
            value = row.get(metric, "").replace(",", "")
            try:
                number = float(value)
            except ValueError:
                continue  # the units row, or a metric ncu could not collect
            total, weights = entry.get(metric, (0.0, 0.0))
            entry[metric] = (total + weight * number, weights + weight)
    return {name: {m: total / weights for m, (total, weights) in metrics.items() if weights > 0}
            for name, metrics in sums.items()}


def kinetrace_rows(analysis, share):
    """The top kernel names making `share` of kernel time, each with kinetrace's figures."""
    rank = analysis["ranks"][0]
    rows, covered = [], 0.0
    for kernel in rank["kernels"]:
        if kernel.get("kind") == "memory":
            continue
        if covered >= share:
            break
        covered += kernel.get("share", 0.0)
        fit = kernel.get("metric_fit")
        short = bool(fit and fit.get("shorter_than_sample"))
        if short and not fit.get("resolved"):
            # kinetrace shows no number; the fit's value is set beside ncu's in brackets.
            figures, source = fit.get("values", {}), "unresolved"
        elif short:
            figures, source = fit.get("values", {}), "fitted"
        else:
            figures = kernel.get("gpu_bound", {}).get("averages", {})
            source = "averages"
        rows.append({"name": kernel["name"], "share": kernel.get("share", 0.0),
                     "figures": figures, "source": source})
    return rows, covered


def compare(analysis, ncu, share, tolerance):
    rows, covered = kinetrace_rows(analysis, share)
    table, failures = [], 0
    for row in rows:
        measured = ncu.get(comparable_name(row["name"]))
        if measured is None:  # the same function under one name only: ncu printed it otherwise
            alike = [m for n, m in ncu.items() if function_name(n) == function_name(row["name"])]
            measured = alike[0] if len(alike) == 1 else None
        line = {"name": row["name"], "share": row["share"], "source": row["source"],
                "cells": [], "verdict": ""}
        if measured is None:
            line["verdict"] = "not profiled by ncu"
            table.append(line)
            continue
        worst = 0.0
        for key, metric, label in METRICS:
            theirs = measured.get(metric)
            ours = row["figures"].get(key)
            line["cells"].append((label, theirs, ours))
            if theirs is not None and ours is not None:
                worst = max(worst, abs(ours - theirs))
        if row["source"] == "unresolved":
            line["verdict"] = "unresolved (no number given)"
        elif worst <= tolerance:
            line["verdict"] = f"within {tolerance:g} (worst {worst:.1f})"
        else:
            line["verdict"] = f"OFF by {worst:.1f}"
            failures += 1
        table.append(line)
    return table, covered, failures


def markdown(table, covered, failures):
    out = ["| kernel | share | kinetrace from | " +
           " | ".join(f"{label} ncu / kinetrace / diff" for _, _, label in METRICS) +
           " | verdict |", "|" + "---|" * (4 + len(METRICS))]
    for line in table:
        cells = []
        hidden = line["source"] == "unresolved"  # the fit's value, not shown by kinetrace
        for label, theirs, ours in line["cells"] or [(l, None, None) for _, _, l in METRICS]:
            if theirs is None or ours is None:
                mine = "-" if ours is None else (f"({ours:.1f})" if hidden else f"{ours:.1f}")
                cells.append(f"{'-' if theirs is None else f'{theirs:.1f}'} / {mine} / -")
            elif hidden:
                cells.append(f"{theirs:.1f} / ({ours:.1f}) / ({ours - theirs:+.1f})")
            else:
                cells.append(f"{theirs:.1f} / {ours:.1f} / {ours - theirs:+.1f}")
        name = line["name"] if len(line["name"]) <= 70 else line["name"][:67] + "..."
        out.append(f"| `{name}` | {100 * line['share']:.1f}% | {line['source']} | " +
                   " | ".join(cells) + f" | {line['verdict']} |")
    out.append("")
    out.append(f"{len(table)} names, {100 * covered:.1f}% of kernel time; "
               f"{failures} outside the tolerance")
    return "\n".join(out) + "\n"


def startup_gap(path):
    """The first GPU metric sample's time after the first kernel's start, in ms (a line)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    kernels = [e["ts"] for e in events if e.get("cat") == "kernel" and "ts" in e]
    samples = [e["ts"] for e in events if e.get("cat") == "gpu_metric" and "ts" in e]
    if not kernels or not samples:
        return "start-up gap: no kernels or no metric samples in the trace\n"
    first_kernel, first_sample = min(kernels), min(samples)
    gap_ms = (first_sample - first_kernel) / 1000.0
    if gap_ms <= 0:
        return (f"start-up gap: none, the first metric sample {-gap_ms:.1f} ms before the first "
                f"kernel\n")
    return (f"start-up gap: the first metric sample {gap_ms:.1f} ms after the first kernel; "
            f"{sum(1 for t in kernels if t < first_sample)} of {len(kernels)} kernels ran "
            f"before it\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("analyze_json")
    p.add_argument("ncu_csv")
    p.add_argument("--share", type=float, default=0.8)
    p.add_argument("--tolerance", type=float, default=5.0)
    p.add_argument("--md")
    p.add_argument("--trace")
    args = p.parse_args(argv)
    try:
        with open(args.analyze_json) as f:
            analysis = json.load(f)
        ncu = read_ncu(args.ncu_csv)
        table, covered, failures = compare(analysis, ncu, args.share, args.tolerance)
        text = markdown(table, covered, failures)
        if args.trace:
            text += "\n" + startup_gap(args.trace)
    except (OSError, ValueError, KeyError, IndexError) as error:
        print(f"fit_vs_ncu.py: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
