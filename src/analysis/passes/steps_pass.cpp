#include "analysis/passes/steps_pass.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "analysis/passes/analysis_common.h"

namespace kinetrace::detail::passes {
namespace {

constexpr const char* kStepRanges = "step ranges";

// What a step takes while the report is made (sorted, its time summed, its bounds, its
// memory sample), and what its report keeps (with its name, counted apart).
constexpr std::size_t kStepWorkingBytes =
    2 * (sizeof(CollectedRange) + sizeof(TimeBreakdown) + sizeof(Interval) + sizeof(std::size_t) +
         sizeof(int64_t) + 1) +
    sizeof(std::pair<const uint32_t, CollectedRange>) + 32 + kAllocationOverheadBytes;
constexpr std::size_t kStepReportBytes = 2 * sizeof(StepReport);

}  // namespace

// Each name once: the longest range of that name (a step marked on several threads counts
// once). Steps that start together: the longer (an outer step) first, then by name, so the
// order never depends on how the sort met them.
void StepsPass::finish(RankReport& report) {
  const CollectedTrace& trace = context_.trace;
  BudgetMap<uint32_t, CollectedRange> byName(std::less<uint32_t>(),
                                             BudgetAllocator<char>(context_.budget(), kStepRanges));
  for (const CollectedRange& step : trace.steps) {
    auto [it, inserted] = byName.emplace(step.name, step);
    if (!inserted && step.endNs - step.startNs > it->second.endNs - it->second.startNs)
      it->second = step;
  }
  context_.working.take(byName.size() * kStepWorkingBytes, kStepRanges);
  std::vector<CollectedRange> sorted;
  sorted.reserve(byName.size());
  for (const auto& [name, step] : byName) sorted.push_back(step);
  std::sort(sorted.begin(), sorted.end(),
            [&trace](const CollectedRange& a, const CollectedRange& b) {
              if (a.startNs != b.startNs) return a.startNs < b.startNs;
              if (a.endNs != b.endNs) return a.endNs > b.endNs;
              return trace.name(a.name) < trace.name(b.name);
            });
  std::vector<StepReport>& out = report.steps;
  out.reserve(sorted.size());
  for (const CollectedRange& step : sorted) {
    const std::string_view name = trace.name(step.name);
    context_.reportHold->take(kStepReportBytes + (name.size() > 15 ? name.size() + 1 : 0),
                              kStepRanges);
    StepReport s;
    s.name = std::string(name);
    s.startNs = step.startNs;
    s.endNs = step.endNs;
    out.push_back(std::move(s));
  }
}

}  // namespace kinetrace::detail::passes
