#pragma once

#include "analysis/passes/critical_path_graph.h"
#include "analysis/passes/critical_path_longest.h"
#include "analysis/passes/critical_path_steps.h"
#include "analysis/passes/pass_context.h"

namespace kinetrace::detail::passes {

// `kinetrace analyze --critical-path`: for each step (report.steps; without steps, the
// trace's whole span), the longest path of its graph (critical_path_graph.h), its length
// as kinetrace and as HTA weigh it, its parts, the top contributors and what making each
// take no time saves (exact: the path solved again without its time; and the bound
// min(its time, the length less the longest path that avoids it)), and the path over the
// step's time. Reads the trace's critical-path events (when the collector kept them).
//
// Memory: a step's graph at a time, from the budget: a step whose graph would need more than
// the budget has left is said and skipped (CriticalPathStep::skipped), never a failure of
// the analysis; what the report keeps is taken from its hold.
class CriticalPathPass {
 public:
  explicit CriticalPathPass(const PassContext& context) : context_(context) {}
  // After the steps pass: reads report.steps.
  void finish(RankReport& report);

 private:
  void solveStep(const BudgetVector<StepEvent>& events, CriticalPathStep& out,
                 CriticalPathReport& report);
  template <typename NameOf>
  std::vector<PathStretch> longestStretches(const StepGraph& graph,
                                            const BudgetVector<uint32_t>& path,
                                            NameOf&& nameOf) const;

  const PassContext& context_;
};

}  // namespace kinetrace::detail::passes
