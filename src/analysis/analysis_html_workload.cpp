// Kernel sequences, GPU time per annotation, time at a full launch queue and copy bandwidth
// (workload_figures.h) as sections of the HTML page, in its tables' style.

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis_html_charts.h"
#include "analysis/workload_report.h"
#include "support/text.h"

namespace kinetrace::detail {
namespace {

using html::duration;
using html::escape;
using html::percent;

// A cell's HTML and its class: "n" for a number, "name" for a name that may break.
struct Cell {
  std::string html;
  const char* cls = nullptr;
};
Cell number(std::string_view s) {
  return {escape(s), "n"};
}
Cell name(std::string_view full, std::size_t width, bool kernel) {
  return {html::nameHtml(full, width, kernel), "name"};
}
Cell plain(std::string_view s) {
  return {escape(s)};
}

std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<Cell>>& rows) {
  std::string out = "<div class=\"scroll\"><table><thead><tr>";
  for (const std::string& h : header) out += "<th>" + escape(h) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const Cell& cell : row) {
      out += cell.cls ? fmt::format("<td class=\"{}\">", cell.cls) : std::string("<td>");
      out += cell.html + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

std::string leftOutNote(const std::map<std::string, uint64_t>& leftOut) {
  std::string out;
  for (const auto& [why, n] : leftOut) {
    out += fmt::format("<p class=\"note\">Left out: {} {}.</p>\n", withThousands(n), escape(why));
  }
  return out;
}

// The kernels of a chain, one after another, shortened (the full names on hover).
std::string chainHtml(const KernelSequenceRow& row) {
  std::string out;
  for (const std::string& kernel : row.kernels) {
    out += (out.empty() ? "" : " &rarr; ") + html::nameHtml(kernel, 40);
  }
  if (row.length > row.kernels.size()) {
    out +=
        fmt::format(" &rarr; &hellip; ({} more)", withThousands(row.length - row.kernels.size()));
  }
  return out;
}

std::string sequencesSection(const KernelSequenceReport& s) {
  if (s.rows.empty() && s.leftOut.empty() && s.noneBecause.empty()) return "";
  std::vector<std::vector<Cell>> rows;
  if (s.mode == "operator") {
    for (const KernelSequenceRow& row : s.rows) {
      rows.push_back({name(row.issuer, 50, false),
                      {chainHtml(row), "name"},
                      number(withThousands(row.count)),
                      number(duration(row.gpuNs)),
                      number(duration(row.operatorNs))});
    }
    return fmt::format(
               "<h3>Kernel sequences of &ldquo;{}&rdquo;</h3><p>As HTA finds them: the "
               "operations of each shallowest operator whose name holds it, with {} or "
               "more; {} distinct, the most frequent first.</p>\n",
               escape(s.operatorName), s.length, withThousands(s.chains)) +
           table({"operator", "operations", "count", "GPU time", "operator time"}, rows) +
           (s.noneBecause.empty()
                ? ""
                : "<p class=\"note\">None, as in HTA: " + escape(s.noneBecause) + ".</p>\n") +
           leftOutNote(s.leftOut);
  }
  for (const KernelSequenceRow& row : s.rows) {
    rows.push_back({{chainHtml(row), "name"},
                    name(row.acrossRanges     ? "(across host ranges)"
                         : row.issuer.empty() ? "(no host range)"
                                              : row.issuer,
                         40, false),
                    number(withThousands(row.count)),
                    number(duration(row.savedNs)),
                    number(duration(row.gpuNs)),
                    number(duration(row.launchNs)),
                    number(duration(row.gapNs))});
  }
  return fmt::format(
             "<h3>Kernel sequences</h3><p>Chains of {} kernels that ran back to back on "
             "a stream, launched by one thread, twice or more, and the innermost host range "
             "around their launches (of {} distinct chains), by what fusing each into one "
             "kernel would save: the launch calls after the first and the gaps between "
             "them.</p>\n",
             s.length, withThousands(s.chains)) +
         table({"kernels", "issued under", "count", "fusing saves", "GPU time", "launch calls",
                "gaps"},
               rows) +
         leftOutNote(s.leftOut);
}

std::string annotationsSection(const AnnotationReport& a) {
  if (a.rows.empty()) return "";
  std::vector<std::vector<Cell>> rows;
  for (const AnnotationRow& row : a.rows) {
    rows.push_back({name(row.name, 60, false), number(duration(row.gpuNs)),
                    number(percent(row.gpuNs, a.gpuNs)), number(withThousands(row.operations)),
                    number(withThousands(row.spans)), number(duration(row.spanNs))});
  }
  std::string out = fmt::format(
      "<h3>GPU time per annotation</h3><p>Each GPU operation counted in its innermost "
      "annotation (by {}): {} of the GPU operations' time is in one. Spans: the annotation's "
      "own GPU spans.</p>\n",
      escape(a.attributedBy.empty() ? "none" : a.attributedBy), percent(a.attributedNs, a.gpuNs));
  out += table({"annotation", "GPU time", "of all", "operations", "spans", "span time"}, rows);
  if (a.annotations > a.rows.size()) {
    out += fmt::format("<p>{} more annotations in the trace.</p>\n",
                       withThousands(a.annotations - a.rows.size()));
  }
  out += leftOutNote(a.leftOut);
  if (a.modules.empty()) return out;
  std::vector<std::vector<Cell>> modules;
  for (const AnnotationRow& row : a.modules) {
    modules.push_back({name(row.name, 60, false), number(duration(row.gpuNs)),
                       number(percent(row.gpuNs, a.gpuNs)), number(withThousands(row.operations))});
  }
  return out +
         "<h4>Modules</h4><p>Each GPU operation counted in the innermost module around its "
         "launch call.</p>\n" +
         table({"module", "GPU time", "of all", "operations"}, modules);
}

std::string fullQueueSection(const FullQueueReport& q) {
  if (q.streams.empty()) return "";
  std::vector<std::vector<Cell>> rows;
  for (const FullQueueStream& s : q.streams) {
    rows.push_back({plain(fmt::format("GPU {}", s.device)), number(std::to_string(s.stream)),
                    number(duration(s.fullNs)), number(percent(s.fullNs, q.windowNs)),
                    number(withThousands(static_cast<uint64_t>(s.maxDepth)))});
  }
  return fmt::format(
             "<h3>Launch queue full</h3><p>Time a stream's queue held {} operations or "
             "more, launched and not yet started: the host blocks in a launch call "
             "then.</p>\n",
             withThousands(static_cast<uint64_t>(q.maxQueueLength))) +
         table({"device", "stream", "full", "of the window", "deepest"}, rows);
}

std::string copyBandwidthSection(const RankReport& r) {
  const CopyBandwidthReport& c = r.copyBandwidth;
  if (c.kinds.empty()) return "";
  std::vector<std::vector<Cell>> rows;
  auto gbps = [](double v) {
    return number(v < 1e6 ? fmt::format("{:.2f}", v) : fmt::format("{:.2e}", v));
  };
  for (const CopyKindBandwidth& k : c.kinds) {
    rows.push_back({plain(k.kind), number(withThousands(k.operations)),
                    number(html::bytes(k.bytes)), number(duration(k.gpuNs)), gbps(k.meanGbps),
                    gbps(k.stdGbps), gbps(k.minGbps), gbps(k.p25Gbps), gbps(k.p50Gbps),
                    gbps(k.p75Gbps), gbps(k.maxGbps)});
  }
  return "<h3>Copy bandwidth</h3><p>Per kind of copy and memset, in GB/s: the bandwidth of the "
         "operations of that kind running at each moment, summed; the summary is over the "
         "values it takes above 0, the chart its mean in each slice of the window.</p>\n" +
         table({"kind", "operations", "bytes", "time", "mean", "std", "min", "p25", "median", "p75",
                "max"},
               rows) +
         html::copyBandwidthChart(r) + leftOutNote(c.leftOut);
}

}  // namespace

std::string workloadHtml(const RankReport& r) {
  return sequencesSection(r.kernelSequences) + annotationsSection(r.annotations) +
         fullQueueSection(r.fullQueue) + copyBandwidthSection(r);
}

}  // namespace kinetrace::detail
