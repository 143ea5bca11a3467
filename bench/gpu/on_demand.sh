#!/usr/bin/env bash
# On-demand traces on the GPU: what a process armed for `kinetrace trigger` costs while idle,
# and five triggered windows of a running kernel storm.
#
#   bench/gpu/on_demand.sh [BUILD_DIR] [OUT_DIR]     (defaults /tmp/kinetrace-gpu-build, ./gpu-results)
#
# 1. Idle cost: bench/gpu/torch_train.py (transformer) untraced and under
#    `kinetrace run --capture-range onDemand` (never triggered), interleaved ROUNDS times;
#    medians of the median step times.
# 2. Triggers: kernel_storm (RATE kernels/s for STORM_SECONDS) under on-demand capture,
#    `kinetrace trigger --pid` five times in a row (1 s windows, then 2 s, 1 s, 2 s, 1 s),
#    each trace checked: complete JSON, kernels in the window about RATE x its length, none
#    dropped.
# Environment (defaults): ROUNDS (3), STEPS (200), RATE (5000), STORM_SECONDS (30).
# Writes OUT_DIR/on_demand.md. Exit status 1 when a check fails.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-200}
RATE=${RATE:-5000}
STORM_SECONDS=${STORM_SECONDS:-30}
WORK=$OUT_DIR/on_demand
rm -rf "$WORK" && mkdir -p "$WORK"
export KINETRACE_CONTROL_DIR=$WORK/control
REPORT=$OUT_DIR/on_demand.md
STORM=$(find "$BUILD_DIR" -type f -name kernel_storm -perm -u+x | head -n 1)
rc=0

median_of() {  # median_step_ms of a torch_train.py RESULT line in a log
  sed -n 's/.*median_step_ms=\([0-9.]*\).*/\1/p' "$1" | head -n 1
}

{
  echo "# On-demand traces"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit $(git -C "$SRC_DIR" rev-parse --short HEAD 2>/dev/null)"
  echo
  echo "## Armed, never triggered: step time against untraced (transformer, $STEPS steps, $ROUNDS interleaved rounds)"
  echo
  echo "| round | untraced median ms | on demand (idle) median ms |"
  echo "|---|---|---|"
} > "$REPORT"
untraced=() idle=()
for round in $(seq "$ROUNDS"); do
  "$PYTHON" "$BENCH_DIR/torch_train.py" --steps "$STEPS" --warmup 20 > "$WORK/untraced$round.log" 2>&1 || rc=1
  "$KINETRACE" run --capture-range onDemand --output "$WORK/idle-traces" -- \
    "$PYTHON" "$BENCH_DIR/torch_train.py" --steps "$STEPS" --warmup 20 > "$WORK/idle$round.log" 2>&1 || rc=1
  u=$(median_of "$WORK/untraced$round.log"); i=$(median_of "$WORK/idle$round.log")
  untraced+=("$u"); idle+=("$i")
  echo "| $round | $u | $i |" >> "$REPORT"
done
"$PYTHON" - "${untraced[*]}" "${idle[*]}" >> "$REPORT" <<'PY'
import statistics, sys
u = [float(x) for x in sys.argv[1].split()]
i = [float(x) for x in sys.argv[2].split()]
print(f"\nmedians: untraced {statistics.median(u):.3f} ms, on demand idle {statistics.median(i):.3f} ms: "
      f"**{statistics.median(i) / statistics.median(u):.3f}x**")
PY
if ls "$WORK/idle-traces"/kinetrace-* > /dev/null 2>&1; then
  echo "FAIL: an idle on-demand run wrote a trace" >> "$REPORT"; rc=1
fi

{
  echo
  echo "## Five triggers of a running kernel storm ($RATE kernels/s)"
  echo
} >> "$REPORT"
if [[ -z $STORM ]]; then
  echo "FAIL: kernel_storm was not built" >> "$REPORT"; rc=1
else
  "$KINETRACE" run --capture-range onDemand --output "$WORK/storm-traces" -- \
    "$STORM" --seconds "$STORM_SECONDS" --rate "$RATE" > "$WORK/storm.log" 2>&1 &
  run_pid=$!
  socket=""
  for _ in $(seq 300); do
    socket=$(ls "$KINETRACE_CONTROL_DIR"/*.sock 2> /dev/null | head -n 1)
    [[ -n $socket ]] && break
    sleep 0.1
  done
  pid=$(basename "$socket" .sock); pid=${pid##*.}
  n=0
  for seconds in 1 2 1 2 1; do
    n=$((n + 1))
    "$KINETRACE" trigger --pid "$pid" --duration "${seconds}s" --output "$WORK/trigger$n.json" \
      | tee -a "$WORK/triggers.log" || rc=1
    sleep $((seconds + 2))
  done
  wait "$run_pid" || rc=1
  grep STORM "$WORK/storm.log" >> "$REPORT"
  "$PYTHON" - "$RATE" "$WORK" >> "$REPORT" <<'PY' || rc=1
import json, sys
rate, work = int(sys.argv[1]), sys.argv[2]
print("\n| trigger | window s | kernels | kernels per s | dropped | complete |")
print("|---|---|---|---|---|---|")
ok = True
for n, seconds in enumerate([1, 2, 1, 2, 1], start=1):
    path = f"{work}/trigger{n}.json"
    try:
        trace = json.load(open(path))
    except Exception as e:
        print(f"| {n} | {seconds} | - | - | - | no: {e} |"); ok = False; continue
    kernels = sum(1 for e in trace["traceEvents"] if e.get("cat") == "kernel")
    window = (trace["kinetrace_window_stop_ns"] - trace["kinetrace_window_start_ns"]) / 1e9
    dropped = trace.get("kinetrace_cupti_dropped_records", 0) + trace.get("kinetrace_dropped_host_events", 0)
    per_s = kernels / window if window > 0 else 0
    good = dropped == 0 and abs(window - seconds) < 0.5 and 0.8 * rate < per_s < 1.2 * rate
    ok &= good
    print(f"| {n} | {window:.2f} | {kernels} | {per_s:.0f} | {dropped} | {'yes' if good else 'NO'} |")
sys.exit(0 if ok else 1)
PY
fi
cat "$REPORT"
exit $rc
