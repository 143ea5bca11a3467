#!/usr/bin/env python3
"""Checks a trace of bench/gpu/graph_replay against what the program says it ran.

    graph_check.py TRACE MANIFEST [--md OUT.md] [--graph-level]

TRACE is the trace `kinetrace run -- graph_replay --manifest MANIFEST` wrote (.json or
.json.gz). For each kernel function of the manifest, and for the copies and memsets:

  expected   runs by construction (graph_replay's manifest; its device-side counter of
             kernel runs must agree)
  traced     events of that name (kernels: the name up to its argument list)
  linked     of those, the ones whose "correlation" is a cudaGraphLaunch call's in the trace
             (so the trace draws the arrow from the launch that replayed them)
  graph ids  the distinct "graph id" values they carry, and how many carry "graph node id"
  created    of those, the ones whose "graph node created by" and "graph node created in"
             name the call and the NVTX range the manifest says created their node
             ("created_by", with "*" for the rest; "created_in", which lists the nodes
             whose creation CUPTI reports: not those of conditional bodies)

Where the manifest has "per_launch" ({"armLoop": {"loopBody": 5}}: a launch that ran armLoop
ran 5 loopBody; "a|b" counts either), every launch is checked for it: each body kernel went
to the launch that ran it, not merely to some launch.

With --graph-level (a trace taken with --cuda-graph-trace=graph): no kernel, copy or memset
of a graph is in the trace; each launch is one "cuda_graph" slice, linked to its launch
(its correlation and the arrow's), and there are as many as the program made launches, the
SWITCH graph's (no node outside its conditional) included.

Where the manifest has "launch_order" (launch by launch, in call order, the kernels each
ran), the trace's graph launch calls, in the order they were made, are checked one by one:
the kernels linked to each (its correlation) must be exactly those. This is what checks the
graphs with no node outside their conditionals (switch, cond_*), whose kernels CUPTI gives no
correlation id: kinetrace places them by the launches' order, streams and synchronisations
("graph launch found by" in their args, counted below).

Also the trace's kinetrace_gpu_ops_without_launch and kinetrace_gpu_ops_ambiguous_graph_launch.
PASS when every count matches, every graph-replayed operation is linked and every launch ran
what the manifest says (kernels listed in an old manifest's "without_top_level_node" may be
unlinked). Prints a markdown table either way. Exit status 0 on PASS, 1 on FAIL, 2 when an
input cannot be read.
"""

import argparse
import collections
import gzip
import json
import sys


def load(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        return json.load(f)


def graph_launch_correlations(events):
    """The correlation ids of the trace's cudaGraphLaunch (or cuGraphLaunch) calls."""
    return {e["args"]["correlation"] for e in events
            if e.get("ph") == "X" and e.get("name", "").startswith(("cudaGraphLaunch", "cuGraphLaunch"))
            and "correlation" in e.get("args", {})}


def report(lines, ok, md):
    """Prints the table with PASS or FAIL under it (and writes it to `md`); the exit status."""
    text = "\n".join(lines + ["", "PASS" if ok else "FAIL"])
    print(text)
    if md:
        with open(md, "w") as f:
            f.write(text + "\n")
    return 0 if ok else 1


def short_name(name):
    """'(anonymous namespace)::loopBody(float*, int)' -> 'loopBody'."""
    name = name.replace("(anonymous namespace)::", "")
    if name.startswith("void "):
        name = name[len("void "):]
    name = name.split("(", 1)[0].strip()
    return name.rsplit("::", 1)[-1].split("<", 1)[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trace")
    p.add_argument("manifest")
    p.add_argument("--md")
    p.add_argument("--graph-level", action="store_true")
    args = p.parse_args()
    try:
        trace = load(args.trace)
        manifest = json.load(open(args.manifest))
    except (OSError, ValueError) as error:
        print(f"graph_check: {error}", file=sys.stderr)
        return 2

    events = trace.get("traceEvents", [])
    launches = graph_launch_correlations(events)
    if args.graph_level:
        return check_graph_level(trace, events, launches, manifest, args.md)
    rows = collections.OrderedDict()
    for name, count in sorted(manifest["kernels"].items()):
        rows[name] = {"expected": count}
    rows["(memcpy)"] = {"expected": manifest["memcpys"]}
    rows["(memset)"] = {"expected": manifest["memsets"]}
    for row in rows.values():
        row.update(traced=0, linked=0, zero_correlation=0, graph_ids=set(), with_node=0, created=0)
    created_by = manifest.get("created_by", {})
    created_in = manifest.get("created_in", {})

    def creation_matches(key, a):
        name = key.strip("()")
        by = created_by.get(name, created_by.get("*"))
        return (a.get("graph node created by") == by
                and a.get("graph node created in") == created_in.get(name))

    for e in events:
        cat = e.get("cat")
        if e.get("ph") != "X" or cat not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        a = e.get("args", {})
        if cat == "kernel":
            key = short_name(e.get("name", ""))
            if key not in rows:
                continue  # e.g. kernels CUDA runs for the program itself
        else:
            key = "(memcpy)" if cat == "gpu_memcpy" else "(memset)"
            if "graph id" not in a:
                continue  # the program's own set-up copies and memsets, outside the graphs
        row = rows[key]
        row["traced"] += 1
        if a.get("correlation") in launches:
            row["linked"] += 1
        if not a.get("correlation"):
            row["zero_correlation"] += 1
        if "graph id" in a:
            row["graph_ids"].add(a["graph id"])
        if "graph node id" in a:
            row["with_node"] += 1
        if creation_matches(key, a):
            row["created"] += 1

    ok = True
    per_launch = collections.defaultdict(collections.Counter)  # correlation -> kernel counts
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel" and e.get("args", {}).get("correlation") in launches:
            per_launch[e["args"]["correlation"]][short_name(e.get("name", ""))] += 1
    shape_lines = []
    order = manifest.get("launch_order")
    if order is not None:
        calls = sorted((e for e in events if e.get("ph") == "X"
                        and e.get("name", "").startswith(("cudaGraphLaunch", "cuGraphLaunch"))
                        and "correlation" in e.get("args", {})),
                       key=lambda e: (e.get("ts", 0), e["args"]["correlation"]))
        wrong = [i for i, (call, want) in enumerate(zip(calls, order))
                 if dict(per_launch.get(call["args"]["correlation"], {})) != want]
        good = len(calls) == len(order) and not wrong
        ok = ok and good
        shape_lines.append(f"- launches checked one by one against the manifest: {len(order):,}, "
                           f"in the trace {len(calls):,}, running exactly their kernels: "
                           f"{len(order) - len(wrong) if len(calls) == len(order) else 0:,}"
                           + (f" (first wrong: launch {wrong[0]})" if wrong else ""))
    found_by = collections.Counter(e["args"].get("graph launch found by") for e in events
                                   if e.get("ph") == "X" and e.get("cat") == "kernel"
                                   and "graph launch found by" in e.get("args", {}))
    if found_by:
        shape_lines.append("- body kernels' launch found by: "
                           + ", ".join(f"{k} {v:,}" for k, v in sorted(found_by.items())))
    for leader, expected in manifest.get("per_launch", {}).items():
        checked = wrong = 0
        for counts in per_launch.values():
            if counts[leader] == 0:
                continue
            checked += 1
            for names, count in expected.items():
                if sum(counts[n] for n in names.split("|")) != count:
                    wrong += 1
                    break
        ok = ok and checked > 0 and wrong == 0
        want = ", ".join(f"{count} {names}" for names, count in expected.items())
        shape_lines.append(f"- launches that ran {leader}: {checked:,}, each with {want}: "
                           f"{checked - wrong:,} of them")
    lines = ["| operation | expected | traced | linked to its cudaGraphLaunch | correlation 0 | graph ids "
             "| with node id | node's creation call and range |",
             "|---|---|---|---|---|---|---|---|"]
    unlinkable = set(manifest.get("without_top_level_node", []))
    for name, row in rows.items():
        good = row["traced"] == row["expected"] and (row["linked"] == row["traced"] or name in unlinkable)
        if name.strip("()") in created_in:
            good = good and row["created"] == row["traced"]
        ok = ok and good
        ids = ",".join(str(i) for i in sorted(row["graph_ids"]))
        note = " (graph without a top-level node)" if name in unlinkable else ""
        lines.append(f"| {name}{note} | {row['expected']:,} | {row['traced']:,} | {row['linked']:,} | "
                     f"{row['zero_correlation']:,} | {ids} | {row['with_node']:,} | {row['created']:,} |")
    expected_kernels = sum(manifest["kernels"].values())
    device = manifest.get("device_counted_kernels")
    lines.append("")
    lines.append(f"- graph launches in the trace: {len(launches):,} (the program made {manifest['graph_launches']:,})")
    lines.append(f"- kernels the device counted: {device:,}; expected {expected_kernels:,}")
    lines.append(f"- kinetrace_gpu_ops_without_launch: {trace.get('kinetrace_gpu_ops_without_launch')}")
    lines.append("- kinetrace_gpu_ops_ambiguous_graph_launch: "
                 f"{trace.get('kinetrace_gpu_ops_ambiguous_graph_launch')}")
    lines.extend(shape_lines)
    if device != expected_kernels or len(launches) != manifest["graph_launches"]:
        ok = False
    return report(lines, ok, args.md)


def check_graph_level(trace, events, launches, manifest, md):
    """The trace of a graph-level run: one linked cuda_graph slice per launch, no node work."""
    runs = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cuda_graph"]
    linked = [e for e in runs if e.get("args", {}).get("correlation") in launches]
    arrow_ends = {e.get("id") for e in events if e.get("ph") == "f" and e.get("cat") == "ac2g"}
    with_arrow = [e for e in linked if e["args"]["correlation"] in arrow_ends]
    node_work = [e for e in events if e.get("ph") == "X"
                 and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "graph id" in e.get("args", {})]
    per_graph = collections.Counter(e.get("name") for e in runs)
    expected = manifest["graph_launches"]
    ok = (len(runs) == expected and len(linked) == expected and len(with_arrow) == expected
          and len(launches) == expected and not node_work)
    lines = ["| graph-level trace | count |", "|---|---|",
             f"| graph launches the program made | {expected:,} |",
             f"| cudaGraphLaunch calls in the trace | {len(launches):,} |",
             f"| cuda_graph slices | {len(runs):,} |",
             f"| of them linked to their launch (correlation) | {len(linked):,} |",
             f"| of them with the launch's arrow | {len(with_arrow):,} |",
             f"| kernels, copies, memsets of graphs (must be 0) | {len(node_work):,} |",
             "",
             "- slices per graph: " + ", ".join(f"{n} {c:,}" for n, c in sorted(per_graph.items())),
             f"- kinetrace_gpu_ops_without_launch: {trace.get('kinetrace_gpu_ops_without_launch')}"]
    return report(lines, ok, md)


if __name__ == "__main__":
    sys.exit(main())
