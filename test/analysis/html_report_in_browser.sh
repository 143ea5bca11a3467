#!/usr/bin/env bash
# The HTML report of `kinetrace analyze` opened in a real browser (headless Chromium): it
# renders, every chart and table is there, the console stays quiet, nothing is fetched, and
# no label is cut off or drawn over another (measured in the browser: each SVG text's box
# against its chart's viewBox and against the other texts, and the page against the
# window's width). Two reports: the sample job (two ranks, steps, every problem), and one
# trace without step ranges whose memory is a few kilobytes. Leaves screenshots to look at
# in WORK_DIR/report.png and WORK_DIR/plain.png.
#
#   html_report_in_browser.sh KINETRACE CHROMIUM MAKE_SAMPLE_TRACES_PY WORK_DIR
set -euo pipefail
kinetrace=$1 chromium=$2 make_traces=$3 work=$4
rm -rf "$work" && mkdir -p "$work/traces" "$work/plain"
python3 "$make_traces" "$work/traces"
python3 "$make_traces" "$work/plain" --ranks 1 --no-steps --alloc-start 0 --alloc-step 400
"$kinetrace" analyze -q "$work/traces" --html "$work/report.html" > "$work/report.txt"
"$kinetrace" analyze -q "$work/plain" --html "$work/plain.html" > "$work/plain.txt"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

browser=("$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
  --disable-extensions --window-size=1200,4000)

# Measures the page after layout and writes what it found into the DOM, for --dump-dom:
# a copy of the report with this script appended (the report itself has no script).
read -r -d '' measure <<'EOF' || true
<script>
(() => {
  const problems = [];
  const shown = (t) => Array.from(t.childNodes).filter((n) => n.nodeType === 3)
                            .map((n) => n.nodeValue).join('');
  for (const svg of document.querySelectorAll('svg.chart')) {
    const vb = svg.viewBox.baseVal;
    const chart = svg.dataset.chart;
    const texts = Array.from(svg.querySelectorAll('text')).map((t) => ({ label: shown(t), box: t.getBBox() }));
    for (const { label, box } of texts) {
      if (box.x < vb.x - 0.5 || box.y < vb.y - 0.5 || box.x + box.width > vb.x + vb.width + 0.5 ||
          box.y + box.height > vb.y + vb.height + 0.5) {
        problems.push(`clipped: "${label}" in ${chart} at x ${box.x.toFixed(1)}..${(box.x + box.width).toFixed(1)}, ` +
                      `y ${box.y.toFixed(1)}..${(box.y + box.height).toFixed(1)}, viewBox ${vb.width}x${vb.height}`);
      }
    }
    for (let i = 0; i < texts.length; ++i) {
      for (let j = i + 1; j < texts.length; ++j) {
        const a = texts[i].box, b = texts[j].box;
        const dx = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
        const dy = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
        if (dx > 1 && dy > 1) problems.push(`overlap: "${texts[i].label}" and "${texts[j].label}" in ${chart}`);
      }
    }
  }
  // The time axes of one trace end where its window does: the memory chart's included.
  for (const section of document.querySelectorAll('section.rank')) {
    const lastTick = (chart) => {
      const ticks = section.querySelectorAll(`svg[data-chart="${chart}"] text.tick`);
      return ticks.length ? shown(ticks[ticks.length - 1]) : null;
    };
    const end = lastTick('timeline');
    for (const chart of ['queue-depth', 'memory']) {
      const last = lastTick(chart);
      if (last !== null && last !== end) problems.push(`${chart} axis ends at ${last}, the timeline's at ${end}`);
    }
  }
  const page = document.documentElement;
  if (page.scrollWidth > window.innerWidth + 1) {
    problems.push(`the page is ${page.scrollWidth} px wide in a ${window.innerWidth} px window`);
  }
  for (const table of document.querySelectorAll('table')) {
    if (table.getBoundingClientRect().right > document.body.getBoundingClientRect().right + 1) {
      problems.push(`a table leaves the page: ${table.querySelector('th')?.textContent}`);
    }
  }
  const out = document.createElement('pre');
  out.id = 'layout-check';
  out.textContent = problems.length ? problems.join('\n') : 'layout ok';
  document.body.appendChild(out);
})();
</script>
EOF

check() {  # NAME: the report NAME.html in the browser
  local name=$1 page=$work/$1.html
  # Nothing fetched: no script, stylesheet, image or frame from anywhere. The only URLs are
  # SVG's namespace and the link to Perfetto's UI (a link, followed only if clicked).
  if grep -Eo 'src=|<script|<link|<iframe|@import|url\(' "$page"; then
    fail "$name: the report refers to outside resources"
  fi
  grep -Eo 'https?://[^"<]*' "$page" | sort -u |
    grep -Ev '^(http://www.w3.org/2000/svg|https://ui.perfetto.dev)$' &&
    fail "$name: the report names a URL"
  grep -Eo 'href="[^"]*"' "$page" | grep -v 'href="https://ui.perfetto.dev"' &&
    fail "$name: a link other than Perfetto's UI"
  grep -q 'Open trace file' "$page" || fail "$name: no instruction to open the trace in Perfetto"
  grep -q "kinetrace convert $work/$2" "$page" || fail "$name: no conversion command for the trace"

  { cat "$page"; printf '%s\n' "$measure"; } > "$work/$name.measured.html"  # parsed into the body
  timeout 120 "${browser[@]}" --enable-logging=stderr --v=0 --dump-dom \
    "file://$work/$name.measured.html" > "$work/$name.dom.html" 2> "$work/$name.browser.log" ||
    fail "$name: chromium could not render the report (see $work/$name.browser.log)"
  if grep -E 'CONSOLE|Uncaught|Refused to' "$work/$name.browser.log"; then
    fail "$name: the console reported errors"
  fi
  local layout
  layout=$(sed -n '/<pre id="layout-check">/,/<\/pre>/p' "$work/$name.dom.html")
  [[ -n $layout ]] || fail "$name: the layout check did not run (see $work/$name.browser.log)"
  grep -q 'layout ok' <<< "$layout" || fail "$name: labels cut off or overlapping:
$layout"

  timeout 120 "${browser[@]}" --screenshot="$work/$name.png" "file://$page" \
    > /dev/null 2>> "$work/$name.browser.log" || fail "$name: no screenshot"
  [[ -s $work/$name.png ]] || fail "$name: empty screenshot"
}

check report traces/rank0.json
dom=$work/report.dom.html
# Every chart of both ranks drawn, with its marks.
for chart in gpu-time steps timeline queue-depth memory launch-latency; do
  n=$(grep -c "data-chart=\"$chart\"" "$dom" || true)
  [[ $n -eq 2 ]] || fail "chart $chart drawn $n times, expected once per rank (2)"
done
rects=$(grep -o '<rect ' "$dom" | wc -l)
[[ $rects -gt 200 ]] || fail "only $rects bars and marks drawn"
# Numbers written on the charts, not only in tooltips: shares on the bars, counts on the
# histogram, units on every axis.
grep -q '<text class="value"[^>]*>28%<' "$dom" || fail "no share written on the GPU-time bar"
grep -q '<text class="value"[^>]*>600<' "$dom" || fail "no count written on the latency histogram"
grep -q '<text class="tick"[^>]*>60 ms<' "$dom" || fail "the time axis has no unit or misses the window's end"
grep -q '<text class="tick"[^>]*>100%<' "$dom" || fail "the share axis has no 100%"
grep -q '<text class="tick"[^>]*>150 MB<' "$dom" || fail "the memory axis has no unit"
# The tables of the text report.
for heading in 'Per step' 'Kernels' 'Tiny kernels' 'Streams' 'Launch latency' 'Longest idle gaps' 'Communication' \
  'Collectives started late on one rank'; do
  grep -q "<h[23]>$heading" "$dom" || fail "no section \"$heading\""
done
grep -q '<th>queue depth, most</th>' "$dom" || fail "the streams table has no queue depth"
grep -q '<th>issued from (host range)</th>' "$dom" || fail "the tiny kernels' issuers are missing"
grep -q '<th>share of GPU operation time</th>' "$dom" || fail "the kinds table is missing"
grep -q '<td>ProfilerStep#5</td>\|<span>ProfilerStep#5</span>' "$dom" || fail "the step table misses step 5"
# Short kernel names, the full one on hover.
grep -q 'title="void at::native::vectorized_elementwise_kernel&lt;4, at::native::AddFunctor&lt;float&gt;&gt;">vectorized_elementwise_kernel<' "$dom" ||
  fail "kernel names are not shortened with the full name on hover"
grep -q 'rank 1 started ncclDevKernel_AllReduce' "$dom" || fail "the straggler finding is missing"
grep -q 'a leak signature' "$dom" || fail "the memory finding is missing"

check plain plain/rank0.json
dom=$work/plain.dom.html
grep -q 'No step ranges in this trace' "$dom" || fail "plain: a trace without steps does not say so"
grep -q 'ProfilerStep#N' "$dom" || fail "plain: no word on how to mark steps"
grep -q 'peak 2.4 kB' "$dom" || fail "plain: memory of a few kilobytes not written in kB"
grep -q 'data-chart="steps"' "$dom" && fail "plain: a step chart without steps"
echo "reports rendered, layout checked: $rects marks; screenshots $work/report.png, $work/plain.png"
