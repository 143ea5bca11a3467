#!/usr/bin/env bash
# A torchrun job of two processes on one GPU under `kinetrace run`: two traces, distinct
# file names, distinct distributedInfo ranks, each with GPU kernels.
#
#   bench/gpu/torchrun_two_ranks.sh [BUILD_DIR] [OUT_DIR]  (defaults /tmp/kinetrace-gpu-build, ./gpu-results)
#
# Writes OUT_DIR/torchrun/ (traces, summaries, log) and OUT_DIR/torchrun.md.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_built || exit 1
WORK=$OUT_DIR/torchrun
rm -rf "$WORK" && mkdir -p "$WORK"

TORCHRUN=(torchrun)
command -v torchrun > /dev/null || TORCHRUN=("$PYTHON" -m torch.distributed.run)
"$KINETRACE" run --output "$WORK" -- "${TORCHRUN[@]}" --standalone --nnodes 1 --nproc_per_node 2 \
  "$BENCH_DIR/torch_train.py" --distributed --steps 10 --warmup 3 > "$WORK/run.log" 2>&1
rc=$?
tail -n 30 "$WORK/run.log"
[[ $rc -eq 0 ]] || { echo "FAIL: kinetrace run torchrun exited $rc"; exit 1; }

"$PYTHON" - "$WORK" "$OUT_DIR/torchrun.md" <<'PY'
import glob, json, os, sys
work, report = sys.argv[1], sys.argv[2]
traces = sorted(p for p in glob.glob(os.path.join(work, "kinetrace-*.json")) if not p.endswith(".summary.json"))
rows, ranks, failures, rank_traces = [], [], [], []
for path in traces:
    with open(path) as f:
        trace = json.load(f)
    info = trace.get("distributedInfo", {})
    kernels = sum(1 for e in trace["traceEvents"] if e.get("cat") == "kernel")
    name = os.path.basename(path)
    # A trace of a process without WORLD_SIZE (torchrun's own agent, if it touched CUDA)
    # is listed but is not one of the ranks.
    is_rank = info.get("world_size") == 2
    rows.append(f"| {name} | {info.get('rank') if is_rank else '(not a rank)'} | {info.get('world_size')} | {kernels} |")
    if not is_rank:
        continue
    rank_traces.append(name)
    ranks.append(info.get("rank"))
    if kernels == 0:
        failures.append(f"{name} has no kernels")
if len(rank_traces) != 2:
    failures.append(f"{len(rank_traces)} rank traces, expected 2")
if len(set(rank_traces)) != len(rank_traces):
    failures.append("file names collide")
if sorted(r for r in ranks if r is not None) != [0, 1]:
    failures.append(f"ranks {ranks}, expected 0 and 1")
lines = ["# torchrun, 2 processes on one GPU, under kinetrace run", "",
         "| trace | rank | world size | kernels |", "|---|---|---|---|", *rows, ""]
lines.append("PASS" if not failures else "FAIL: " + "; ".join(failures))
text = "\n".join(lines)
print(text)
open(report, "w").write(text + "\n")
sys.exit(0 if not failures else 1)
PY
