#!/usr/bin/env bash
# Whether the offline commands stay within --memory-mb on hostile input: peak RSS (GNU time)
# of `analyze`, `convert`, `merge` and `summary` on traces made to grow what a reader holds
# (bench/make_hostile_traces.py: 2.1 GB of top-level metadata, 1,500 distinct 1 MB kernel
# names, 5 million steps, 2 million NCCL collectives in as many processes, 2 million slices
# each on a thread of its own, 2 GB of .pftrace interned strings, a million tracks, a million
# slices never ended, nested compressed packets), converted to JSON and to .pftrace (whose
# writer keeps a track per thread), and on a directory whose summary file is a link to
# /dev/zero, each at
# --memory-mb 16 and at the default (256). The promise: peak RSS within the cap plus the
# process's fixed size (the first row: the same command on a five-event trace), whether
# the command succeeds or refuses the input, and in time linear in the file.
#
#   bench/reader_memory.sh BUILD_DIR [WORK_DIR]     (WORK_DIR default /tmp/kinetrace-reader-memory)
#
# Environment: CASES (the cases' file names, space-separated; default all), CAPS ("16 256").
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: bench/reader_memory.sh BUILD_DIR [WORK_DIR]}
work=${2:-/tmp/kinetrace-reader-memory}
kinetrace=$build/bin/kinetrace
[[ -x $kinetrace ]] || { echo "no $kinetrace: build first" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (Debian: apt-get install time)" >&2; exit 1; }
caps=${CAPS:-16 256}
cases=${CASES:-metadata.json.gz names.json.gz steps.json.gz collectives.json.gz threads.json.gz interned.pftrace.gz tracks.pftrace.gz open-slices.pftrace.gz nested.pftrace.gz}

mkdir -p "$work/out"
# A five-event trace: the fixed size, and the other rank of a merge (rank 1 by its place on
# the command line; the .pftrace cases, made from it, are rank 0 by theirs).
cat > "$work/small.json" <<'JSON'
{"traceEvents": [
{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"proc"}},
{"ph":"X","name":"ProfilerStep#1","cat":"user_annotation","pid":1,"tid":2,"ts":1,"dur":100},
{"ph":"X","name":"cudaLaunchKernel","cat":"cuda_runtime","pid":1,"tid":2,"ts":2,"dur":5,"args":{"correlation":7}},
{"ph":"X","name":"k","cat":"kernel","pid":0,"tid":7,"ts":10,"dur":5,"args":{"device":0,"stream":7,"correlation":7}},
{"ph":"X","name":"k2","cat":"kernel","pid":0,"tid":7,"ts":20,"dur":5,"args":{"device":0,"stream":7}}
]}
JSON
"$kinetrace" convert -q "$work/small.json" "$work/base.pftrace.gz"
# shellcheck disable=SC2086
python3 "$src/bench/make_hostile_traces.py" "$work" "$work/base.pftrace.gz" $cases
mkdir -p "$work/planted"
ln -sf /dev/zero "$work/planted/kinetrace-run1-node1-pid1.summary.json"

# run CASE LABEL CAP COMMAND ARGS...: one row of the table.
run() {
  local name=$1 label=$2 cap=$3 command=$4
  shift 4
  local status=0
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$kinetrace" "$command" "$@" \
    > "$work/out/stdout.txt" 2> "$work/out/stderr.txt" || status=$?
  local wall rss
  read -r wall rss < <(tail -n 1 "$work/time.txt")
  local result="ok"
  if [[ $status -ne 0 ]]; then
    result="refused: $(grep -v '^Command exited' "$work/out/stderr.txt" | tail -n 1 | sed "s|$work/||g" | cut -c1-150)"
  fi
  local size="-"
  [[ -f $work/$name ]] && size=$(python3 -c "import os,sys; print(f'{os.path.getsize(sys.argv[1]) / 1e6:.1f}')" "$work/$name")
  printf '| %s | %s | %s | %s | %.0f | %s | %s |\n' "$name" "$size" "$label" "$cap" \
    "$(python3 -c "print($rss / 1024)")" "$wall" "$result"
}

echo "| input | file (MB) | command | --memory-mb | peak RSS (MB) | wall (s) | result |"
echo "|---|---|---|---|---|---|---|"
for cap in $caps; do
  run small.json analyze "$cap" analyze -q --memory-mb "$cap" "$work/small.json"
done
for name in $cases; do
  file=$work/$name
  for cap in $caps; do
    run "$name" analyze "$cap" analyze -q --memory-mb "$cap" "$file"
    run "$name" "convert (.json)" "$cap" convert -q --memory-mb "$cap" "$file" "$work/out/converted.json"
    run "$name" "convert (.pftrace)" "$cap" convert -q --memory-mb "$cap" "$file" "$work/out/converted.pftrace"
    run "$name" merge "$cap" merge -q --memory-mb "$cap" "$file" "$work/small.json" -o "$work/out/merged.json"
    run "$name" summary "$cap" summary --memory-mb "$cap" "$file"
  done
done
for cap in $caps; do
  run planted summary "$cap" summary --memory-mb "$cap" "$work/planted"
done
