#!/usr/bin/env bash
# Records the GPU traces that `kinetrace analyze --critical-path`, `kinetrace diff` and the
# kernel-sequence analysis are checked on against the real HTA (test/analysis/hta_referee.py),
# and gzips each into OUT_DIR:
#
#   bench/gpu/analysis_traces.sh [BUILD_DIR] [OUT_DIR]   (defaults /tmp/kinetrace-gpu-build, ./gpu-results)
#
#   ref_transformer, ref_resnet18   torch.profiler (stock kineto), CPU + CUDA, a ProfilerStep
#                  per step, forward/backward/optimizer annotated (torch_train.py --annotate)
#   ref_compile    the transformer under torch.compile (Triton kernels)
#   ref_graphs     graph_replay under `kinetrace run` (CUDA graphs of every shape); skipped
#                  when BUILD_DIR has no kinetrace or graph_replay
#   ref_gloo_rank0, ref_gloo_rank1  a two-process DDP job over gloo sharing the GPU
#                  (ddp_straggler.py: rank 1 sleeps 30 ms a step)
#   diff_base, diff_base_again   the transformer twice, unchanged: what noise a diff shows
#   diff_loader    the same with a 20 ms data loader wait a step (--loader-ms 20)
#   diff_vocab     the same with a vocabulary of 2,048 instead of 8,192: the output layer's
#                  GEMMs and the loss's kernels smaller (--vocab 2048)
#   diff_sync      the same with the loss read on the host after the forward pass
#                  (--sync-after-forward)
#
# Environment: STEPS (10 profiled steps), WARMUP (5), PYTHON (python3, with torch), SETS
# (which to record: "refs gloo graphs compile diffs", the default, or some of them).
# About 4 minutes on an H100 (torch.compile's the longest).

# shellcheck source=bench/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
STEPS=${STEPS:-10}
WARMUP=${WARMUP:-5}
WORK=$OUT_DIR/analysis_traces
rm -rf "$WORK" && mkdir -p "$WORK"
TRAIN=$BENCH_DIR/torch_train.py
SETS=" ${SETS:-refs gloo graphs compile diffs} "
failed=()

# keep NAME FILE: FILE gzipped as OUT_DIR/NAME.json.gz.
keep() {
  [[ -f $2 ]] || { echo "no trace for $1 ($2)"; failed+=("$1"); return 1; }
  gzip -c "$2" > "$OUT_DIR/$1.json.gz"
  echo "$1: $(stat -c %s "$OUT_DIR/$1.json.gz") bytes gzipped"
}

# profiled NAME ARGS...: torch_train.py under torch.profiler with ProfilerSteps.
profiled() {
  local name=$1
  shift
  echo "+ torch_train.py $* ($name)"
  timeout 300 "$PYTHON" "$TRAIN" --mode torch-cpu-cuda --profiler-steps --steps "$STEPS" \
    --warmup "$WARMUP" --out "$WORK/$name" "$@" > "$WORK/$name.log" 2>&1 || { tail -n 5 "$WORK/$name.log"; }
  grep '^RESULT' "$WORK/$name.log"
  keep "$name" "$WORK/$name/torch_trace.json"
}

if [[ $SETS == *" refs "* ]]; then
  profiled ref_transformer --model transformer --annotate
  profiled ref_resnet18 --model resnet18 --annotate
fi

if [[ $SETS == *" gloo "* ]] && command -v torchrun > /dev/null; then
  echo "+ torchrun ddp_straggler.py --backend gloo"
  timeout 300 torchrun --nproc_per_node 2 "$BENCH_DIR/ddp_straggler.py" --out "$WORK/gloo" \
    --backend gloo > "$WORK/gloo.log" 2>&1 || tail -n 10 "$WORK/gloo.log"
  keep ref_gloo_rank0 "$WORK/gloo/rank0.json"
  keep ref_gloo_rank1 "$WORK/gloo/rank1.json"
fi

if [[ $SETS == *" graphs "* && -x $KINETRACE && -x $BUILD_DIR/bin/graph_replay ]]; then
  echo "+ kinetrace run graph_replay"
  timeout 300 "$KINETRACE" run --output "$WORK/graphs" -- "$BUILD_DIR/bin/graph_replay" \
    --replays 30 --loop 5 --manifest "$WORK/graphs_manifest.json" > "$WORK/graphs.log" 2>&1 ||
    tail -n 10 "$WORK/graphs.log"
  keep ref_graphs "$(find "$WORK/graphs" -name '*.json' ! -name '*.summary.json' | head -n 1)"
fi

[[ $SETS == *" compile "* ]] && profiled ref_compile --model transformer --compile --annotate

# The diff pairs last, one after another on a quiet machine: what differs between them is
# the change made, and run-to-run noise.
if [[ $SETS == *" diffs "* ]]; then
  profiled diff_base --model transformer --annotate
  profiled diff_loader --model transformer --annotate --loader-ms 20
  profiled diff_vocab --model transformer --annotate --vocab 2048
  profiled diff_sync --model transformer --annotate --sync-after-forward
  profiled diff_base_again --model transformer --annotate
fi

[[ ${#failed[@]} -eq 0 ]] || { echo "analysis_traces.sh: no trace for ${failed[*]}"; exit 1; }
