#!/usr/bin/env bash
# How fast `kinetrace analyze` reads and analyses a large trace, and the memory it takes:
# a made-up training job's trace (test/analysis/make_sample_traces.py: steps of a gemm, 100
# tiny kernels and an all-reduce, with their launch calls and host ranges) of about
# SIZE_MB megabytes as JSON, then the same trace as .pftrace; wall time, events per second,
# MB per second and peak RSS (GNU time) for each, and the JSON again in a quarter of the
# default memory.
#
#   bench/analyze_speed.sh [BUILD_DIR] [WORK_DIR]     (defaults ./build, /tmp/kinetrace-analyze-bench)
#
# Environment: SIZE_MB (1000).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$src/build}
work=${2:-/tmp/kinetrace-analyze-bench}
size_mb=${SIZE_MB:-1000}
kinetrace=$build/bin/kinetrace
[[ -x $kinetrace ]] || { echo "no $kinetrace: build first" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (Debian: time)" >&2; exit 1; }

mkdir -p "$work"
# One step of the made-up job is about 45 kB of JSON.
steps=$((size_mb * 1000 / 45))
python3 "$src/test/analysis/make_sample_traces.py" "$work" --steps "$steps" --ranks 1
"$kinetrace" convert -q "$work/rank0.json" "$work/rank0.pftrace"

echo "| input | size (MB) | events | --memory-mb | wall (s) | events/s | MB/s | peak RSS (MB) |"
echo "|---|---|---|---|---|---|---|---|"
# Each input at the default budget (256 MB), the JSON also at 64 MB, whose analysis must be
# the same byte for byte: a smaller budget only sends more to temporary files.
for run in "rank0.json 256" "rank0.json 64" "rank0.pftrace 256"; do
  read -r input budget <<< "$run"
  file=$work/$input
  bytes=$(stat -c %s "$file")
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$kinetrace" analyze -q --memory-mb "$budget" \
    --json "$work/analysis-$input-$budget.json" "$file" > /dev/null
  read -r wall rss_kb < "$work/time.txt"
  events=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ranks'][0]['events'])" "$work/analysis-$input-$budget.json")
  python3 - "$input" "$bytes" "$events" "$budget" "$wall" "$rss_kb" <<'PY'
import sys
name, size, events, budget, wall, rss = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5]), int(sys.argv[6])
print(f"| {name} | {size / 1e6:,.0f} | {events:,} | {budget} | {wall:.1f} | {events / wall:,.0f} | {size / 1e6 / wall:,.1f} | {rss / 1e3:,.0f} |")
PY
done
if cmp -s "$work/analysis-rank0.json-256.json" "$work/analysis-rank0.json-64.json"; then
  echo "the analysis at 64 MB is the same as at 256 MB"
else
  echo "the analysis at 64 MB differs from the one at 256 MB" >&2
  exit 1
fi
