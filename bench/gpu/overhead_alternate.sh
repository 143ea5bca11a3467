#!/usr/bin/env bash
# The cost of tracing measured inside one process: torch_train.py --alternate K runs its
# measured steps in blocks of K, alternately untraced and traced (the tracer follows the
# program's cudaProfilerStart/Stop), and reports each traced block's median step over its two
# untraced neighbours' (paired_ratio; pooled medians too). Slow and fast phases of the
# machine hit both kinds of block alike, so this is far steadier than a ratio between
# separate processes. It measures the cost of collecting, not of being loaded: the untraced
# blocks run with the tracer loaded and subscribed, idle.
#
#   bench/gpu/overhead_alternate.sh [BUILD_DIR] [OUT_DIR]
#
#   none               no tracer: the ratio the method itself reads (should be 1.00)
#   floor              libcupti_floor.so, concurrent-kernel records only
#   floor_flush        the same with CUPTI's flush period set to FLUSH_MS
#   kinetrace          kinetrace run --capture-range=cudaProfilerApi, kernel,memcpy,memset,launch
#   kinetrace_flush    the same with gpu_flush_ms=FLUSH_MS
#
# Environment: REPEATS (3), STEPS (400), BLOCK (20), WARMUP (20), FLUSH_MS (500), CONFIGS.
# Writes OUT_DIR/overhead_alternate.md.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_built || exit 1
cmake --build "$BUILD_DIR" --target cupti_floor >&2 || exit 1
REPEATS=${REPEATS:-3}
STEPS=${STEPS:-400}
BLOCK=${BLOCK:-20}
WARMUP=${WARMUP:-20}
FLUSH_MS=${FLUSH_MS:-500}
FLOOR=$BUILD_DIR/lib/libcupti_floor.so
WORK=$OUT_DIR/overhead_alternate
rm -rf "$WORK" && mkdir -p "$WORK"
KT_RUN="$KINETRACE run --no-summary --output $WORK/traces --capture-range=cudaProfilerApi --activities kernel,memcpy,memset,launch --"
declare -A PREFIX=(
  [none]="env"
  [floor]="env CUDA_INJECTION64_PATH=$FLOOR CUPTI_FLOOR_TOGGLE=1 CUPTI_FLOOR_KINDS=concurrent_kernel"
  [floor_flush]="env CUDA_INJECTION64_PATH=$FLOOR CUPTI_FLOOR_TOGGLE=1 CUPTI_FLOOR_KINDS=concurrent_kernel CUPTI_FLOOR_FLUSH_MS=$FLUSH_MS"
  [kinetrace]="$KT_RUN"
  [kinetrace_flush]="env KINETRACE_GPU_FLUSH_MS=$FLUSH_MS $KT_RUN"
)
ORDER=(none floor floor_flush kinetrace kinetrace_flush)
if [[ -n ${CONFIGS:-} ]]; then read -r -a ORDER <<< "$CONFIGS"; fi
for config in "${ORDER[@]}"; do
  [[ -n ${PREFIX[$config]:-} ]] || { echo "unknown configuration $config (known: ${!PREFIX[*]})" >&2; exit 2; }
done

for repeat in $(seq 1 "$REPEATS"); do
  echo "== repeat $repeat of $REPEATS" >&2
  for config in "${ORDER[@]}"; do
    read -r -a prefix <<< "${PREFIX[$config]}"
    timeout 300 "${prefix[@]}" "$PYTHON" "$BENCH_DIR/torch_train.py" --steps "$STEPS" --warmup "$WARMUP" \
      --alternate "$BLOCK" >> "$WORK/$config.out" 2>> "$WORK/$config.err" \
      || echo "$config: run failed (see $WORK/$config.err)" >&2
    rm -rf "$WORK/traces"
  done
done

{
  echo "# Tracing cost inside one process (blocks of $BLOCK steps, untraced and traced in turn)"
  echo
  echo "torch_train.py --alternate $BLOCK: $STEPS measured steps after $WARMUP warm-up; the first 3"
  echo "steps of each block are not counted. $REPEATS runs per configuration, interleaved."
  echo
  echo "| configuration | median paired ratio | each run's paired ratio | each run's pooled ratio | each run's untraced median (ms) |"
  echo "|---|---|---|---|---|"
  for config in "${ORDER[@]}"; do
    echo "| $config | $(median_of "$WORK/$config.out" paired_ratio) |" \
         "$(grep -o 'paired_ratio=[0-9.]*' "$WORK/$config.out" | cut -d= -f2 | paste -sd' ') |" \
         "$(grep -o 'on_off_ratio=[0-9.]*' "$WORK/$config.out" | cut -d= -f2 | paste -sd' ') |" \
         "$(grep -o 'median_off_ms=[0-9.]*' "$WORK/$config.out" | cut -d= -f2 | paste -sd' ') |"
  done
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ); $(nproc) CPUs; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
} > "$OUT_DIR/overhead_alternate.md"
cat "$OUT_DIR/overhead_alternate.md"
