#!/usr/bin/env python3
"""NCCL's description of each call it makes (its NVTX payloads), checked against the calls a
PyTorch program made.

    nccl_payload.py run --manifest FILE [--iterations 5]
    nccl_payload.py check TRACE MANIFEST [--md OUT.md]

run: a one-rank NCCL process group (torch.distributed, backend "nccl", one GPU) makes
--iterations rounds of all_reduce (sum; max on bf16; avg on float64), broadcast, reduce (min),
all_gather_into_tensor, and two all-gathers coalesced into one NCCL group, each on a tensor
of a known size. The manifest lists every NCCL
call expected, in order, with its message size as NCCL defines it (the count times the
datatype's size; for all-gather the part each rank sends), its reduction and its root. Run
it under `kinetrace run`. One rank is all one GPU allows (NCCL refuses two ranks on one
device); NCCL then launches no collective kernel, but copies the data of the out-of-place
calls. (PyTorch makes a one-rank reduce_scatter_tensor a copy of its own, without NCCL.)

check: a trace of that run (.json or .json.gz).
  - Every expected call is an "NCCL: <call>" range carrying NCCL's payload: "Message size
    [bytes]" (or "Bytes") equal to the manifest's, the reduction and root where it has one,
    and one "NCCL communicator ID" shared by all of them.
  - The communicator's creation (ncclCommInitRank*) is a finished range whose payload, given
    when it ends, names the same communicator, one rank and this rank; no NCCL range is left
    unfinished.
  - The GPU work NCCL launched inside a call carries the call ("nccl call"), its size ("nccl
    bytes") and its communicator, and its External id is the call's range.
  - Each group's ncclGroupEnd range names its calls ("Calls in the group") and their total
    size: NCCL launches a group's work there.
Prints a markdown table (and writes it to --md). Exit status 0 on PASS, 1 on FAIL, 2 when an
input cannot be read.
"""
import argparse
import collections
import json
import sys

from graph_check import load  # beside this script

def run(args):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)
    store = dist.HashStore()
    dist.init_process_group("nccl", store=store, rank=0, world_size=1,
                            device_id=torch.device("cuda", 0))
    calls = []

    def expect(call, tensor_or_bytes, reduction=None, root=None):
        size = tensor_or_bytes if isinstance(tensor_or_bytes, int) else \
            tensor_or_bytes.numel() * tensor_or_bytes.element_size()
        calls.append({"call": call, "bytes": size, "reduction": reduction, "root": root})

    device = torch.device("cuda", 0)
    grads = torch.randn(1 << 20, device=device)                        # 4 MiB, float32
    norms = torch.randn(3000, device=device, dtype=torch.bfloat16)     # 6,000 bytes
    ids = torch.arange(5000, device=device, dtype=torch.int64)         # 40,000 bytes
    losses = torch.randn(777, device=device, dtype=torch.float64)      # 6,216 bytes
    shard = torch.randn(4096, device=device, dtype=torch.float16)      # 8,192 bytes
    gathered = torch.empty(4096, device=device, dtype=torch.float16)
    means = torch.randn(1000, device=device, dtype=torch.float64)      # 8,000 bytes
    small_shard = torch.randn(1000, device=device)                     # 4,000 bytes
    small_gathered = torch.empty(1000, device=device)
    groups = []
    torch.cuda.synchronize()
    for _ in range(args.iterations):
        dist.all_reduce(grads, op=dist.ReduceOp.SUM)
        expect("ncclAllReduce", grads, "Sum")
        dist.all_reduce(norms, op=dist.ReduceOp.MAX)
        expect("ncclAllReduce", norms, "Max")
        dist.broadcast(ids, src=0)
        expect("ncclBroadcast", ids, root=0)
        dist.reduce(losses, dst=0, op=dist.ReduceOp.MIN)
        expect("ncclReduce", losses, "Min", root=0)
        dist.all_gather_into_tensor(gathered, shard)
        expect("ncclAllGather", shard)
        dist.all_reduce(means, op=dist.ReduceOp.AVG)
        expect("ncclAllReduce", means, "Avg")
        # Two all-gathers coalesced: NCCL queues them and launches their work in
        # ncclGroupEnd.
        with dist._coalescing_manager(device=device, async_ops=True) as coalesced:
            dist.all_gather_into_tensor(gathered, shard)
            dist.all_gather_into_tensor(small_gathered, small_shard)
        coalesced.wait()
        expect("ncclAllGather", shard)
        expect("ncclAllGather", small_shard)
        groups.append({"calls": "ncclAllGather x2",
                       "bytes": calls[-1]["bytes"] + calls[-2]["bytes"]})
    torch.cuda.synchronize()
    manifest = {
        "torch": torch.__version__,
        "nccl": ".".join(str(part) for part in torch.cuda.nccl.version()),
        "iterations": args.iterations,
        "calls": calls,
        "groups": groups,
    }
    dist.destroy_process_group()
    with open(args.manifest, "w") as f:
        json.dump(manifest, f, indent=1)
    return 0


def size_of(args):
    for key in ("Message size [bytes]", "Bytes"):
        if key in args:
            return args[key]
    return None


def check(args):
    try:
        trace = load(args.trace)
        events = trace.get("traceEvents", trace if isinstance(trace, list) else [])
        with open(args.manifest) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as error:
        print(f"nccl_payload: cannot read input: {error}", file=sys.stderr)
        return 2

    expected = manifest["calls"]
    wanted = {c["call"] for c in expected}
    ranges = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
              and e.get("name", "").startswith("NCCL: ")]
    ranges.sort(key=lambda e: e["ts"])
    calls = [r for r in ranges if r["name"][len("NCCL: "):] in wanted]
    by_external = {r["args"].get("External id"): r for r in ranges}
    problems = []
    if len(calls) != len(expected):
        problems.append(f"{len(calls)} NCCL call ranges of the kinds made, {len(expected)} expected")

    communicators = collections.Counter()
    matched = collections.Counter()
    per_call = collections.defaultdict(lambda: {"made": 0, "matched": 0, "bytes": set()})
    for want, got in zip(expected, calls):
        row = per_call[want["call"]]
        row["made"] += 1
        row["bytes"].add(want["bytes"])
        name = got["name"][len("NCCL: "):]
        a = got.get("args", {})
        wrong = []
        if name != want["call"]:
            wrong.append(f"is {name}")
        if size_of(a) != want["bytes"]:
            wrong.append(f"size {size_of(a)}, made {want['bytes']}")
        if want["reduction"] is not None and a.get("Reduction operation") != want["reduction"]:
            wrong.append(f"reduction {a.get('Reduction operation')}, made {want['reduction']}")
        if want["root"] is not None and a.get("Root") != want["root"]:
            wrong.append(f"root {a.get('Root')}, made {want['root']}")
        if "NCCL communicator ID" in a:
            communicators[str(a["NCCL communicator ID"])] += 1
        if wrong:
            if len(problems) < 10:
                problems.append(f"{want['call']} at {got['ts']}: " + "; ".join(wrong))
        else:
            row["matched"] += 1
            matched[want["call"]] += 1
    if len(communicators) != 1:
        problems.append(f"communicator ids seen: {dict(communicators) or 'none'}")
    inits = [r for r in ranges if r["name"].startswith("NCCL: ncclCommInitRank")]
    init_args = inits[0].get("args", {}) if len(inits) == 1 else {}
    init_ok = (len(inits) == 1 and not init_args.get("unfinished")
               and str(init_args.get("NCCL communicator ID")) in communicators
               and init_args.get("No. of ranks") == 1 and init_args.get("Rank") == 0)
    if not init_ok:
        problems.append(f"communicator creation: {[(r['name'], r.get('args')) for r in inits]}")
    # Groups: each outermost ncclGroupEnd names its calls and their total size.
    group_ends = [r for r in ranges if r["name"] == "NCCL: ncclGroupEnd"
                  and "Calls in the group" in r.get("args", {})]
    groups_ok = sum(1 for want, got in zip(manifest.get("groups", []), group_ends)
                    if got["args"]["Calls in the group"] == want["calls"]
                    and size_of(got["args"]) == want["bytes"])
    if groups_ok != len(manifest.get("groups", [])) or len(group_ends) != groups_ok:
        problems.append(f"groups: {groups_ok} of {len(manifest.get('groups', []))} ncclGroupEnd "
                        f"ranges name their calls and size; {len(group_ends)} in the trace")
    unfinished = [r["name"] for r in ranges if r.get("args", {}).get("unfinished")]
    if unfinished:
        problems.append(f"unfinished NCCL ranges: {unfinished}")

    # GPU work launched inside the calls.
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy",
                                                                          "gpu_memset")
           and "nccl call" in e.get("args", {})]
    gpu_ok = 0
    gpu_by_call = collections.Counter()
    for op in gpu:
        a = op["args"]
        call = by_external.get(a.get("External id"))
        good = (call is not None and call["name"] == "NCCL: " + a["nccl call"]
                and a.get("nccl bytes") == size_of(call["args"])
                and str(a.get("nccl communicator")) == str(call["args"].get("NCCL communicator ID")))
        if good:
            gpu_ok += 1
            gpu_by_call[a["nccl call"]] += 1
        elif len(problems) < 10:
            problems.append(f"{op['cat']} {op['name']} at {op['ts']}: args {a} do not match its call")
    if not gpu:
        problems.append("no GPU work carries its NCCL call")

    verdict = "PASS" if not problems else "FAIL"
    lines = [
        f"NCCL {manifest.get('nccl')}, torch {manifest.get('torch')}: "
        f"{manifest.get('iterations')} rounds on a one-rank communicator",
        "",
        "| NCCL call | made | ranges with NCCL's size, reduction and root | message bytes "
        "| GPU ops carrying the call |",
        "|---|---:|---:|---|---:|",
    ]
    for call, row in per_call.items():
        sizes = ", ".join(f"{b:,}" for b in sorted(row["bytes"]))
        lines.append(f"| {call} | {row['made']} | {row['matched']} | {sizes} "
                     f"| {gpu_by_call.get(call, 0)} |")
    communicator = next(iter(communicators), "none")
    lines += [
        "",
        f"Communicator ids: {len(communicators)} ({communicator}), named by its creation "
        f"({inits[0]['name'][len('NCCL: '):] if inits else 'none'}) when it ends: "
        f"{'yes' if init_ok else 'no'}. GPU ops carrying an NCCL call: {len(gpu)}, matching "
        f"their call's range: {gpu_ok}. Groups (two coalesced all-gathers each): "
        f"{groups_ok} of {len(manifest.get('groups', []))} ncclGroupEnd ranges name their calls "
        f"and total size.",
        "",
        f"**{verdict}**" + ("" if not problems else ": " + "; ".join(problems)),
    ]
    text = "\n".join(lines)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    return 0 if verdict == "PASS" else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--manifest", required=True)
    r.add_argument("--iterations", type=int, default=5)
    c = sub.add_parser("check")
    c.add_argument("trace")
    c.add_argument("manifest")
    c.add_argument("--md")
    args = parser.parse_args()
    return run(args) if args.command == "run" else check(args)


if __name__ == "__main__":
    sys.exit(main())
