#include "analysis/passes/critical_path_pass.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/passes/critical_path_marks.h"
#include "support/text.h"

namespace kinetrace::detail::passes {
namespace {

constexpr const char* kPathWork = "the critical path's graph";
constexpr const char* kPathReport = "the critical path's report";
// What a step's figures take of the report's hold, its contributors' names apart.
constexpr std::size_t kStepReportBytes =
    sizeof(CriticalPathStep) + CriticalPathStep::kTimelineBins + 2 * kAllocationOverheadBytes;
// Node and edge indices are 32-bit: a step of more events is refused before its memory is.
constexpr uint64_t kMostStepEvents = uint64_t{1} << 29;

std::size_t megabytesOf(uint64_t bytes) {
  return static_cast<std::size_t>((bytes + (1u << 20) - 1) >> 20);
}

// What a path's time is put down to: a part, and a name (a trace name id; kNoIndex: none).
struct ContributorKey {
  PathPart part;
  uint32_t name;
  bool operator<(const ContributorKey& o) const {
    return part != o.part ? part < o.part : name < o.name;
  }
};
struct Tally {
  int64_t ns = 0;
  uint64_t events = 0;
};

// The path's events (those with a node on it, with the path's time put down to each) and its
// arrows, for the marked trace.
void markPath(const StepGraph& graph, const BudgetVector<StepEvent>& events,
              const BudgetVector<uint32_t>& path, CriticalPathMarks& marks, ReadBudget& budget) {
  BudgetMap<uint32_t, int64_t> onPath(std::less<uint32_t>(),
                                      BudgetAllocator<char>(budget, kPathWork));
  onPath[graph.nodeEvent[graph.edges[path.front()].from / 2]];
  for (uint32_t index : path) onPath[graph.nodeEvent[graph.edges[index].to / 2]];
  for (uint32_t index : path) {
    const PathEdge& e = graph.edges[index];
    auto found = onPath.find(e.event);
    if (found != onPath.end()) found->second += e.weightNs;
  }
  for (const auto& [event, ns] : onPath) {
    // The step's own range is a node for the time before and after its operators, not
    // work on the path.
    const StepEvent& e = events[event];
    if (e.kind == PathEventKind::HostRange && (e.detail & CriticalPathEvent::kOperator) == 0) {
      continue;
    }
    PathMark mark;
    mark.ordinal = events[event].ordinal;
    mark.ns = ns;
    marks.add(mark);
  }
  for (uint32_t index : path) {
    const PathEdge& e = graph.edges[index];
    if ((e.flags & PathEdge::kArrow) == 0) continue;
    PathMark mark;
    mark.arrow = marks.nextArrow();
    mark.part = e.part;
    mark.ns = e.weightNs;
    mark.kind = PathMark::kArrowStart;
    mark.ordinal = events[graph.nodeEvent[e.from / 2]].ordinal;
    mark.atEnd = e.from % 2 == 1;
    marks.add(mark);
    mark.kind = PathMark::kArrowEnd;
    mark.ordinal = events[graph.nodeEvent[e.to / 2]].ordinal;
    mark.atEnd = e.to % 2 == 1;
    marks.add(mark);
  }
}

}  // namespace

void CriticalPathPass::finish(RankReport& report) {
  if (!context_.options.criticalPath) return;
  CriticalPathReport& path = report.criticalPath;
  path.asked = true;
  CollectedTrace& trace = context_.trace;
  if (!trace.keptCriticalPathEvents) {
    path.failed = "the trace was read without the events the critical path needs";
    return;
  }
  std::vector<PathWindow> windows;  // as many as the report's steps, or the one window
  if (report.steps.empty()) windows.push_back({trace.firstNs, trace.lastNs});
  for (const StepReport& step : report.steps) windows.push_back({step.startNs, step.endNs});
  if (context_.options.criticalPathMarks) {
    path.marks = std::make_shared<CriticalPathMarks>(context_.budget(), trace.listBytes);
  }
  try {
    StepEvents events(context_);
    events.collect(windows);
    for (std::size_t i = 0; i < windows.size(); ++i) {
      std::string name = report.steps.empty() ? std::string("the window") : report.steps[i].name;
      context_.reportHold->take(kStepReportBytes + (name.size() > 15 ? name.size() + 1 : 0),
                                kPathReport);
      CriticalPathStep& step = path.steps.emplace_back();
      step.name = std::move(name);
      step.startNs = windows[i].startNs;
      step.endNs = windows[i].endNs;
      step.events = events.counts()[i];
      const uint64_t need = step.events * (sizeof(StepEvent) + kGraphBytesPerEvent);
      if (step.events > kMostStepEvents || need > context_.budget().left()) {
        step.skipped = fmt::format(
            "its {} events need about {} MB for their graph, more than the {} MB --memory-mb "
            "leaves; raise --memory-mb",
            withThousands(step.events), megabytesOf(need), megabytesOf(context_.budget().left()));
        continue;
      }
      try {
        BudgetVector<StepEvent> stepEvents{
            BudgetAllocator<StepEvent>(context_.budget(), kPathWork)};
        stepEvents.reserve(step.events);
        events.forStep(i, [&stepEvents](const StepEvent& e) { stepEvents.push_back(e); });
        solveStep(stepEvents, step, path);
      } catch (const BudgetRefusal& refusal) {
        step.skipped =
            fmt::format("its graph needs more memory than --memory-mb leaves ({})", refusal.what());
      }
    }
    for (const auto& [why, count] : events.leftOut()) path.leftOut[why] += count;
  } catch (const BudgetRefusal& refusal) {
    path.failed = refusal.what();
  }
}

void CriticalPathPass::solveStep(const BudgetVector<StepEvent>& events, CriticalPathStep& out,
                                 CriticalPathReport& report) {
  const CollectedTrace& trace = context_.trace;
  ReadBudget& budget = context_.budget();
  const StepGraph graph = buildStepGraph(trace, events, {out.startNs, out.endNs}, out.name, budget);
  PathSolver solver(graph, budget);
  out.nodes = graph.nodes();
  out.edges = graph.edges.size();
  out.backwardEdges = graph.backwardEdges;
  out.cycleEdges = solver.cycleEdges();
  out.sameStreamWaits = graph.sameStreamWaits;
  if (graph.backwardEdges > 0) {
    report.leftOut["graph edges whose time runs backwards (bad timestamps), weighed 0"] +=
        graph.backwardEdges;
  }
  if (graph.sameStreamWaits > 0) {
    report.leftOut["Stream Wait Events between operations of one stream (no edge)"] +=
        graph.sameStreamWaits;
  }
  if (solver.cycleEdges() > 0) {
    report.leftOut["graph edges closing a cycle (bad timestamps), left out"] += solver.cycleEdges();
  }

  BudgetVector<uint32_t> path{BudgetAllocator<uint32_t>(budget, kPathWork)};
  auto weight = [&graph](uint32_t e) { return graph.edges[e].weightNs; };
  out.lengthNs = solver.path(weight, path);
  out.htaLengthNs = solver.length([&graph](uint32_t e) { return graph.edges[e].htaWeightNs; });
  out.pathEdges = path.size();
  // A gap is put down to the range around it; the step's own range says nothing more.
  auto nameOf = [&](const PathEdge& e) {
    if (e.event == kNoIndex) return kNoIndex;
    const uint32_t name = events[e.event].name;
    if (e.part == PathPart::HostGap || e.part == PathPart::DataLoading) {
      if (events[e.event].kind == PathEventKind::HostRange && trace.name(name) == out.name) {
        return kNoIndex;
      }
    }
    return name;
  };
  BudgetMap<ContributorKey, Tally> tallies(std::less<ContributorKey>(),
                                           BudgetAllocator<char>(budget, kPathWork));
  BudgetSet<std::pair<uint32_t, uint32_t>> seen(
      std::less<std::pair<uint32_t, uint32_t>>(),
      BudgetAllocator<std::pair<uint32_t, uint32_t>>(budget, kPathWork));
  for (uint32_t index : path) {
    const PathEdge& e = graph.edges[index];
    out.parts[static_cast<std::size_t>(e.part)] += e.weightNs;
    if (e.weightNs == 0) continue;
    Tally& tally = tallies[{e.part, nameOf(e)}];
    tally.ns += e.weightNs;
    if (seen.insert({static_cast<uint32_t>(e.part), e.event}).second) ++tally.events;
  }

  // The top contributors, and what each would save.
  BudgetVector<std::pair<ContributorKey, Tally>> top(
      tallies.begin(), tallies.end(),
      BudgetAllocator<std::pair<ContributorKey, Tally>>(budget, kPathWork));
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
    if (a.second.ns != b.second.ns) return a.second.ns > b.second.ns;
    return a.first < b.first;
  });
  if (top.size() > context_.options.top) top.resize(context_.options.top);
  for (const auto& [key, tally] : top) {
    auto matches = [&, key = key](uint32_t e) {
      return graph.edges[e].part == key.part && nameOf(graph.edges[e]) == key.name;
    };
    const int64_t withoutTime =
        solver.length([&](uint32_t e) { return matches(e) ? 0 : graph.edges[e].weightNs; });
    const int64_t avoiding =
        solver.length([&](uint32_t e) { return matches(e) ? -1 : graph.edges[e].weightNs; });
    PathContributor c;
    c.name = key.name == kNoIndex ? std::string() : context_.keptName(key.name);
    c.part = key.part;
    c.events = tally.events;
    c.onPathNs = tally.ns;
    c.savingNs = out.lengthNs - withoutTime;
    c.savingBoundNs = std::min(tally.ns, out.lengthNs - avoiding);
    context_.reportHold->take(sizeof(PathContributor), kPathReport);
    out.contributors.push_back(std::move(c));
  }

  // The path over the step's time: the part holding most of each bin.
  constexpr std::size_t kBins = CriticalPathStep::kTimelineBins;
  std::vector<std::array<int64_t, kPathParts>> bins(kBins);
  const int64_t span = std::max<int64_t>(1, out.endNs - out.startNs);
  auto binOf = [&](int64_t t) {
    const double at = static_cast<double>(t - out.startNs) / static_cast<double>(span);
    return static_cast<std::size_t>(std::clamp(at * kBins, 0.0, kBins - 1.0));
  };
  for (uint32_t index : path) {
    const PathEdge& e = graph.edges[index];
    const int64_t from = std::max(graph.nodeTime[e.from], out.startNs);
    const int64_t to = std::min(graph.nodeTime[e.to], out.endNs);
    if (e.weightNs == 0 || to <= from) continue;
    for (std::size_t b = binOf(from), last = binOf(to - 1); b <= last; ++b) {
      const int64_t binStart = out.startNs + static_cast<int64_t>(span * (b / double(kBins)));
      const int64_t binEnd = out.startNs + static_cast<int64_t>(span * ((b + 1) / double(kBins)));
      bins[b][static_cast<std::size_t>(e.part)] +=
          std::max<int64_t>(1, std::min(to, binEnd) - std::max(from, binStart));
    }
  }
  out.timeline.assign(kBins, static_cast<uint8_t>(kPathParts));
  for (std::size_t b = 0; b < kBins; ++b) {
    const auto most = std::max_element(bins[b].begin(), bins[b].end());
    if (*most > 0) out.timeline[b] = static_cast<uint8_t>(most - bins[b].begin());
  }

  out.stretches = longestStretches(graph, path, nameOf);
  if (report.marks && !path.empty()) markPath(graph, events, path, *report.marks, budget);
}

// The path's consecutive edges of one part and name taken together; the longest kept, in
// the path's order.
template <typename NameOf>
std::vector<PathStretch> CriticalPathPass::longestStretches(const StepGraph& graph,
                                                            const BudgetVector<uint32_t>& path,
                                                            NameOf&& nameOf) const {
  struct Stretch {
    std::size_t at;  // its first edge's place on the path
    int64_t startNs;
    int64_t ns;
    PathPart part;
    uint32_t name;
  };
  BudgetVector<Stretch> all{BudgetAllocator<Stretch>(context_.budget(), kPathWork)};
  for (std::size_t k = 0; k < path.size(); ++k) {
    const PathEdge& e = graph.edges[path[k]];
    const uint32_t name = nameOf(e);
    if (all.empty() || all.back().part != e.part || all.back().name != name) {
      all.push_back({k, graph.nodeTime[e.from], 0, e.part, name});
    }
    all.back().ns += e.weightNs;
  }
  const std::size_t kept = std::min(all.size(), CriticalPathStep::kStretches);
  std::partial_sort(
      all.begin(), all.begin() + static_cast<std::ptrdiff_t>(kept), all.end(),
      [](const Stretch& a, const Stretch& b) { return a.ns != b.ns ? a.ns > b.ns : a.at < b.at; });
  all.resize(kept);
  std::sort(all.begin(), all.end(), [](const Stretch& a, const Stretch& b) { return a.at < b.at; });
  std::vector<PathStretch> out;
  for (const Stretch& s : all) {
    if (s.ns <= 0) continue;
    context_.reportHold->take(sizeof(PathStretch), kPathReport);
    out.push_back(
        {s.name == kNoIndex ? std::string() : context_.keptName(s.name), s.part, s.startNs, s.ns});
  }
  return out;
}

}  // namespace kinetrace::detail::passes
