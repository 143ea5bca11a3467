#!/usr/bin/env bash
# Builds kinetrace and runs every GPU check on this machine; rerun it on any CUDA machine.
#
#   test/gpu/run_all.sh [OUT_DIR]          (default ./gpu-results)
#
# Steps: machine info, configure + build (Release, outside the source tree), the ctest
# suite, launch_census + check_trace.py, the CUPTI overflow (flood) check, the host and
# CUDA examples with format checks, the trace formats (.json, .json.gz, .pftrace: checked,
# sizes, write times), CUDA graphs of every shape against a device-side count (step graphs),
# the overhead of tracing the CUDA example, measured
# untraced/traced interleaved (A B A B ...), the cost per launch of each activity kind
# (bench/gpu/overhead.sh on launch_cost), on-demand traces (a 10-minute window among them:
# step on_demand_long), the path rule where the injection and libkineto_api write (step
# path_rule), GPU metrics (step gpu_metrics; SOAK=SECONDS for its long run) and the
# host microbenchmarks. Every step runs even
# when an earlier one failed; the exit status is 1 when any step failed.
#
# Written to OUT_DIR: run_all.log (everything printed), overhead.md, formats.md,
# save_formats.md, graphs.md, graphs_graph_level.md, torch_graphs_node.md,
# torch_graphs_graph.md, torch_graphs_overhead.md,
# torch_graphs_profiler_node.md, torch_graphs_profiler_graph.md, nccl_payload.md,
# gpu_metrics_*.md (with the phases' and the PyTorch loop's traces and analyses),
# analyze-CASE.txt, .html and .json, idle_CASE.json.gz, hta.txt, torch_backend.md,
# kineto_abi_facts.json, overhead-launch_cost.md, census_manifest.json, bench_*.json, the
# reference traces (tp_*.json.gz, kt_*.json.gz), and the census, host and training-step
# traces gzipped. The flood trace (large) stays in the build directory.
#
# Environment (defaults): ONLY (every step; else the step functions to run, e.g.
# ONLY="configure build census flood"), GPU_BUILD_DIR (/tmp/kinetrace-gpu-build), OVERHEAD_ROUNDS (5),
# OVERHEAD_STEPS (500), OVERHEAD_WARMUP (20), ACTIVITY_ROUNDS (3), BENCH_REPETITIONS (5),
# FLOOD_KERNELS (200000).
# Takes about 3-5 minutes on an H200, most of it the build.

set -u -o pipefail

SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT_DIR=${1:-./gpu-results}
BUILD_DIR=${GPU_BUILD_DIR:-/tmp/kinetrace-gpu-build}
WORK_DIR=$BUILD_DIR/gpu-run
ROUNDS=${OVERHEAD_ROUNDS:-5}
STEPS=${OVERHEAD_STEPS:-500}
WARMUP=${OVERHEAD_WARMUP:-20}
FLOOD_KERNELS=${FLOOD_KERNELS:-200000}
CHECKER=$SRC_DIR/test/gpu/check_trace.py
RUN_TIMEOUT=300  # seconds; a hung GPU program fails its step instead of the whole run

mkdir -p "$OUT_DIR" "$WORK_DIR" || exit 1
OUT_DIR=$(cd "$OUT_DIR" && pwd)

STEP_NAMES=()
STEP_RESULTS=()

# Which steps run (ONLY="build ctest census ..." by their function names): all by default.
ONLY=${ONLY:-}

# step NAME COMMAND...: runs the command, prints and records PASS/FAIL and its duration.
step() {
  local name=$1
  shift
  if [[ -n $ONLY && " $ONLY " != *" $1 "* ]]; then return 0; fi
  echo
  echo "=== $name"
  local start=$SECONDS
  "$@"
  local rc=$?
  local result="PASS"
  if [[ $rc -ne 0 ]]; then result="FAIL (exit $rc)"; fi
  echo "=== $name: $result in $((SECONDS - start)) s"
  STEP_NAMES+=("$name")
  STEP_RESULTS+=("$result")
}

# binary NAME: the path of a program the build produced.
binary() {
  local path
  path=$(find "$BUILD_DIR" -type f -name "$1" -perm -u+x 2>/dev/null | head -n 1)
  if [[ -z $path ]]; then
    echo "$1 was not built (see the build step)" >&2
    return 1
  fi
  echo "$path"
}

# keep FILE NAME: gzips a trace into OUT_DIR as NAME.
keep() {
  [[ -f $1 ]] && gzip -c "$1" >"$OUT_DIR/$2"
}

# run COMMAND...: echoes and runs a command under the time limit.
run() {
  echo "+ $*"
  timeout "$RUN_TIMEOUT" "$@"
}

machine_info() {
  local rc=0
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  echo "host: $(uname -srm), $(nproc) cores"
  echo "source: $SRC_DIR (commit $(git -C "$SRC_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown))"
  nvidia-smi -L || rc=1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || rc=1
  # The banner is where nvidia-smi states the CUDA version the driver supports.
  nvidia-smi 2>/dev/null | grep -m1 "CUDA Version" || true
  if command -v nvcc >/dev/null; then nvcc --version | tail -n 2; else /usr/local/cuda/bin/nvcc --version | tail -n 2; fi
  cmake --version | head -n 1
  env | grep '^KINETRACE_' || echo "no KINETRACE_ variables set"
  return $rc
}

configure() {
  run cmake -S "$SRC_DIR" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DKINETRACE_BUILD_BENCHMARKS=ON
}

build() {
  # -k 0: build every target that can be built, so one broken target does not keep the
  # GPU programs from running.
  run cmake --build "$BUILD_DIR" --parallel "$(nproc)" -- -k 0
}

unit_tests() {
  (cd "$BUILD_DIR" && run ctest --output-on-failure --no-tests=error --timeout 300 --parallel "$(nproc)")
}

# The census records syncs, memory events and CUPTI overhead as well as the defaults, so
# that their records are checked too; the flood keeps the defaults.
census() {
  local census trace=$WORK_DIR/census_trace.json rc=0
  census=$(binary launch_census) || return 1
  run env KINETRACE_ACTIVITIES=default,sync,memory,overhead \
    "$census" "$trace" "$OUT_DIR/census_manifest.json" || return 1
  run python3 "$CHECKER" "$trace" "$OUT_DIR/census_manifest.json" || rc=1
  keep "$trace" census_trace.json.gz
  return $rc
}

flood() {
  local census
  census=$(binary launch_census) || return 1
  run "$census" "$WORK_DIR/flood_trace.json" "$WORK_DIR/flood_manifest.json" \
    --memory-mb 3 --gpu-buffer-kb 256 --flood "$FLOOD_KERNELS" || return 1
  ls -l "$WORK_DIR/flood_trace.json"
  run python3 "$CHECKER" "$WORK_DIR/flood_trace.json" "$WORK_DIR/flood_manifest.json" --expect-drops
}

host_example() {
  local example trace=$WORK_DIR/host_threads_trace.json rc=0
  example=$(binary host_threads) || return 1
  run "$example" "$trace" || return 1
  run python3 "$CHECKER" "$trace" || rc=1
  keep "$trace" host_threads_trace.json.gz
  return $rc
}

training_example() {
  local example gz=$OUT_DIR/training_step_trace.json.gz
  example=$(binary cuda_training_step) || return 1
  run "$example" --steps 20 --warmup 5 --output "$WORK_DIR/training_step_trace.json" || return 1
  keep "$WORK_DIR/training_step_trace.json" training_step_trace.json.gz || return 1
  run python3 "$CHECKER" "$gz"
}

# One run of the example; prints its median step time in microseconds.
median_step_us() {
  local output
  output=$(run "$@" 2>&1)
  local rc=$?
  echo "$output" >&2
  [[ $rc -eq 0 ]] || return 1
  echo "$output" | grep -o 'median_step_us=[0-9.]*' | cut -d= -f2 | grep . || return 1
}

overhead() {
  local example rc=0 untraced traced
  example=$(binary cuda_training_step) || return 1
  local common=(--steps "$STEPS" --warmup "$WARMUP")
  local results=$WORK_DIR/overhead.tsv
  : >"$results"
  # Interleaved so drift (clocks, temperature, other tenants) hits both sides alike.
  for round in $(seq 1 "$ROUNDS"); do
    untraced=$(median_step_us "$example" "${common[@]}" --untraced) || { rc=1; untraced=nan; }
    traced=$(median_step_us "$example" "${common[@]}" --output "$WORK_DIR/overhead_trace.json") ||
      { rc=1; traced=nan; }
    echo "round $round: untraced $untraced us, traced $traced us"
    printf '%s\t%s\t%s\n' "$round" "$untraced" "$traced" >>"$results"
  done
  local gpu
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
  python3 - "$results" "$OUT_DIR/overhead.md" "$gpu" "$(basename "$example") ${common[*]}" "$ROUNDS" <<'EOF' || rc=1
import datetime, math, statistics, sys

results, out, gpu, command, rounds = sys.argv[1:]
rows = [line.split("\t") for line in open(results).read().splitlines() if line]
pairs = [(r, float(u), float(t)) for r, u, t in rows]
ok = [(r, u, t) for r, u, t in pairs if not (math.isnan(u) or math.isnan(t))]
lines = [
    "# Tracing overhead: cuda_training_step, untraced vs traced",
    "",
    f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
    f"- GPU, driver: {gpu or 'unknown'}",
    f"- command: `{command} [--untraced | --output PATH]`, default activities",
    f"- {rounds} rounds, untraced and traced interleaved; each value is one run's median step",
    "  time (std::chrono around the step, including a final cudaDeviceSynchronize)",
    "",
    "| round | untraced (us) | traced (us) | traced / untraced |",
    "|---|---|---|---|",
]
for r, u, t in pairs:
    ratio = t / u if u and not (math.isnan(u) or math.isnan(t)) else float("nan")
    lines.append(f"| {r} | {u:.1f} | {t:.1f} | {ratio:.3f} |")
if ok:
    mu = statistics.median(u for _, u, _ in ok)
    mt = statistics.median(t for _, _, t in ok)
    mr = statistics.median(t / u for _, u, t in ok)
    lines.append(f"| **median** | **{mu:.1f}** | **{mt:.1f}** | **{mt / mu:.3f}** |")

    def spread(values):
        half = (max(values) - min(values)) / 2 / statistics.median(values) * 100
        return f"{min(values):.1f}-{max(values):.1f} us (+-{half:.0f}%)"

    lines += ["", f"Median of the per-round ratios: {mr:.3f}.",
              f"Run-to-run spread: untraced {spread([u for _, u, _ in ok])}, "
              f"traced {spread([t for _, _, t in ok])};",
              "an overhead smaller than that spread is not resolved by this many rounds."]
else:
    lines += ["", "No round produced both numbers: see run_all.log."]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
sys.exit(0 if len(ok) == len(pairs) and ok else 1)
EOF
  return $rc
}

# Host-side microbenchmarks on this machine's CPU (skipped where Google Benchmark is missing).
host_benchmarks() {
  local rc=0 bench
  for bench in bench_host_range bench_json_sink; do
    local path
    path=$(binary "$bench") || { echo "$bench not built (Google Benchmark missing?)"; continue; }
    run "$path" --benchmark_repetitions="${BENCH_REPETITIONS:-5}" --benchmark_report_aggregates_only=true \
      --benchmark_out="$OUT_DIR/$bench.json" --benchmark_out_format=json || rc=1
  done
  return $rc
}

# The census trace written by the session as .json, .json.gz and .pftrace (each checked: the
# .pftrace after converting it back to JSON), then the census and a torch.profiler trace
# in every format: sizes and write times in OUT_DIR/formats.md (bench/gpu/format_sizes.py),
# and the time each format takes to save in the recording program (OUT_DIR/save_formats.md).
formats() {
  local census kt fmt rc=0
  census=$(binary launch_census) || return 1
  kt=$(binary kinetrace) || return 1
  for fmt in json json.gz pftrace; do
    run env KINETRACE_ACTIVITIES=default,sync,memory,overhead "$census" \
      "$WORK_DIR/formats_census.$fmt" "$WORK_DIR/formats_manifest_$fmt.json" || rc=1
  done
  run python3 "$CHECKER" "$WORK_DIR/formats_census.json.gz" "$WORK_DIR/formats_manifest_json.gz.json" || rc=1
  run "$kt" convert "$WORK_DIR/formats_census.pftrace" "$WORK_DIR/formats_census_back.json" || rc=1
  run python3 "$CHECKER" "$WORK_DIR/formats_census_back.json" "$WORK_DIR/formats_manifest_pftrace.json" || rc=1
  keep "$WORK_DIR/formats_census.pftrace" census_trace.pftrace.gz
  run python3 "$SRC_DIR/bench/gpu/torch_train.py" --steps 20 --warmup 5 --mode torch-cpu-cuda \
    --out "$WORK_DIR/formats_torch" || rc=1
  run python3 "$SRC_DIR/bench/gpu/format_sizes.py" "$kt" "$OUT_DIR/formats.md" \
    census="$WORK_DIR/formats_census.json" torch="$WORK_DIR/formats_torch/torch_trace.json" || rc=1
  # The same two traces written in each format by the program that recorded them: the
  # census through the C++ API (Trace::save), the torch.profiler trace through kinetrace as
  # PyTorch's backend. A .pftrace slower than the JSON is printed as such; it does not fail
  # the step, which checks that the saves work.
  run env KINETRACE_ACTIVITIES=default,sync,memory,overhead "$census" \
    "$WORK_DIR/formats_saves.json" "$WORK_DIR/formats_saves_manifest.json" --save-rounds 41 || rc=1
  {
    python3 "$SRC_DIR/bench/gpu/save_formats.py" --name "census trace (C++ API, Trace::save)" \
      --table "$WORK_DIR/formats_saves.json.save_rounds.json"
    echo
    run "$kt" run --torch -- python3 "$SRC_DIR/bench/gpu/save_formats.py" --torch \
      --out "$WORK_DIR/formats_saves_torch" --steps 20 --rounds 11 || rc=1
  } > "$OUT_DIR/save_formats.md"
  cat "$OUT_DIR/save_formats.md"
  return $rc
}

# CUDA graphs of every shape (stream capture with memory nodes, conditional WHILE, IF/ELSE
# and SWITCH nodes) replayed under `kinetrace run`, checked against the program's own count
# (bench/gpu/graph_check.py), at node level (OUT_DIR/graphs.md: every node linked, and where
# it was created) and graph level (graphs_graph_level.md); then a PyTorch step captured with
# torch.cuda.graph at both levels (torch_graphs_node.md, torch_graphs_graph.md).
graphs() {
  local kt prog dir rc=0
  kt=$(binary kinetrace) || return 1
  prog=$(binary graph_replay) || return 1
  dir=$WORK_DIR/graphs
  rm -rf "$dir" && mkdir -p "$dir"
  run "$kt" run --output "$dir/trace" -- "$prog" --replays 30 --loop 5 --manifest "$dir/manifest.json" || rc=1
  local trace
  trace=$(find "$dir/trace" -name '*.json' ! -name '*.summary.json' | head -n 1)
  run python3 "$SRC_DIR/bench/gpu/graph_check.py" "$trace" "$dir/manifest.json" \
    --md "$OUT_DIR/graphs.md" || rc=1
  keep "$trace" graphs_trace.json.gz
  # The same graphs traced at graph level: one slice per launch.
  run "$kt" run --cuda-graph-trace graph --output "$dir/trace_graph_level" -- "$prog" --replays 30 \
    --loop 5 --manifest "$dir/manifest_graph_level.json" || rc=1
  trace=$(find "$dir/trace_graph_level" -name '*.json' ! -name '*.summary.json' | head -n 1)
  run python3 "$SRC_DIR/bench/gpu/graph_check.py" "$trace" "$dir/manifest_graph_level.json" \
    --graph-level --md "$OUT_DIR/graphs_graph_level.md" || rc=1
  # A PyTorch training step captured with torch.cuda.graph, at both levels, against CUDA's
  # count of the graph's nodes (skipped where PyTorch is not installed).
  if python3 -c 'import torch' 2>/dev/null; then
    local level
    for level in node graph; do
      run "$kt" run --cuda-graph-trace "$level" --output "$dir/torch_$level" -- \
        python3 "$SRC_DIR/bench/gpu/torch_graphs.py" run --replays 20 \
        --manifest "$dir/torch_$level.json" || { rc=1; continue; }
      trace=$(find "$dir/torch_$level" -name '*.json' ! -name '*.summary.json' | head -n 1)
      run python3 "$SRC_DIR/bench/gpu/torch_graphs.py" check "$trace" "$dir/torch_$level.json" \
        $([[ $level == graph ]] && echo --graph-level) --md "$OUT_DIR/torch_graphs_$level.md" || rc=1
    done
    # The same step under torch.profiler, kinetrace its backend (`run --torch`), at each level.
    for level in node graph; do
      run "$kt" run --torch --cuda-graph-trace "$level" --output "$dir/torchprof_$level" -- \
        python3 "$SRC_DIR/bench/gpu/torch_graphs.py" run --replays 20 \
        --manifest "$dir/torchprof_$level.json" --profile "$dir/torchprof_$level.trace.json" ||
        { rc=1; continue; }
      run python3 "$SRC_DIR/bench/gpu/torch_graphs.py" check "$dir/torchprof_$level.trace.json" \
        "$dir/torchprof_$level.json" --torch-profiler $([[ $level == graph ]] && echo --graph-level) \
        --md "$OUT_DIR/torch_graphs_profiler_$level.md" || rc=1
    done
    # What each level costs the replays, against untraced, interleaved.
    run python3 "$SRC_DIR/bench/gpu/torch_graphs.py" overhead "$kt" --rounds 5 \
      --md "$OUT_DIR/torch_graphs_overhead.md" || rc=1
  else
    echo "PyTorch is not installed: the torch.cuda.graph check is skipped"
  fi
  return $rc
}

# NCCL's own description of its calls (NVTX payloads): a one-rank PyTorch process group's
# collectives, checked against the sizes, reductions and roots it made (skipped where
# PyTorch is not installed).
nccl() {
  local kt dir trace rc=0
  kt=$(binary kinetrace) || return 1
  if ! python3 -c 'import torch' 2>/dev/null; then
    echo "PyTorch is not installed: the NCCL payload check is skipped"
    return 0
  fi
  dir=$WORK_DIR/nccl
  rm -rf "$dir" && mkdir -p "$dir"
  run "$kt" run --output "$dir/trace" -- python3 "$SRC_DIR/bench/gpu/nccl_payload.py" run \
    --iterations 5 --manifest "$dir/manifest.json" || return 1
  trace=$(find "$dir/trace" -name '*.json' ! -name '*.summary.json' | head -n 1)
  run python3 "$SRC_DIR/bench/gpu/nccl_payload.py" check "$trace" "$dir/manifest.json" \
    --md "$OUT_DIR/nccl_payload.md" || rc=1
  keep "$trace" nccl_trace.json.gz
  return $rc
}

# PyTorch programs that each idle the GPU for one known reason (bench/gpu/idle_causes.py),
# traced by torch.profiler, then `kinetrace analyze` on each: findings in
# OUT_DIR/analyze-CASE.txt, reports in OUT_DIR/analyze-CASE.html and .json. Then the real
# Holistic Trace Analysis on the same traces, on kinetrace's own traces kept by the steps
# before (census, CUDA graphs, NCCL, training step) and on any named in HTA_TRACES, at its
# defaults and with its rounding off, beside kinetrace's figures (test/analysis/hta_referee.py:
# OUT_DIR/hta.txt; fails on a figure that differs for no named cause). HTA's source: HTA_DIR,
# else ../shared/refs/hta beside the source, else an installed hta; it needs pandas and PyYAML
# in HTA_PYTHON (python3). Without them the comparison is skipped and says why. HTA's source
# as of 2026-12 fails in its trace parser under pandas 3 (TypeError: Invalid value ... for
# dtype 'int8'); the idle-cause traces are kept (OUT_DIR/idle_CASE.json.gz) for a check where
# pandas is older: test/analysis/hta_referee.py --kinetrace KINETRACE OUT_DIR/*.json.gz.
analyze() {
  local kt case kept status rc=0 traces=()
  kt=$(binary kinetrace) || return 1
  for case in tiny loader leak healthy; do
    run python3 "$SRC_DIR/bench/gpu/idle_causes.py" "$case" --out "$WORK_DIR/idle_causes" || { rc=1; continue; }
    run "$kt" analyze -q "$WORK_DIR/idle_causes/$case.json" --html "$OUT_DIR/analyze-$case.html" \
      --json "$OUT_DIR/analyze-$case.json" > "$OUT_DIR/analyze-$case.txt" || rc=1
    sed -n '1,12p' "$OUT_DIR/analyze-$case.txt"
    # Kept, so that HTA can referee them elsewhere too (it fails under pandas 3).
    keep "$WORK_DIR/idle_causes/$case.json" "idle_$case.json.gz"
    traces+=("$WORK_DIR/idle_causes/$case.json")
  done
  for kept in census_trace graphs_trace nccl_trace training_step_trace; do
    [[ -f $OUT_DIR/$kept.json.gz ]] && traces+=("$OUT_DIR/$kept.json.gz")
  done
  # shellcheck disable=SC2206  # HTA_TRACES: paths separated by spaces
  traces+=(${HTA_TRACES:-})
  echo "+ hta_referee.py ${traces[*]}"
  timeout 1800 "${HTA_PYTHON:-python3}" "$SRC_DIR/test/analysis/hta_referee.py" --kinetrace "$kt" \
    --out "$OUT_DIR/hta.txt" "${traces[@]}" > "$WORK_DIR/hta.log" 2>&1
  status=$?
  grep -E '^==|DIFFERS|named differences|^  [a-z-]+:|^hta_referee' "$WORK_DIR/hta.log"
  if [[ $status -eq 77 ]]; then
    echo "the comparison with HTA was skipped (the reason is above)"
  elif [[ $status -ne 0 ]]; then
    rc=1
  fi
  return $rc
}

# kinetrace as PyTorch's profiler backend (libkineto_api): the ABI facts of the installed
# wheel's kineto headers against the committed ones, then bench/gpu/torch_backend.py run
# with stock kineto and under `kinetrace run --torch`, alternately (two rounds), compared by
# bench/gpu/compare_backends.py (OUT_DIR/torch_backend.md), and libkineto's failure cases
# (exit while profiling, sessions from two threads) under kinetrace.
torch_backend() {
  local kt inc fmt_flags dir=$WORK_DIR/torch_backend round rc=0
  kt=$(binary kinetrace) || return 1
  rm -rf "$dir" && mkdir -p "$dir"
  inc=$(python3 -c "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'include'))") || return 1
  # The wheel's headers include its own fmt: header-only, so no library of another version.
  if [[ -d $inc/fmt ]]; then fmt_flags=(-DFMT_HEADER_ONLY -I"$inc"); else fmt_flags=(-lfmt); fi
  run g++ -std=c++17 -I"$inc/kineto" "$SRC_DIR/libkineto_api/abi/abi_facts.cpp" "${fmt_flags[@]}" \
    -o "$dir/abi_facts" && "$dir/abi_facts" > "$OUT_DIR/kineto_abi_facts.json" || rc=1
  run diff -u "$SRC_DIR/libkineto_api/abi/torch-2.11.0+cu130.json" "$OUT_DIR/kineto_abi_facts.json" \
    && echo "the wheel's ABI facts equal the committed ones" || rc=1
  for round in 1 2; do
    run python3 "$SRC_DIR/bench/gpu/torch_backend.py" --out "$dir/stock$round" \
      > "$dir/stock$round.log" 2>&1 || { tail -n 20 "$dir/stock$round.log"; rc=1; }
    grep RESULT "$dir/stock$round.log"
    run "$kt" run --torch -- python3 "$SRC_DIR/bench/gpu/torch_backend.py" --out "$dir/kinetrace$round" \
      > "$dir/kinetrace$round.log" 2>&1 || { tail -n 20 "$dir/kinetrace$round.log"; rc=1; }
    grep -e RESULT -e "kinetrace" "$dir/kinetrace$round.log" | head -n 5
  done
  run python3 "$SRC_DIR/bench/gpu/compare_backends.py" "$dir/stock1" "$dir/kinetrace1" \
    --md "$OUT_DIR/torch_backend.md" > /dev/null || rc=1
  cat "$OUT_DIR/torch_backend.md"
  local ratio='import json, sys; o = json.load(open(sys.argv[1])); print("%.3fx (CPU only %.3fx)" % (o["ratio"], o["cpu_only_ratio"]))'
  for round in 1 2; do
    echo "round $round overhead: stock $(python3 -c "$ratio" "$dir/stock$round/overhead.json")," \
      "kinetrace $(python3 -c "$ratio" "$dir/kinetrace$round/overhead.json")"
  done
  local edge
  for edge in exit threads; do
    run "$kt" run --torch -- python3 "$SRC_DIR/bench/gpu/torch_backend.py" --edge "$edge" \
      > "$dir/edge_$edge.log" 2>&1
    local status=$?
    echo "edge $edge under kinetrace: exit status $status"; grep -e EDGE -e "kinetrace" "$dir/edge_$edge.log"
    [[ $status -eq 0 ]] || rc=1
    # The same with stock kineto, for comparison (not a failure of kinetrace's).
    timeout "$RUN_TIMEOUT" python3 "$SRC_DIR/bench/gpu/torch_backend.py" --edge "$edge" > "$dir/edge_stock_$edge.log" 2>&1
    echo "edge $edge under stock kineto: exit status $?"
  done
  # Another tool holds CUPTI (libcupti_floor.so subscribed to launch callbacks): a message, and
  # a trace with the CPU ops.
  local floor
  floor=$(find "$BUILD_DIR" -name libcupti_floor.so | head -n 1)
  if [[ -n $floor ]]; then
    CUDA_INJECTION64_PATH=$floor CUPTI_FLOOR_CALLBACKS=1 run "$kt" run --torch -- python3 \
      "$SRC_DIR/bench/gpu/torch_backend.py" --edge held --out "$dir/held" > "$dir/edge_held.log" 2>&1 || rc=1
    echo "edge held (CUPTI taken by another tool) under kinetrace:"; grep -e EDGE -e "kinetrace" "$dir/edge_held.log"
  fi
  keep "$dir/kinetrace1/trace.json" torch_backend_kinetrace.json.gz
  keep "$dir/stock1/trace.json" torch_backend_stock.json.gz
  return $rc
}

# Two ranks of a DDP job, rank 1 slowed by a sleep before each forward pass, traced by
# torch.profiler (bench/gpu/ddp_straggler.py); `kinetrace analyze` of both traces must name
# rank 1 as the straggler. NCCL with a GPU per rank; on one GPU the ranks share it over gloo
# (NCCL refuses two ranks on a device), whose collectives are host calls, not NCCL kernels.
ddp_straggler() {
  local kt gpus backend=nccl dir=$WORK_DIR/ddp_straggler
  kt=$(binary kinetrace) || return 1
  gpus=$(nvidia-smi -L | wc -l)
  if [[ $gpus -lt 2 ]]; then
    echo "one GPU here: the two ranks share it, over gloo"
    backend=gloo
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  run torchrun --nproc_per_node 2 "$SRC_DIR/bench/gpu/ddp_straggler.py" --out "$dir" \
    --backend "$backend" > "$dir/torchrun.log" 2>&1 || { tail -n 30 "$dir/torchrun.log"; return 1; }
  run "$kt" analyze -q "$dir" --html "$OUT_DIR/analyze-ddp_straggler.html" \
    --json "$OUT_DIR/analyze-ddp_straggler.json" > "$OUT_DIR/analyze-ddp_straggler.txt" || return 1
  sed -n '1,15p' "$OUT_DIR/analyze-ddp_straggler.txt"
  grep -i -A4 "straggler\|started late" "$OUT_DIR/analyze-ddp_straggler.txt" | head -n 20
  python3 - "$OUT_DIR/analyze-ddp_straggler.json" "$backend" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
stragglers = report["stragglers"]
late = [s for s in stragglers if s["slow_rank"] == 1]
print(f"backend {sys.argv[2]}: {len(stragglers)} collectives started late on one rank, "
      f"{len(late)} of them on rank 1; the worst: {stragglers[0] if stragglers else None}")
sys.exit(0 if stragglers and stragglers[0]["slow_rank"] == 1 else 1)
PY
}

# On-demand traces: the idle cost of a process armed for kinetrace trigger, five triggered
# windows (durations and steps) of a running kernel storm, a two-process job triggered by
# name, a context destroyed mid-trace (bench/gpu/on_demand.sh; OUT_DIR/on_demand.md).
on_demand() {
  run bash "$SRC_DIR/bench/gpu/on_demand.sh" "$BUILD_DIR" "$OUT_DIR" idle triggers job reset
}

# dyno gputrace through the real dynolog daemon: PyTorch under libkineto_api.so, a two-process
# job under kinetrace run --dynolog, and the polling's idle cost (OUT_DIR/dynolog.md).
dynolog() {
  run bash "$SRC_DIR/bench/gpu/dynolog_fleet.sh" "$BUILD_DIR" "$OUT_DIR" ${DYNOLOG_PHASES:-torch job idle}
}

# The one path rule where the injection and libkineto_api write (test/gpu/path_rule.sh):
# outputs that must be refused (/dev/null, another user's link in /tmp, a link out of a
# dynolog request's directories, a window that could never start) refused before "ok", and
# the requests after them taken (OUT_DIR/path_rule.md).
path_rule() {
  run bash "$SRC_DIR/test/gpu/path_rule.sh" "$BUILD_DIR" "$OUT_DIR"
}

# A 10-minute triggered window of a kernel storm, written whole within the memory cap
# (about 11 minutes: OUT_DIR/on_demand.md).
on_demand_long() {
  bash "$SRC_DIR/bench/gpu/on_demand.sh" "$BUILD_DIR" "$OUT_DIR" long-start long-finish
}

# GPU hardware metrics (bench/gpu/gpu_metrics.sh): metrics_phases's copy, FMA, GEMM and idle
# phases each bound as expected with nothing lost, the cost against untraced and against
# tracing without metrics, and a PyTorch loop's memory- and tensor-bound kernels named by
# analyze (OUT_DIR/gpu_metrics_*.md). SOAK=SECONDS adds the long zero-loss run (not under
# RUN_TIMEOUT: the script limits each of its runs itself).
gpu_metrics() {
  echo "+ bench/gpu/gpu_metrics.sh $BUILD_DIR $OUT_DIR"
  bash "$SRC_DIR/bench/gpu/gpu_metrics.sh" "$BUILD_DIR" "$OUT_DIR"
}

# What each activity kind adds per kernel launch (launch_cost, no Python): the CUPTI floor and
# kinetrace's default with sync, memory and overhead records added one at a time.
# The traces what users look at is checked on (kinetrace analyze against HTA, .pftrace against
# the JSON, the HTML report): torch.profiler's own (stock kineto) of a transformer, a ResNet-18
# and a torch.compile'd transformer, each step a ProfilerStep; the same transformer under
# torch.profiler with kinetrace as its backend (`kinetrace run --torch`), and traced by
# `kinetrace run` alone (NVTX step ranges). Gzipped into OUT_DIR as tp_*.json.gz and
# kt_*.json.gz; the census and CUDA-graph traces come from their own steps.
reference_traces() {
  local kt dir=$WORK_DIR/reference model rc=0
  local train=$SRC_DIR/bench/gpu/torch_train.py
  local common=(--mode torch-cpu-cuda --profiler-steps --steps 20 --warmup 5)
  kt=$(binary kinetrace) || return 1
  rm -rf "$dir" && mkdir -p "$dir"
  for model in transformer resnet18; do
    run python3 "$train" --model "$model" "${common[@]}" --out "$dir/tp_$model" || rc=1
    keep "$dir/tp_$model/torch_trace.json" "tp_$model.json.gz" || rc=1
  done
  run python3 "$train" --model transformer --compile "${common[@]}" --out "$dir/tp_compile" || rc=1
  keep "$dir/tp_compile/torch_trace.json" tp_compile.json.gz || rc=1
  run "$kt" run --torch -- python3 "$train" --model transformer "${common[@]}" \
    --out "$dir/kt_torch_transformer" || rc=1
  keep "$dir/kt_torch_transformer/torch_trace.json" kt_torch_transformer.json.gz || rc=1
  run "$kt" run --output "$dir/kt_run" -- python3 "$train" --model transformer --nvtx-steps \
    --steps 20 --warmup 5 || rc=1
  keep "$(find "$dir/kt_run" -name '*.json' ! -name '*.summary.json' | head -n 1)" \
    kt_run_transformer.json.gz || rc=1
  return $rc
}

activity_cost() {
  MODEL=launch_cost ROUNDS="${ACTIVITY_ROUNDS:-3}" \
    CONFIGS="untraced floor kinetrace kinetrace_sync kinetrace_memory kinetrace_overhead" \
    run bash "$SRC_DIR/bench/gpu/overhead.sh" "$BUILD_DIR" "$OUT_DIR"
}

main() {
  echo "kinetrace GPU checks: source $SRC_DIR, build $BUILD_DIR, results $OUT_DIR"
  step "machine" machine_info
  step "configure" configure
  step "build" build
  step "ctest" unit_tests
  step "census" census
  step "flood (CUPTI drops reported)" flood
  step "host example" host_example
  step "training-step example" training_example
  step "trace formats" formats
  step "CUDA graphs" graphs
  step "reference traces" reference_traces
  step "NCCL payloads (one rank)" nccl
  step "analyze (idle causes)" analyze
  step "PyTorch backend (libkineto_api)" torch_backend
  step "DDP straggler (two ranks)" ddp_straggler
  step "on-demand traces" on_demand
  step "dynolog (fleet triggering)" dynolog
  step "path rule (injection, libkineto_api)" path_rule
  step "10-minute on-demand window" on_demand_long
  step "GPU metrics" gpu_metrics
  step "overhead" overhead
  step "activity cost" activity_cost
  step "host benchmarks" host_benchmarks

  echo
  echo "=== summary"
  local failed=0
  for i in "${!STEP_NAMES[@]}"; do
    printf '%-32s %s\n' "${STEP_NAMES[$i]}" "${STEP_RESULTS[$i]}"
    [[ ${STEP_RESULTS[$i]} == PASS ]] || failed=$((failed + 1))
  done
  echo "$((${#STEP_NAMES[@]} - failed)) steps passed, $failed failed"
  [[ $failed -eq 0 ]]
}

main 2>&1 | tee "$OUT_DIR/run_all.log"
exit "${PIPESTATUS[0]}"
