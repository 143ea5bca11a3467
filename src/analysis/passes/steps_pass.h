#pragma once

#include "analysis/passes/pass_context.h"

namespace kinetrace::detail::passes {

// The trace's steps (ProfilerStep#N, "step 12", ...): report.steps in time order, each name
// once, with their names and bounds; the other passes fill in what happened in each (the
// time pass their time, the memory pass their allocation, the GPU-bound pass their kernels'
// bounds). Reads the trace's step ranges; a file of millions of steps is refused, naming
// them, rather than taking gigabytes.
class StepsPass {
 public:
  explicit StepsPass(const PassContext& context) : context_(context) {}
  void finish(RankReport& report);

 private:
  const PassContext& context_;
};

}  // namespace kinetrace::detail::passes
