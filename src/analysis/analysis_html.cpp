// The analysis as one self-contained HTML page: the findings, then per trace the charts
// (drawn here as inline SVG: no script, no library, nothing fetched, so the file opens the
// same anywhere, offline, and years from now) and the tables of the terminal report.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/trace_analysis.h"

namespace kinetrace::detail {
namespace {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ms(int64_t ns) {
  return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
}
std::string us(int64_t ns) {
  return fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
}
double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// The parts of a time breakdown, in the order and colours every chart uses.
struct Part {
  const char* name;
  const char* colour;
  int64_t TimeBreakdown::*field;
};
constexpr Part kParts[] = {
    {"compute", "#4e79a7", &TimeBreakdown::computeNs},
    {"communication", "#f28e2b", &TimeBreakdown::communicationNs},
    {"memory", "#59a14f", &TimeBreakdown::memoryNs},
    {"host wait", "#e15759", &TimeBreakdown::hostWaitNs},
    {"launch", "#edc948", &TimeBreakdown::launchNs},
    {"kernel wait", "#b07aa1", &TimeBreakdown::kernelWaitNs},
    {"waiting on other work", "#ff9da7", &TimeBreakdown::otherWorkWaitNs},
    {"other idle", "#bab0ac", &TimeBreakdown::otherIdleNs},
};

class Svg {
 public:
  Svg(std::string_view chart, int width, int height) {
    out_ = fmt::format(
        "<svg class=\"chart\" data-chart=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
        "height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\">\n",
        chart, width, height, width, height);
  }
  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view title) {
    out_ += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
        "fill=\"{}\"><title>{}</title></rect>\n",
        x, y, std::max(w, 0.0), std::max(h, 0.0), fill, escape(title));
  }
  void text(double x, double y, std::string_view content, std::string_view anchor = "start") {
    out_ += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"{}\">{}</text>\n", x, y,
                        anchor, escape(content));
  }
  void line(double x1, double y1, double x2, double y2) {
    out_ += fmt::format(
        "<line x1=\"{:.2f}\" y1=\"{:.2f}\" x2=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"#888\"/>\n", x1, y1,
        x2, y2);
  }
  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view colour) {
    out_ += "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" + std::string(colour) +
            "\" points=\"";
    for (const auto& [x, y] : points) out_ += fmt::format("{:.2f},{:.2f} ", x, y);
    out_ += "\"/>\n";
  }
  std::string finish() { return out_ + "</svg>\n"; }

 private:
  std::string out_;
};

std::string legend() {
  std::string out = "<p class=\"legend\">";
  for (const Part& p : kParts) {
    out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", p.colour, p.name);
  }
  return out + "</p>\n";
}

// One horizontal bar per row, split into the parts of its breakdown.
std::string breakdownBars(std::string_view chart,
                          const std::vector<std::pair<std::string, TimeBreakdown>>& rows) {
  constexpr int kLabel = 170, kWidth = 900, kRow = 22;
  Svg svg(chart, kLabel + kWidth + 10, static_cast<int>(rows.size()) * kRow + 24);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& [label, t] = rows[i];
    const double y = static_cast<double>(i) * kRow + 4;
    svg.text(kLabel - 6, y + 14, label.size() > 24 ? label.substr(0, 21) + "..." : label, "end");
    double x = kLabel;
    for (const Part& p : kParts) {
      const double share = pct(t.*p.field, t.windowNs);
      const double w = kWidth * share / 100.0;
      svg.rect(x, y, w, kRow - 6, p.colour,
               fmt::format("{}: {} {} ({:.1f}%)", label, p.name, ms(t.*p.field), share));
      x += w;
    }
  }
  const double axis = static_cast<double>(rows.size()) * kRow + 6;
  svg.line(kLabel, axis, kLabel + kWidth, axis);
  for (int tick = 0; tick <= 100; tick += 25) {
    svg.text(kLabel + kWidth * tick / 100.0, axis + 14, fmt::format("{}%", tick), "middle");
  }
  return svg.finish();
}

std::string timelineChart(const RankReport& r) {
  constexpr int kLabel = 70, kWidth = 960, kRow = 26;
  Svg svg("timeline", kLabel + kWidth + 10, static_cast<int>(r.devices.size()) * kRow + 26);
  int64_t windowNs = 0;
  for (std::size_t i = 0; i < r.devices.size(); ++i) {
    const DeviceReport& d = r.devices[i];
    const double y = static_cast<double>(i) * kRow + 4;
    svg.text(kLabel - 6, y + 15, fmt::format("GPU {}", d.device), "end");
    svg.rect(kLabel, y, kWidth, kRow - 6, "#eeeeee", fmt::format("GPU {}: idle", d.device));
    const double binWidth = static_cast<double>(kWidth) /
                            static_cast<double>(std::max<std::size_t>(1, d.busyTimeline.size()));
    for (std::size_t b = 0; b < d.busyTimeline.size(); ++b) {
      const double busy = std::min(1.0, d.busyTimeline[b]);
      if (busy <= 0) continue;
      const double h = (kRow - 6) * busy;
      svg.rect(kLabel + binWidth * static_cast<double>(b), y + (kRow - 6) - h, binWidth, h,
               "#4e79a7",
               fmt::format("GPU {} from {}: busy {:.0f}%", d.device,
                           ms(d.timelineBinNs * static_cast<int64_t>(b)), busy * 100));
    }
    windowNs = std::max(windowNs, d.timelineBinNs * static_cast<int64_t>(d.busyTimeline.size()));
  }
  const double axis = static_cast<double>(r.devices.size()) * kRow + 6;
  svg.line(kLabel, axis, kLabel + kWidth, axis);
  for (int tick = 0; tick <= 4; ++tick) {
    svg.text(kLabel + kWidth * tick / 4.0, axis + 14, ms(windowNs * tick / 4), "middle");
  }
  return svg.finish();
}

std::string kernelBars(const RankReport& r) {
  constexpr int kLabel = 360, kWidth = 600, kRow = 20;
  Svg svg("kernels", kLabel + kWidth + 120, static_cast<int>(r.kernels.size()) * kRow + 8);
  int64_t longest = 1;
  for (const KernelRow& k : r.kernels) longest = std::max(longest, k.duration.totalNs);
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    const KernelRow& k = r.kernels[i];
    const double y = static_cast<double>(i) * kRow + 4;
    const std::string label = k.name.size() > 56 ? k.name.substr(0, 53) + "..." : k.name;
    svg.text(kLabel - 6, y + 12, label, "end");
    const char* colour = k.kind == "communication" ? "#f28e2b"
                         : k.kind == "memory"      ? "#59a14f"
                                                   : "#4e79a7";
    const double w =
        kWidth * static_cast<double>(k.duration.totalNs) / static_cast<double>(longest);
    svg.rect(kLabel, y, w, kRow - 5, colour,
             fmt::format("{}: {} calls, {} in total, mean {}", k.name, k.duration.count,
                         ms(k.duration.totalNs), us(k.duration.meanNs)));
    svg.text(kLabel + w + 4, y + 12,
             fmt::format("{} ({:.1f}%)", ms(k.duration.totalNs), 100 * k.share));
  }
  return svg.finish();
}

std::string latencyHistogram(const RankReport& r) {
  constexpr int kLeft = 50, kWidth = 900, kHeight = 160;
  const auto& buckets = r.launchLatencyHistogram;
  Svg svg("launch-latency", kLeft + kWidth + 10, kHeight + 40);
  uint64_t most = 1;
  for (uint64_t n : buckets) most = std::max(most, n);
  const double w =
      static_cast<double>(kWidth) / static_cast<double>(std::max<std::size_t>(1, buckets.size()));
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const double h = kHeight * static_cast<double>(buckets[b]) / static_cast<double>(most);
    const std::string range = b == 0 ? "under 1 us"
                              : b + 1 == buckets.size()
                                  ? fmt::format("{} us and more", 1u << (b - 1))
                                  : fmt::format("{}-{} us", 1u << (b - 1), 1u << b);
    svg.rect(kLeft + w * static_cast<double>(b) + 1, 10 + kHeight - h, w - 2, h, "#4e79a7",
             fmt::format("{}: {} operations", range, buckets[b]));
    if (b % 2 == 0)
      svg.text(kLeft + w * (static_cast<double>(b) + 0.5), kHeight + 26,
               b == 0 ? "<1" : std::to_string(1u << (b - 1)), "middle");
  }
  svg.line(kLeft, 10 + kHeight, kLeft + kWidth, 10 + kHeight);
  svg.text(kLeft + kWidth, kHeight + 38, "launch call to start (us, log scale)", "end");
  return svg.finish();
}

std::string memoryChart(const RankReport& r) {
  constexpr int kLeft = 80, kWidth = 900, kHeight = 180;
  Svg svg("memory", kLeft + kWidth + 10, kHeight + 40);
  const auto& curve = r.memoryCurve;
  const int64_t t0 = curve.front().timeNs, t1 = std::max(curve.back().timeNs, t0 + 1);
  int64_t top = 1;
  for (const MemorySample& s : curve) top = std::max(top, s.allocatedBytes);
  std::vector<std::pair<double, double>> points;
  for (const MemorySample& s : curve) {
    points.emplace_back(
        kLeft + kWidth * static_cast<double>(s.timeNs - t0) / static_cast<double>(t1 - t0),
        10 + kHeight - kHeight * static_cast<double>(s.allocatedBytes) / static_cast<double>(top));
  }
  svg.polyline(points, "#e15759");
  svg.line(kLeft, 10 + kHeight, kLeft + kWidth, 10 + kHeight);
  svg.line(kLeft, 10, kLeft, 10 + kHeight);
  svg.text(kLeft - 6, 16, fmt::format("{:.1f} MB", static_cast<double>(top) / 1e6), "end");
  svg.text(kLeft - 6, 10 + kHeight, "0", "end");
  svg.text(kLeft + kWidth, kHeight + 28, ms(t1 - t0), "end");
  for (const MemorySample& s : curve) {
    if (s.allocatedBytes == r.memory.peakBytes) {
      svg.rect(
          kLeft + kWidth * static_cast<double>(s.timeNs - t0) / static_cast<double>(t1 - t0) - 3, 7,
          6, 6, "#e15759",
          fmt::format("peak {:.1f} MB", static_cast<double>(s.allocatedBytes) / 1e6));
      break;
    }
  }
  return svg.finish();
}

std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table><thead><tr>";
  for (const std::string& h : header) out += "<th>" + escape(h) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const std::string& cell : row) out += "<td>" + escape(cell) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string rankSection(const RankReport& r, std::size_t index, const AnalysisOptions& options) {
  const std::string who =
      r.rank >= 0 ? fmt::format("rank {}", r.rank) : fmt::format("trace {}", index + 1);
  std::string out =
      fmt::format("<section class=\"rank\"><h2>{} <small>{} ({} events)</small></h2>\n",
                  escape(who), escape(r.path), r.events);
  if (r.devices.empty()) return out + "<p>No GPU operations in this trace.</p></section>\n";

  out += "<h3>Timeline overview</h3><p>How busy each GPU was, over the window.</p>\n" +
         timelineChart(r);
  std::vector<std::pair<std::string, TimeBreakdown>> devices;
  for (const DeviceReport& d : r.devices)
    devices.emplace_back(fmt::format("GPU {}", d.device), d.time);
  out += "<h3>GPU time</h3>\n" + legend() + breakdownBars("gpu-time", devices);
  if (!r.steps.empty()) {
    std::vector<std::pair<std::string, TimeBreakdown>> steps;
    for (std::size_t k = 0; k < std::min(r.steps.size(), options.stepsShown); ++k) {
      steps.emplace_back(r.steps[k].name, r.steps[k].time);
    }
    out += "<h3>Busy and idle per step</h3>\n" + breakdownBars("steps", steps);
    if (r.steps.size() > options.stepsShown) {
      out += fmt::format("<p>The first {} of {} steps (all of them in the JSON report).</p>\n",
                         options.stepsShown, r.steps.size());
    }
  }
  out += fmt::format("<h3>Kernels</h3><p>{} kernels, {} of kernel time.</p>\n", r.kernelCount,
                     ms(r.kernelNs)) +
         kernelBars(r);
  if (r.launchLatency.count > 0) {
    out += fmt::format("<h3>Launch latency</h3><p>p50 {}, p90 {}, p99 {}, max {}.</p>\n",
                       us(r.launchLatency.p50Ns), us(r.launchLatency.p90Ns),
                       us(r.launchLatency.p99Ns), us(r.launchLatency.maxNs)) +
           latencyHistogram(r);
  }
  if (!r.memoryCurve.empty()) {
    out += fmt::format("<h3>Memory</h3><p>Allocated GPU memory; peak {:.1f} MB.</p>\n",
                       static_cast<double>(r.memory.peakBytes) / 1e6) +
           memoryChart(r);
  }
  if (r.communicationKernels > 0) {
    std::vector<std::vector<std::string>> rows;
    for (const DeviceReport& d : r.devices) {
      rows.push_back({fmt::format("GPU {}", d.device), ms(d.time.communicationNs),
                      ms(d.communicationOverlapNs),
                      fmt::format("{:.1f}%", pct(d.time.communicationNs, d.time.busyNs))});
    }
    out +=
        "<h3>Communication</h3>\n" +
        table({"device", "communication alone", "overlapped with compute", "of busy time"}, rows);
  }
  if (!r.ncclCalls.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const NcclCallRow& row : r.ncclCalls) {
      rows.push_back({row.call, fmt::format("{}", row.operations),
                      fmt::format("{:.3f} MB", static_cast<double>(row.bytes) / 1e6), ms(row.gpuNs),
                      fmt::format("{:.1f}", row.gigabytesPerSecond)});
    }
    out += "<h3>NCCL calls</h3><p>Sizes from NCCL's NVTX payloads.</p>\n" +
           table({"call", "operations", "moved", "GPU time", "GB/s"}, rows);
  }
  if (!r.gaps.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const GapReport& g : r.gaps) {
      rows.push_back(
          {fmt::format("GPU {}", g.device), us(g.durationNs), g.cause, g.endedBy, g.hostWas});
    }
    out += "<h3>Longest idle gaps</h3>\n" +
           table({"device", "length", "cause", "ended by", "the host was in"}, rows);
  }
  return out + "</section>\n";
}

}  // namespace

std::string reportHtml(const AnalysisReport& report, const AnalysisOptions& options) {
  std::string out = R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kinetrace analysis</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1120px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 36px; border-bottom: 1px solid #ddd; }
h2 small { font-weight: normal; color: #777; font-size: 13px; }
h3 { font-size: 15px; margin: 22px 0 6px; }
svg.chart { display: block; font: 11px system-ui, sans-serif; fill: #333; }
ul.findings li { margin: 6px 0; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border-bottom: 1px solid #eee; padding: 3px 10px; text-align: left; }
p.legend span { margin-right: 14px; white-space: nowrap; }
p.legend i { display: inline-block; width: 11px; height: 11px; margin-right: 4px; vertical-align: -1px; }
</style></head><body>
<h1>Why is the GPU idle? A kinetrace analysis</h1>
)";
  out += "<h2>Findings</h2><ul class=\"findings\">\n";
  for (const std::string& f : report.findings) out += "<li>" + escape(f) + "</li>\n";
  out += "</ul>\n";
  for (std::size_t i = 0; i < report.ranks.size(); ++i)
    out += rankSection(report.ranks[i], i, options);
  if (!report.stragglers.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const StragglerReport& s : report.stragglers) {
      rows.push_back({fmt::format("rank {}", s.slowRank), us(s.lateByNs), s.collective,
                      std::to_string(s.occurrence)});
    }
    out += "<h2>Collectives started late on one rank</h2>\n" +
           table({"slow rank", "late by", "collective", "occurrence"}, rows);
  }
  return out + "</body></html>\n";
}

}  // namespace kinetrace::detail
