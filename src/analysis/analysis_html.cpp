// The analysis as one self-contained HTML page: the findings, then per trace where the GPU's
// time went (per device and per step), the same window over time (busy, queue depth,
// memory), and the tables of the terminal report. Charts are inline SVG with their numbers
// written on them (analysis_html_charts.h): no script, no library, nothing fetched, so the
// file opens the same anywhere, offline, and years from now.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis_html_charts.h"
#include "analysis/critical_path_render.h"
#include "analysis/gpu_bound_report.h"
#include "analysis/report_text.h"
#include "analysis/trace_analysis.h"
#include "analysis/workload_report.h"
#include "support/text.h"

namespace kinetrace::detail {
namespace {

using html::bytes;
using html::duration;
using html::escape;
using html::nameHtml;
using html::percent;
using html::sinceStart;
using report_text::counted;

// A cell: its HTML, and whether it is a number (right-aligned, never wrapped) or a name (a
// long word of a kernel or range, the only text that may break inside a word).
struct Cell {
  std::string html;
  bool number = false;
  bool name = false;
};
Cell text(std::string_view s) {
  return {escape(s), false};
}
Cell number(std::string_view s) {
  return {escape(s), true};
}
Cell raw(std::string s) {
  return {std::move(s), false};
}
Cell nameCell(std::string_view full, std::size_t width, bool kernel = true) {
  return {nameHtml(full, width, kernel), false, true};
}

// A table in a box of its own that scrolls sideways where the window is too narrow for it,
// so the page itself never does and no column is cut off.
std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<Cell>>& rows, std::string_view cls = "") {
  std::string out = "<div class=\"scroll\">";
  out += cls.empty() ? "<table>" : fmt::format("<table class=\"{}\">", cls);
  out += "<thead><tr>";
  for (const std::string& h : header) out += "<th>" + escape(h) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const Cell& cell : row) {
      const char* open = cell.number ? "<td class=\"n\">" : "<td>";
      if (cell.name) open = "<td class=\"name\">";
      out += open + cell.html + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

std::string swatch(const char* colour) {
  return fmt::format("<i class=\"sw\" style=\"background:{}\"></i>", colour);
}

// A share as a bar inside a table cell, with its number.
std::string shareBar(double share, const char* colour = "#4e79a7") {
  return fmt::format(
      "<span class=\"bar\"><i style=\"width:{:.1f}%;background:{}\"></i></span>{:.1f}%",
      std::clamp(share, 0.0, 1.0) * 100, colour, share * 100);
}

const char* kindColour(std::string_view kind) {
  return kind == "communication" ? "#f28e2b" : kind == "memory" ? "#59a14f" : "#4e79a7";
}

// A mix's kernel time by class as one stacked bar (each class's share on hover), then the
// class of its averages with the numbers.
std::string boundBar(const BoundMix& mix, const std::vector<MetricName>& metrics) {
  const int64_t total = mix.totalNs();
  if (total <= 0) return "-";
  std::string out = "<span class=\"stack\">";
  for (GpuBound b : kGpuBounds) {
    const double share =
        static_cast<double>(mix.ns[static_cast<std::size_t>(b)]) / static_cast<double>(total);
    if (share <= 0) continue;
    out += fmt::format("<i style=\"width:{:.1f}%;background:{}\" title=\"{} {:.0f}%\"></i>",
                       share * 100, infoOf(b).colour, gpuBoundName(b), share * 100);
  }
  return out + "</span>" + escape(describeMix(mix, metrics));
}

std::string boundLegend() {
  std::string out = "<p class=\"legend\">";
  for (GpuBound b : kGpuBounds) out += swatch(infoOf(b).colour) + gpuBoundName(b) + " &nbsp; ";
  return out + "</p>\n";
}

// Where the time of each device went: the bars, then every part in time and share, a
// column per device (the table is the chart's legend too).
std::string gpuTime(const RankReport& r) {
  std::vector<std::pair<std::string, TimeBreakdown>> bars;
  for (const DeviceReport& d : r.devices)
    bars.emplace_back(fmt::format("GPU {}", d.device), d.time);
  std::vector<std::string> header = {""};
  for (const DeviceReport& d : r.devices) header.push_back(fmt::format("GPU {}", d.device));
  std::vector<std::vector<Cell>> rows;
  auto row = [&](std::string label, int64_t TimeBreakdown::*field, bool strong = false) {
    std::vector<Cell> cells = {raw(strong ? "<b>" + escape(label) + "</b>" : label)};
    for (const DeviceReport& d : r.devices) {
      const int64_t ns = d.time.*field;
      cells.push_back({field == &TimeBreakdown::windowNs
                           ? escape(duration(ns))
                           : fmt::format("{} <span class=\"pc\">{}</span>", escape(duration(ns)),
                                         percent(ns, d.time.windowNs)),
                       true});
    }
    rows.push_back(std::move(cells));
  };
  row("window", &TimeBreakdown::windowNs, true);
  row("busy", &TimeBreakdown::busyNs, true);
  for (std::size_t i = 0; i < html::kBusyParts; ++i)
    row(swatch(html::kParts[i].colour) + escape(html::kParts[i].name), html::kParts[i].field);
  row("idle", &TimeBreakdown::idleNs, true);
  for (std::size_t i = html::kBusyParts; i < html::kPartCount; ++i)
    row(swatch(html::kParts[i].colour) + escape(html::kParts[i].name), html::kParts[i].field);
  row("idle while data loading ran", &TimeBreakdown::dataLoadingIdleNs);
  return html::breakdownBars("gpu-time", bars) + table(header, rows, "parts");
}

std::string stepsSection(const RankReport& r, const AnalysisOptions& options) {
  std::string out = "<h3>Per step</h3>\n";
  if (r.steps.empty()) {
    return out +
           "<p class=\"note\">No step ranges in this trace, so no per-step view. torch.profiler "
           "marks a <code>ProfilerStep#N</code> range at each <code>prof.step()</code>; a program "
           "run under <code>kinetrace run</code> gets one from NVTX ranges named <code>step "
           "N</code> (<code>torch.cuda.nvtx.range_push(f\"step {i}\")</code>) or from "
           "<code>kinetrace::step()</code> calls.</p>\n";
  }
  const std::size_t shown = std::min(r.steps.size(), options.stepsShown);
  out += fmt::format(
      "<p>Busy and idle time of each step, as shares of its window (all GPUs together){}.</p>\n",
      shown < r.steps.size()
          ? fmt::format("; the first {} of {} steps, all of them in the JSON report", shown,
                        r.steps.size())
          : "");
  const bool memory = std::any_of(r.steps.begin(), r.steps.end(),
                                  [](const StepReport& s) { return s.allocatedAtEndBytes >= 0; });
  // What bounded each step's kernels: only where the trace has GPU metrics.
  const bool bound = !r.gpuMetrics.metrics.empty();
  std::vector<std::pair<std::string, TimeBreakdown>> bars;
  std::vector<std::vector<Cell>> rows;
  for (std::size_t k = 0; k < shown; ++k) {
    const StepReport& s = r.steps[k];
    const TimeBreakdown& t = s.time;
    bars.emplace_back(s.name, t);
    std::vector<Cell> row = {nameCell(s.name, 28, false), number(duration(s.endNs - s.startNs)),
                             number(percent(t.busyNs, t.windowNs))};
    for (const html::Part& p : html::kParts) row.push_back(number(percent(t.*p.field, t.windowNs)));
    row.push_back(number(percent(t.dataLoadingIdleNs, t.windowNs)));
    if (memory)
      row.push_back(number(s.allocatedAtEndBytes >= 0 ? bytes(s.allocatedAtEndBytes) : "-"));
    if (bound) row.push_back(raw(boundBar(s.bound, r.gpuMetrics.metrics)));
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"step", "length", "busy"};
  for (const html::Part& p : html::kParts) header.emplace_back(p.heading);
  header.emplace_back("in data loading");
  if (memory) header.emplace_back("allocated at end");
  if (bound) header.emplace_back("kernels bound by");
  return out + html::breakdownBars("steps", bars) + table(header, rows, "steps") +
         (bound ? boundLegend() : "");
}

std::string overTime(const RankReport& r, const AnalysisOptions& options) {
  const std::string queue = html::queueDepthChart(r, options.top);
  std::string out = fmt::format(
      "<h3>Over time</h3>\n<p>The window on one time axis: how busy each GPU was{}{}.</p>\n",
      queue.empty() ? ""
                    : ", how many operations waited in each stream's queue (launched, "
                      "not yet started: the most in each slice)",
      r.memoryCurve.empty() ? "" : ", the allocated GPU memory");
  out += html::timelineChart(r);
  if (!queue.empty()) {
    std::size_t streams = 0;
    for (const QueueDepthTimeline& q : r.queueDepthTimelines) {
      streams += std::any_of(q.maxDepth.begin(), q.maxDepth.end(), [](int d) { return d > 0; });
    }
    out += "<h4>Queue depth per stream</h4>\n";
    if (streams > options.top) {
      out += fmt::format("<p>The {} streams with the most operations, of {}.</p>\n", options.top,
                         streams);
    }
    out += queue;
  }
  if (!r.memoryCurve.empty()) {
    out += fmt::format(
               "<h4>Allocated GPU memory</h4><p>{} samples: {} at the first, {} at the last, "
               "peak {}.</p>\n",
               withThousands(r.memory.samples), bytes(r.memory.firstBytes),
               bytes(r.memory.lastBytes), bytes(r.memory.peakBytes)) +
           html::memoryChart(r);
  }
  return out;
}

std::string streamsTable(const RankReport& r) {
  std::vector<std::vector<Cell>> rows;
  for (const DeviceReport& d : r.devices) {
    for (const StreamBreakdown& s : d.streams) {
      rows.push_back({text(fmt::format("GPU {}", s.device)), number(std::to_string(s.stream)),
                      number(withThousands(s.operations)), number(duration(s.busyNs)),
                      number(percent(s.busyNs, d.time.windowNs)),
                      number(std::to_string(s.maxQueueDepth))});
    }
  }
  return "<h3>Streams</h3>\n" +
         table({"device", "stream", "operations", "busy", "of the window", "queue depth, most"},
               rows);
}

// What the GPU metrics say of all kernels, and what sampling lost, so the numbers can be
// judged: nothing for a trace without them.
std::string gpuMetricsNote(const RankReport& r) {
  const GpuMetricsReport& m = r.gpuMetrics;
  if (!m.any()) return "";
  std::string out = "<h4>GPU metrics</h4>\n";
  if (!m.metrics.empty()) {
    out += fmt::format(
               "<p>{} of {} kernels carry their metric averages. All kernels: {} (a unit at "
               "{:.0f}% of "
               "its peak or more limits a kernel). Kernel time bound by: {}</p>\n",
               withThousands(m.kernelsWithMetrics), withThousands(m.kernels),
               escape(describeMix(m.all, m.metrics)), kLimiterPercent, boundBar(m.all, m.metrics)) +
           boundLegend();
  }
  if (m.hasMetadata) {
    out += fmt::format(
        "<p{}>Sampled every {}: {} samples kept, {} lost, {} corrupted, {} set-up samples "
        "dropped{}.</p>\n",
        m.lost > 0 || m.corrupted > 0 ? " class=\"note\"" : "", duration(m.intervalNs),
        withThousands(m.samples), withThousands(m.lost), withThousands(m.corrupted),
        withThousands(m.setupDropped),
        m.kernelsWithoutTheirSamples > 0 ? fmt::format("; {} kernels ran without their samples",
                                                       withThousands(m.kernelsWithoutTheirSamples))
                                         : "");
  }
  if (m.fit.done) {
    std::string sentence = fitSentence(m);
    sentence[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(sentence[0])));
    out += "<p>" + escape(sentence) + ".</p>\n";
  }
  return out;
}

std::string kernelsSection(const RankReport& r) {
  std::string out = fmt::format(
      "<h3>Kernels</h3><p>{} kernels, {} of kernel time, by kind, then the {} longest in total "
      "(names shortened; the full name on hover).</p>\n",
      withThousands(r.kernelCount), duration(r.kernelNs), r.kernels.size());
  std::vector<std::vector<Cell>> kinds;
  for (const KernelRow& k : r.kinds) {
    kinds.push_back({raw(swatch(kindColour(k.kind)) + escape(k.kind)),
                     number(withThousands(k.duration.count)), number(duration(k.duration.totalNs)),
                     raw(shareBar(k.share, kindColour(k.kind)))});
  }
  out += table({"kind", "operations", "total", "share of GPU operation time"}, kinds);
  // The bound column only where the trace has GPU metrics.
  const bool bound = !r.gpuMetrics.metrics.empty();
  std::vector<std::vector<Cell>> rows;
  for (const KernelRow& k : r.kernels) {
    rows.push_back({nameCell(k.name, 60), text(k.kind), number(withThousands(k.duration.count)),
                    number(duration(k.duration.totalNs)),
                    raw(shareBar(k.share, kindColour(k.kind))), number(duration(k.duration.meanNs)),
                    number(duration(k.duration.p50Ns)), number(duration(k.duration.maxNs))});
    if (bound) {
      rows.back().push_back(k.bound.empty()
                                ? text("-")
                                : raw(swatch(infoOf(k.bound.bound).colour) +
                                      escape(kernelBoundText(k, r.gpuMetrics.metrics))));
    }
  }
  std::vector<std::string> header = {"kernel", "kind", "count",  "total",
                                     "share",  "mean", "median", "max"};
  if (bound) header.emplace_back("bound");
  return out + table(header, rows, "kernels") + gpuMetricsNote(r);
}

std::string tinySection(const RankReport& r) {
  const TinyKernelReport& tiny = r.tiny;
  std::string out = fmt::format(
      "<h3>Tiny kernels</h3><p>{} kernels under {} ({:.0f}% of all kernels): {} on the GPU, {} "
      "in their launch calls; {} took longer to launch than to run.</p>\n",
      withThousands(tiny.count), duration(tiny.thresholdNs), 100 * tiny.shareOfKernels,
      duration(tiny.kernelNs), duration(tiny.launchNs), withThousands(tiny.launchLongerCount));
  if (tiny.issuers.empty()) return out;
  std::vector<std::vector<Cell>> rows;
  for (const auto& [issuer, n] : tiny.issuers) {
    const double share = tiny.count > 0 ? static_cast<double>(n) / tiny.count : 0.0;
    rows.push_back({nameCell(issuer, 70, false), number(withThousands(n)), raw(shareBar(share))});
  }
  uint64_t listed = 0;
  for (const auto& issuer : tiny.issuers) listed += issuer.second;
  if (listed < tiny.count) {
    out += fmt::format("<p>The {} host ranges below issued {} of them.</p>\n", tiny.issuers.size(),
                       percent(static_cast<int64_t>(listed), static_cast<int64_t>(tiny.count)));
  }
  return out + table({"issued from (host range)", "tiny kernels", "share of them"}, rows);
}

std::string latencySection(const RankReport& r) {
  if (r.launchLatency.count == 0) return "";
  const Distribution& l = r.launchLatency;
  return fmt::format(
             "<h3>Launch latency</h3><p>From the launch call to the operation's start, over {} "
             "operations: p50 {}, p90 {}, p99 {}, max {}.</p>\n",
             withThousands(l.count), duration(l.p50Ns), duration(l.p90Ns), duration(l.p99Ns),
             duration(l.maxNs)) +
         html::latencyHistogram(r);
}

std::string gapsSection(const RankReport& r) {
  if (r.gaps.empty()) return "";
  const int64_t start = r.devices.empty() ? 0 : r.devices.front().timelineStartNs;
  // What was found in the trace is a column only where some gap has it; a gap without an
  // operation or host range where others have one says so with a dash, not an empty cell.
  const bool evidence = std::any_of(r.gaps.begin(), r.gaps.end(),
                                    [](const GapReport& g) { return !g.evidence.empty(); });
  auto nameOrDash = [](const std::string& full, bool kernel) {
    return full.empty() ? text("-") : nameCell(full, 50, kernel);
  };
  std::vector<std::vector<Cell>> rows;
  for (const GapReport& g : r.gaps) {
    std::vector<Cell> row = {text(fmt::format("GPU {}", g.device)),
                             number(sinceStart(g.startNs - start)), number(duration(g.durationNs)),
                             text(g.cause)};
    if (evidence) row.push_back(text(g.evidence.empty() ? "-" : g.evidence));
    row.push_back(nameOrDash(g.endedBy, true));
    row.push_back(nameOrDash(g.hostWas, false));
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"device", "from trace start", "length", "cause"};
  if (evidence) header.emplace_back("found in the trace");
  header.emplace_back("ended by");
  header.emplace_back("the host was in");
  std::string out = "<h3>Longest idle gaps</h3>\n" + table(header, rows);
  // What the trace shows the idle time waited on: a Stream Wait Event on a queued
  // operation's stream; a sync the host was in when the GPU ran out of work.
  auto foundTable = [&out](const char* heading, const char* what,
                           const std::vector<FoundRow>& found) {
    if (found.empty()) return;
    std::vector<std::vector<Cell>> foundRows;
    for (const FoundRow& f : found) {
      foundRows.push_back({text(f.found), number(withThousands(f.gaps)), number(duration(f.ns))});
    }
    out += fmt::format("<h3>{}</h3>\n", heading) + table({what, "gaps", "idle time"}, foundRows);
  };
  foundTable("Waiting on other work", "what the queued work waited on", r.otherWork);
  foundTable("Host wait that began in a sync", "the sync", r.hostWaitAfterSync);
  return out;
}

std::string communicationSection(const RankReport& r) {
  std::string out;
  if (r.communicationKernels > 0) {
    std::vector<std::vector<Cell>> rows;
    for (const DeviceReport& d : r.devices) {
      rows.push_back({text(fmt::format("GPU {}", d.device)),
                      number(duration(d.time.communicationNs)),
                      number(duration(d.communicationOverlapNs)),
                      number(percent(d.time.communicationNs, d.time.busyNs))});
    }
    out +=
        "<h3>Communication</h3>\n" +
        table({"device", "communication alone", "overlapped with compute", "of busy time"}, rows);
  }
  if (!r.ncclCalls.empty()) {
    std::vector<std::vector<Cell>> rows;
    for (const NcclCallRow& row : r.ncclCalls) {
      rows.push_back({text(row.call), number(withThousands(row.operations)),
                      number(bytes(static_cast<int64_t>(row.bytes))), number(duration(row.gpuNs)),
                      number(fmt::format("{:.1f}", row.gigabytesPerSecond))});
    }
    out += "<h3>NCCL calls</h3><p>Sizes from NCCL's NVTX payloads.</p>\n" +
           table({"call", "operations", "moved", "GPU time", "GB/s"}, rows);
  }
  return out;
}

// A trace without GPU operations: why, and what the host did (its steps, the ranges that took
// the most time, the threads that ran them).
std::string hostSection(const RankReport& r, const AnalysisOptions& options) {
  const HostReport& host = r.host;
  std::string out = "<h3>No GPU activity</h3>\n";
  out += host.gpuRecorded
             ? "<p class=\"note\">GPU activity was recorded, and no kernel, copy or memset ran "
               "in the window.</p>\n"
         : host.gpuStatus.empty()
             ? "<p class=\"note\">The trace holds no kernel, copy or memset, and does not say "
               "why. Record GPU activity with <code>kinetrace run</code>, or torch.profiler's "
               "CUDA activity (<code>ProfilerActivity.CUDA</code>).</p>\n"
             : "<p class=\"note\">The recorder says why: " + escape(host.gpuStatus) + ".</p>\n";
  out += fmt::format("<h3>The host</h3>\n<p>{} on {} over {}.</p>\n",
                     counted(host.ranges, "range", "ranges"),
                     counted(host.threadCount, "thread", "threads"), duration(host.windowNs));
  if (!r.steps.empty()) {
    const std::size_t shown = std::min(r.steps.size(), options.stepsShown);
    std::vector<std::vector<Cell>> rows;
    for (std::size_t k = 0; k < shown; ++k) {
      const StepReport& s = r.steps[k];
      rows.push_back({nameCell(s.name, 28, false), number(duration(s.endNs - s.startNs))});
    }
    out += fmt::format("<h4>Steps ({})</h4>\n", withThousands(r.steps.size())) +
           table({"step", "length"}, rows);
  }
  if (!host.top.empty()) {
    std::vector<std::vector<Cell>> rows;
    for (const HostRangeRow& row : host.top) {
      const int64_t mean = row.totalNs / static_cast<int64_t>(std::max<uint64_t>(row.count, 1));
      rows.push_back({nameCell(row.name, 60, false), number(withThousands(row.count)),
                      number(duration(row.totalNs)), number(duration(mean)),
                      number(duration(row.maxNs))});
    }
    out +=
        "<h4>Ranges by total time</h4><p>All threads; a range nested in another counts in "
        "both.</p>\n" +
        table({"range", "count", "total", "mean", "longest"}, rows);
  }
  if (!host.threads.empty()) {
    std::vector<std::vector<Cell>> rows;
    for (const HostThreadRow& row : host.threads) {
      rows.push_back({number(std::to_string(row.tid)),
                      nameCell(row.name.empty() ? "(unnamed)" : row.name, 40, false),
                      number(duration(row.busyNs)), number(percent(row.busyNs, host.windowNs)),
                      number(withThousands(row.ranges))});
    }
    out += "<h4>Threads by time inside a range</h4>\n" +
           table({"thread", "name", "inside a range", "of the window", "ranges"}, rows);
  }
  return out;
}

std::string rankSection(const RankReport& r, std::size_t index, const AnalysisOptions& options) {
  const std::string who =
      r.rank >= 0 ? fmt::format("rank {}", r.rank) : fmt::format("trace {}", index + 1);
  std::string out = fmt::format(
      "<section class=\"rank\" id=\"trace{}\"><h2>{} <small>{} ({} events)</small></h2>\n", index,
      escape(who), escape(r.path), withThousands(r.events));
  if (r.devices.empty()) {
    return out + hostSection(r, options) + criticalPathHtml(r.criticalPath, options) +
           "</section>\n";
  }
  const int64_t window = r.time.windowNs / static_cast<int64_t>(r.devices.size());
  out += fmt::format(
      "<h3>Where the GPU's time went</h3><p>A {} window on {} GPU{}: busy {}, idle {}. Busy "
      "time is compute, communication or memory work; idle time is split by what ended it "
      "(before the first GPU operation, the host launching late, the launch itself, a queued "
      "kernel's wait, other work the trace shows).</p>\n",
      duration(window), r.devices.size(), r.devices.size() > 1 ? "s" : "",
      percent(r.time.busyNs, r.time.windowNs), percent(r.time.idleNs, r.time.windowNs));
  out += gpuTime(r);
  out += overTime(r, options);
  out += stepsSection(r, options);
  out += criticalPathHtml(r.criticalPath, options);
  out += kernelsSection(r);
  out += tinySection(r);
  out += streamsTable(r);
  out += latencySection(r);
  out += gapsSection(r);
  out += communicationSection(r);
  out += workloadHtml(r);
  return out + "</section>\n";
}

// Only names (td.name, code, a path) may break inside a word, and those at their parts. The
// page is as wide as a step table with every column (GPU metrics' too) needs at 1400 px.
// A table's scrolling box shades the side where more of it is out of view, with no script:
// the shadows stay with the box, white covers that move with the table hide them at its ends.
constexpr std::string_view kStyle = R"(<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1280px; padding: 0 12px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 36px; border-bottom: 1px solid #ddd; }
h2 small { font-weight: normal; color: #777; font-size: 13px; overflow-wrap: break-word; }
h3 { font-size: 15px; margin: 24px 0 6px; } h4 { font-size: 13px; margin: 14px 0 4px; }
svg.chart { display: block; max-width: 100%; height: auto; font: 11px system-ui, sans-serif; fill: #333; }
svg.chart text.value { font-weight: 600; }
ul.findings li { margin: 6px 0; }
p.note { background: #f6f6f2; border-left: 3px solid #bab0ac; padding: 6px 10px; }
code { font-size: 12.5px; background: #f3f3f3; padding: 0 3px; overflow-wrap: break-word; }
div.scroll { overflow-x: auto; margin: 6px 0 10px; background: linear-gradient(to right, #fff 30%, #fff0) left / 40px 100% local no-repeat, linear-gradient(to left, #fff 30%, #fff0) right / 40px 100% local no-repeat, radial-gradient(farthest-side at 0 50%, #0003, #0000) left / 12px 100% no-repeat, radial-gradient(farthest-side at 100% 50%, #0003, #0000) right / 12px 100% no-repeat; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border-bottom: 1px solid #eee; padding: 3px 8px; text-align: left; vertical-align: top; }
th { font-weight: 600; color: #555; }
td.n { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.name { overflow-wrap: break-word; min-width: 8em; }
span.name { border-bottom: 1px dotted #999; }
i.sw { display: inline-block; width: 11px; height: 11px; margin-right: 6px; vertical-align: -1px; }
span.bar { display: inline-block; width: 90px; height: 10px; background: #eee; margin-right: 6px; vertical-align: 0; }
span.bar i { display: block; height: 10px; }
td:has(span.bar) { white-space: nowrap; }
td:has(> span.stack), table.kernels td:has(> i.sw) { min-width: 15em; }
table.parts td.n { min-width: 9em; }
span.pc { display: inline-block; min-width: 4.2em; color: #555; }
span.stack { display: inline-block; width: 110px; height: 10px; background: #eee; margin-right: 6px; white-space: nowrap; font-size: 0; }
span.stack i { display: inline-block; height: 10px; }
p.legend { font-size: 12px; color: #555; margin: 0 0 8px; }
</style>)";

}  // namespace

std::string_view html::pageStyle() {
  return kStyle;
}

std::string reportHtml(const AnalysisReport& report, const AnalysisOptions& options) {
  std::string out =
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>kinetrace analysis</title>\n";
  out += kStyle;
  out += "</head><body>\n<h1>Why is the GPU idle? A kinetrace analysis</h1>\n";
  out += "<h2>Findings</h2><ul class=\"findings\">\n";
  for (const Finding& f : report.findings) out += "<li>" + html::sentenceHtml(f.text) + "</li>\n";
  out += "</ul>\n";
  if (!report.ranks.empty()) {
    const std::string& path = report.ranks.front().path;
    out += fmt::format(
        "<p class=\"note\">Every event of a trace, on its own timeline: open <a "
        "href=\"https://ui.perfetto.dev\">https://ui.perfetto.dev</a>, choose \"Open trace "
        "file\" and pick the trace ({}). A large trace loads faster in Perfetto's own format: "
        "<code>kinetrace convert {} trace.pftrace</code>.</p>\n",
        escape(path), escape(path));
  }
  for (std::size_t i = 0; i < report.ranks.size(); ++i)
    out += rankSection(report.ranks[i], i, options);
  if (!report.stragglers.empty()) {
    std::vector<std::vector<Cell>> rows;
    for (const StragglerReport& s : report.stragglers) {
      rows.push_back({text(fmt::format("rank {}", s.slowRank)), number(duration(s.lateByNs)),
                      nameCell(s.collective, 60), number(std::to_string(s.occurrence))});
    }
    out += "<h2>Collectives started late on one rank</h2>\n" +
           table({"slow rank", "late by", "collective", "occurrence"}, rows);
  }
  return out + "</body></html>\n";
}

}  // namespace kinetrace::detail
