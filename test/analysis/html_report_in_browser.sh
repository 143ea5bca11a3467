#!/usr/bin/env bash
# The HTML report of `kinetrace analyze` opened in a real browser (headless Chromium): it
# renders, every chart is drawn, the console stays quiet, and nothing is fetched. Leaves a
# screenshot to look at in WORK_DIR/report.png.
#
#   html_report_in_browser.sh KINETRACE CHROMIUM MAKE_SAMPLE_TRACES_PY WORK_DIR
set -euo pipefail
kinetrace=$1 chromium=$2 make_traces=$3 work=$4
rm -rf "$work" && mkdir -p "$work/traces"
python3 "$make_traces" "$work/traces"
"$kinetrace" analyze -q "$work/traces" --html "$work/report.html" > "$work/report.txt"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Nothing fetched: no script, stylesheet, image or frame from anywhere; the only URL is
# SVG's namespace.
if grep -Eo '(src|href)=|<script|<link|<iframe|@import|url\(' "$work/report.html"; then
  fail "the report refers to outside resources"
fi
grep -Eo 'https?://[^"]*' "$work/report.html" | sort -u | grep -v '^http://www.w3.org/2000/svg$' &&
  fail "the report names a URL"

browser=("$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
  --disable-extensions --window-size=1200,4000)
timeout 120 "${browser[@]}" --enable-logging=stderr --v=0 --dump-dom "file://$work/report.html" \
  > "$work/dom.html" 2> "$work/browser.log" || fail "chromium could not render the report (see $work/browser.log)"
if grep -E 'CONSOLE|Uncaught|Refused to' "$work/browser.log"; then fail "the console reported errors"; fi

# Every chart of both ranks drawn, with its marks.
for chart in timeline gpu-time steps kernels launch-latency memory; do
  n=$(grep -c "data-chart=\"$chart\"" "$work/dom.html" || true)
  [[ $n -eq 2 ]] || fail "chart $chart drawn $n times, expected once per rank (2)"
done
rects=$(grep -o '<rect ' "$work/dom.html" | wc -l)
[[ $rects -gt 200 ]] || fail "only $rects bars and marks drawn"
grep -q 'rank 1 started ncclDevKernel_AllReduce' "$work/dom.html" || fail "the straggler finding is missing"
grep -q 'a leak signature' "$work/dom.html" || fail "the memory finding is missing"

timeout 120 "${browser[@]}" --screenshot="$work/report.png" "file://$work/report.html" \
  > /dev/null 2>> "$work/browser.log" || fail "no screenshot"
[[ -s $work/report.png ]] || fail "empty screenshot"
echo "report rendered: $rects marks; screenshot $work/report.png"
