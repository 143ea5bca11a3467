#!/usr/bin/env bash
# On-demand traces on the GPU: what a process armed for `kinetrace trigger` costs while idle,
# triggered windows of durations and of steps, a job triggered by name, a CUDA context
# destroyed during a trace, and a 10-minute triggered window.
#
#   bench/gpu/on_demand.sh [BUILD_DIR] [OUT_DIR] [PHASE...]
#       (defaults /tmp/kinetrace-gpu-build, ./gpu-results, every phase in this order)
#
# Phases (each appends its section to OUT_DIR/on_demand.md):
#   idle         bench/gpu/torch_train.py (transformer) untraced and under
#                `kinetrace run --capture-range onDemand` (never triggered), interleaved
#                ROUNDS times; medians of the median step times
#   triggers     kernel_storm (RATE kernels/s in 10 ms steps, each an NVTX range "step K")
#                on demand, triggered five times in a row: 1 s, 50 steps, 2 s, 100 steps,
#                20 steps. Each trace checked by window_check.py: whole, exactly the steps
#                asked for with every kernel of them, or the duration at RATE; none dropped
#   job          torchrun, two processes on one GPU in lockstep (torch_train.py
#                --distributed --nvtx-steps), on demand; `kinetrace trigger --job RUN
#                --steps 20`: two traces, both from the same step, the same kernels
#   reset        kernel_storm --reset-at 2 traced whole: cudaDeviceReset() destroys the context
#                mid-trace; every kernel, copy and memset is still in the trace (storm_check.py)
#   long-start   starts, in its own session (it outlives the script), kernel_storm for
#                LONG_SECONDS on demand with --memory-mb CAP_MB, and triggers a window of
#                LONG_STEPS steps (10 minutes at the defaults); its trace is written while
#                recording, into BUILD_DIR/on_demand_long
#   long-finish  waits for that storm to end, then checks its trace (window_check.py: every
#                step and kernel of the window, kinetrace's peak under the cap) and the
#                storm's RSS over the window
#
# Environment (defaults): ROUNDS (5), STEPS (150), RATE (5000), STORM_SECONDS (40),
# LONG_SECONDS (630), LONG_STEPS (60000), LONG_RATE (2000), CAP_MB (256).
# Exit status 1 when a check fails.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROUNDS=${ROUNDS:-5}
STEPS=${STEPS:-150}
RATE=${RATE:-5000}
STORM_SECONDS=${STORM_SECONDS:-40}
LONG_SECONDS=${LONG_SECONDS:-630}
LONG_STEPS=${LONG_STEPS:-60000}
LONG_RATE=${LONG_RATE:-2000}
CAP_MB=${CAP_MB:-256}
SLICE_MS=10
WORK=$OUT_DIR/on_demand
LONG=$BUILD_DIR/on_demand_long
REPORT=$OUT_DIR/on_demand.md
STORM=$(find "$BUILD_DIR" -type f -name kernel_storm -perm -u+x | head -n 1)
TORCHRUN=(torchrun)
command -v torchrun > /dev/null || TORCHRUN=("$PYTHON" -m torch.distributed.run)
shift $(($# < 2 ? $# : 2))
PHASES=("$@")
[[ ${#PHASES[@]} -gt 0 ]] || PHASES=(idle triggers job reset long-start long-finish)
mkdir -p "$WORK"
export KINETRACE_CONTROL_DIR=$WORK/control
rc=0

note() { echo "$@" >> "$REPORT"; }

# The socket of the first (or every) traced process in a control directory, once it listens.
wait_for_sockets() {  # DIR COUNT
  local found=()
  for _ in $(seq 600); do
    mapfile -t found < <(ls "$1"/*.sock 2> /dev/null)
    [[ ${#found[@]} -ge $2 ]] && break
    sleep 0.1
  done
  printf '%s\n' "${found[@]}"
}

pid_of_socket() { local name; name=$(basename "$1" .sock); echo "${name##*.}"; }
job_of_socket() { local name; name=$(basename "$1" .sock); echo "${name%.*}"; }

phase_idle() {
  note "## Armed, never triggered: step time against untraced (transformer, $STEPS steps, $ROUNDS interleaved rounds)"
  note ""
  note "| round | untraced median ms | on demand (idle) median ms |"
  note "|---|---|---|"
  local untraced=() idle=() u i
  for round in $(seq "$ROUNDS"); do
    "$PYTHON" "$BENCH_DIR/torch_train.py" --steps "$STEPS" --warmup 20 > "$WORK/untraced$round.log" 2>&1 || rc=1
    "$KINETRACE" run --capture-range onDemand --output "$WORK/idle-traces" -- \
      "$PYTHON" "$BENCH_DIR/torch_train.py" --steps "$STEPS" --warmup 20 > "$WORK/idle$round.log" 2>&1 || rc=1
    u=$(median_of "$WORK/untraced$round.log"); i=$(median_of "$WORK/idle$round.log")
    untraced+=("$u"); idle+=("$i")
    note "| $round | $u | $i |"
  done
  "$PYTHON" - "${untraced[*]}" "${idle[*]}" >> "$REPORT" <<'PY'
import statistics, sys
u = [float(x) for x in sys.argv[1].split()]
i = [float(x) for x in sys.argv[2].split()]
ratios = sorted(b / a for a, b in zip(u, i))
print(f"\nmedians: untraced {statistics.median(u):.3f} ms, on demand idle {statistics.median(i):.3f} ms: "
      f"**{statistics.median(i) / statistics.median(u):.3f}x**; per-round ratios "
      + ", ".join(f"{r:.3f}" for r in ratios))
PY
  if ls "$WORK/idle-traces"/kinetrace-* > /dev/null 2>&1; then
    note "FAIL: an idle on-demand run wrote a trace"; rc=1
  fi
  note ""
}

phase_triggers() {
  local per_step=$((RATE * SLICE_MS / 1000)) dir=$WORK/storm-control
  note "## Five triggers of a running kernel storm ($RATE kernels/s, steps of $SLICE_MS ms = $per_step kernels)"
  note ""
  [[ -n $STORM ]] || { note "FAIL: kernel_storm was not built"; rc=1; return; }
  KINETRACE_CONTROL_DIR=$dir "$KINETRACE" run --capture-range onDemand --output "$WORK/storm-traces" -- \
    "$STORM" --seconds "$STORM_SECONDS" --rate "$RATE" --slice-ms "$SLICE_MS" --nvtx-steps 1 \
    > "$WORK/storm.log" 2>&1 &
  local run_pid=$! socket pid n=0
  socket=$(wait_for_sockets "$dir" 1 | head -n 1)
  pid=$(pid_of_socket "$socket")
  sleep 1
  note "| trigger | window s | steps | kernels | expected | dropped | peak MiB | result |"
  note "|---|---|---|---|---|---|---|---|"
  for ask in 1s steps50 2s steps100 steps20; do
    n=$((n + 1))
    local args check wait_s
    if [[ $ask == steps* ]]; then
      args=(--steps "${ask#steps}")
      check=(--steps "${ask#steps}" --kernels-per-step "$per_step")
      wait_s=$((${ask#steps} * SLICE_MS / 1000 + 2))
    else
      args=(--duration "$ask")
      check=(--seconds "${ask%s}" --rate "$RATE")
      wait_s=$((${ask%s} + 2))
    fi
    KINETRACE_CONTROL_DIR=$dir "$KINETRACE" trigger --pid "$pid" "${args[@]}" \
      --output "$WORK/trigger$n.json" | tee -a "$WORK/triggers.log" || rc=1
    sleep "$wait_s"
    "$PYTHON" "$BENCH_DIR/window_check.py" "$WORK/trigger$n.json" "${check[@]}" \
      --label "$n: ${args[*]}" >> "$REPORT" || rc=1
  done
  wait "$run_pid" || rc=1
  note ""
  note "$(grep STORM "$WORK/storm.log")"
  note ""
  note '```'
  cat "$WORK/triggers.log" >> "$REPORT"
  note '```'
  note ""
}

phase_job() {
  local dir=$WORK/job-control out=$WORK/job-traces
  note "## A two-process torchrun job triggered by its name, by steps"
  note ""
  rm -rf "$out"
  KINETRACE_CONTROL_DIR=$dir "$KINETRACE" run --capture-range onDemand --output "$WORK/job-run" -- \
    "${TORCHRUN[@]}" --standalone --nnodes 1 --nproc_per_node 2 "$BENCH_DIR/torch_train.py" \
    --distributed --nvtx-steps --steps 600 --warmup 10 > "$WORK/job.log" 2>&1 &
  local run_pid=$! sockets job
  mapfile -t sockets < <(wait_for_sockets "$dir" 2)
  if [[ ${#sockets[@]} -lt 2 ]]; then
    note "FAIL: the job's two processes did not both listen (${#sockets[@]})"; rc=1
    wait "$run_pid"; tail -n 20 "$WORK/job.log"; return
  fi
  job=$(job_of_socket "${sockets[0]}")
  sleep 2
  KINETRACE_CONTROL_DIR=$dir "$KINETRACE" trigger --job "$job" --steps 20 --output "$out/" \
    | tee "$WORK/job-trigger.log" || rc=1
  wait "$run_pid" || { rc=1; tail -n 20 "$WORK/job.log"; }
  local first
  first=$(sed -n 's/.*start at step \([0-9]*\).*/\1/p' "$WORK/job-trigger.log")
  note '```'
  cat "$WORK/job-trigger.log" >> "$REPORT"
  note '```'
  note ""
  note "| trace | window s | steps | kernels | expected | dropped | peak MiB | result |"
  note "|---|---|---|---|---|---|---|---|"
  local traces=() kernels=()
  mapfile -t traces < <(ls "$out"/kinetrace-*.json 2> /dev/null | grep -v summary)
  for trace in "${traces[@]}"; do
    "$PYTHON" "$BENCH_DIR/window_check.py" "$trace" --steps 20 --first "${first:--1}" \
      --label "$(basename "$trace")" | tee -a "$REPORT" || rc=1
  done
  if [[ ${#traces[@]} -ne 2 ]]; then note "FAIL: ${#traces[@]} traces, 2 expected"; rc=1; fi
  note ""
}

phase_reset() {
  note "## A CUDA context destroyed during a trace (cudaDeviceReset after 2 s of 4)"
  note ""
  [[ -n $STORM ]] || { note "FAIL: kernel_storm was not built"; rc=1; return; }
  rm -rf "$WORK/reset-traces"
  "$KINETRACE" run --output "$WORK/reset-traces" -- "$STORM" --seconds 4 --rate "$RATE" \
    --reset-at 2 --rss "$WORK/reset-rss.csv" > "$WORK/reset.log" 2>&1 || rc=1
  local trace
  trace=$(ls "$WORK/reset-traces"/kinetrace-*.json 2> /dev/null | grep -v summary | head -n 1)
  note "$(grep -E 'device reset|STORM' "$WORK/reset.log" | tr '\n' ' ')"
  note ""
  "$PYTHON" "$BENCH_DIR/storm_check.py" --trace "$trace" --storm "$WORK/reset.log" \
    --rss "$WORK/reset-rss.csv" --baseline-bytes 0 --cap-mb 100000 >> "$REPORT" || rc=1
  note ""
}

phase_long_start() {
  local dir=$LONG/control
  rm -rf "$LONG" && mkdir -p "$LONG"
  [[ -n $STORM ]] || { note "FAIL: kernel_storm was not built"; rc=1; return; }
  # Its own session: it runs on after this script (and the shell that started it) ends.
  KINETRACE_CONTROL_DIR=$dir setsid "$KINETRACE" run --capture-range onDemand --memory-mb "$CAP_MB" \
    --output "$LONG/traces" -- "$STORM" --seconds "$LONG_SECONDS" --rate "$LONG_RATE" \
    --slice-ms "$SLICE_MS" --nvtx-steps 1 --rss "$LONG/rss.csv" > "$LONG/storm.log" 2>&1 < /dev/null &
  echo $! > "$LONG/run.pid"  # without job control setsid execs in place: kinetrace run's pid
  local socket pid
  socket=$(wait_for_sockets "$dir" 1 | head -n 1)
  pid=$(pid_of_socket "$socket")
  sleep 1
  KINETRACE_CONTROL_DIR=$dir "$KINETRACE" trigger --pid "$pid" --steps "$LONG_STEPS" \
    --output "$LONG/window.json" | tee "$LONG/trigger.log" || rc=1
  date +%s > "$LONG/started"
  echo "long window started: $LONG_STEPS steps of $SLICE_MS ms; kernel_storm pid $pid"
}

phase_long_finish() {
  local per_step=$((LONG_RATE * SLICE_MS / 1000))
  note "## A triggered window of $LONG_STEPS steps ($((LONG_STEPS * SLICE_MS / 1000)) s) of a kernel storm ($LONG_RATE kernels/s), --memory-mb $CAP_MB"
  note ""
  local run_pid
  run_pid=$(cat "$LONG/run.pid" 2> /dev/null)
  # Written while recording: what is on disk before the window ends.
  note "- while recording, $(( $(date +%s) - $(cat "$LONG/started" 2> /dev/null || date +%s) )) s after the trigger: $(du -sb "$LONG/traces" "$LONG"/window.json* 2> /dev/null | awk '{s += $1} END {print s + 0}') bytes of trace already on disk"
  while [[ -n $run_pid ]] && kill -0 "$run_pid" 2> /dev/null; do sleep 1; done
  note "$(cat "$LONG/trigger.log")"
  note "$(grep -E 'STORM|fell behind' "$LONG/storm.log" | tr '\n' ' ')"
  note ""
  note "| window | window s | steps | kernels | expected | dropped | peak MiB | result |"
  note "|---|---|---|---|---|---|---|---|"
  "$PYTHON" "$BENCH_DIR/window_check.py" "$LONG/window.json" --steps "$LONG_STEPS" \
    --kernels-per-step "$per_step" --cap-mb "$CAP_MB" --label "$(stat -c %s "$LONG/window.json") bytes" \
    >> "$REPORT" || rc=1
  "$PYTHON" - "$LONG/rss.csv" >> "$REPORT" <<'PY'
import csv, sys
rows = [(float(r["seconds"]), int(r["rss_bytes"])) for r in csv.DictReader(open(sys.argv[1]))]
mib = lambda b: b / (1 << 20)
if len(rows) < 4:
    print("\nRSS: too few samples")
else:
    half = rows[len(rows) // 2][0]
    first = max(b for s, b in rows if s < half)
    second = max(b for s, b in rows if s >= half)
    print(f"\nkernel_storm's RSS (kinetrace inside it): max {mib(max(b for _, b in rows)):.1f} MiB; "
          f"first half max {mib(first):.1f} MiB, second half max {mib(second):.1f} MiB "
          f"(growth {mib(second - first):+.1f} MiB)")
PY
  note ""
}

{
  note "# On-demand traces"
  note ""
  note "- $(date -u +%Y-%m-%dT%H:%MZ); commit $(git -C "$SRC_DIR" rev-parse --short HEAD 2>/dev/null); phases: ${PHASES[*]}"
  note ""
}
for phase in "${PHASES[@]}"; do
  echo "== on_demand: $phase"
  case $phase in
    idle) phase_idle ;;
    triggers) phase_triggers ;;
    job) phase_job ;;
    reset) phase_reset ;;
    long-start) phase_long_start ;;
    long-finish) phase_long_finish ;;
    *) echo "on_demand.sh: unknown phase '$phase'" >&2; exit 2 ;;
  esac
done
cat "$REPORT"
exit $rc
