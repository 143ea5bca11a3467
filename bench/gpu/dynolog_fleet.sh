#!/usr/bin/env bash
# On-demand traces through the real dynolog daemon on the GPU, as `dyno gputrace` asks for
# them (bench/gpu/../../test/ondemand/dyno.py sends the same RPC):
#
#   bench/gpu/dynolog_fleet.sh [BUILD_DIR] [OUT_DIR] [PHASE...]
#       (defaults /tmp/kinetrace-gpu-build, ./gpu-results, every phase in this order)
#
# Phases (each appends its section to OUT_DIR/dynolog.md):
#   torch   torch_train.py (transformer) under LD_PRELOAD=libkineto_api.so with
#           KINETO_USE_DAEMON=1, triggered for ITERS iterations rounded up to 100; the trace
#           at the path dyno prints holds ITERS steps and the kernels of torch.profiler's
#           trace of ITERS steps of the same loop (stock kineto, no preload)
#   job     a two-process torchrun job (--distributed --nvtx-steps, one GPU, in lockstep)
#           under `kinetrace run --dynolog`, triggered with one request for 20 iterations
#           rounded up to ROUNDUP: two traces from the same step with the same kernels, and
#           `kinetrace analyze` reads them
#   idle    the polling's idle cost: torch_train.py untraced against the same under
#           LD_PRELOAD + KINETO_USE_DAEMON=1 with the daemon running, never triggered, at
#           libkineto's default interval (5 s); ROUNDS interleaved rounds, medians
#
# The daemon is ../shared/tools/dynolog/dynolog (or $DYNOLOG_BIN). Environment (defaults):
# ROUNDS (5), STEPS (500), ITERS (10), ROUNDUP (500). Exit status 1 when a check fails.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROUNDS=${ROUNDS:-5}
STEPS=${STEPS:-500}
ITERS=${ITERS:-10}
ROUNDUP=${ROUNDUP:-500}
DAEMON=${DYNOLOG_BIN:-$SRC_DIR/../shared/tools/dynolog/dynolog}
DYNO=$SRC_DIR/test/ondemand/dyno.py
WORK=$OUT_DIR/dynolog
REPORT=$OUT_DIR/dynolog.md
KINETO_API=$(find "$BUILD_DIR" -name libkineto_api.so | head -n 1)
TORCHRUN=(torchrun)
command -v torchrun > /dev/null || TORCHRUN=("$PYTHON" -m torch.distributed.run)
shift $(($# < 2 ? $# : 2))
PHASES=("$@")
[[ ${#PHASES[@]} -gt 0 ]] || PHASES=(torch job idle)
rm -rf "$WORK" && mkdir -p "$WORK/ipc"
# Traces under /tmp, where libkineto (and kinetrace) write on-demand traces by default.
TRACES=$(mktemp -d /tmp/kinetrace-dyno-XXXXXX)
export KINETO_IPC_SOCKET_DIR=$WORK/ipc
rc=0
note() { echo "$@" >> "$REPORT"; }

[[ -x $DAEMON ]] || { note "SKIP: no dynolog daemon at $DAEMON"; cat "$REPORT"; exit 0; }
LD_LIBRARY_PATH=$(dirname "$DAEMON")/lib "$DAEMON" --enable_ipc_monitor --port 0 \
  --kernel_monitor_reporting_interval_s 3600 --logtostderr=1 2> "$WORK/daemon.log" &
DAEMON_PID=$!
trap 'kill $DAEMON_PID 2> /dev/null; rm -rf "$TRACES"' EXIT
PORT=
for _ in $(seq 100); do
  PORT=$(sed -n 's/.*System assigned port = \([0-9]*\).*/\1/p' "$WORK/daemon.log" | head -n 1)
  [[ -n $PORT ]] && break
  sleep 0.1
done
[[ -n $PORT ]] || { note "FAIL: the daemon did not listen"; cat "$WORK/daemon.log"; exit 1; }
note "# dynolog $("$PYTHON" "$DYNO" --port "$PORT" version) triggering kinetrace"
note ""

# torch_train.py with torch.profiler imported first: PyTorch registers its optimizer step
# hook (which counts iterations for libkineto) there when KINETO_USE_DAEMON is set.
train() { "$PYTHON" -c 'import runpy, sys, torch.profiler; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name="__main__")' "$BENCH_DIR/torch_train.py" "$@"; }

# Sends dyno gputrace's request until the daemon lists COUNT processes (they register at their
# first poll); prints the reply and the paths dyno would print.
trigger() {  # COUNT LOG_FILE ARGS...
  local count=$1 log=$2 reply
  shift 2
  for _ in $(seq 600); do
    reply=$("$PYTHON" "$DYNO" --port "$PORT" gputrace --log-file "$log" "$@")
    if [[ $(echo "$reply" | grep -c '^trace ') -ge $count ]]; then echo "$reply"; return 0; fi
    sleep 0.1
  done
  echo "$reply"; return 1
}

wait_for() { for _ in $(seq 1200); do [[ -s $1 ]] && return 0; sleep 0.1; done; return 1; }

kernels_of() {  # TRACE: kernel count, steps
  "$PYTHON" - "$1" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X"]
steps = trace.get("kinetrace_steps", {})
print(len(kernels), steps.get("first", "-"), steps.get("count", "-"))
PY
}

phase_torch() {
  note "## PyTorch under LD_PRELOAD=libkineto_api.so, KINETO_USE_DAEMON=1: $ITERS iterations"
  note ""
  [[ -n $KINETO_API ]] || { note "FAIL: libkineto_api.so was not built"; rc=1; return; }
  LD_PRELOAD=$KINETO_API KINETO_USE_DAEMON=1 ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS=0.2 \
    KINETRACE_LOG_LEVEL=info train --steps 3000 --warmup 10 > "$WORK/torch.log" 2>&1 &
  local app=$! reply trace
  reply=$(trigger 1 "$TRACES/torch.json" --iterations "$ITERS" \
            --profile-start-iteration-roundup 100 --record-shapes) || rc=1
  note '```'; note "$reply"; note '```'
  trace=$(echo "$reply" | sed -n 's/^trace //p' | head -n 1)
  wait_for "$trace" || { note "FAIL: no trace at $trace"; rc=1; }
  wait "$app" || { rc=1; tail -n 20 "$WORK/torch.log"; }
  train --steps "$ITERS" --warmup 10 --mode torch-cuda --out "$WORK/torch-ref" \
    > "$WORK/torch-ref.log" 2>&1 || { rc=1; tail -n 20 "$WORK/torch-ref.log"; }
  local ours theirs
  read -r -a ours < <(kernels_of "$trace")
  read -r -a theirs < <(kernels_of "$WORK/torch-ref/torch_trace.json")
  cp "$trace" "$WORK/" 2> /dev/null
  note "| trace | kernels | first step | steps |"
  note "|---|---|---|---|"
  note "| kinetrace, triggered by dynolog | ${ours[0]} | ${ours[1]} | ${ours[2]} |"
  note "| torch.profiler, $ITERS steps (stock kineto) | ${theirs[0]} | | |"
  # PyTorch's ops, recorded by its client as the request asked (--record-shapes).
  local ops
  ops=$("$PYTHON" - "$trace" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
ops = [e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
shaped = [e for e in ops if "Input Dims" in e.get("args", {})]
print(len(ops), len(shaped))
PY
)
  note "PyTorch's ops in the trace, and those with input shapes (asked with --record-shapes): $ops"
  if [[ ${ours[0]} == "${theirs[0]}" && ${ours[2]} == "$ITERS" && $((ours[1] % 100)) -eq 0 \
        && ${ops% *} -gt 0 && ${ops#* } -gt 0 ]]; then
    note ""; note "PASS: the asked iterations, from a multiple of 100, kernels equal, ops with shapes"
  else
    note ""; note "FAIL: kernels or steps differ"; rc=1
  fi
  grep -h "on-demand\|dynolog" "$WORK/torch.log" | head -n 5 >> "$REPORT"
  note ""
}

phase_job() {
  note "## A two-process torchrun job under kinetrace run --dynolog, one request, 20 iterations"
  note ""
  ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS=0.1 KINETRACE_LOG_LEVEL=info \
    "$KINETRACE" run --dynolog --output "$WORK/job-run" -- \
    "${TORCHRUN[@]}" --standalone --nnodes 1 --nproc_per_node 2 "$BENCH_DIR/torch_train.py" \
    --distributed --nvtx-steps --steps 2000 --warmup 10 > "$WORK/job.log" 2>&1 &
  local run_pid=$! reply traces=() line
  reply=$(trigger 3 "$TRACES/job/rank.json" --iterations 20 \
            --profile-start-iteration-roundup "$ROUNDUP") || rc=1
  note '```'; note "$reply"; note '```'
  # torchrun's agent initialises CUDA too (it asks whether a GPU is there), so it polls and
  # is matched; it never marks a step, so its window never starts (its log says so). The
  # ranks' traces are the ones written.
  local matched=()
  mapfile -t matched < <(echo "$reply" | sed -n 's/^trace //p')
  wait "$run_pid" || { rc=1; tail -n 20 "$WORK/job.log"; }
  for trace in "${matched[@]}"; do [[ -s $trace ]] && traces+=("$trace"); done
  note "${#matched[@]} processes matched, ${#traces[@]} traces written"
  note "| trace | kernels | first step | steps |"
  note "|---|---|---|---|"
  local firsts=() counts=()
  for trace in "${traces[@]}"; do
    read -r -a line < <(kernels_of "$trace")
    note "| $(basename "$trace") | ${line[0]} | ${line[1]} | ${line[2]} |"
    counts+=("${line[0]}"); firsts+=("${line[1]}")
  done
  mkdir -p "$WORK/job-traces" && cp "${traces[@]}" "$WORK/job-traces/" 2> /dev/null
  "$KINETRACE" analyze -q "$WORK/job-traces" > "$WORK/job-analyze.txt" 2>&1 \
    && note "kinetrace analyze read both: $(grep -m1 -i 'rank\|trace' "$WORK/job-analyze.txt")" \
    || { note "FAIL: kinetrace analyze"; rc=1; }
  if [[ ${#traces[@]} -eq 2 && ${firsts[0]} == "${firsts[1]}" && ${counts[0]} == "${counts[1]}" \
        && $((firsts[0] % ROUNDUP)) -eq 0 ]]; then
    note ""; note "PASS: both ranks from step ${firsts[0]} (a multiple of $ROUNDUP), the same kernels"
  else
    note ""; note "FAIL: the ranks differ, or not two traces"; rc=1
  fi
  note ""
}

phase_idle() {
  note "## Polling, never triggered: step time against untraced (transformer, $STEPS steps, $ROUNDS interleaved rounds, default 5 s interval)"
  note ""
  note "| round | untraced median ms | KINETO_USE_DAEMON=1 (kinetrace) median ms |"
  note "|---|---|---|"
  local untraced=() idle=() u i
  for round in $(seq "$ROUNDS"); do
    train --steps "$STEPS" --warmup 20 > "$WORK/untraced$round.log" 2>&1 || rc=1
    LD_PRELOAD=$KINETO_API KINETO_USE_DAEMON=1 train --steps "$STEPS" --warmup 20 \
      > "$WORK/idle$round.log" 2>&1 || rc=1
    u=$(median_of "$WORK/untraced$round.log"); i=$(median_of "$WORK/idle$round.log")
    untraced+=("$u"); idle+=("$i")
    note "| $round | $u | $i |"
  done
  "$PYTHON" - "${untraced[*]}" "${idle[*]}" >> "$REPORT" <<'PY'
import statistics, sys
u = [float(x) for x in sys.argv[1].split()]
i = [float(x) for x in sys.argv[2].split()]
ratios = sorted(b / a for a, b in zip(u, i))
print(f"\nmedians: untraced {statistics.median(u):.3f} ms, polling {statistics.median(i):.3f} ms: "
      f"**{statistics.median(i) / statistics.median(u):.3f}x**; per-round ratios "
      + ", ".join(f"{r:.3f}" for r in ratios))
PY
  note ""
}

for phase in "${PHASES[@]}"; do
  case $phase in
    torch) phase_torch ;;
    job) phase_job ;;
    idle) phase_idle ;;
    *) echo "dynolog_fleet.sh: unknown phase '$phase'" >&2; exit 2 ;;
  esac
done
cat "$REPORT"
exit $rc
