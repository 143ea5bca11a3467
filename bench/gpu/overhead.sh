#!/usr/bin/env bash
# What tracing costs a training loop: the same program untraced, under the CUPTI floor, under
# kinetrace in several settings and under torch.profiler, in interleaved rounds (A B C ...,
# A B C ...) so that drift of the machine hits every configuration alike.
#
#   bench/gpu/overhead.sh [BUILD_DIR] [OUT_DIR]     (defaults /tmp/kinetrace-gpu-build, ./gpu-results)
#   MODEL=resnet18 CONFIGS="untraced kinetrace kinetrace_no_nvtx" ROUNDS=8 bench/gpu/overhead.sh
#
# Configurations (CONFIGS, space-separated, run in that order in every round):
#   untraced            the program alone
#   floor               libcupti_floor.so (CUDA injection): concurrent-kernel, memcpy and memset
#                       records plus empty launch callbacks, nothing decoded or written; the
#                       least any CUPTI-based kernel tracer pays
#   kinetrace           `kinetrace run` with its default settings: what a user gets
#   kinetrace_sync      `kinetrace run --activities default,sync`
#   kinetrace_memory    `kinetrace run --activities default,memory`
#   kinetrace_overhead  `kinetrace run --activities default,overhead`
#   kinetrace_nvtx      `kinetrace run --nvtx` (NVTX calls routed to kinetrace)
#   kinetrace_no_nvtx   `kinetrace run --no-nvtx`
#   torch_cuda          torch.profiler around the measured steps, CUDA activity only
#                       (PyTorch models only)
# A kinetrace configuration whose options this kinetrace rejects is skipped, and the report
# says so; the others still run.
#
# Models (MODEL, space-separated; one report each):
#   transformer   torch_train.py --model transformer: launch-bound (~285 launches a step)
#   resnet18      torch_train.py --model resnet18: convolution-heavy, batch 32 of 224x224 images
#   launch_cost   launch_cost (no Python): host ns per launch, batches of 300 empty kernels
#
# Environment (defaults): MODEL ("transformer resnet18"), CONFIGS ("untraced floor kinetrace
# torch_cuda"), ROUNDS (4), STEPS (60), WARMUP (15), BATCHES (200, launch_cost's),
# CALL_TIMES (0; 1 adds the median cudaLaunchKernel duration and the program's own time
# between CUDA calls, read from each run's trace by api_durations.py: slower),
# RUN_TIMEOUT (300 s per run), PYTHON (python3, the one with torch).
# About 3-4 minutes with the defaults on an H200 (32 runs; torch starts in 3-4 s a run), plus
# the build the first time.
#
# Each run yields one figure: the median step of its measured steps (launch_cost: the median
# ns per launch). Per configuration the report gives the median over runs, its ratio to the
# untraced median, the median over rounds of (this run / the same round's untraced run), and
# every run's figure. Writes OUT_DIR/overhead-MODEL.md; each run's output stays under
# OUT_DIR/overhead/MODEL/. Traces are deleted after each run.
# Exit status: 0 when every run gave its figure, 1 when one did not, 2 for a usage mistake.

set -euo pipefail
# shellcheck source=bench/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

read -r -a MODELS <<< "${MODEL:-transformer resnet18}"
read -r -a CONFIG_LIST <<< "${CONFIGS:-untraced floor kinetrace torch_cuda}"
ROUNDS=${ROUNDS:-4}
STEPS=${STEPS:-60}
WARMUP=${WARMUP:-15}
BATCHES=${BATCHES:-200}
CALL_TIMES=${CALL_TIMES:-0}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
KNOWN_MODELS=(transformer resnet18 launch_cost)
KNOWN_CONFIGS=(untraced floor kinetrace kinetrace_sync kinetrace_memory kinetrace_overhead
               kinetrace_nvtx kinetrace_no_nvtx torch_cuda)

usage_error() {
  echo "overhead.sh: $*" >&2
  exit 2
}
for model in "${MODELS[@]}"; do
  [[ " ${KNOWN_MODELS[*]} " == *" $model "* ]] || usage_error "unknown MODEL $model (known: ${KNOWN_MODELS[*]})"
done
for config in "${CONFIG_LIST[@]}"; do
  [[ " ${KNOWN_CONFIGS[*]} " == *" $config "* ]] || usage_error "unknown configuration $config (known: ${KNOWN_CONFIGS[*]})"
done
[[ ${#MODELS[@]} -gt 0 && ${#CONFIG_LIST[@]} -gt 0 ]] || usage_error "MODEL and CONFIGS must name something"
for number in ROUNDS STEPS WARMUP BATCHES RUN_TIMEOUT; do
  [[ ${!number} =~ ^[0-9]+$ ]] || usage_error "$number must be a whole number, not '${!number}'"
done
[[ $ROUNDS -gt 0 && $STEPS -gt 0 ]] || usage_error "ROUNDS and STEPS must be positive"

ensure_built || exit 1
FLOOR=$BUILD_DIR/lib/libcupti_floor.so
LAUNCH_COST=$BUILD_DIR/bin/launch_cost
targets=()
if [[ " ${CONFIG_LIST[*]} " == *" floor "* && ! -f $FLOOR ]]; then targets+=(cupti_floor); fi
if [[ " ${MODELS[*]} " == *" launch_cost "* && ! -x $LAUNCH_COST ]]; then targets+=(launch_cost); fi
if [[ ${#targets[@]} -gt 0 ]]; then
  cmake --build "$BUILD_DIR" --target "${targets[@]}" >&2 || { echo "overhead.sh: cannot build ${targets[*]}" >&2; exit 1; }
fi

WORK=$OUT_DIR/overhead
TRACES=$WORK/traces
TORCH_OUT=$WORK/torch
rm -rf "$WORK"
mkdir -p "$WORK"
RUNS=$WORK/runs.tsv
: > "$RUNS"
KT_RUN=("$KINETRACE" run --output "$TRACES")

# config_prefix CONFIG: sets PREFIX to the command that runs a program under CONFIG.
config_prefix() {
  case $1 in
    untraced | torch_cuda) PREFIX=() ;;
    floor) PREFIX=(env CUDA_INJECTION64_PATH="$FLOOR" "CUPTI_FLOOR_KINDS=concurrent_kernel,memcpy,memset"
                   CUPTI_FLOOR_CALLBACKS=1) ;;
    kinetrace) PREFIX=("${KT_RUN[@]}" --) ;;
    kinetrace_sync) PREFIX=("${KT_RUN[@]}" --activities "default,sync" --) ;;
    kinetrace_memory) PREFIX=("${KT_RUN[@]}" --activities "default,memory" --) ;;
    kinetrace_overhead) PREFIX=("${KT_RUN[@]}" --activities "default,overhead" --) ;;
    kinetrace_nvtx) PREFIX=("${KT_RUN[@]}" --nvtx --) ;;
    kinetrace_no_nvtx) PREFIX=("${KT_RUN[@]}" --no-nvtx --) ;;
  esac
}

# model_program MODEL CONFIG: sets PROGRAM (the workload's command) and KEY (its figure).
model_program() {
  if [[ $1 == launch_cost ]]; then
    PROGRAM=("$LAUNCH_COST" --batches "$BATCHES")
    KEY=launch_ns
    return
  fi
  PROGRAM=("$PYTHON" "$BENCH_DIR/torch_train.py" --model "$1" --steps "$STEPS" --warmup "$WARMUP")
  if [[ $2 == torch_cuda ]]; then PROGRAM+=(--mode torch-cuda --out "$TORCH_OUT"); fi
  KEY=median_step_ms
}

# A kinetrace configuration runs only if this kinetrace takes its options: `kinetrace run
# OPTIONS -- true` starts no CUDA and exits 2 for an option it does not know.
ACTIVE=()
SKIPPED=$WORK/skipped.txt
: > "$SKIPPED"
for config in "${CONFIG_LIST[@]}"; do
  config_prefix "$config"
  if [[ $config == floor && ! -f $FLOOR ]]; then
    echo "floor	$FLOOR was not built" >> "$SKIPPED"
    continue
  fi
  if [[ ${PREFIX[0]:-} == "$KINETRACE" ]] && ! "${PREFIX[@]}" true > "$WORK/probe-$config.log" 2>&1; then
    printf '%s\t%s\n' "$config" "$(grep -m1 . "$WORK/probe-$config.log" || echo "kinetrace run failed")" >> "$SKIPPED"
    echo "overhead.sh: skipping $config: $(grep -m1 . "$WORK/probe-$config.log" || true)" >&2
    continue
  fi
  ACTIVE+=("$config")
done
rm -rf "$TRACES"

# The newest trace a run left: kinetrace's, or torch.profiler's.
run_trace() {
  local trace
  trace=$(find "$TRACES" -name 'kinetrace-*.json*' ! -name '*.summary.json' 2> /dev/null | head -n 1 || true)
  if [[ -z $trace && -f $TORCH_OUT/torch_trace.json ]]; then trace=$TORCH_OUT/torch_trace.json; fi
  echo "$trace"
}

# median_us LINE_PREFIX FILE: median_us of api_durations.py's line starting with LINE_PREFIX.
median_us() {
  grep "^$1" "$2" 2> /dev/null | grep -o 'median_us=[0-9.]*' | cut -d= -f2 | head -n 1 || true
}

# run_one MODEL CONFIG ROUND: one run; appends "model config round value launch_us gaps_us"
# to RUNS (value "fail" when the run gave no figure).
run_one() {
  local model=$1 config=$2 round=$3
  local dir=$WORK/$model
  local log=$dir/$config-r$round
  mkdir -p "$dir"
  config_prefix "$config"
  model_program "$model" "$config"
  local value="" launch="-" gaps="-"
  if timeout "$RUN_TIMEOUT" "${PREFIX[@]}" "${PROGRAM[@]}" > "$log.out" 2> "$log.err"; then
    value=$(grep '^RESULT' "$log.out" | tail -n 1 | grep -o "$KEY=[0-9.]*" | cut -d= -f2 || true)
  else
    echo "overhead.sh: $model $config round $round exited $? (see $log.err)" >&2
  fi
  if [[ $CALL_TIMES == 1 ]]; then
    local trace
    trace=$(run_trace)
    if [[ -n $trace ]]; then
      "$PYTHON" "$BENCH_DIR/api_durations.py" "$trace" --name cudaLaunchKernel --gaps > "$log.api" 2>&1 || true
      launch=$(median_us "API name=cudaLaunchKernel" "$log.api")
      gaps=$(median_us GAPS "$log.api")
    fi
  fi
  # Traces go at once: their pages are then never written back during a later run.
  rm -rf "$TRACES" "$TORCH_OUT"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$model" "$config" "$round" "${value:-fail}" "${launch:--}" "${gaps:--}" >> "$RUNS"
  echo "round $round/$ROUNDS  $model  $config: ${value:-fail} ($KEY)"
}

echo "overhead.sh: models ${MODELS[*]}; configurations ${ACTIVE[*]:-none}; $ROUNDS rounds"
for round in $(seq 1 "$ROUNDS"); do
  for model in "${MODELS[@]}"; do
    for config in "${ACTIVE[@]}"; do
      if [[ $config == torch_cuda && $model == launch_cost ]]; then continue; fi  # not a Python program
      run_one "$model" "$config" "$round"
    done
  done
done

TORCH_VERSION=-
if [[ " ${MODELS[*]} " != " launch_cost " ]]; then
  TORCH_VERSION=$("$PYTHON" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2> /dev/null || echo unknown)
fi
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -n 1 || true)
COMMIT=$(git -C "$SRC_DIR" rev-parse --short HEAD 2> /dev/null || echo unknown)
KT_ENV=$(env | grep '^KINETRACE_' | paste -sd' ' || true)

python3 - "$RUNS" "$SKIPPED" "$OUT_DIR" "${MODELS[*]}" "${CONFIG_LIST[*]}" "$ROUNDS" "$STEPS" "$WARMUP" \
  "$BATCHES" "$CALL_TIMES" "$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc) CPUs; ${GPU:-no GPU found by nvidia-smi}" \
  "$TORCH_VERSION" "$COMMIT" "${KT_ENV:-none}" <<'PY'
import collections, os, statistics, sys

(runs_path, skipped_path, out_dir, models, configs, rounds, steps, warmup, batches, call_times,
 date, machine, torch_version, commit, kinetrace_env) = sys.argv[1:]
models, configs = models.split(), configs.split()

WORKLOADS = {
    "transformer": ("torch_train.py --model transformer: 4-layer transformer encoder (d_model 256, "
                    "batch 16 x 128 tokens) + AdamW", "median step (ms)", "each run's median step (ms)"),
    "resnet18": ("torch_train.py --model resnet18: ResNet-18, batch 32 of random 3x224x224 images, "
                 "SGD with momentum, cross-entropy", "median step (ms)", "each run's median step (ms)"),
    "launch_cost": (f"launch_cost --batches {batches}: batches of 300 empty kernels (one function, 16-byte "
                    "parameters), one stream sync per batch", "ns per launch", "each run's ns per launch"),
}
COMMANDS = {
    "untraced": "the program alone",
    "floor": "libcupti_floor.so: concurrent-kernel, memcpy, memset records + empty launch callbacks",
    "kinetrace": "`kinetrace run` (default settings)",
    "kinetrace_sync": "`kinetrace run --activities default,sync`",
    "kinetrace_memory": "`kinetrace run --activities default,memory`",
    "kinetrace_overhead": "`kinetrace run --activities default,overhead`",
    "kinetrace_nvtx": "`kinetrace run --nvtx`",
    "kinetrace_no_nvtx": "`kinetrace run --no-nvtx`",
    "torch_cuda": "torch.profiler, CUDA activity only",
}

runs = collections.defaultdict(dict)  # (model, config) -> {round: (value or None, launch, gaps)}
for line in open(runs_path):
    model, config, rnd, value, launch, gaps = line.rstrip("\n").split("\t")
    runs[(model, config)][int(rnd)] = (None if value == "fail" else float(value), launch, gaps)
skipped = dict(line.rstrip("\n").split("\t", 1) for line in open(skipped_path) if "\t" in line)


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=3):
    return "-" if value is None else f"{value:.{digits}f}"


failed = 0
for model in models:
    description, value_header, runs_header = WORKLOADS[model]
    base = runs.get((model, "untraced"), {})
    base_median = median_or_none(v for v, _, _ in base.values())
    header = ["configuration", value_header, "ratio to untraced", "median of per-round ratios", runs_header]
    if call_times == "1":
        header += ["cudaLaunchKernel (us)", "between calls (us)"]
    lines = [f"# Tracing overhead: {model}", "",
             f"{description}.", "",
             f"{rounds} interleaved rounds, each running the configurations in the order below; per run "
             + (f"the median of its {steps} measured steps (after {warmup} warm-up)" if model != "launch_cost"
                else "the median over its batches")
             + ", per configuration the median over runs.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    medians = {}
    digits = 1 if model == "launch_cost" else 3
    for config in configs:
        if config in skipped:
            lines.append(f"| {config} | not run: {skipped[config]} |" + " |" * (len(header) - 2))
            continue
        if config == "torch_cuda" and model == "launch_cost":
            continue
        these = runs.get((model, config), {})
        value = median_or_none(v for v, _, _ in these.values())
        medians[config] = value
        ratio = value / base_median if value is not None and base_median else None
        paired = median_or_none(v / base[r][0] for r, (v, _, _) in these.items()
                                if v is not None and r in base and base[r][0])
        each = " ".join("fail" if v is None else f"{v:.{digits - 1}f}" for _, (v, _, _) in sorted(these.items()))
        failed += sum(1 for v, _, _ in these.values() if v is None)
        row = [config, fmt(value, digits), fmt(ratio) + ("x" if ratio is not None else ""),
               fmt(paired) + ("x" if paired is not None else ""), each or "-"]
        if call_times == "1":
            def median_column(index):
                numbers = [float(t[index]) for t in these.values() if t[index] not in ("-", "")]
                return fmt(median_or_none(numbers), 2)
            row += [median_column(1), median_column(2)]
        lines.append("| " + " | ".join(row) + " |")
    if medians.get("kinetrace") and medians.get("floor"):
        lines += ["", f"kinetrace over the floor: {medians['kinetrace'] / medians['floor']:.3f}x "
                      "(medians of the same rounds)."]
    lines += ["", "Configurations: " + "; ".join(f"{c}: {COMMANDS[c]}" for c in configs) + ".", "",
              f"{date}; {machine}; kinetrace {commit}"
              + (f"; torch {torch_version}" if model != "launch_cost" else "")
              + f"; KINETRACE_* set: {kinetrace_env}",
              "", f"Command: `MODEL={model} CONFIGS=\"{' '.join(configs)}\" ROUNDS={rounds} "
              + (f"BATCHES={batches}" if model == "launch_cost" else f"STEPS={steps} WARMUP={warmup}")
              + " bench/gpu/overhead.sh BUILD_DIR OUT_DIR`"]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, f"overhead-{model}.md"), "w") as f:
        f.write(text)
    print(text)
if failed:
    print(f"{failed} run(s) gave no figure: see {os.path.join(out_dir, 'overhead')}/MODEL/CONFIG-rROUND.err")
sys.exit(1 if failed else 0)
PY
