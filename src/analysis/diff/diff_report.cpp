// `kinetrace diff` as tables for a terminal, under its findings, and as JSON for programs.

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/diff/trace_diff.h"
#include "analysis/finding_json.h"
#include "analysis/passes/analysis_common.h"
#include "analysis/report_text.h"

namespace kinetrace::detail {
namespace {

using report_text::shorten;

std::string time(double ns) {
  return report_text::duration(std::llround(ns));
}
std::string signedTime(double ns) {
  return (ns >= 0 ? "+" : "") + time(ns);
}
std::string perStep(double count) {
  return fmt::format("{:.3g}", count);
}

std::string sideTitle(const RankDiff& r, std::size_t index) {
  const std::string who =
      r.rank >= 0 ? fmt::format("rank {}", r.rank) : fmt::format("trace {}", index + 1);
  return fmt::format("== {}: {} -> {}\n", who, r.base.path, r.after.path);
}

std::string stepsLine(const RankDiff& r) {
  switch (r.match) {
    case StepMatch::Matched:
      return fmt::format("Steps: {} matched by number and compared (BASE has {}, NEW {})\n",
                         r.base.comparedCount, r.base.steps, r.after.steps);
    case StepMatch::Averaged:
      return fmt::format(
          "Steps: no number in common; per-step averages over BASE's {} and NEW's {}\n",
          r.base.comparedCount, r.after.comparedCount);
    case StepMatch::Whole:
      break;
  }
  return "Steps: none on one side or both; the traces compared whole (a step is the trace)\n";
}

void figureLine(std::string& out, const std::string& label, const FigureDiff& f) {
  out +=
      fmt::format("  {:<32} {:>10} {:>10} {:>10} {:>9}{}\n", shorten(label, 32), time(f.base),
                  time(f.after), signedTime(f.delta()), time(f.noise), f.beyondNoise ? "  *" : "");
}

void namesTable(std::string& out, const RankDiff& r, NameKind kind, const char* title,
                std::size_t top) {
  std::size_t total = 0;
  for (const NameDiff& n : r.names) total += n.kind == kind ? 1 : 0;
  if (total == 0) return;
  out += fmt::format("\n{} per step, largest change first ({} of {}; --json has every one):\n",
                     title, std::min(top, total), total);
  out += fmt::format("  {:<10} {:>17} {:>21} {:>10}  {}\n", "change", "count BASE -> NEW",
                     "time BASE -> NEW", "change", "name");
  std::size_t shown = 0;
  for (const NameDiff& n : r.names) {
    if (n.kind != kind) continue;
    if (shown++ == top) break;
    const std::string name = shorten(n.name, 70);
    out += fmt::format("  {:<10} {:>7} -> {:<7} {:>9} -> {:<9} {:>10}{} {}\n",
                       nameChangeName(n.change), perStep(n.baseCountPerStep),
                       perStep(n.afterCountPerStep), time(n.time.base), time(n.time.after),
                       signedTime(n.time.delta()), n.time.beyondNoise ? " *" : "  ", name);
  }
}

void rankText(std::string& out, const RankDiff& r, std::size_t index, const DiffOptions& options) {
  out += "\n" + sideTitle(r, index) + stepsLine(r);
  out += fmt::format("  {:<32} {:>10} {:>10} {:>10} {:>9}\n", "per step", "BASE", "NEW", "change",
                     "noise");
  figureLine(out, "step time", r.stepTime);
  const std::size_t devices = std::max(r.base.devices, r.after.devices);
  out += devices > 1 ? "  the step's GPU time, per GPU:\n" : "  the step's GPU time:\n";
  for (const PartDiff& part : r.parts) figureLine(out, std::string("  ") + part.name, part.time);
  for (const auto& [sync, figure] : r.hostWaitAfterSync) {
    figureLine(out, "  host wait begun in " + sync, figure);
  }
  out += "  (* changed beyond noise)\n";
  namesTable(out, r, NameKind::Kernel, "Kernels", options.top);
  namesTable(out, r, NameKind::Op, "Operators", options.top);
  namesTable(out, r, NameKind::Annotation, "Annotations", options.top);
  namesTable(out, r, NameKind::Call, "Runtime calls", options.top);
}

using Json = nlohmann::ordered_json;

Json figureJson(const FigureDiff& f) {
  return {{"base_ns", f.base},
          {"new_ns", f.after},
          {"delta_ns", f.delta()},
          {"base_spread_ns", f.baseSpread},
          {"new_spread_ns", f.afterSpread},
          {"noise_ns", f.noise},
          {"beyond_noise", f.beyondNoise}};
}

Json sideJson(const SideSteps& s) {
  return {{"path", s.path},
          {"steps", s.steps},
          {"compared", s.comparedCount},
          {"compared_numbers", s.compared},
          {"devices", s.devices},
          {"gpu_operations", s.gpuOps},
          {"gpu_operations_without_launch", s.gpuOpsWithoutCall},
          {"window_ns", s.windowNs},
          {"median_step_ns", s.medianStepNs},
          {"left_out", [&s] {
             Json steps = Json::array();
             for (const auto& [name, ns] : s.leftOut) steps.push_back({{"name", name}, {"ns", ns}});
             return steps;
           }()}};
}

Json nameJson(const NameDiff& n) {
  Json row = {{"name", n.name}};
  if (n.kind == NameKind::Kernel) row["kind"] = passes::kindName(n.opKind);
  row["change"] = nameChangeName(n.change);
  row["base_count"] = n.baseCount;
  row["new_count"] = n.afterCount;
  row["base_ns"] = n.baseNs;
  row["new_ns"] = n.afterNs;
  row["base_count_per_step"] = n.baseCountPerStep;
  row["new_count_per_step"] = n.afterCountPerStep;
  row["time_per_step"] = figureJson(n.time);
  if (n.dataLoading) row["data_loading"] = true;
  return row;
}

Json rankJson(const RankDiff& r) {
  Json rank = {{"rank", r.rank},
               {"match", stepMatchName(r.match)},
               {"base", sideJson(r.base)},
               {"new", sideJson(r.after)},
               {"step_time", figureJson(r.stepTime)}};
  Json parts = Json::array();
  for (const PartDiff& part : r.parts) {
    Json row = {{"part", part.id}};
    row.update(figureJson(part.time));
    parts.push_back(std::move(row));
  }
  rank["parts"] = std::move(parts);
  Json syncs = Json::array();
  for (const auto& [sync, figure] : r.hostWaitAfterSync) {
    Json row = {{"sync", sync}};
    row.update(figureJson(figure));
    syncs.push_back(std::move(row));
  }
  rank["host_wait_after_sync"] = std::move(syncs);
  const char* keys[kNameKinds] = {"kernels", "ops", "annotations", "calls"};
  for (std::size_t k = 0; k < kNameKinds; ++k) {
    Json rows = Json::array();
    for (const NameDiff& n : r.names) {
      if (static_cast<std::size_t>(n.kind) == k) rows.push_back(nameJson(n));
    }
    rank[keys[k]] = std::move(rows);
  }
  return rank;
}

}  // namespace

std::string formatDiff(const DiffReport& report, const DiffOptions& options) {
  std::string out;
  const bool one = report.ranks.size() == 1;
  const std::string base = !report.basePath.empty() ? report.basePath
                           : one                    ? report.ranks.front().base.path
                                                    : "";
  const std::string after = !report.afterPath.empty() ? report.afterPath
                            : one                     ? report.ranks.front().after.path
                                                      : "";
  out += fmt::format("kinetrace diff: BASE {} -> NEW {}\n", base, after);
  out += "\nFindings:\n";
  for (const DiffFinding& f : report.findings) out += "  * " + f.text + "\n";
  for (std::size_t i = 0; i < report.ranks.size(); ++i) rankText(out, report.ranks[i], i, options);
  return out;
}

std::string diffJson(const DiffReport& report) {
  Json root;
  root["base"] = report.basePath;
  root["new"] = report.afterPath;
  Json findings = Json::array();
  for (const DiffFinding& f : report.findings) {
    Json details = Json::object();
    if (!f.part.empty()) details["part"] = f.part;
    if (!f.names.empty()) details["names"] = f.names;
    findings.push_back(findingJson(
        f, f.rank ? std::optional(report.ranks[*f.rank].rank) : std::nullopt, std::move(details)));
  }
  root["findings"] = std::move(findings);
  Json ranks = Json::array();
  for (const RankDiff& r : report.ranks) ranks.push_back(rankJson(r));
  root["ranks"] = std::move(ranks);
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace kinetrace::detail
