#!/usr/bin/env bash
# The proof of GPU hardware metrics sampling on a GPU: what `kinetrace run --gpu-metrics`
# records, what it loses, what it costs, and what `kinetrace analyze` makes of it.
#
#   bench/gpu/gpu_metrics.sh [BUILD_DIR] [OUT_DIR]     (defaults /tmp/kinetrace-gpu-build, ./gpu-results)
#   PARTS="phases overhead" bench/gpu/gpu_metrics.sh      SOAK=600 bench/gpu/gpu_metrics.sh
#
# Builds nothing: test/gpu/run_all.sh's build step (or `cmake --build BUILD_DIR --target
# kinetrace_cli kinetrace_injection metrics_phases`) does. Parts (PARTS, in this order; each
# writes OUT_DIR/gpu_metrics_PART.md):
#   phases    metrics_phases (copy, fma, gemm, idle; PHASE_ROUNDS rounds of PHASE_MS each) under
#             `kinetrace run --gpu-metrics default`; metrics_check.py: nothing lost, a track
#             per metric with its unit, each phase and each phase's kernels bound as expected;
#             test/gpu/check_trace.py on the whole trace; then `kinetrace analyze` on it
#             (the trace kept as gpu_metrics_phases.json.gz)
#   overhead  the same program with fixed work (the kernel counts an untraced calibration
#             run made in PHASE_MS a phase), ROUNDS interleaved rounds of: untraced, `kinetrace
#             run` without metrics, `kinetrace run --gpu-metrics default`; medians of the
#             process's wall time, of the program's own and of its GPU phases' (copy + fma +
#             gemm), with their ratios to untraced
#   soak      metrics_phases --soak SOAK (larger kernels) under `kinetrace run --gpu-metrics default`; then
#             metrics_check.py (lost == 0, no hole, samples x interval against the window)
#   torch     metrics_torch.py (bf16 LM block: long GEMMs and long memory-bound kernels)
#             under `kinetrace run --gpu-metrics default`; `kinetrace analyze --json` must name
#             a memory-bound and a tensor-bound kernel (its kernels' "gpu_bound"; the bound
#             read from the kernels' own arguments is shown beside it). Skipped where PyTorch
#             is not installed
#   torch_profiler  the same loop recorded by torch.profiler (--profiler) under `kinetrace run
#             --torch --gpu-metrics default`: the PyTorch backend's path (libkineto_api); the
#             exported trace checked as torch's
#   fit       torch_train.py --model resnet18 (kernels of 3-20 us against 1 ms samples) under
#             `kinetrace run --gpu-metrics default`, `kinetrace analyze --json` (short kernels'
#             metrics fitted from all the samples), then the same program under Nsight Compute
#             (NCU, default /usr/local/cuda/bin/ncu) for FIT_NCU_COUNT (800) kernel launches
#             after FIT_NCU_SKIP (2000: past its 4 warm-up steps and cuDNN's trials); fit_vs_ncu.py sets kinetrace's figures beside ncu's for the
#             names making 80% of kernel time (within 5 points, or unresolved) and says the
#             sampling's start-up gap (OUT_DIR/gpu_metrics_fit.md; the trace kept as
#             gpu_metrics_fit.json.gz). Not in the default parts:
#             PARTS=fit
#
# Environment (defaults): PARTS ("phases overhead torch torch_profiler", plus soak when SOAK is set), SOAK
# (600 when PARTS names soak), PHASE_MS (1000), PHASE_ROUNDS (2), ROUNDS (5), TORCH_STEPS
# (20), GPU_METRICS (default), GPU_METRICS_INTERVAL (unset: kinetrace's 1 ms), RUN_TIMEOUT
# (300 s a run; a soak gets SOAK + 300), PYTHON (python3, the one with torch).
# About 3 minutes with the defaults on an H200 (overhead: 16 runs of ~6 s), plus SOAK.
# Exit status: 1 when a part failed, 2 for a usage mistake.

# shellcheck source=bench/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PHASE_MS=${PHASE_MS:-1000}
PHASE_ROUNDS=${PHASE_ROUNDS:-2}
ROUNDS=${ROUNDS:-5}
TORCH_STEPS=${TORCH_STEPS:-20}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
GPU_METRICS=${GPU_METRICS:-default}
if [[ -n ${PARTS:-} ]]; then
  read -r -a PART_LIST <<< "$PARTS"
else
  PART_LIST=(phases overhead torch torch_profiler)
  [[ -n ${SOAK:-} ]] && PART_LIST=(phases overhead soak torch torch_profiler)
fi
SOAK=${SOAK:-600}
for part in "${PART_LIST[@]}"; do
  [[ " phases overhead soak torch torch_profiler fit " == *" $part "* ]] || { echo "gpu_metrics.sh: unknown part $part (known: phases overhead soak torch torch_profiler fit)" >&2; exit 2; }
done
for number in PHASE_MS PHASE_ROUNDS ROUNDS TORCH_STEPS RUN_TIMEOUT SOAK; do
  [[ ${!number} =~ ^[1-9][0-9]*$ ]] || { echo "gpu_metrics.sh: $number must be a positive whole number, not '${!number}'" >&2; exit 2; }
done

PHASES_BIN=$BUILD_DIR/bin/metrics_phases
CHECK=$BENCH_DIR/metrics_check.py
WORK=$OUT_DIR/gpu_metrics
rm -rf "$WORK" && mkdir -p "$WORK"
METRIC_FLAGS=(--gpu-metrics "$GPU_METRICS")
[[ -n ${GPU_METRICS_INTERVAL:-} ]] && METRIC_FLAGS+=(--gpu-metrics-interval "$GPU_METRICS_INTERVAL")
export PHASE_MS

# run LIMIT COMMAND...: echoes and runs a command under a time limit.
run() {
  local limit=$1
  shift
  echo "+ $*"
  timeout "$limit" "$@"
}

# trace_in DIR: the trace `kinetrace run --output DIR` wrote (not its summary).
trace_in() {
  find "$1" -name 'kinetrace-*.json*' ! -name '*.summary.json' 2> /dev/null | head -n 1
}

for needed in "$KINETRACE" "$PHASES_BIN"; do
  [[ -x $needed ]] || { echo "gpu_metrics.sh: $needed is not built (run test/gpu/run_all.sh's build step)" >&2; exit 1; }
done
# A kinetrace without metrics sampling says so here, once, instead of in every part.
if ! "$KINETRACE" run "${METRIC_FLAGS[@]}" --output "$WORK/probe" -- true > "$WORK/probe.log" 2>&1; then
  echo "gpu_metrics.sh: this kinetrace refuses ${METRIC_FLAGS[*]}: $(grep -m1 . "$WORK/probe.log")" >&2
  exit 1
fi
rm -rf "$WORK/probe"
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -n 1)
FOOTER="$(date -u +%Y-%m-%dT%H:%MZ); ${GPU:-no GPU found by nvidia-smi}; kinetrace $(git -C "$SRC_DIR" rev-parse --short HEAD 2> /dev/null || echo unknown); ${METRIC_FLAGS[*]}"

# traced_check NAME LIMIT PROGRAM...: PROGRAM under `kinetrace run` with metrics, then
# metrics_check.py on its trace into OUT_DIR/gpu_metrics_NAME.md. Sets TRACE.
TRACE=
traced_check() {
  local name=$1 limit=$2 rc=0
  shift 2
  local dir=$WORK/$name
  # Info level: the sampler says when each device's set-up began and how long it took, and
  # when sampling started (the start-up gap's parts).
  run "$limit" "$KINETRACE" run "${METRIC_FLAGS[@]}" --log-level info --output "$dir" -- "$@" \
    > "$WORK/$name.log" 2>&1 || rc=1
  grep -E 'GPU metrics on GPU [0-9]+: (set up|sampling started)' "$WORK/$name.log" | head -n 4
  grep -E '^RESULT|kinetrace' "$WORK/$name.log" | tail -n 8
  TRACE=$(trace_in "$dir")
  if [[ -z $TRACE ]]; then
    echo "no trace from the $name run (see $WORK/$name.log)"
    tail -n 20 "$WORK/$name.log"
    return 1
  fi
  python3 "$CHECK" "$TRACE" --md "$OUT_DIR/gpu_metrics_$name.md" > "$WORK/$name.check" 2>&1 || rc=1
  grep -E '^FAIL|passed,' "$WORK/$name.check"
  sed -n '/^# GPU metrics/,/passed,/p' "$WORK/$name.check" | grep '^|' || true
  echo -e "\n$FOOTER" >> "$OUT_DIR/gpu_metrics_$name.md"
  return $rc
}

part_phases() {
  local rc=0
  TRACE=
  traced_check phases "$RUN_TIMEOUT" "$PHASES_BIN" --rounds "$PHASE_ROUNDS" || rc=1
  [[ -n $TRACE ]] || return 1
  gzip -c "$TRACE" > "$OUT_DIR/gpu_metrics_phases.json.gz"
  # The whole trace's format too, the metric counters among it.
  python3 "$SRC_DIR/test/gpu/check_trace.py" "$TRACE" > "$WORK/phases.format" 2>&1 || rc=1
  grep -E '^FAIL|passed,' "$WORK/phases.format"
  run "$RUN_TIMEOUT" "$KINETRACE" analyze -q "$TRACE" --json "$OUT_DIR/gpu_metrics_phases_analyze.json" \
    > "$OUT_DIR/gpu_metrics_phases_analyze.txt" || rc=1
  sed -n '1,25p' "$OUT_DIR/gpu_metrics_phases_analyze.txt"
  # shellcheck disable=SC2016  # markdown's backquotes, not a command
  { echo; echo '`kinetrace analyze` on the trace (its start):'; echo; echo '```'
    sed -n '1,40p' "$OUT_DIR/gpu_metrics_phases_analyze.txt"; echo '```'; } >> "$OUT_DIR/gpu_metrics_phases.md"
  return $rc
}

# One run of CONFIG; appends "config round process_ms wall_ms busy_ms" to runs.tsv.
overhead_run() {
  local config=$1 round=$2 counts=$3 log=$WORK/overhead/$1-r$2 prefix=()
  case $config in
    kinetrace) prefix=("$KINETRACE" run --output "$WORK/overhead/traces" --) ;;
    kinetrace_metrics) prefix=("$KINETRACE" run "${METRIC_FLAGS[@]}" --output "$WORK/overhead/traces" --) ;;
  esac
  local start end wall="" busy=""
  start=$(date +%s%N)
  if timeout "$RUN_TIMEOUT" "${prefix[@]}" "$PHASES_BIN" --rounds 1 --counts "$counts" > "$log.out" 2> "$log.err"; then
    end=$(date +%s%N)
    wall=$(sed -n 's/^RESULT.* wall_ms=\([0-9.]*\).*/\1/p' "$log.out")
    busy=$(awk '/^PHASE/ && !/name=idle/ { for (i = 1; i <= NF; ++i) if ($i ~ /^ms=/) s += substr($i, 4) } END { print s }' "$log.out")
  else
    echo "overhead: $config round $round failed (see $log.err)"
  fi
  rm -rf "$WORK/overhead/traces"  # at once: their pages are then not written back during a later run
  printf '%s\t%s\t%s\t%s\t%s\n' "$config" "$round" \
    "$([[ -n $wall ]] && echo $(((end - start) / 1000000)) || echo fail)" "${wall:-fail}" "${busy:-fail}" >> "$WORK/overhead/runs.tsv"
  echo "round $round/$ROUNDS $config: process $(tail -n 1 "$WORK/overhead/runs.tsv" | cut -f3) ms, program ${wall:-fail} ms, GPU phases ${busy:-fail} ms"
}

part_overhead() {
  mkdir -p "$WORK/overhead"
  : > "$WORK/overhead/runs.tsv"
  # The same work in every run: as many kernels a phase as an untraced run does in PHASE_MS.
  run "$RUN_TIMEOUT" "$PHASES_BIN" --rounds 1 > "$WORK/overhead/calibrate.out" 2>&1 || { cat "$WORK/overhead/calibrate.out"; return 1; }
  local counts
  counts=$(sed -n 's/^RESULT.* copy=\([0-9]*\) fma=\([0-9]*\) gemm=\([0-9]*\).*/\1,\2,\3/p' "$WORK/overhead/calibrate.out")
  [[ -n $counts ]] || { echo "the calibration run printed no RESULT"; return 1; }
  echo "kernels a phase (copy,fma,gemm): $counts"
  local round config
  for round in $(seq 1 "$ROUNDS"); do
    for config in untraced kinetrace kinetrace_metrics; do overhead_run "$config" "$round" "$counts"; done
  done
  python3 - "$WORK/overhead/runs.tsv" "$OUT_DIR/gpu_metrics_overhead.md" "$counts" "$ROUNDS" "$PHASE_MS" "$FOOTER" <<'PY'
import statistics, sys

runs_path, out, counts, rounds, phase_ms, footer = sys.argv[1:]
runs = {}
for line in open(runs_path):
    config, rnd, *values = line.rstrip("\n").split("\t")
    runs.setdefault(config, {})[int(rnd)] = [None if v == "fail" else float(v) for v in values]
configs = [("untraced", "the program alone"), ("kinetrace", "`kinetrace run`, no metrics"),
           ("kinetrace_metrics", "`kinetrace run --gpu-metrics default`")]
columns = ["process wall (ms)", "program wall (ms)", "GPU phases (ms)"]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


base = {i: median(r[i] for r in runs.get("untraced", {}).values()) for i in range(3)}
lines = ["# GPU metrics: overhead", "",
         f"metrics_phases --rounds 1 --counts {counts} (copy, fma, gemm kernels; the idle phase sleeps "
         f"{phase_ms} ms): the same work in every run. {rounds} interleaved rounds (untraced, kinetrace, "
         "kinetrace with metrics); medians over rounds, ratios to untraced's median, and the median of the "
         "per-round ratios of the GPU phases.", "",
         "| configuration | " + " | ".join(f"{c} | ratio" for c in columns) + " | per-round ratio (GPU phases) | runs failed |",
         "|---|" + "---|---|" * len(columns) + "---|---|"]
failed = 0
for config, what in configs:
    these = runs.get(config, {})
    cells = []
    for i in range(3):
        m = median(r[i] for r in these.values())
        ratio = m / base[i] if m is not None and base[i] else None
        cells += ["-" if m is None else f"{m:.1f}",
                  "-" if ratio is None else f"{ratio:.4f}x"]
    base_runs = runs.get("untraced", {})
    paired = median(r[2] / base_runs[k][2] for k, r in these.items()
                    if r[2] is not None and k in base_runs and base_runs[k][2])
    bad = sum(1 for r in these.values() if r[1] is None)
    failed += bad
    lines.append(f"| {config} ({what}) | " + " | ".join(cells) + f" | {'-' if paired is None else f'{paired:.4f}x'} | {bad} |")
lines += ["", "Every run: " + "; ".join(f"{c}: " + ", ".join(
    "fail" if r[1] is None else f"{r[0]:.0f} / {r[2]:.0f} ms" for _, r in sorted(runs.get(c, {}).items()))
    for c, _ in configs), "", footer]
text = "\n".join(lines) + "\n"
open(out, "w").write(text)
print(text)
sys.exit(1 if failed or not runs.get("untraced") else 0)
PY
}

part_soak() {
  echo "soak: $SOAK s of phases under ${METRIC_FLAGS[*]}"
  # Copies of 8 GiB and GEMMs of 16384^3 (about 4 and 14 ms a kernel): far fewer kernels than
  # the default's, so the trace holds mostly the samples the soak is about and stays quick to
  # check (10 minutes: 600 000 samples, some 50 000 kernels).
  traced_check soak $((SOAK + RUN_TIMEOUT)) "$PHASES_BIN" --soak "$SOAK" --copy-mib 8192 --gemm-n 16384
  local rc=$?
  [[ -n $TRACE ]] && ls -l "$TRACE" && rm -f "$TRACE"  # large; the table says what it held
  return $rc
}

# torch_ready: whether PyTorch is there; says so into the part's table when it is not.
torch_ready() {
  "$PYTHON" -c 'import torch' 2> /dev/null && return 0
  echo "PyTorch is not installed for $PYTHON: the $1 part is skipped" | tee "$OUT_DIR/gpu_metrics_$1.md"
  return 1
}

# torch_checks NAME TRACE: `kinetrace analyze --json` on a PyTorch loop's trace, then
# metrics_check.py --kernel-bounds: a memory-bound and a tensor-bound kernel named.
torch_checks() {
  local name=$1 trace=$2 rc=0
  local analyze=$WORK/${name}_analyze.json
  run "$RUN_TIMEOUT" "$KINETRACE" analyze -q "$trace" --json "$analyze" > "$OUT_DIR/gpu_metrics_${name}_analyze.txt" || rc=1
  cp "$analyze" "$OUT_DIR/gpu_metrics_${name}_analyze.json" 2> /dev/null
  sed -n '1,25p' "$OUT_DIR/gpu_metrics_${name}_analyze.txt"
  # Coverage is the phases' and the soak's point; here a bar that only an absent sampling misses.
  python3 "$CHECK" "$trace" --kernel-bounds "$analyze" --min-coverage 0.5 --md "$OUT_DIR/gpu_metrics_$name.md" > "$WORK/$name.check" 2>&1 || rc=1
  grep -E '^FAIL|passed,' "$WORK/$name.check"
  grep '^|' "$WORK/$name.check" || true
  { echo; grep '^RESULT' "$WORK/$name.log"; echo; echo "$FOOTER"; } >> "$OUT_DIR/gpu_metrics_$name.md"
  gzip -c "$trace" > "$OUT_DIR/gpu_metrics_$name.json.gz"
  return $rc
}

part_torch() {
  torch_ready torch || return 0
  local dir=$WORK/torch rc=0
  run "$RUN_TIMEOUT" "$KINETRACE" run "${METRIC_FLAGS[@]}" --output "$dir" -- \
    "$PYTHON" "$BENCH_DIR/metrics_torch.py" --steps "$TORCH_STEPS" > "$WORK/torch.log" 2>&1 || rc=1
  grep -E '^RESULT|kinetrace' "$WORK/torch.log" | tail -n 8
  TRACE=$(trace_in "$dir")
  [[ -n $TRACE ]] || { echo "no trace from the PyTorch run (see $WORK/torch.log)"; tail -n 20 "$WORK/torch.log"; return 1; }
  torch_checks torch "$TRACE" || rc=1
  return $rc
}

# The PyTorch backend's path: torch.profiler records the loop, kinetrace's libkineto_api
# underneath (`kinetrace run --torch`), the metrics asked for by the same flag.
part_torch_profiler() {
  torch_ready torch_profiler || return 0
  local trace=$WORK/torch_profiler.json rc=0
  run "$RUN_TIMEOUT" "$KINETRACE" run --torch "${METRIC_FLAGS[@]}" -- \
    "$PYTHON" "$BENCH_DIR/metrics_torch.py" --steps "$TORCH_STEPS" --profiler "$trace" > "$WORK/torch_profiler.log" 2>&1 || rc=1
  grep -E '^RESULT|kinetrace' "$WORK/torch_profiler.log" | tail -n 8
  [[ -s $trace ]] || { echo "torch.profiler exported no trace (see $WORK/torch_profiler.log)"; tail -n 20 "$WORK/torch_profiler.log"; return 1; }
  torch_checks torch_profiler "$trace" || rc=1
  return $rc
}

part_fit() {
  torch_ready fit || return 0
  local ncu=${NCU:-/usr/local/cuda/bin/ncu} dir=$WORK/fit rc=0
  [[ -x $ncu ]] || { echo "no Nsight Compute at $ncu: the fit part is skipped" | tee "$OUT_DIR/gpu_metrics_fit.md"; return 0; }
  local program=("$PYTHON" "$BENCH_DIR/torch_train.py" --model resnet18)
  run "$RUN_TIMEOUT" "$KINETRACE" run "${METRIC_FLAGS[@]}" --output "$dir" -- \
    "${program[@]}" --steps "$TORCH_STEPS" --warmup 5 > "$WORK/fit.log" 2>&1 || rc=1
  grep -E '^RESULT|kinetrace' "$WORK/fit.log" | tail -n 8
  TRACE=$(trace_in "$dir")
  [[ -n $TRACE ]] || { echo "no trace from the ResNet-18 run (see $WORK/fit.log)"; tail -n 20 "$WORK/fit.log"; return 1; }
  # Kept: the fit can be studied again against ncu's figures without the GPU.
  gzip -c "$TRACE" > "$OUT_DIR/gpu_metrics_fit.json.gz"
  # --top: enough kernel rows for the names making 80% of kernel time.
  run "$RUN_TIMEOUT" "$KINETRACE" analyze -q --top 60 "$TRACE" --json "$WORK/fit_analyze.json" > "$OUT_DIR/gpu_metrics_fit_analyze.txt" || rc=1
  cp "$WORK/fit_analyze.json" "$OUT_DIR/gpu_metrics_fit_analyze.json" 2> /dev/null
  # FIT_NCU_COUNT consecutive kernel launches after FIT_NCU_SKIP (past the warm-up and
  # cuDNN's trials; about two steps of ~380 kernels, so every name of a step is among them).
  # Not an NVTX range: ranges are per thread, and the backward pass's kernels are launched
  # from autograd's thread, outside the main thread's "step N". Names demangled in full, not
  # ncu's shortened ones. Each kernel's duration too: the fit's value is its name's
  # time-weighted one. The GPU as the traced run had it: clocks not locked to base, caches not
  # flushed before each kernel (a kernel reading what the one before it left in L2 reads it
  # from L2 in the traced run too).
  run "$((RUN_TIMEOUT * 2))" "$ncu" --csv --page raw --target-processes all --print-kernel-base demangled \
    --clock-control none --cache-control none \
    --launch-skip "${FIT_NCU_SKIP:-2000}" --launch-count "${FIT_NCU_COUNT:-800}" \
    --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed \
    "${program[@]}" --steps 6 --warmup 4 > "$WORK/fit_ncu.csv" 2> "$WORK/fit_ncu.log" || rc=1
  cp "$WORK/fit_ncu.csv" "$OUT_DIR/gpu_metrics_fit_ncu.csv" 2> /dev/null
  python3 "$BENCH_DIR/fit_vs_ncu.py" "$WORK/fit_analyze.json" "$WORK/fit_ncu.csv" --trace "$TRACE" \
    --md "$OUT_DIR/gpu_metrics_fit.md" || rc=1
  echo -e "\n$FOOTER" >> "$OUT_DIR/gpu_metrics_fit.md"
  return $rc
}

failed=()
for part in "${PART_LIST[@]}"; do
  echo
  echo "=== gpu_metrics $part"
  start=$SECONDS
  if "part_$part"; then result=PASS; else result=FAIL; failed+=("$part"); fi
  echo "=== gpu_metrics $part: $result in $((SECONDS - start)) s"
done
[[ ${#failed[@]} -eq 0 ]] || { echo "gpu_metrics.sh: failed: ${failed[*]}"; exit 1; }
