#!/usr/bin/env bash
# The one path rule (docs/SECURITY.md) on the GPU, where the injection and libkineto_api write
# their traces: requests whose outputs must be refused are refused before "ok" and write
# nothing anywhere; the requests after them are taken and their traces written.
#
#   test/gpu/path_rule.sh [BUILD_DIR] [OUT_DIR] [PHASE...]
#       (defaults /tmp/kinetrace-gpu-build, ./gpu-results, every phase in this order)
#
# Phases (each appends its section to OUT_DIR/path_rule.md):
#   trigger  kernel_storm under `kinetrace run --capture-range onDemand`, asked by
#            `kinetrace trigger` to write to /dev/null, through another user's directory link
#            in a sticky directory (/tmp/...: the victim's file must stay as it was), and to
#            start at step 9e18: each refused; then a trace of 20 steps to a plain path, taken
#   dynolog  the same program under `kinetrace run --dynolog`, asked through the real dynolog
#            daemon (test/ondemand/dyno.py sends dyno gputrace's RPC) for a trace under /tmp
#            whose directory is a link out of /tmp: nothing written there; then for one under
#            /tmp: written
#   kineto   PyTorch (bench/gpu/torch_train.py) under LD_PRELOAD=libkineto_api.so with
#            KINETO_USE_DAEMON=1, asked the same two things through the daemon
#
# The daemon is ../shared/tools/dynolog/dynolog (or $DYNOLOG_BIN); without it the dynolog
# and kineto phases say SKIP. Runs as root (a link owned by another user needs chown).
# Exit status 1 when a check fails.

source "$(dirname "${BASH_SOURCE[0]}")/../../bench/gpu/common.sh"
shift $(($# < 2 ? $# : 2))
PHASES=("$@")
[[ ${#PHASES[@]} -gt 0 ]] || PHASES=(trigger dynolog kineto)
DAEMON=${DYNOLOG_BIN:-$SRC_DIR/../shared/tools/dynolog/dynolog}
DYNO=$SRC_DIR/test/ondemand/dyno.py
REPORT=$OUT_DIR/path_rule.md
WORK=$(mktemp -d /tmp/kinetrace-paths-XXXXXX)
# Outside /tmp, where a dynolog request may never write.
OUTSIDE=$(mktemp -d /var/tmp/kinetrace-outside-XXXXXX)
STORM=$(find "$BUILD_DIR" -type f -name kernel_storm -perm -u+x | head -n 1)
KINETO_API=$(find "$BUILD_DIR" -name libkineto_api.so | head -n 1)
rc=0
: > "$REPORT"
note() { echo "$@" >> "$REPORT"; }
check() {  # DESCRIPTION CONDITION...: a PASS or FAIL line
  local what=$1
  shift
  if "$@"; then note "- PASS: $what"; else note "- FAIL: $what"; rc=1; fi
}
empty_dir() { [[ -z $(ls -A "$1") ]]; }
trap 'kill $DAEMON_PID 2> /dev/null; rm -rf "$WORK" "$OUTSIDE"' EXIT
DAEMON_PID=

wait_for() { for _ in $(seq 600); do [[ -s $1 ]] && return 0; sleep 0.1; done; return 1; }
kernels_in() {
  "$PYTHON" -c 'import json,sys; print(sum(1 for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("cat") == "kernel"))' "$1" 2> /dev/null || echo 0
}

start_daemon() {
  [[ -x $DAEMON ]] || return 1
  [[ -n $DAEMON_PID ]] && return 0
  mkdir -p "$WORK/ipc"
  export KINETO_IPC_SOCKET_DIR=$WORK/ipc
  LD_LIBRARY_PATH=$(dirname "$DAEMON")/lib "$DAEMON" --enable_ipc_monitor --port 0 \
    --kernel_monitor_reporting_interval_s 3600 --logtostderr=1 2> "$WORK/daemon.log" &
  DAEMON_PID=$!
  for _ in $(seq 100); do
    PORT=$(sed -n 's/.*System assigned port = \([0-9]*\).*/\1/p' "$WORK/daemon.log" | head -n 1)
    [[ -n $PORT ]] && return 0
    sleep 0.1
  done
  return 1
}

# Sends dyno gputrace's request until the daemon hands it to a process; prints the reply.
gputrace() {
  local reply
  for _ in $(seq 600); do
    reply=$("$PYTHON" "$DYNO" --port "$PORT" gputrace "$@")
    if echo "$reply" | grep -q '^trace '; then echo "$reply"; return 0; fi
    sleep 0.1
  done
  echo "$reply"
  return 1
}

phase_trigger() {
  note "## kinetrace trigger, under kinetrace run --capture-range onDemand"
  [[ -n $STORM ]] || { note "- FAIL: kernel_storm was not built"; rc=1; return; }
  local control=$WORK/control
  KINETRACE_CONTROL_DIR=$control "$KINETRACE" run --capture-range onDemand --output "$WORK/run" -- \
    "$STORM" --seconds 20 --rate 2000 --slice-ms 10 --nvtx-steps 1 > "$WORK/storm.log" 2>&1 &
  local run=$! socket pid answer
  for _ in $(seq 600); do socket=$(ls "$control"/*.sock 2> /dev/null | head -n 1); [[ -n $socket ]] && break; sleep 0.1; done
  pid=$(basename "$socket" .sock); pid=${pid##*.}
  # A sticky directory writable by all, with another user's link to a directory of root's.
  mkdir -p "$WORK/sticky" "$WORK/victim" && chmod 1777 "$WORK/sticky"
  echo precious > "$WORK/victim/t.json"
  ln -s "$WORK/victim" "$WORK/sticky/d" && chown -h nobody "$WORK/sticky/d"
  ask() { KINETRACE_CONTROL_DIR=$control "$KINETRACE" trigger --pid "$pid" "$@" 2>&1; }
  answer=$(ask --duration 1s --output /dev/null)
  note '```'; note "$answer"; note '```'
  check "/dev/null refused before the answer" grep -q "refused.*character device" <<< "$answer"
  answer=$(ask --duration 1s --output "$WORK/sticky/d/t.json")
  note '```'; note "$answer"; note '```'
  check "another user's directory link in a sticky directory refused" grep -q "refused.*not following" <<< "$answer"
  check "the victim's file untouched" grep -qx precious "$WORK/victim/t.json"
  answer=$(ask --steps 5 --start-step 9000000000000000000)
  note '```'; note "$answer"; note '```'
  check "a window that could never start refused" grep -q "refused.*steps ahead" <<< "$answer"
  answer=$(ask --steps 20 --output "$WORK/ok/t.json")
  note '```'; note "$answer"; note '```'
  check "then a plain path taken" grep -q "recording to" <<< "$answer"
  wait_for "$WORK/ok/t.json"
  wait "$run" || { rc=1; tail -n 20 "$WORK/storm.log" >> "$REPORT"; }
  check "its trace written, with kernels ($(kernels_in "$WORK/ok/t.json"))" \
    test "$(kernels_in "$WORK/ok/t.json")" -gt 0
  note ""
}

phase_dynolog() {
  note "## dyno gputrace through the real daemon, under kinetrace run --dynolog"
  start_daemon || { note "- SKIP: no dynolog daemon at $DAEMON"; note ""; return; }
  [[ -n $STORM ]] || { note "- FAIL: kernel_storm was not built"; rc=1; return; }
  local escape=$WORK/escape reply
  ln -sfn "$OUTSIDE" "$escape"
  ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS=0.1 "$KINETRACE" run --dynolog --output "$WORK/dyn-run" -- \
    "$STORM" --seconds 20 --rate 2000 --slice-ms 10 --nvtx-steps 1 > "$WORK/dyn.log" 2>&1 &
  local run=$!
  # Only this run's processes (the daemon matches a process by its pid or an ancestor's).
  reply=$(gputrace --pids "$run" --log-file "$escape/t.json" --duration-ms 500)
  note '```'; note "$reply"; note '```'
  sleep 2  # the process polls every 0.1 s: it has judged the request by now
  check "a trace under /tmp through a link out of /tmp: nothing written outside" empty_dir "$OUTSIDE"
  reply=$(gputrace --pids "$run" --log-file "$WORK/dyn-ok/t.json" --duration-ms 500)
  note '```'; note "$reply"; note '```'
  local trace
  trace=$(echo "$reply" | sed -n 's/^trace //p' | head -n 1)
  wait_for "$trace"
  check "then a trace under /tmp written, with kernels ($(kernels_in "$trace"))" \
    test "$(kernels_in "$trace")" -gt 0
  wait "$run" || rc=1
  grep -h "dynolog's request" "$WORK/dyn.log" | head -n 4 | sed 's/^/    /' >> "$REPORT"
  note ""
}

phase_kineto() {
  note "## dyno gputrace through the real daemon, PyTorch under libkineto_api.so"
  start_daemon || { note "- SKIP: no dynolog daemon at $DAEMON"; note ""; return; }
  [[ -n $KINETO_API ]] || { note "- FAIL: libkineto_api.so was not built"; rc=1; return; }
  local escape=$WORK/escape2 reply
  ln -sfn "$OUTSIDE" "$escape"
  LD_PRELOAD=$KINETO_API KINETO_USE_DAEMON=1 ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS=0.1 \
    KINETRACE_LOG_LEVEL=info "$PYTHON" -c 'import runpy, sys, torch.profiler; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name="__main__")' \
    "$BENCH_DIR/torch_train.py" --steps 1500 --warmup 10 > "$WORK/torch.log" 2>&1 &
  local app=$!
  reply=$(gputrace --pids "$app" --log-file "$escape/t.json" --iterations 5)
  note '```'; note "$reply"; note '```'
  sleep 2
  check "a trace through a link out of /tmp: nothing written outside" empty_dir "$OUTSIDE"
  reply=$(gputrace --pids "$app" --log-file "$WORK/kineto-ok/t.json" --iterations 5)
  note '```'; note "$reply"; note '```'
  local trace
  trace=$(echo "$reply" | sed -n 's/^trace //p' | head -n 1)
  wait_for "$trace"
  check "then a trace under /tmp written, with kernels ($(kernels_in "$trace"))" \
    test "$(kernels_in "$trace")" -gt 0
  wait "$app" || rc=1
  grep -h "dynolog's request" "$WORK/torch.log" | head -n 4 | sed 's/^/    /' >> "$REPORT"
  note ""
}

ensure_built || exit 1
for phase in "${PHASES[@]}"; do "phase_$phase"; done
cat "$REPORT"
exit $rc
