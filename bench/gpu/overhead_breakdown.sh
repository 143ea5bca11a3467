#!/usr/bin/env bash
# Where tracing overhead comes from: the same programs untraced, under the CUPTI floor
# (libcupti_floor.so: CUPTI's activity API with nothing on top, in several settings), under
# kinetrace with growing activity sets, and under torch.profiler; interleaved rounds, medians.
#
#   bench/gpu/overhead_breakdown.sh [BUILD_DIR] [OUT_DIR]
#
# Three workloads:
#   launch          launch_cost: batches of 300 empty kernels of one function, one sync per
#                   batch (no Python): host ns per launch and batch time
#   launch_varied   the same, cycling through 44 kernel functions with 1 KB of parameters
#                   each, closer to what a framework launches
#   torch           torch_train.py, the PyTorch transformer-encoder + AdamW loop of
#                   overhead_torch.sh
#
# Environment: ROUNDS (5), STEPS (150), WARMUP (20), BATCHES (300), CONFIGS (all, or a
# space-separated subset of the names below), WORKLOADS ("launch launch_varied torch", or
# some of them).
# Writes OUT_DIR/overhead_breakdown.md.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_built || exit 1
cmake --build "$BUILD_DIR" --target cupti_floor launch_cost >&2 || exit 1
ROUNDS=${ROUNDS:-5}
STEPS=${STEPS:-150}
WARMUP=${WARMUP:-20}
BATCHES=${BATCHES:-300}
FLOOR=$BUILD_DIR/lib/libcupti_floor.so
LAUNCH_COST=$BUILD_DIR/bin/launch_cost
WORK=$OUT_DIR/overhead_breakdown
rm -rf "$WORK" && mkdir -p "$WORK"

# name -> the command prefix that traces (or not) the program after it
FLOOR_ENV="env CUDA_INJECTION64_PATH=$FLOOR CUPTI_FLOOR_KINDS"
KT_RUN="$KINETRACE run --no-summary --output $WORK/traces --activities"
declare -A PREFIX=(
  [none]="env"
  [floor_subscribe]="$FLOOR_ENV="
  [floor_callbacks]="$FLOOR_ENV= CUPTI_FLOOR_CALLBACKS=1"
  [floor_callbacks_driver]="$FLOOR_ENV= CUPTI_FLOOR_CALLBACKS=2"
  [floor_kernel]="$FLOOR_ENV=concurrent_kernel"
  [floor_kernel_zeroed]="$FLOOR_ENV=concurrent_kernel CUPTI_FLOOR_ZEROED=1"
  [floor_kernel_pinned]="$FLOOR_ENV=concurrent_kernel CUPTI_FLOOR_PINNED=1"
  [floor_kernel_flush]="$FLOOR_ENV=concurrent_kernel CUPTI_FLOOR_FLUSH_MS=500"
  [floor_kernel_serial]="$FLOOR_ENV=kernel"
  [floor_kernel_preallocated]="$FLOOR_ENV=concurrent_kernel CUPTI_FLOOR_PREALLOCATE=4"
  [floor_kernel_hw_trace]="$FLOOR_ENV=concurrent_kernel CUPTI_FLOOR_HW_TRACE=1"
  [kinetrace_host]="$KT_RUN host --"
  [kinetrace_launch]="$KT_RUN launch --"
  [kinetrace_kernel]="$KT_RUN kernel --"
  [kinetrace_full]="$KT_RUN kernel,memcpy,memset,launch --"
)
ORDER=(none floor_subscribe floor_callbacks floor_callbacks_driver floor_kernel floor_kernel_zeroed floor_kernel_pinned
       floor_kernel_flush floor_kernel_serial floor_kernel_preallocated floor_kernel_hw_trace kinetrace_host kinetrace_launch kinetrace_kernel
       kinetrace_full torch_cuda)
if [[ ${CONFIGS:-all} != all ]]; then read -r -a ORDER <<< "$CONFIGS"; fi
for config in "${ORDER[@]}"; do
  if [[ -z ${PREFIX[$config]:-} && $config != torch_cuda ]]; then
    echo "unknown configuration $config (known: ${!PREFIX[*]} torch_cuda)" >&2
    exit 2
  fi
done

# run_one WORKLOAD CONFIG: appends the run's RESULT line to WORK/WORKLOAD-CONFIG.out
run_one() {
  local workload=$1 config=$2 out=$WORK/$1-$2.out err=$WORK/$1-$2.err
  local program
  if [[ $workload == launch* ]]; then
    [[ $config == torch_cuda ]] && return 0  # torch.profiler traces Python programs only
    program=("$LAUNCH_COST" --batches "$BATCHES")
    [[ $workload == launch_varied ]] && program+=(--functions 44 --param-bytes 1024)
  else
    program=("$PYTHON" "$BENCH_DIR/torch_train.py" --steps "$STEPS" --warmup "$WARMUP")
    if [[ $config == torch_cuda ]]; then
      program+=(--mode torch-cuda --out "$WORK/torch")
    fi
  fi
  local prefix
  read -r -a prefix <<< "${PREFIX[$config]:-env}"
  if ! timeout 300 "${prefix[@]}" "${program[@]}" >> "$out" 2>> "$err"; then
    echo "$workload $config: run failed (see $err)" >&2
  fi
  rm -rf "$WORK/traces" "$WORK/torch"
}

for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round of $ROUNDS" >&2
  for workload in ${WORKLOADS:-launch launch_varied torch}; do
    for config in "${ORDER[@]}"; do run_one "$workload" "$config"; done
  done
done

ratio() {  # VALUE BASE
  "$PYTHON" -c "import math; v,b=float('$1'),float('$2'); print('-' if math.isnan(v) or math.isnan(b) or b==0 else f'{v/b:.3f}x')"
}
runs() {  # FILE KEY
  grep -o "$2=[0-9.]*" "$1" 2>/dev/null | cut -d= -f2 | paste -sd' '
}
{
  echo "# Where the overhead comes from"
  echo
  echo "$ROUNDS interleaved rounds; per run the median over its batches or steps, per"
  echo "configuration the median over runs. \`floor_*\`: libcupti_floor.so (CUPTI's activity"
  echo "API and nothing else; see bench/gpu/cupti_floor.cpp for each setting)."
  echo
  for workload in launch launch_varied; do
    [[ -f $WORK/$workload-none.out ]] || continue
    if [[ $workload == launch ]]; then
      echo "## launch_cost: $BATCHES batches of 300 empty kernels, one stream sync per batch"
    else
      echo "## launch_cost --functions 44 --param-bytes 1024: the same, 44 kernel functions in turn, 1 KB of parameters each"
    fi
    echo
    echo "| configuration | ns per launch | vs none | batch (us) | vs none | cudaGetDevice (ns) | cudaStreamQuery (ns) | each run's ns per launch |"
    echo "|---|---|---|---|---|---|---|---|"
    base_launch=$(median_of "$WORK/$workload-none.out" launch_ns)
    base_batch=$(median_of "$WORK/$workload-none.out" batch_us)
    for config in "${ORDER[@]}"; do
      [[ $config == torch_cuda ]] && continue
      out=$WORK/$workload-$config.out
      l=$(median_of "$out" launch_ns)
      b=$(median_of "$out" batch_us)
      g=$(median_of "$out" get_device_ns)
      q=$(median_of "$out" stream_query_ns)
      echo "| $config | $l | $(ratio "$l" "$base_launch") | $b | $(ratio "$b" "$base_batch") | $g | $q | $(runs "$out" launch_ns) |"
    done
    echo
  done
  if compgen -G "$WORK/torch-*.out" > /dev/null; then
    echo "## torch_train.py: $STEPS steps after $WARMUP warm-up (transformer encoder + AdamW)"
    echo
    echo "| configuration | median step (ms) | vs none | each run's median step (ms) |"
    echo "|---|---|---|---|"
    base_step=$(median_of "$WORK/torch-none.out" median_step_ms)
    for config in "${ORDER[@]}"; do
      s=$(median_of "$WORK/torch-$config.out" median_step_ms)
      echo "| $config | $s | $(ratio "$s" "$base_step") | $(runs "$WORK/torch-$config.out" median_step_ms) |"
    done
    echo
  fi
  echo "CUPTI floor record counts (last run of each): "
  for f in "$WORK"/*floor*.err; do
    [[ -f $f ]] && echo "- $(basename "$f" .err): $(grep -o 'records=.*' "$f" | tail -n 1)"
  done
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ); $(nproc) CPUs; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  echo "torch $("$PYTHON" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null)"
} > "$OUT_DIR/overhead_breakdown.md"
cat "$OUT_DIR/overhead_breakdown.md"
