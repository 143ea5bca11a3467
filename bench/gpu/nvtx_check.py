#!/usr/bin/env python3
"""NVTX from PyTorch, through kinetrace's own NVTX injection: ranges in the trace and the
GPU work launched inside them linked to them by External id.

    nvtx_check.py [--build-dir /tmp/kinetrace-gpu-build] [--out ./gpu-results]

Runs itself under `kinetrace run` (as `nvtx_check.py --workload`), then checks the trace:
  push/pop range      torch.cuda.nvtx.range_push/pop: a user_annotation range, and the matmul
                      kernel launched inside it carries the range's External id
  emit_nvtx           torch.autograd.profiler.emit_nvtx(): aten:: op ranges, kernels linked to
                      them, and the enclosing push/pop range gets a GPU span
                      (gpu_user_annotation) covering its kernels
  start/end range     torch.cuda.nvtx.range_start/range_end: an async range on its own track,
                      with the kernel launched inside it linked
  mark                torch.cuda.nvtx.mark: an instant
Prints PASS/FAIL per check; exit status 1 when any failed.
"""

import argparse
import glob
import json
import os
import subprocess
import sys

ASYNC_LANE_TID = 1 << 30


def workload():
    import torch
    x = torch.randn(1024, 1024, device="cuda")
    torch.cuda.synchronize()

    torch.cuda.nvtx.range_push("kt_plain_matmul")
    y = x @ x
    torch.cuda.nvtx.range_pop()

    with torch.autograd.profiler.emit_nvtx():
        torch.cuda.nvtx.range_push("kt_emit_block")
        z = torch.relu(x @ y)
        torch.cuda.nvtx.range_pop()

    handle = torch.cuda.nvtx.range_start("kt_async")
    w = z * 3.0
    torch.cuda.nvtx.range_end(handle)

    torch.cuda.nvtx.mark("kt_mark")
    torch.cuda.synchronize()
    print(float(w.sum()))


def check_trace(path):
    with open(path) as f:
        trace = json.load(f)
    events = [e for e in trace["traceEvents"] if e.get("ph") != "M"]
    ranges = [e for e in events if e.get("cat") == "user_annotation"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    spans = [e for e in events if e.get("cat") == "gpu_user_annotation"]
    instants = [e for e in events if e.get("ph") == "i"]

    def ext(e):
        return e.get("args", {}).get("External id")

    def named(name):
        return [r for r in ranges if r.get("name") == name]

    def kernels_of(range_events):
        ids = {ext(r) for r in range_events}
        return [k for k in kernels if ext(k) in ids]

    results = []

    def check(name, ok, detail):
        results.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")

    plain = named("kt_plain_matmul")
    check("push/pop range", len(plain) == 1, f"{len(plain)} 'kt_plain_matmul' ranges")
    check("push/pop range kernels", len(kernels_of(plain)) >= 1,
          f"{len(kernels_of(plain))} kernels with its External id")

    aten = [r for r in ranges if r.get("name", "").startswith("aten::")]
    check("emit_nvtx ranges", len(aten) >= 1, f"{len(aten)} aten:: ranges, e.g. {aten[0]['name'][:60] if aten else '-'}")
    check("emit_nvtx kernels", len(kernels_of(aten)) >= 1, f"{len(kernels_of(aten))} kernels linked to aten:: ranges")
    block = named("kt_emit_block")
    block_spans = [s for s in spans if ext(s) in {ext(r) for r in block}]
    check("enclosing range GPU span", len(block) == 1 and len(block_spans) >= 1,
          f"{len(block)} 'kt_emit_block' ranges, {len(block_spans)} gpu_user_annotation spans")

    async_ranges = named("kt_async")
    on_lane = all(r.get("tid", 0) >= ASYNC_LANE_TID for r in async_ranges)
    check("start/end range", len(async_ranges) == 1 and on_lane,
          f"{len(async_ranges)} 'kt_async' ranges, on an async track: {on_lane}")
    check("start/end range kernels", len(kernels_of(async_ranges)) >= 1,
          f"{len(kernels_of(async_ranges))} kernels with its External id")

    marks = [i for i in instants if i.get("name") == "kt_mark"]
    check("mark", len(marks) == 1, f"{len(marks)} 'kt_mark' instants")
    return all(results)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--build-dir", default="/tmp/kinetrace-gpu-build")
    parser.add_argument("--out", default="./gpu-results")
    parser.add_argument("--trace", help="check this trace instead of running the workload")
    args = parser.parse_args()
    if args.workload:
        workload()
        return 0

    trace = args.trace
    if trace is None:
        out = os.path.join(os.path.abspath(args.out), "nvtx_check")
        os.makedirs(out, exist_ok=True)
        for old in glob.glob(os.path.join(out, "kinetrace-*")):
            os.remove(old)
        kinetrace = os.path.join(args.build_dir, "bin", "kinetrace")
        if not os.access(kinetrace, os.X_OK):  # build it, as the other bench/gpu scripts do
            common = os.path.join(os.path.dirname(os.path.abspath(__file__)), "common.sh")
            built = subprocess.run(["bash", "-c", 'source "$0" "$1" "$2" && ensure_built', common,
                                    args.build_dir, args.out])
            if built.returncode != 0:
                print("FAIL: kinetrace could not be built")
                return 1
        command = [kinetrace, "run", "--output", out, "--", sys.executable, os.path.abspath(__file__), "--workload"]
        print("$ " + " ".join(command))
        run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(run.stdout[-4000:])
        if run.returncode != 0:
            print(f"FAIL: kinetrace run exited {run.returncode}")
            return 1
        traces = [p for p in glob.glob(os.path.join(out, "kinetrace-*.json")) if not p.endswith(".summary.json")]
        if len(traces) != 1:
            print(f"FAIL: expected one trace in {out}, found {len(traces)}")
            return 1
        trace = traces[0]
    print(f"checking {trace}")
    return 0 if check_trace(trace) else 1


if __name__ == "__main__":
    sys.exit(main())
