// `kinetrace diff` as one self-contained HTML page in the style of analyze's report (its
// style sheet, its breakdown bars and text helpers): the findings, then per rank the step's
// GPU time of both runs as bars, every figure side by side, and the names that changed most.

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis_html_charts.h"
#include "analysis/diff/trace_diff.h"

namespace kinetrace::detail {
namespace {

using html::escape;

std::string time(double ns) {
  return html::duration(std::llround(ns));
}
std::string signedTime(double ns) {
  return (ns >= 0 ? "+" : "") + time(ns);
}

// A row of cells: numbers right-aligned, names allowed to break at their parts.
struct Column {
  std::string html;
  const char* cls = "";  // "n": a number, "name": a name
};

std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<Column>>& rows) {
  std::string out = "<div class=\"scroll\"><table><thead><tr>";
  for (const std::string& h : header) out += "<th>" + escape(h) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const Column& c : row) {
      out += *c.cls ? fmt::format("<td class=\"{}\">", c.cls) : std::string("<td>");
      out += c.html + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

std::vector<Column> figureRow(const std::string& label, const FigureDiff& f) {
  return {{escape(label)},
          {escape(time(f.base)), "n"},
          {escape(time(f.after)), "n"},
          {(f.beyondNoise ? "<b>" : std::string()) + escape(signedTime(f.delta())) +
               (f.beyondNoise ? "</b>" : ""),
           "n"},
          {escape(time(f.noise)), "n"},
          {f.beyondNoise ? "beyond noise" : "within noise"}};
}

// The step's GPU time of one side, per step (and GPU), as analyze's breakdown.
TimeBreakdown breakdownOf(const RankDiff& r, bool after) {
  TimeBreakdown t;
  for (const PartDiff& part : r.parts) {
    t.*part.field = std::llround(after ? part.time.after : part.time.base);
  }
  for (std::size_t i = 0; i < html::kPartCount; ++i) {
    (i < html::kBusyParts ? t.busyNs : t.idleNs) += t.*html::kParts[i].field;
  }
  t.windowNs = t.busyNs + t.idleNs;
  return t;
}

std::string namesSection(const RankDiff& r, NameKind kind, const char* title, std::size_t top) {
  std::vector<std::vector<Column>> rows;
  std::size_t total = 0;
  for (const NameDiff& n : r.names) {
    if (n.kind != kind) continue;
    if (total++ >= top) continue;
    rows.push_back(
        {{escape(nameChangeName(n.change))},
         {fmt::format("{:.3g} &rarr; {:.3g}", n.baseCountPerStep, n.afterCountPerStep), "n"},
         {escape(time(n.time.base)), "n"},
         {escape(time(n.time.after)), "n"},
         {(n.time.beyondNoise ? "<b>" : std::string()) + escape(signedTime(n.time.delta())) +
              (n.time.beyondNoise ? "</b>" : ""),
          "n"},
         {html::nameHtml(n.name, 80, kind == NameKind::Kernel), "name"}});
  }
  if (rows.empty()) return "";
  return fmt::format("<h3>{} per step <small>(the {} that changed most of {})</small></h3>\n",
                     title, rows.size(), total) +
         table({"change", "count", "BASE", "NEW", "change", "name"}, rows);
}

std::string rankSection(const RankDiff& r, std::size_t index, const DiffOptions& options) {
  const std::string who =
      r.rank >= 0 ? fmt::format("rank {}", r.rank) : fmt::format("trace {}", index + 1);
  std::string out = fmt::format("<h2>{} <small>{} &rarr; {}</small></h2>\n", escape(who),
                                escape(r.base.path), escape(r.after.path));
  out += fmt::format(
      "<p class=\"note\">Steps {}: BASE {} of {}, NEW {} of {} compared. Figures are per step "
      "(a mean over the steps compared; each bar is its run's step as 100%){}; a change is "
      "beyond noise when it is larger than "
      "{:g} times the larger step-to-step standard deviation of the step time and {:g}% of "
      "BASE's step "
      "time.</p>\n",
      stepMatchName(r.match), r.base.comparedCount, r.base.steps, r.after.comparedCount,
      r.after.steps, std::max(r.base.devices, r.after.devices) > 1 ? ", GPU time per GPU" : "",
      options.noiseSpreads, 100 * options.noiseFloorShare);
  out += html::breakdownBars(fmt::format("diff-{}", index),
                             {{"BASE", breakdownOf(r, false)}, {"NEW", breakdownOf(r, true)}});
  std::vector<std::vector<Column>> rows = {figureRow("step time", r.stepTime)};
  for (const PartDiff& part : r.parts) rows.push_back(figureRow(part.name, part.time));
  for (const auto& [sync, figure] : r.hostWaitAfterSync) {
    rows.push_back(figureRow("host wait begun in " + sync, figure));
  }
  out += table({"per step", "BASE", "NEW", "change", "noise", ""}, rows);
  out += namesSection(r, NameKind::Kernel, "Kernels", options.top);
  out += namesSection(r, NameKind::Op, "Operators", options.top);
  out += namesSection(r, NameKind::Annotation, "Annotations", options.top);
  out += namesSection(r, NameKind::Call, "Runtime calls", options.top);
  return out;
}

}  // namespace

std::string diffHtml(const DiffReport& report, const DiffOptions& options) {
  std::string out =
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>kinetrace diff</title>\n";
  out += html::pageStyle();
  out += "</head><body>\n<h1>What changed between two runs? A kinetrace diff</h1>\n";
  out += "<h2>Findings</h2><ul class=\"findings\">\n";
  for (const DiffFinding& f : report.findings)
    out += "<li>" + html::sentenceHtml(f.text) + "</li>\n";
  out += "</ul>\n";
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    out += rankSection(report.ranks[i], i, options);
  }
  return out + "</body></html>\n";
}

}  // namespace kinetrace::detail
