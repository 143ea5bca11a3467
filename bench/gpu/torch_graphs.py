#!/usr/bin/env python3
"""A PyTorch training step captured as a CUDA graph (torch.cuda.graph) and replayed, checked
against CUDA's own count of the graph's nodes.

    torch_graphs.py run --manifest FILE [--replays 20] [--timed 0] [--profile TRACE]
    torch_graphs.py check TRACE MANIFEST [--graph-level] [--torch-profiler] [--md OUT.md]
    torch_graphs.py overhead KINETRACE [--rounds 5] [--timed 2000] [--md OUT.md]

run: a small transformer layer's whole step (forward, backward, optimizer) is captured once,
as the PyTorch documentation shows for whole-network capture, and replayed --replays times.
The graph's nodes are then counted through the CUDA runtime itself (cudaGraphGetNodes and
cudaGraphNodeGetType on the captured graph, which torch keeps with keep_graph=True): the
manifest says how many kernel, copy and memset nodes one replay runs, and how many replays
there were. Run it under `kinetrace run`; CUPTI is not touched here. With --timed N, N more
replays follow in 10 chunks, each timed to the end of its GPU work: the manifest's
"replay_us" is the median chunk's time per replay. With --profile TRACE the replays run
inside torch.profiler (CPU and CUDA activity), whose trace is exported to TRACE: run it
under `kinetrace run --torch`, where kinetrace is torch.profiler's backend.

check: a trace of that run (.json or .json.gz).
  node level (default): the kernels, copies and memsets carrying a "graph id" are exactly
    replays x nodes, every one linked to a cudaGraphLaunch of the trace (its correlation),
    and each names where its node was created ("graph node created by": the launch, copy or
    memset call that the capture turned into the node, never the instantiation that cloned
    it); the table counts them by creating call.
  --graph-level (a trace taken with --cuda-graph-trace=graph): one "cuda_graph" slice per
    replay, each linked to its launch, and no kernel, copy or memset of the graph.
  --torch-profiler: TRACE is torch.profiler's export (run --profile under `kinetrace run
    --torch`): every operation linked to a cudaGraphLaunch is counted (node level: nodes x
    replays; graph level: one "CUDA graph N" slice per replay and nothing else).
Prints a markdown table (and writes it to --md). Exit status 0 on PASS, 1 on FAIL, 2 when an
input cannot be read.

overhead: the time per replay untraced, traced at node level and traced at graph level
(`KINETRACE run --cuda-graph-trace ...`), each configuration run --rounds times, interleaved
(untraced, node, graph, untraced, ...); the table gives each one's median and its ratio to
the untraced median.
"""
import argparse
import collections
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from graph_check import graph_launch_correlations, load, report  # beside this script

# cudaGraphNodeType values (driver_types.h).
NODE_TYPES = {0: "kernel", 1: "memcpy", 2: "memset"}


def count_nodes(graph_handle):
    """(count by type name, total) of a cudaGraph_t, through the process's CUDA runtime."""
    cudart = None
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            cudart = ctypes.CDLL(name)  # the one torch loaded, found by its soname
            break
        except OSError:
            continue
    if cudart is None:
        raise RuntimeError("the CUDA runtime library cannot be loaded to count the graph's nodes")
    graph = ctypes.c_void_p(graph_handle)
    count = ctypes.c_size_t(0)
    status = cudart.cudaGraphGetNodes(graph, None, ctypes.byref(count))
    if status != 0:
        raise RuntimeError(f"cudaGraphGetNodes failed: error {status}")
    nodes = (ctypes.c_void_p * count.value)()
    status = cudart.cudaGraphGetNodes(graph, nodes, ctypes.byref(count))
    if status != 0:
        raise RuntimeError(f"cudaGraphGetNodes failed: error {status}")
    by_type = collections.Counter()
    for node in nodes:
        kind = ctypes.c_int(-1)
        status = cudart.cudaGraphNodeGetType(ctypes.c_void_p(node), ctypes.byref(kind))
        if status != 0:
            raise RuntimeError(f"cudaGraphNodeGetType failed: error {status}")
        by_type[NODE_TYPES.get(kind.value, f"type {kind.value}")] += 1
    return by_type, count.value


def run(args):
    import torch

    torch.manual_seed(0)
    device = torch.device("cuda")
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                             batch_first=True).to(device)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.01)
    static_input = torch.randn(8, 64, 256, device=device)
    static_target = torch.randn(8, 64, 256, device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(layer(static_input), static_target)
        loss.backward()
        optimizer.step()
        return loss

    # Warm-up on a side stream, as torch.cuda.graph's documentation asks before capturing.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph(keep_graph=True)
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = step()
    def replays():
        for _ in range(args.replays):
            static_input.copy_(torch.randn_like(static_input))
            graph.replay()
        torch.cuda.synchronize()

    if args.profile:
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities) as profiler:
            replays()
        profiler.export_chrome_trace(args.profile)
    else:
        replays()
    chunk_us = []
    if args.timed > 0:
        per_chunk = max(1, args.timed // 10)
        for _ in range(10):
            start = time.perf_counter()
            for _ in range(per_chunk):
                graph.replay()
            torch.cuda.synchronize()
            chunk_us.append((time.perf_counter() - start) * 1e6 / per_chunk)
    by_type, total = count_nodes(graph.raw_cuda_graph())
    manifest = {"replays": args.replays, "nodes": total, "nodes_by_type": dict(by_type),
                "loss": float(static_loss.detach())}
    if chunk_us:
        manifest["replay_us"] = statistics.median(chunk_us)
    with open(args.manifest, "w") as f:
        json.dump(manifest, f)
    print("TORCH_GRAPHS " + " ".join(f"{k}={v}" for k, v in manifest.items()))
    return 0


def check(args):
    try:
        trace = load(args.trace)
        with open(args.manifest) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as error:
        print(f"torch_graphs check: {error}", file=sys.stderr)
        return 2
    events = trace.get("traceEvents", [])
    launches = graph_launch_correlations(events)
    replays = manifest["replays"]
    by_type = manifest["nodes_by_type"]
    work_nodes = sum(by_type.get(t, 0) for t in ("kernel", "memcpy", "memset"))
    graph_work = [e for e in events if e.get("ph") == "X"
                  and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "graph id" in e.get("args", {})]
    lines = [f"- the captured step's graph (CUDA's count): {manifest['nodes']:,} nodes: "
             + ", ".join(f"{n} {c:,}" for n, c in sorted(by_type.items())),
             f"- replays: {replays:,}; cudaGraphLaunch calls in the trace: {len(launches):,}", ""]
    if args.torch_profiler:
        # The profiler's export: kinetrace's operations as PyTorch laid them out; a graph's
        # run is a "cuda_graph" slice "CUDA graph N" (or a kernel of that name).
        linked = [e for e in events if e.get("ph") == "X"
                  and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_graph")
                  and e.get("args", {}).get("correlation") in launches]
        runs = [e for e in linked
                if e.get("cat") == "cuda_graph" or e.get("name", "").startswith("CUDA graph")]
        if args.graph_level:
            ok = len(runs) == replays and len(linked) == replays
            lines += ["| graph level, torch.profiler | expected | in the trace |", "|---|---|---|",
                      f"| \"CUDA graph\" slices linked to their launch | {replays:,} | {len(runs):,} |",
                      f"| other operations linked to a launch | 0 | {len(linked) - len(runs):,} |"]
        else:
            expected = work_nodes * replays
            ok = len(linked) == expected and not runs
            lines += ["| node level, torch.profiler | expected | in the trace |", "|---|---|---|",
                      f"| kernels, copies, memsets linked to a cudaGraphLaunch (nodes x replays) "
                      f"| {expected:,} | {len(linked):,} |"]
        return report(lines, ok, args.md)
    if args.graph_level:
        runs = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cuda_graph"]
        linked = sum(1 for e in runs if e.get("args", {}).get("correlation") in launches)
        ok = len(runs) == replays and linked == replays and not graph_work
        lines += ["| graph level | expected | in the trace |", "|---|---|---|",
                  f"| cuda_graph slices | {replays:,} | {len(runs):,} |",
                  f"| linked to their launch | {replays:,} | {linked:,} |",
                  f"| kernels, copies, memsets of the graph | 0 | {len(graph_work):,} |"]
    else:
        linked = sum(1 for e in graph_work if e["args"].get("correlation") in launches)
        creators = collections.Counter(e["args"].get("graph node created by", "(none)") for e in graph_work)
        with_site = sum(count for creator, count in creators.items()
                        if creator != "(none)" and "GraphInstantiate" not in creator)
        expected = work_nodes * replays
        ok = len(graph_work) == expected and linked == expected and with_site == expected
        lines += ["| node level | expected | in the trace |", "|---|---|---|",
                  f"| kernels, copies, memsets replayed (nodes x replays) | {expected:,} | {len(graph_work):,} |",
                  f"| linked to their cudaGraphLaunch | {expected:,} | {linked:,} |",
                  f"| naming the call that created their node | {expected:,} | {with_site:,} |",
                  "", "- created by: " + ", ".join(f"{n} {c:,}" for n, c in creators.most_common())]
    lines.append(f"- kinetrace_gpu_ops_without_launch: {trace.get('kinetrace_gpu_ops_without_launch')}")
    return report(lines, ok, args.md)


def overhead(args):
    configurations = [("untraced", None), ("node level", "node"), ("graph level", "graph")]
    times = {name: [] for name, _ in configurations}
    with tempfile.TemporaryDirectory() as work:
        for round_index in range(args.rounds):
            for name, level in configurations:
                manifest = os.path.join(work, f"m{round_index}_{level}.json")
                command = [sys.executable, os.path.abspath(__file__), "run", "--replays", "1",
                           "--timed", str(args.timed), "--manifest", manifest]
                if level is not None:
                    command = [args.kinetrace, "run", "--no-summary", "--cuda-graph-trace", level,
                               "--output", os.path.join(work, f"t{round_index}_{level}"), "--"] + command
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
                with open(manifest) as f:
                    times[name].append(json.load(f)["replay_us"])
    base = statistics.median(times["untraced"])
    lines = ["| configuration | median time per replay (us) | vs untraced | rounds |", "|---|---|---|---|"]
    for name, _ in configurations:
        median = statistics.median(times[name])
        lines.append(f"| {name} | {median:.1f} | {median / base:.3f}x | {len(times[name])} |")
    text = "\n".join(lines)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--manifest", required=True)
    r.add_argument("--replays", type=int, default=20)
    r.add_argument("--timed", type=int, default=0)
    r.add_argument("--profile", help="run the replays inside torch.profiler; its trace goes here")
    c = sub.add_parser("check")
    c.add_argument("trace")
    c.add_argument("manifest")
    c.add_argument("--graph-level", action="store_true")
    c.add_argument("--torch-profiler", action="store_true")
    c.add_argument("--md")
    o = sub.add_parser("overhead")
    o.add_argument("kinetrace")
    o.add_argument("--rounds", type=int, default=5)
    o.add_argument("--timed", type=int, default=2000)
    o.add_argument("--md")
    args = p.parse_args()
    return {"run": run, "check": check, "overhead": overhead}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
