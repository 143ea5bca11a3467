#include "analysis/critical_path_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/analysis_html_charts.h"
#include "analysis/report_text.h"

namespace kinetrace::detail {
namespace {

struct PartInfo {
  const char* key;
  const char* name;
  const char* heading;  // a table column's
  const char* colour;
};
constexpr PartInfo kPartInfo[kPathParts] = {
    {"cpu", "CPU (operators, calls)", "CPU", "#9c755f"},
    {"host_gap", "host between operators", "host gap", "#bab0ac"},
    {"data_loading", "data loading", "data", "#edc948"},
    {"launch", "launch", "launch", "#b07aa1"},
    {"compute", "GPU compute", "compute", "#4e79a7"},
    {"communication", "communication", "comm", "#f28e2b"},
    {"memory", "copies and memsets", "memory", "#59a14f"},
    {"sync", "synchronisation", "sync", "#e15759"},
    {"gpu_gap", "GPU between operations", "GPU gap", "#76b7b2"},
};
const PartInfo& infoOf(PathPart part) {
  return kPartInfo[static_cast<std::size_t>(part)];
}

// A contributor over every step: its time and savings summed over the steps it was a top
// contributor of.
struct Summed {
  std::string name;
  PathPart part = PathPart::Cpu;
  uint64_t events = 0;
  uint64_t steps = 0;
  int64_t onPathNs = 0;
  int64_t savingNs = 0;
  int64_t savingBoundNs = 0;
};
std::vector<Summed> summedContributors(const CriticalPathReport& path, std::size_t top) {
  std::map<std::pair<PathPart, std::string>, Summed> by;
  for (const CriticalPathStep& step : path.steps) {
    for (const PathContributor& c : step.contributors) {
      Summed& s = by[{c.part, c.name}];
      s.name = c.name;
      s.part = c.part;
      s.events += c.events;
      ++s.steps;
      s.onPathNs += c.onPathNs;
      s.savingNs += c.savingNs;
      s.savingBoundNs += c.savingBoundNs;
    }
  }
  std::vector<Summed> out;
  for (auto& [key, s] : by) out.push_back(std::move(s));
  std::sort(out.begin(), out.end(), [](const Summed& a, const Summed& b) {
    return a.onPathNs != b.onPathNs ? a.onPathNs > b.onPathNs : a.name < b.name;
  });
  if (out.size() > top) out.resize(top);
  return out;
}

std::string contributorName(const std::string& name, PathPart part) {
  if (!name.empty()) return name;
  return part == PathPart::HostGap || part == PathPart::DataLoading
             ? "(between the step's top-level operators)"
             : "(unnamed)";
}

// Whether a contributor's name is a GPU operation's, which HTML shortens as kernels' names.
bool namesAKernel(PathPart part, const std::string& name) {
  return part == PathPart::Compute || part == PathPart::Memory || part == PathPart::GpuGap ||
         (part == PathPart::Communication && name.rfind("c10d::", 0) != 0);
}

uint64_t stepsWithPath(const CriticalPathReport& path) {
  return static_cast<uint64_t>(std::count_if(path.steps.begin(), path.steps.end(),
                                             [](const auto& s) { return s.skipped.empty(); }));
}

}  // namespace

const char* pathPartKey(PathPart part) {
  return infoOf(part).key;
}
const char* pathPartName(PathPart part) {
  return infoOf(part).name;
}

std::string criticalPathText(const CriticalPathReport& path, const AnalysisOptions& options) {
  using report_text::duration;
  using report_text::percent;
  if (!path.asked) return "";
  std::string out =
      "Critical path (per step, the longest chain of dependent work; HTA weighs "
      "waiting as nothing)\n";
  if (!path.failed.empty()) return out + "  not found: " + path.failed + "\n";
  out += fmt::format("  {:<20} {:>10} {:>10}", "step", "length", "HTA's");
  for (const PartInfo& p : kPartInfo) out += fmt::format(" {:>8}", p.heading);
  out += "\n";
  for (std::size_t k = 0; k < std::min(path.steps.size(), options.stepsShown); ++k) {
    const CriticalPathStep& s = path.steps[k];
    out += fmt::format("  {:<20}", report_text::shorten(s.name, 20));
    if (!s.skipped.empty()) {
      out += " skipped: " + s.skipped + "\n";
      continue;
    }
    out += fmt::format(" {:>10} {:>10}", duration(s.lengthNs), duration(s.htaLengthNs));
    for (int64_t ns : s.parts) out += fmt::format(" {:>8}", percent(ns, s.lengthNs));
    out += "\n";
  }
  if (path.steps.size() > options.stepsShown) {
    out += fmt::format("  ... and {} more steps (all of them in --json)\n",
                       report_text::count(path.steps.size() - options.stepsShown));
  }
  const std::vector<Summed> top = summedContributors(path, options.top);
  if (!top.empty()) {
    out += fmt::format(
        "On the path, over {} steps (saves: the path shorter if it took no time; at most: "
        "bounded by the next-longest path)\n",
        report_text::count(stepsWithPath(path)));
    out += fmt::format("  {:<24} {:>11} {:>11} {:>11} {:>8}  {}\n", "part", "on path", "saves",
                       "at most", "events", "name");
    for (const Summed& s : top) {
      out += fmt::format("  {:<24} {:>11} {:>11} {:>11} {:>8}  {}\n", pathPartName(s.part),
                         duration(s.onPathNs), duration(s.savingNs), duration(s.savingBoundNs),
                         report_text::count(s.events),
                         report_text::shorten(contributorName(s.name, s.part), 60));
    }
  }
  for (const auto& [why, count] : path.leftOut) {
    out += fmt::format("  left out or changed: {} {}\n", report_text::count(count), why);
  }
  return out;
}

nlohmann::ordered_json criticalPathJson(const CriticalPathReport& path) {
  using Json = nlohmann::ordered_json;
  if (!path.asked) return nullptr;
  Json steps = Json::array();
  for (const CriticalPathStep& s : path.steps) {
    Json step = {{"name", s.name},
                 {"start_ns", s.startNs},
                 {"end_ns", s.endNs},
                 {"length_ns", s.lengthNs},
                 {"hta_length_ns", s.htaLengthNs},
                 {"events", s.events},
                 {"nodes", s.nodes},
                 {"edges", s.edges},
                 {"path_edges", s.pathEdges},
                 {"backward_edges", s.backwardEdges},
                 {"cycle_edges", s.cycleEdges},
                 {"same_stream_waits", s.sameStreamWaits}};
    Json parts = Json::object();
    for (std::size_t p = 0; p < kPathParts; ++p) {
      parts[std::string(kPartInfo[p].key) + "_ns"] = s.parts[p];
    }
    step["parts"] = std::move(parts);
    Json contributors = Json::array();
    for (const PathContributor& c : s.contributors) {
      contributors.push_back({{"name", c.name},
                              {"part", pathPartKey(c.part)},
                              {"events", c.events},
                              {"on_path_ns", c.onPathNs},
                              {"saving_ns", c.savingNs},
                              {"saving_bound_ns", c.savingBoundNs}});
    }
    step["contributors"] = std::move(contributors);
    Json stretches = Json::array();
    for (const PathStretch& r : s.stretches) {
      stretches.push_back(
          {{"name", r.name}, {"part", pathPartKey(r.part)}, {"start_ns", r.startNs}, {"ns", r.ns}});
    }
    step["longest_stretches"] = std::move(stretches);
    if (!s.skipped.empty()) step["skipped"] = s.skipped;
    steps.push_back(std::move(step));
  }
  Json leftOut = Json::object();
  for (const auto& [why, count] : path.leftOut) leftOut[why] = count;
  Json out = {{"per_step", std::move(steps)}, {"left_out", std::move(leftOut)}};
  if (!path.failed.empty()) out["failed"] = path.failed;
  return out;
}

namespace {

// The path over a step's time: a strip of the part holding most of each bin.
std::string timelineStrip(const CriticalPathStep& s) {
  constexpr int kWidth = 240;
  constexpr int kHeight = 12;
  std::string out = fmt::format(
      "<svg class=\"chart\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\">"
      "<rect width=\"{}\" height=\"{}\" fill=\"#f3f3f3\"/>",
      kWidth, kHeight, kWidth, kHeight, kWidth, kHeight);
  const std::size_t bins = s.timeline.size();
  for (std::size_t b = 0; b < bins;) {
    std::size_t e = b;
    while (e < bins && s.timeline[e] == s.timeline[b]) ++e;
    if (s.timeline[b] < kPathParts) {
      const double x = static_cast<double>(b) * kWidth / static_cast<double>(bins);
      const double w = static_cast<double>(e - b) * kWidth / static_cast<double>(bins);
      out += fmt::format("<rect x=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>", x, w,
                         kHeight, kPartInfo[s.timeline[b]].colour);
    }
    b = e;
  }
  return out + "</svg>";
}

// A step's parts as one stacked bar, each part's share on hover.
std::string partsBar(const CriticalPathStep& s) {
  std::string out =
      "<span style=\"display:inline-block;width:160px;height:10px;background:#eee;"
      "white-space:nowrap;font-size:0\">";
  for (std::size_t p = 0; p < kPathParts; ++p) {
    if (s.lengthNs <= 0 || s.parts[p] <= 0) continue;
    const double share = 100.0 * static_cast<double>(s.parts[p]) / static_cast<double>(s.lengthNs);
    out += fmt::format(
        "<i style=\"display:inline-block;height:10px;width:{:.1f}%;background:{}\" "
        "title=\"{} {:.0f}%\"></i>",
        share, kPartInfo[p].colour, kPartInfo[p].name, share);
  }
  return out + "</span>";
}

// The path of the longest step shown, stretch by stretch: where it went, in order.
std::string longestStepsPath(const CriticalPathReport& path, const AnalysisOptions& options) {
  const CriticalPathStep* longest = nullptr;
  for (std::size_t k = 0; k < std::min(path.steps.size(), options.stepsShown); ++k) {
    const CriticalPathStep& s = path.steps[k];
    if (s.skipped.empty() && (longest == nullptr || s.lengthNs > longest->lengthNs)) longest = &s;
  }
  if (longest == nullptr || longest->stretches.empty()) return "";
  std::string out = fmt::format(
      "<h4>The path of {}, its longest stretches in order</h4>\n<div class=\"scroll\"><table>"
      "<thead><tr><th>from the step's start</th><th>part</th><th>name</th><th>time</th>"
      "</tr></thead><tbody>\n",
      html::escape(longest->name));
  for (const PathStretch& r : longest->stretches) {
    out += fmt::format(
        "<tr><td class=\"n\">{}</td><td><i class=\"sw\" style=\"background:{}\"></i>{}</td>"
        "<td class=\"name\">{}</td><td class=\"n\">{}</td></tr>\n",
        html::duration(r.startNs - longest->startNs), infoOf(r.part).colour, pathPartName(r.part),
        html::nameHtml(contributorName(r.name, r.part), 60, namesAKernel(r.part, r.name)),
        html::duration(r.ns));
  }
  return out + "</tbody></table></div>\n";
}

}  // namespace

std::string criticalPathHtml(const CriticalPathReport& path, const AnalysisOptions& options) {
  using html::duration;
  using html::escape;
  if (!path.asked) return "";
  std::string out =
      "<h3>Critical path</h3><p>Each step's longest chain of dependent work: host operators, "
      "launches, GPU operations in stream order and the waits between them (the graph of "
      "Holistic Trace Analysis's critical path). Its length is what bounds the step; HTA's "
      "length weighs waiting as nothing. The strip shows which part the path was in over the "
      "step's time.</p>\n";
  if (!path.failed.empty())
    return out + "<p class=\"note\">Not found: " + escape(path.failed) + "</p>\n";
  out += "<p class=\"legend\">";
  for (const PartInfo& p : kPartInfo) {
    out += fmt::format("<i class=\"sw\" style=\"background:{}\"></i>{} &nbsp; ", p.colour, p.name);
  }
  out +=
      "</p>\n<div class=\"scroll\"><table><thead><tr><th>step</th><th>length</th><th>HTA's"
      "</th><th>parts</th><th>the path over the step</th></tr></thead><tbody>\n";
  for (std::size_t k = 0; k < std::min(path.steps.size(), options.stepsShown); ++k) {
    const CriticalPathStep& s = path.steps[k];
    out += "<tr><td class=\"name\">" + escape(s.name) + "</td>";
    if (!s.skipped.empty()) {
      out += "<td colspan=\"4\">skipped: " + escape(s.skipped) + "</td></tr>\n";
      continue;
    }
    out +=
        fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>\n",
                    duration(s.lengthNs), duration(s.htaLengthNs), partsBar(s), timelineStrip(s));
  }
  out += "</tbody></table></div>\n";
  out += longestStepsPath(path, options);
  const std::vector<Summed> top = summedContributors(path, options.top);
  if (!top.empty()) {
    out += fmt::format(
        "<h4>On the path, over {} steps</h4><p>Saves: how much shorter the path would be if "
        "these took no time (the path found again without them); at most: their time on the "
        "path, bounded by the longest path that avoids them.</p>\n",
        stepsWithPath(path));
    out +=
        "<div class=\"scroll\"><table><thead><tr><th>part</th><th>name</th><th>on path</th>"
        "<th>saves</th><th>at most</th><th>events</th></tr></thead><tbody>\n";
    for (const Summed& s : top) {
      out += fmt::format(
          "<tr><td><i class=\"sw\" style=\"background:{}\"></i>{}</td><td class=\"name\">{}</td>"
          "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
          "<td class=\"n\">{}</td></tr>\n",
          infoOf(s.part).colour, pathPartName(s.part),
          html::nameHtml(contributorName(s.name, s.part), 60, namesAKernel(s.part, s.name)),
          duration(s.onPathNs), duration(s.savingNs), duration(s.savingBoundNs), s.events);
    }
    out += "</tbody></table></div>\n";
  }
  if (!path.leftOut.empty()) {
    out += "<p class=\"note\">Left out or changed: ";
    bool first = true;
    for (const auto& [why, count] : path.leftOut) {
      out += fmt::format("{}{} {}", first ? "" : "; ", count, escape(why));
      first = false;
    }
    out += ".</p>\n";
  }
  return out;
}

}  // namespace kinetrace::detail
