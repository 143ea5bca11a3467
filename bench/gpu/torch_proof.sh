#!/usr/bin/env bash
# kinetrace against torch.profiler on the same steps of the same PyTorch training loop.
#
#   bench/gpu/torch_proof.sh [BUILD_DIR] [OUT_DIR]     (defaults /tmp/kinetrace-gpu-build, ./gpu-results)
#
# 1. kinetrace run --capture-range=cudaProfilerApi -- torch_train.py --profiler-api
#    (the script calls cudaProfilerStart/Stop around its measured steps)
# 2. torch_train.py --mode torch-cuda (torch.profiler around the same steps)
# 3. compare_torch.py: same kernel / memcpy / memset counts, same kernel names, total kernel
#    time within 5%.
# Writes OUT_DIR/torch_proof/{kinetrace,torch}/..., OUT_DIR/compare_torch.md and the logs.
# Environment: STEPS (20), WARMUP (10). Exit status 1 when the comparison fails.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_built || exit 1
STEPS=${STEPS:-20}
WARMUP=${WARMUP:-10}
WORK=$OUT_DIR/torch_proof
rm -rf "$WORK" && mkdir -p "$WORK/kinetrace" "$WORK/torch"

echo "== kinetrace, capture range cudaProfilerApi"
"$KINETRACE" run --output "$WORK/kinetrace" --capture-range cudaProfilerApi -- \
  "$PYTHON" "$BENCH_DIR/torch_train.py" --steps "$STEPS" --warmup "$WARMUP" --profiler-api \
  > "$WORK/kinetrace.log" 2>&1
rc=$?
tail -n 25 "$WORK/kinetrace.log"
[[ $rc -eq 0 ]] || { echo "FAIL: kinetrace run exited $rc"; exit 1; }
KT_TRACE=$(ls "$WORK"/kinetrace/kinetrace-*.json | grep -v '\.summary\.json$' | head -n 1)
[[ -n $KT_TRACE ]] || { echo "FAIL: no kinetrace trace in $WORK/kinetrace"; exit 1; }

echo "== torch.profiler, CUDA activity"
"$PYTHON" "$BENCH_DIR/torch_train.py" --steps "$STEPS" --warmup "$WARMUP" --mode torch-cuda --out "$WORK/torch" \
  > "$WORK/torch.log" 2>&1 || { tail -n 20 "$WORK/torch.log"; echo "FAIL: torch run"; exit 1; }
tail -n 3 "$WORK/torch.log"

echo "== comparison"
"$PYTHON" "$BENCH_DIR/compare_torch.py" "$KT_TRACE" "$WORK/torch/torch_trace.json" --md "$OUT_DIR/compare_torch.md"
rc=$?
gzip -kf "$KT_TRACE" "$WORK/torch/torch_trace.json" 2>/dev/null
exit $rc
