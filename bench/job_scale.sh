#!/usr/bin/env bash
# `kinetrace analyze` and `kinetrace diff` on a many-rank job, beside HTA on the same files:
# wall time and the peak memory of the whole process tree (bench/tree_peak.py), from one real
# trace replicated and perturbed into RANKS ranks (bench/make_rank_job.py): job A, and job B
# whose rank 5 starts each step 2 ms late.
#
#   bench/job_scale.sh BUILD_DIR TRACE.json[.gz] [WORK_DIR]     (WORK_DIR: /tmp/kinetrace-job-scale)
#
# Runs: kinetrace analyze A one file at a time (--jobs 1) and on every core; kinetrace diff
# A B on every core (when the build has it); HTA's TraceAnalysis on A (its parse, with its
# pool of processes, then the temporal and idle-time breakdowns) and TraceDiff.compare_traces
# A B. Each at the default --memory-mb (256) and again at 64 for analyze. Prints a markdown
# table. HTA's source: HTA_DIR (default ../shared/refs/hta beside the repository); skipped
# when pandas is not importable.
#
# Environment: RANKS (64), HTA_DIR, HTA_PYTHON (the python3 with pandas: /usr/bin/python3,
# Debian's, where it is there).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: bench/job_scale.sh BUILD_DIR TRACE [WORK_DIR]}
trace=${2:?usage: bench/job_scale.sh BUILD_DIR TRACE [WORK_DIR]}
work=${3:-/tmp/kinetrace-job-scale}
ranks=${RANKS:-64}
hta_dir=${HTA_DIR:-$src/../shared/refs/hta}
hta_python=${HTA_PYTHON:-$([[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || echo python3)}
kinetrace=$build/bin/kinetrace
[[ -x $kinetrace ]] || { echo "no $kinetrace: build first" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work"
python3 "$src/bench/make_rank_job.py" "$trace" "$work/a" --ranks "$ranks" --seed 1
python3 "$src/bench/make_rank_job.py" "$trace" "$work/b" --ranks "$ranks" --seed 2 --slow-rank 5
job_mb=$(du -sm "$work/a" | cut -f1)
cores=$(nproc)

rows=()
# measure NAME COMMAND...: one row of the table.
measure() {
  local name=$1
  shift
  if python3 "$src/bench/tree_peak.py" --out "$work/measure.txt" -- "$@" > "$work/$name.out" 2> "$work/$name.err"; then
    rows+=("| $name | $(sed 's/wall_s=\([0-9.]*\) peak_mb=\([0-9.]*\).*/\1 | \2/' "$work/measure.txt") |")
  else
    rows+=("| $name | failed: $(tail -n 1 "$work/$name.err") | |")
  fi
}

measure "kinetrace analyze, --jobs 1" "$kinetrace" analyze -q --jobs 1 --json "$work/analyze-1.json" "$work/a"
measure "kinetrace analyze, $cores cores" "$kinetrace" analyze -q --json "$work/analyze-all.json" "$work/a"
measure "kinetrace analyze, $cores cores, --memory-mb 64" "$kinetrace" analyze -q --memory-mb 64 \
  --json "$work/analyze-64.json" "$work/a"
cmp -s "$work/analyze-1.json" "$work/analyze-all.json" ||
  { echo "the analysis on $cores cores differs from the one read one file at a time" >&2; exit 1; }
cmp -s "$work/analyze-all.json" "$work/analyze-64.json" ||
  { echo "the analysis at 64 MB differs from the one at 256 MB" >&2; exit 1; }
if "$kinetrace" help diff > /dev/null 2>&1; then
  measure "kinetrace diff, $cores cores" "$kinetrace" diff -q --json "$work/diff.json" "$work/a" "$work/b"
fi

if PYTHONPATH=$hta_dir "$hta_python" -c 'import pandas, hta' 2> /dev/null; then
  cat > "$work/hta_analyze.py" <<'PY'
import logging, os, sys
sys.path.insert(0, os.environ["REFEREE_DIR"])
from hta_referee import stand_in_modules
stand_in_modules()  # HTA imports plotly and psutil when it loads; these analyses use neither
from hta.configs.config import logger
from hta.trace_analysis import TraceAnalysis
logger.setLevel(logging.ERROR)
ta = TraceAnalysis(trace_dir=sys.argv[1])
ta.get_temporal_breakdown(visualize=False)
ta.get_idle_time_breakdown(visualize=False)
PY
  cat > "$work/hta_diff.py" <<'PY'
import logging, os, sys
sys.path.insert(0, os.environ["REFEREE_DIR"])
from hta_referee import stand_in_modules
stand_in_modules()
from hta.configs.config import logger
from hta.trace_diff import LabeledTrace, TraceDiff
logger.setLevel(logging.ERROR)
TraceDiff.compare_traces(LabeledTrace("a", trace_dir=sys.argv[1]), LabeledTrace("b", trace_dir=sys.argv[2]))
PY
  measure "HTA TraceAnalysis (parse, temporal and idle breakdowns)" env PYTHONPATH="$hta_dir" REFEREE_DIR="$src/test/analysis" "$hta_python" "$work/hta_analyze.py" "$work/a"
  measure "HTA TraceDiff.compare_traces" env PYTHONPATH="$hta_dir" REFEREE_DIR="$src/test/analysis" "$hta_python" "$work/hta_diff.py" "$work/a" "$work/b"
else
  echo "pandas or HTA not importable (HTA_DIR=$hta_dir): HTA's rows skipped" >&2
fi

echo "$ranks ranks, ${job_mb} MB of JSON a job, $cores cores ($(basename "$trace") replicated)"
echo
echo "| run | wall (s) | peak memory of the process tree (MB) |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
