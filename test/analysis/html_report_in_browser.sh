#!/usr/bin/env bash
# The HTML report of `kinetrace analyze` opened in a real browser (headless Chromium): it
# renders, every chart and table is there, the console stays quiet, nothing is fetched, and
# no label is cut off, drawn over another or crossed by its chart's line (measured in the
# browser: each SVG text's box against its chart's viewBox, the other texts and the chart's
# polylines and paths). Each report is measured in a window 900 and one 1400 px wide: the
# page never scrolls sideways, a table that does not fit scrolls in its own box (at 1400 px
# every table fits), no table cell is cut off, and no word of ordinary text breaks across
# lines (kernel and range names may, at their parts). The text shows no terminal markup:
# no backticks, no command-line flag of the report. Three reports: the sample job (two ranks,
# steps, every problem, GPU metrics: the widest tables), one trace without step ranges whose
# memory is a few kilobytes and peaks for a moment, and one recorded without a GPU (the host's
# view). Leaves whole-page screenshots to look at in WORK_DIR/{report,plain,host}-{900,1400}.png.
#
#   html_report_in_browser.sh KINETRACE CHROMIUM MAKE_SAMPLE_TRACES_PY WORK_DIR
set -euo pipefail
kinetrace=$1 chromium=$2 make_traces=$3 work=$4
rm -rf "$work" && mkdir -p "$work/traces" "$work/plain" "$work/host"
python3 "$make_traces" "$work/traces" --gpu-metrics
python3 "$make_traces" "$work/plain" --ranks 1 --no-steps --alloc-start 0 --alloc-step 400 \
  --alloc-spike 2000
"$kinetrace" analyze -q "$work/traces" --html "$work/report.html" > "$work/report.txt"
"$kinetrace" analyze -q "$work/plain" --html "$work/plain.html" > "$work/plain.txt"
python3 "$make_traces" "$work/host" --ranks 1 --host-only
"$kinetrace" analyze -q "$work/host" --html "$work/host.html" > "$work/host.txt"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

browser=("$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
  --disable-extensions)
widths=(900 1400)

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
    // The chart's lines as segments: a polyline's own, a path's sampled every 2 units.
    const segments = [];
    for (const line of svg.querySelectorAll('polyline')) {
      const points = Array.from(line.points);
      for (let i = 1; i < points.length; ++i) segments.push([points[i - 1], points[i]]);
    }
    for (const path of svg.querySelectorAll('path')) {
      const length = path.getTotalLength();
      for (let at = 0; at < length; at += 2) {
        segments.push([path.getPointAtLength(at), path.getPointAtLength(Math.min(at + 2, length))]);
      }
    }
    // Whether segment p-q enters the box, less half a unit on each side (Liang-Barsky).
    const enters = (p, q, box) => {
      const dx = q.x - p.x, dy = q.y - p.y;
      let t0 = 0, t1 = 1;
      for (const [d, room] of [[-dx, p.x - box.x - 0.5], [dx, box.x + box.width - 0.5 - p.x],
                               [-dy, p.y - box.y - 0.5], [dy, box.y + box.height - 0.5 - p.y]]) {
        if (d === 0) {
          if (room < 0) return false;
        } else if (d < 0) {
          t0 = Math.max(t0, room / d);
        } else {
          t1 = Math.min(t1, room / d);
        }
        if (t0 > t1) return false;
      }
      return true;
    };
    for (const { label, box } of texts) {
      if (segments.some(([p, q]) => enters(p, q, box))) problems.push(`crossed: "${label}" by a line of ${chart}`);
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
  if (page.scrollWidth > window.innerWidth) {
    problems.push(`the page is ${page.scrollWidth} px wide in a ${window.innerWidth} px window`);
  }
  // A table wider than the page scrolls in its own box; nothing of it is cut off.
  const right = Math.min(window.innerWidth, document.body.getBoundingClientRect().right);
  for (const table of document.querySelectorAll('table')) {
    const name = `the table of "${table.querySelector('th')?.textContent}"`;
    const box = table.parentElement;
    if (!box.matches('div.scroll') || !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) {
      problems.push(`${name} is not in a box of its own that scrolls sideways`);
      continue;
    }
    if (box.getBoundingClientRect().right > right + 0.5) problems.push(`${name}'s box leaves the page`);
    if (window.innerWidth >= 1400 && box.scrollWidth > box.clientWidth) {
      problems.push(`${name} needs scrolling in a ${window.innerWidth} px window`);
    }
    for (const cell of table.querySelectorAll('td, th')) {
      const what = `"${cell.textContent.trim().slice(0, 40)}" in ${name}`;
      if (cell.scrollWidth > cell.clientWidth + 1) problems.push(`cut off in its cell: ${what}`);
      if (cell.getBoundingClientRect().right > box.getBoundingClientRect().right + 0.5 &&
          box.scrollWidth <= box.clientWidth) {
        problems.push(`cut off by its box: ${what}`);
      }
    }
  }
  // No word of ordinary text breaks across lines: a word's box is on one line. Names (kernels,
  // ranges, paths, commands) may break at their parts; a word may after a hyphen or slash.
  const loose = 'td.name, code, h2 small, svg, pre';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest(loose)) continue;
    for (const word of node.nodeValue.matchAll(/[^\s\/-]+[\/-]?/g)) {
      if (word[0].length < 2) continue;
      const range = document.createRange();
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      const lines = new Set(Array.from(range.getClientRects()).filter((r) => r.width > 0)
                                 .map((r) => Math.round(r.top)));
      if (lines.size > 1) problems.push(`a word broken across lines: "${word[0]}"`);
    }
  }
  // Terminal markup: a `code` span's backticks, the flags of `kinetrace analyze`.
  const shownText = document.body.innerText;
  if (shownText.includes('`')) problems.push(`a backtick shown: ${shownText.match(/.{0,40}`.{0,40}/)[0]}`);
  const flag = shownText.match(/.{0,40}--(json|html|top|steps|tiny-us|rank|memory-mb)\b.{0,20}/);
  if (flag) problems.push(`a command-line flag of the report shown: ${flag[0]}`);
  const out = document.createElement('pre');
  out.id = 'layout-check';
  out.textContent = problems.length ? problems.join('\n') : 'layout ok';
  out.dataset.height = page.scrollHeight;
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
  local width at log layout height
  for width in "${widths[@]}"; do
    at="$name-$width" log=$work/$name-$width.browser.log
    timeout 120 "${browser[@]}" --window-size="$width,2000" --enable-logging=stderr --v=0 \
      --dump-dom "file://$work/$name.measured.html" > "$work/$at.dom.html" 2> "$log" ||
      fail "$at: chromium could not render the report (see $log)"
    if grep -E 'CONSOLE|Uncaught|Refused to' "$log"; then
      fail "$at: the console reported errors"
    fi
    layout=$(sed -n '/<pre id="layout-check"/,/<\/pre>/p' "$work/$at.dom.html")
    [[ -n $layout ]] || fail "$at: the layout check did not run (see $log)"
    grep -q 'layout ok' <<< "$layout" || fail "$at: in a $width px window:
$layout"
    # The whole page, as tall as it is.
    height=$(grep -o 'data-height="[0-9]*"' <<< "$layout" | grep -o '[0-9]*')
    timeout 120 "${browser[@]}" --window-size="$width,${height:-4000}" \
      --screenshot="$work/$at.png" "file://$page" > /dev/null 2>> "$log" ||
      fail "$at: no screenshot"
    [[ -s $work/$at.png ]] || fail "$at: empty screenshot"
  done
}

check report traces/rank0.json
dom=$work/report-1400.dom.html
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
grep -q '<th>kernels bound by</th>' "$dom" || fail "the step table has no GPU metrics' column"
grep -q '<td>ProfilerStep#5</td>\|<span>ProfilerStep#5</span>' "$dom" || fail "the step table misses step 5"
# Short kernel names, the full one on hover.
grep -q 'title="void at::native::vectorized_elementwise_kernel&lt;4, at::native::AddFunctor&lt;float&gt;&gt;">vectorized_<wbr>elementwise_<wbr>kernel<' "$dom" ||
  fail "kernel names are not shortened with the full name on hover"
grep -q 'rank 1 started ncclDevKernel_AllReduce' "$dom" || fail "the straggler finding is missing"
grep -q 'a leak signature' "$dom" || fail "the memory finding is missing"

check plain plain/rank0.json
dom=$work/plain-1400.dom.html
grep -q 'No step ranges in this trace' "$dom" || fail "plain: a trace without steps does not say so"
grep -q 'ProfilerStep#N' "$dom" || fail "plain: no word on how to mark steps"
grep -q 'peak 2.8 kB' "$dom" || fail "plain: memory of a few kilobytes not written in kB"
grep -q 'data-chart="steps"' "$dom" && fail "plain: a step chart without steps"

check host host/rank0.json
dom=$work/host-1400.dom.html
grep -q 'The recorder says why: no NVIDIA driver' "$dom" || fail "host: the reason for no GPU activity is missing"
grep -q '<h4>Steps (6)</h4>' "$dom" || fail "host: the steps are missing"
grep -q '<h4>Ranges by total time</h4>' "$dom" || fail "host: the ranges are missing"
grep -q '<h4>Threads by time inside a range</h4>' "$dom" || fail "host: the threads are missing"
echo "reports rendered, layout checked at ${widths[*]} px: $rects marks; screenshots" \
  "$work/{report,plain,host}-{${widths[0]},${widths[1]}}.png"
