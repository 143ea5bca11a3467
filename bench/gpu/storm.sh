#!/usr/bin/env bash
# Proof that kinetrace's memory stays bounded on a long recording window: a 10-minute storm of
# tiny kernels (about 6 million), copies and memsets, traced with a memory cap, then checked.
#
#   bench/gpu/storm.sh [BUILD_DIR] [OUT_DIR]      (defaults /tmp/kinetrace-gpu-build, ./gpu-results)
#   STORM_SECONDS=60 bench/gpu/storm.sh           (a short rehearsal)
#
# 1. kernel_storm untraced for BASELINE_SECONDS: the program's own resident set (baseline).
# 2. kinetrace run --output TRACE_DIR --memory-mb CAP_MB -- kernel_storm --seconds
#    STORM_SECONDS --rate RATE --rss rss.csv: the trace is written while recording; the
#    storm samples its own RSS every second and ends with its exact counts (STORM line).
# 3. storm_check.py reads the trace line by line: every kernel, copy and memset launched is
#    in it or counted as lost (0 lost expected), max RSS - baseline <= the cap, and
#    kinetrace's own peak (kinetrace_memory_peak_bytes) <= the cap.
#
# Environment (defaults): STORM_SECONDS (600), RATE (10000 kernels/s), CAP_MB (256),
# BASELINE_SECONDS (20), STORM_ARGS (more kernel_storm options, e.g. "--streams 8"),
# TRACE_DIR (BUILD_DIR/storm-trace: about 1 KB of trace per kernel, 6 GB at the defaults,
# kept out of OUT_DIR), KEEP_TRACE (0: the trace is deleted once checked), PYTHON (python3).
# A gzip trace (kinetrace-*.json.gz) is read as well as plain JSON.
# Takes STORM_SECONDS + BASELINE_SECONDS + 1-3 minutes (writing and reading the trace).
#
# Writes OUT_DIR/storm.md (the checks and how the run went) and OUT_DIR/storm/ (both RSS
# files, the logs). Exit status: 0 when every check passed, 1 otherwise, 2 for a usage mistake.

set -euo pipefail
# shellcheck source=bench/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

STORM_SECONDS=${STORM_SECONDS:-600}
RATE=${RATE:-10000}
CAP_MB=${CAP_MB:-256}
BASELINE_SECONDS=${BASELINE_SECONDS:-20}
KEEP_TRACE=${KEEP_TRACE:-0}
read -r -a EXTRA <<< "${STORM_ARGS:-}"
for number in STORM_SECONDS RATE CAP_MB BASELINE_SECONDS; do
  if ! [[ ${!number} =~ ^[0-9]+$ && ${!number} -gt 0 ]]; then
    echo "storm.sh: $number must be a positive whole number, not '${!number}'" >&2
    exit 2
  fi
done

ensure_built || exit 1
STORM=$BUILD_DIR/bin/kernel_storm
if [[ ! -x $STORM ]]; then
  cmake --build "$BUILD_DIR" --target kernel_storm >&2 || { echo "storm.sh: cannot build kernel_storm" >&2; exit 1; }
fi
WORK=$OUT_DIR/storm
TRACE_DIR=${TRACE_DIR:-$BUILD_DIR/storm-trace}
rm -rf "$WORK" "$TRACE_DIR"
mkdir -p "$WORK"
REPORT=$OUT_DIR/storm.md
rm -f "$REPORT"

# This kinetrace must take a memory cap: `kinetrace run OPTIONS -- true` starts no CUDA.
if ! "$KINETRACE" run --output "$TRACE_DIR" --memory-mb "$CAP_MB" -- true > "$WORK/probe.log" 2>&1; then
  echo "storm.sh: this kinetrace does not take --memory-mb: $(grep -m1 . "$WORK/probe.log" || true)" >&2
  exit 1
fi
rm -rf "$TRACE_DIR"

echo "== baseline: kernel_storm untraced for $BASELINE_SECONDS s"
if ! timeout $((BASELINE_SECONDS + 120)) "$STORM" --seconds "$BASELINE_SECONDS" --rate "$RATE" "${EXTRA[@]}" \
    --rss "$WORK/baseline_rss.csv" > "$WORK/baseline.log" 2>&1; then
  cat "$WORK/baseline.log" >&2
  echo "storm.sh: the untraced storm failed" >&2
  exit 1
fi
tail -n 1 "$WORK/baseline.log"

echo "== storm: kinetrace run --memory-mb $CAP_MB, $STORM_SECONDS s at $RATE kernels/s"
started=$SECONDS
rc=0
timeout $((STORM_SECONDS + 1200)) "$KINETRACE" run --output "$TRACE_DIR" --memory-mb "$CAP_MB" -- \
  "$STORM" --seconds "$STORM_SECONDS" --rate "$RATE" "${EXTRA[@]}" --rss "$WORK/rss.csv" \
  > "$WORK/storm.log" 2>&1 || rc=$?
wall=$((SECONDS - started))
tail -n 15 "$WORK/storm.log"
[[ $rc -eq 0 ]] || echo "storm.sh: kinetrace run exited $rc" >&2

trace=$(find "$TRACE_DIR" -maxdepth 1 -type f \( -name 'kinetrace-*.json' -o -name 'kinetrace-*.json.gz' \) \
          ! -name '*.summary.json' 2> /dev/null | sort | head -n 1 || true)
if [[ -z $trace ]]; then
  echo "storm.sh: FAIL: no trace in $TRACE_DIR (see $WORK/storm.log)" >&2
  exit 1
fi
size=$(stat -c %s "$trace")
echo "== check: $(basename "$trace"), $((size / 1048576)) MiB"
check_rc=0
started_check=$SECONDS
"$PYTHON" "$BENCH_DIR/storm_check.py" --trace "$trace" --storm "$WORK/storm.log" --rss "$WORK/rss.csv" \
  --baseline-rss "$WORK/baseline_rss.csv" --cap-mb "$CAP_MB" --md "$REPORT" || check_rc=$?
{
  echo
  echo "## The run"
  echo
  echo "- \`kinetrace run --output DIR --memory-mb $CAP_MB -- kernel_storm --seconds $STORM_SECONDS --rate $RATE ${EXTRA[*]:+${EXTRA[*]} }--rss rss.csv\`:"
  echo "  exit status $rc, $wall s from start to the end of writing; trace $(basename "$trace"), $size bytes"
  echo "  ($((size / 1048576)) MiB), read back in $((SECONDS - started_check)) s"
  echo "- baseline: kernel_storm untraced for $BASELINE_SECONDS s: $(grep '^STORM' "$WORK/baseline.log" || echo 'no STORM line')"
  echo "- $(date -u +%Y-%m-%dT%H:%MZ); $(nproc) CPUs; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -n 1 || echo 'no GPU found by nvidia-smi');" \
       "kinetrace $(git -C "$SRC_DIR" rev-parse --short HEAD 2> /dev/null || echo unknown)"
  echo "- command: \`STORM_SECONDS=$STORM_SECONDS RATE=$RATE CAP_MB=$CAP_MB bench/gpu/storm.sh BUILD_DIR OUT_DIR\`"
} >> "$REPORT" 2> /dev/null || true
if [[ $KEEP_TRACE != 1 ]]; then rm -rf "$TRACE_DIR"; fi

if [[ $check_rc -ne 0 || $rc -ne 0 ]]; then
  echo "storm.sh: FAIL (kinetrace run exit $rc, check exit $check_rc); see $REPORT"
  exit 1
fi
echo "storm.sh: PASS; see $REPORT"
