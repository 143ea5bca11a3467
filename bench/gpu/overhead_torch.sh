#!/usr/bin/env bash
# The cost of tracing a PyTorch training loop: step time under each tracer over step time
# untraced, interleaved rounds (A B C D, A B C D, ...) so drift hits every configuration.
#
#   bench/gpu/overhead_torch.sh [BUILD_DIR] [OUT_DIR]  (defaults /tmp/kinetrace-gpu-build, ./gpu-results)
#
#   A untraced                 torch_train.py --mode none
#   B kinetrace                kinetrace run --activities kernel,memcpy,memset,launch -- torch_train.py
#   C torch.profiler CUDA      torch_train.py --mode torch-cuda
#   D torch.profiler CPU+CUDA  torch_train.py --mode torch-cpu-cuda
#   E control: kinetrace run --activities host (the injection loaded, CUPTI never enabled),
#     which separates the cost of the injection from the cost of CUPTI's activity collection
#   F control: libcupti_floor.so with the same records as B (concurrent kernels, memcpy,
#     memset, empty launch callbacks) and nothing else: what CUPTI itself costs
#   G B with gpu_flush_ms=FLUSH_MS (500): CUPTI's worker thread on a fixed flush period
#   H B in capture-range mode, and the program never calls cudaProfilerStart: kinetrace
#     loaded and CUPTI subscribed, nothing collected (the cost of being there)
#   I B with --no-nvtx (NVTX calls made by PyTorch and the CUDA libraries not routed to it)
#   J kinetrace --activities launch: launch correlation without GPU records; its traces'
#     cudaLaunchKernel durations against B's show what the records add to each launch, and
#     the time between calls (the program's own code) whether they slow the program around it
#   K B in capture-range mode with torch_train.py --profiler-api: collection starts after the
#     warm-up steps, when the program calls cudaProfilerStart (modules already loaded, as in
#     overhead_alternate.sh), against B where CUPTI collects from the first CUDA call
#
# Each run prints the median of its measured steps; a configuration's figure is the median
# over rounds (every run's figure is listed too: single runs vary by +-15% on a shared
# machine). Writes OUT_DIR/overhead_torch.md (and the raw lines). Target: B <= 1.05x A.
# Environment: ROUNDS (5), STEPS (200), WARMUP (20), FLUSH_MS (500), CONFIGS (default
# "A_untraced B_kinetrace C_torch_cuda D_torch_cpu_cuda E_kinetrace_host_only F_cupti_floor";
# names as in the table, in the order to run them each round). Exit status 1 when B > 1.05x A. The last column shows where the CPU went in each configuration's last run
# (torch_train.py's threads=: main thread, then the busiest others).

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_built || exit 1
cmake --build "$BUILD_DIR" --target cupti_floor >&2 || exit 1
FLOOR=$BUILD_DIR/lib/libcupti_floor.so
FLUSH_MS=${FLUSH_MS:-500}
ROUNDS=${ROUNDS:-5}
STEPS=${STEPS:-200}
WARMUP=${WARMUP:-20}
WORK=$OUT_DIR/overhead_torch
rm -rf "$WORK" && mkdir -p "$WORK"
TRAIN=("$PYTHON" "$BENCH_DIR/torch_train.py" --steps "$STEPS" --warmup "$WARMUP")
RUN=("$KINETRACE" run --output "$WORK/traces" --no-summary)
FULL=(--activities kernel,memcpy,memset,launch)
ALL=(A_untraced B_kinetrace C_torch_cuda D_torch_cpu_cuda E_kinetrace_host_only F_cupti_floor
     G_kinetrace_flush H_kinetrace_idle I_kinetrace_no_nvtx J_kinetrace_launch_only
     K_kinetrace_from_profiler_start)
read -r -a CONFIGS <<< "${CONFIGS:-A_untraced B_kinetrace C_torch_cuda D_torch_cpu_cuda E_kinetrace_host_only F_cupti_floor}"
for name in "${CONFIGS[@]}"; do
  [[ " ${ALL[*]} " == *" $name "* ]] || { echo "unknown configuration $name (known: ${ALL[*]})" >&2; exit 2; }
done

run_config() {  # NAME: one run of that configuration, its RESULT line appended to WORK/NAME.out
  local name=$1 command
  case $name in
    A_untraced) command=("${TRAIN[@]}" --mode none) ;;
    B_kinetrace) command=("${RUN[@]}" "${FULL[@]}" -- "${TRAIN[@]}" --mode none) ;;
    C_torch_cuda) command=("${TRAIN[@]}" --mode torch-cuda --out "$WORK/torch") ;;
    D_torch_cpu_cuda) command=("${TRAIN[@]}" --mode torch-cpu-cuda --out "$WORK/torch") ;;
    E_kinetrace_host_only) command=("${RUN[@]}" --activities host -- "${TRAIN[@]}" --mode none) ;;
    F_cupti_floor) command=(env CUDA_INJECTION64_PATH="$FLOOR" CUPTI_FLOOR_KINDS=concurrent_kernel,memcpy,memset
                            CUPTI_FLOOR_CALLBACKS=1 "${TRAIN[@]}" --mode none) ;;
    G_kinetrace_flush) command=(env KINETRACE_GPU_FLUSH_MS="$FLUSH_MS" "${RUN[@]}" "${FULL[@]}" -- "${TRAIN[@]}" --mode none) ;;
    H_kinetrace_idle) command=("${RUN[@]}" "${FULL[@]}" --capture-range=cudaProfilerApi -- "${TRAIN[@]}" --mode none) ;;
    I_kinetrace_no_nvtx) command=("${RUN[@]}" "${FULL[@]}" --no-nvtx -- "${TRAIN[@]}" --mode none) ;;
    J_kinetrace_launch_only) command=("${RUN[@]}" --activities launch -- "${TRAIN[@]}" --mode none) ;;
    K_kinetrace_from_profiler_start) command=("${RUN[@]}" "${FULL[@]}" --capture-range=cudaProfilerApi --
                                             "${TRAIN[@]}" --mode none --profiler-api) ;;
  esac
  if "${command[@]}" >> "$WORK/$name.out" 2>> "$WORK/$name.err"; then
    grep '^RESULT' "$WORK/$name.out" | tail -n 1
  else
    echo "$name: run failed (see $WORK/$name.err)" >&2
  fi
  # How long the launch calls took, from kinetrace's own trace of the run.
  local trace
  trace=$(find "$WORK/traces" -name 'kinetrace-*.json' ! -name '*.summary.json' 2>/dev/null | head -n 1)
  if [[ -n $trace ]]; then
    "$PYTHON" "$BENCH_DIR/api_durations.py" "$trace" --name cudaLaunchKernel --gaps >> "$WORK/$name.api" 2>&1
  fi
  # Traces deleted at once: their pages are then never written back during a later run.
  rm -rf "$WORK/traces" "$WORK/torch"
}

for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round of $ROUNDS"
  for name in "${CONFIGS[@]}"; do run_config "$name"; done
done

# per_round_ratio BASE_FILE FILE: the median over rounds of (this round's run / this round's
# untraced run); "-" unless both have one result per round.
per_round_ratio() {
  "$PYTHON" - "$1" "$2" <<'PY'
import re, statistics, sys
def steps(path):
    try:
        return [float(m.group(1)) for line in open(path)
                for m in [re.search(r"median_step_ms=([0-9.]+)", line)] if line.startswith("RESULT") and m]
    except OSError:
        return []
base, runs = steps(sys.argv[1]), steps(sys.argv[2])
print(f"{statistics.median(r / b for r, b in zip(runs, base)):.3f}x" if runs and len(runs) == len(base) else "-")
PY
}

A=$(median_of "$WORK/A_untraced.out" median_step_ms)
{
  echo "# Tracing overhead on a PyTorch training loop"
  echo
  echo "Transformer encoder (4 layers, d_model 256, batch 16 x 128 tokens) + AdamW, one GPU;"
  echo "$ROUNDS interleaved rounds of $STEPS measured steps after $WARMUP warm-up steps;"
  echo "per run the median step, per configuration the median over rounds."
  echo
  echo "| configuration | median step (ms) | ratio to untraced | median of per-round ratios | cudaLaunchKernel (us) | between calls (us) | each run's median step (ms) | CPU by thread, last run |"
  echo "|---|---|---|---|---|---|---|---|"
  for name in "${CONFIGS[@]}"; do
    value=$(median_of "$WORK/$name.out" median_step_ms)
    runs=$(grep -o 'median_step_ms=[0-9.]*' "$WORK/$name.out" 2>/dev/null | cut -d= -f2 | paste -sd' ')
    ratio=$("$PYTHON" -c "import math; a,b=float('$A'),float('$value'); print('nan' if math.isnan(a) or math.isnan(b) else f'{b/a:.3f}x')")
    threads=$(grep -o 'threads=[^ ]*' "$WORK/$name.out" 2>/dev/null | tail -n 1 | cut -d= -f2)
    paired=$(per_round_ratio "$WORK/A_untraced.out" "$WORK/$name.out")
    launch=- between=-
    if [[ -f $WORK/$name.api ]]; then  # medians over runs of each trace's medians
      sed -n 's/^API/RESULT/p' "$WORK/$name.api" > "$WORK/$name.launch.lines"
      sed -n 's/^GAPS/RESULT/p' "$WORK/$name.api" > "$WORK/$name.gaps.lines"
      launch=$(median_of "$WORK/$name.launch.lines" median_us)
      between=$(median_of "$WORK/$name.gaps.lines" median_us)
    fi
    echo "| $name | $value | $ratio | $paired | $launch | $between | $runs | $threads |"
  done
  echo
  echo "$(nproc) CPUs; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  echo "torch $("$PYTHON" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null)"
} > "$OUT_DIR/overhead_torch.md"
cat "$OUT_DIR/overhead_torch.md"

if [[ " ${CONFIGS[*]} " != *" A_untraced "* || " ${CONFIGS[*]} " != *" B_kinetrace "* ]]; then
  echo "no target check: it needs A_untraced and B_kinetrace among CONFIGS"
  exit 0
fi
B=$(median_of "$WORK/B_kinetrace.out" median_step_ms)
"$PYTHON" - "$A" "$B" <<'PY'
import math, sys
a, b = float(sys.argv[1]), float(sys.argv[2])
if math.isnan(a) or math.isnan(b):
    print("FAIL: missing measurements"); sys.exit(1)
ratio = b / a
print(f"{'PASS' if ratio <= 1.05 else 'FAIL'}: kinetrace {ratio:.3f}x untraced (target <= 1.05x)")
sys.exit(0 if ratio <= 1.05 else 1)
PY
