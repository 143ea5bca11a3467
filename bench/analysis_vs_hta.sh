#!/usr/bin/env bash
# `kinetrace analyze --critical-path` beside HTA doing the same analyses, trace by trace: wall
# time and peak memory (kinetrace, one process: GNU time's; HTA, which may start a pool of
# processes: the peak of its whole process tree, bench/tree_peak.py). HTA: TraceAnalysis's
# parse, each ProfilerStep's critical_path_analysis, get_frequent_cuda_kernel_sequences for
# "autograd::", get_gpu_user_annotation_breakdown, get_time_spent_blocked_on_full_queue and
# get_memory_bw_summary, and the temporal and idle-time breakdowns; kinetrace: all of these and
# the rest of its report, in one command.
#
#   bench/analysis_vs_hta.sh BUILD_DIR TRACE.json[.gz]...
#
# Environment: HTA_DIR (default ../shared/refs/hta beside the repository), HTA_PYTHON (the
# python3 with pandas and networkx: /usr/bin/python3, Debian's, where it is there).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: bench/analysis_vs_hta.sh BUILD_DIR TRACE...}
shift
hta_dir=${HTA_DIR:-$src/../shared/refs/hta}
hta_python=${HTA_PYTHON:-$([[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || echo python3)}
kinetrace=$build/bin/kinetrace
[[ -x $kinetrace ]] || { echo "no $kinetrace: build first" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "needs GNU time (Debian: time)" >&2; exit 1; }
PYTHONPATH=$hta_dir "$hta_python" -c 'import pandas, networkx, hta' 2> /dev/null ||
  { echo "pandas, networkx or HTA not importable (HTA_DIR=$hta_dir)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/hta_all.py" <<'PY'
import gzip, json, logging, os, sys, tempfile
sys.path.insert(0, os.environ["REFEREE_DIR"])
from hta_referee import stand_in_modules
stand_in_modules()
from hta.configs.config import logger
from hta.trace_analysis import TraceAnalysis
logger.setLevel(logging.ERROR)
path = sys.argv[1]
with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
    document = json.load(f)
rank = (document.get("distributedInfo") or {}).get("rank", 0)
steps = sorted({e["name"] for e in document["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")})
del document
ta = TraceAnalysis(trace_files={rank: path}, include_last_profiler_step=True)
ta.get_temporal_breakdown(visualize=False)
ta.get_idle_time_breakdown(ranks=[rank], visualize=False)
ta.get_gpu_user_annotation_breakdown(visualize=False)
series = ta.get_queue_length_time_series(ranks=[rank])
if series:
    ta.get_time_spent_blocked_on_full_queue(series)
ta.get_memory_bw_summary(ranks=[rank])
for step in steps:
    ta.critical_path_analysis(rank=rank, annotation=step, instance_id=0)
ta.get_frequent_cuda_kernel_sequences("autograd::", tempfile.mkdtemp(), min_pattern_len=3, rank=rank, visualize=False)
PY

echo "| trace | MB | kinetrace analyze --critical-path: wall (s) | peak (MB) | HTA: wall (s) | peak (MB) |"
echo "|---|---|---|---|---|---|"
for trace in "$@"; do
  mb=$(python3 -c "import os,sys; print(f'{os.path.getsize(sys.argv[1]) / 1e6:.1f}')" "$trace")
  /usr/bin/time -f "wall_s=%e peak_mb=%M rc=%x" -o "$work/k.txt" "$kinetrace" analyze -q \
    --critical-path --json "$work/k.json" "$trace" > /dev/null 2>&1 || true
  env PYTHONPATH="$hta_dir" REFEREE_DIR="$src/test/analysis" HTA_DISABLE_NS_ROUNDING=1 \
    python3 "$src/bench/tree_peak.py" --out "$work/h.txt" -- "$hta_python" "$work/hta_all.py" "$trace" \
    > /dev/null 2>&1 || true
  k=$(awk '{ split($1, w, "="); split($2, m, "="); printf "%s | %.1f", w[2], m[2] / 1000 }' "$work/k.txt")
  h=$(sed 's/wall_s=\([0-9.]*\) peak_mb=\([0-9.]*\) rc=\(.*\)/\1 | \2/' "$work/h.txt")
  grep -q 'rc=0' "$work/h.txt" || h="failed ($(cat "$work/h.txt")) |"
  echo "| $(basename "$trace") | $mb (gzip) | $k | $h |"
done
