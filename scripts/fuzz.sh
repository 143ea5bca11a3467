#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with Clang (build-fuzz/, ASan + UBSan) and runs each
# for a while; prints what each did and exits 1 if any found something.
#
#   scripts/fuzz.sh [--seconds N] [--only NAME] [--skip NAME] [--jobs J] [--work DIR] [--no-build]
#                   [--resume]
#
#   --seconds N   how long each target runs (default 60); CI runs 30, a long run 1800
#   --only NAME   that target alone (chrome_json, pftrace, summary, trigger_request,
#                 kineto_config, dynolog_ipc, cli_options); may repeat
#   --skip NAME   every target but that one; may repeat
#   --jobs J      targets run at once (default 1), each one process on one core
#   --work DIR    where the working corpora, crash files and logs go (default
#                 build-fuzz/work; emptied first unless --resume)
#   --no-build    run the fuzzers already in build-fuzz/
#   --resume      go on from the working corpora already in --work (a long run in parts):
#                 CPU minutes and executions are then the parts' sums
#
# Each target starts from a copy of its seed corpus (fuzz/corpus/NAME) and its regression
# inputs (fuzz/regressions/NAME): what it finds goes into the copy, never into the repository.
# Per target it prints the CPU minutes it used, executions, executions per CPU-second, coverage
# (libFuzzer's final "cov:" edges and "ft:" features) and the working corpus's size; a
# crash, leak, timeout or memory limit breach is printed with its file, and makes the exit
# status 1. To reproduce one:
#   build-fuzz/fuzz/NAME_fuzzer FILE
# and to minimise it: build-fuzz/fuzz/NAME_fuzzer -minimize_crash=1 -runs=100000 FILE
# Clang and libFuzzer: scripts/setup.sh --fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."

# The limits, one row per target, in one place:
#   max_len    the largest input, bytes: what the target's input can be in use (a trace is
#              larger, but its bugs show in small ones and 1 MB keeps runs fast; a trigger
#              line is refused past 4 KB; a dynolog datagram is received into 64 KB)
#   timeout    seconds one input may take: the readers promise never to hang, and a 1 MB
#              input (a gzip'd one decompresses to at most ~1 GB) is read in well under it
#              even under ASan
# Memory: each target holds the heap to a limit of its own while it runs one input (in its
# source: 16 MB, analyze's smallest --memory-mb, plus 8 MB for the trace readers, see
# fuzz/trace_reader_fuzzing.h); libFuzzer's own -rss_limit_mb stays at its 2048 MB, above
# what ASan's shadow and quarantine add to that.
#   name             max_len   timeout  dictionary
targets_table="
  chrome_json      1048576   20       chrome_json.dict
  pftrace          1048576   20       pftrace.dict
  summary          262144    10       summary.dict
  trigger_request  4096      10       trigger_request.dict
  kineto_config    65536     10       kineto_config.dict
  dynolog_ipc      65536     10       kineto_config.dict
  cli_options      4096      10       cli_options.dict
"
rss_limit_mb=2048

seconds=60
jobs=1
work=build-fuzz/work
build=1
resume=0
only=()
skip=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --only) only+=("$2"); shift 2 ;;
    --skip) skip+=("$2"); shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --resume) resume=1; shift ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

declare -A max_len timeout dict
names=()
while read -r name length limit dictionary; do
  [[ -n $name ]] || continue
  names+=("$name")
  max_len[$name]=$length
  timeout[$name]=$limit
  dict[$name]=$dictionary
done <<< "$targets_table"
if [[ ${#only[@]} -gt 0 ]]; then
  for name in "${only[@]}"; do
    [[ -n ${max_len[$name]:-} ]] || { echo "fuzz.sh: no target $name (${names[*]})" >&2; exit 2; }
  done
  names=("${only[@]}")
fi
for name in "${skip[@]}"; do
  [[ -n ${max_len[$name]:-} ]] || { echo "fuzz.sh: no target $name (${names[*]})" >&2; exit 2; }
  for i in "${!names[@]}"; do [[ ${names[$i]} != "$name" ]] || unset 'names[i]'; done
done
names=("${names[@]}")

if [[ $build == 1 ]]; then
  command -v clang++ >/dev/null 2>&1 || { echo "fuzz.sh: no clang++ (scripts/setup.sh --fuzz)" >&2; exit 1; }
  # Only what the fuzzers link: no tests, examples or CUDA.
  cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKINETRACE_BUILD_FUZZERS=ON -DKINETRACE_BUILD_TESTS=OFF -DKINETRACE_BUILD_EXAMPLES=OFF \
    -DKINETRACE_BUILD_BENCHMARKS=OFF -DKINETRACE_WITH_CUDA=OFF > /dev/null
  build_targets=()
  for name in "${names[@]}"; do build_targets+=("${name}_fuzzer"); done
  cmake --build build-fuzz -j"$(nproc)" --target "${build_targets[@]}"
fi

if [[ $resume == 0 ]]; then rm -rf "$work"; fi
mkdir -p "$work"

# run_target NAME: one libFuzzer run; its output in $work/NAME/log.
run_target() {
  local name=$1 dir=$work/$1
  mkdir -p "$dir/corpus" "$dir/artifacts" "$dir/tmp"
  if [[ ! -x build-fuzz/fuzz/${name}_fuzzer ]]; then
    echo "no build-fuzz/fuzz/${name}_fuzzer (run without --no-build)" > "$dir/log"
    echo 1 > "$dir/status"
    return
  fi
  cp fuzz/corpus/"$name"/* "$dir/corpus/"
  if [[ -d fuzz/regressions/$name ]]; then cp fuzz/regressions/"$name"/* "$dir/corpus/"; fi
  # Resuming: the earlier parts' log and CPU time stay beside this part's, numbered.
  if [[ -f $dir/log ]]; then
    local part=1
    while [[ -f $dir/log.$part ]]; do part=$((part + 1)); done
    mv "$dir/log" "$dir/log.$part"
    if [[ -f $dir/cpu_minutes ]]; then mv "$dir/cpu_minutes" "$dir/cpu_minutes.$part"; fi
  fi
  local options=(-max_total_time="$seconds" -max_len="${max_len[$name]}"
                 -timeout="${timeout[$name]}" -rss_limit_mb="$rss_limit_mb"
                 -print_final_stats=1 -artifact_prefix="$dir/artifacts/")
  if [[ -f fuzz/${dict[$name]} ]]; then options+=(-dict="fuzz/${dict[$name]}"); fi
  # TMPDIR: the analysis's spill files stay in the work directory.
  local status=0
  TMPDIR=$dir/tmp ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    build-fuzz/fuzz/"${name}"_fuzzer "${options[@]}" "$dir/corpus" > "$dir/log" 2>&1 || status=$?
  echo "$status" > "$dir/status"
  # The CPU time the fuzzer used (user + system, from this subshell's children): with more
  # jobs than free cores it is less than the wall time, and it is what a long run promises.
  # (`times` itself in no pipe: a pipe's subshell has no children yet.)
  times > "$dir/times"
  awk 'NR == 2 {
      split($1, u, /[ms]/); split($2, s, /[ms]/)
      printf "%.1f\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) / 60 }' "$dir/times" > "$dir/cpu_minutes"
}

# Runs the targets, $jobs at a time.
running=0
for name in "${names[@]}"; do
  echo "fuzz: $name for ${seconds}s"
  run_target "$name" &
  running=$((running + 1))
  if [[ $running -ge $jobs ]]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=0
printf '\n%-16s %8s %12s %10s %7s %8s %8s  %s\n' target cpu-min executions exec/cpu-s cov ft corpus result
for name in "${names[@]}"; do
  dir=$work/$name
  log=$dir/log
  # Summed over the parts of a resumed run (log.1, log.2, ... and log).
  executions=$(cat "$dir"/log* 2>/dev/null | sed -n 's/^stat::number_of_executed_units: *//p' |
               awk '{ n += $1 } END { if (NR) print n }')
  # Executions per CPU-second over all parts (libFuzzer's own rate is per wall second of
  # the last part).
  rate=$(awk -v n="${executions:-0}" -v m="$(cat "$dir"/cpu_minutes* 2>/dev/null |
         awk '{ m += $1 } END { print m + 0 }')" 'BEGIN { if (m > 0) printf "%d", n / (m * 60) }')
  last=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 || true)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corpus=$(find "$dir/corpus" -type f | wc -l)
  artifacts=$(find "$dir/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
  result=ok
  if [[ -n $artifacts || $(cat "$dir/status") != 0 ]]; then
    result="FOUND: $(grep -m 1 -E '^SUMMARY: |kinetrace fuzz finding: |ERROR: libFuzzer' "$log" || echo "exit status $(cat "$dir/status")")"
    if grep -q '^no build-fuzz' "$log"; then result="NOT RUN: $(cat "$log")"; fi
    failed=1
  fi
  cpu=$(cat "$dir"/cpu_minutes* 2>/dev/null | awk '{ m += $1 } END { if (NR) printf "%.1f", m }')
  printf '%-16s %8s %12s %10s %7s %8s %8s  %s\n' "$name" "${cpu:-?}" "${executions:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$corpus" "$result"
  for file in $artifacts; do echo "  input: $file"; done
  if [[ $result != ok ]]; then echo "  log: $log"; fi
done
exit $failed
