#pragma once

#include "analysis/passes/pass_context.h"

namespace kinetrace::detail::passes {

// Allocated GPU memory over the window, from the trace's "[memory]" samples: the peak, the
// first and last, a curve of at most RankReport::kMemoryCurvePoints points, each step's
// allocation at its end, and whether that grew in every step (a leak's signature). Reads
// the trace's memory samples.
class MemoryPass {
 public:
  explicit MemoryPass(const PassContext& context) : context_(context) {}

  // report.memory, report.memoryCurve and each step's allocatedAtEndBytes (report.steps
  // must be final: steps_pass.h).
  void finish(RankReport& report);

 private:
  const PassContext& context_;
};

}  // namespace kinetrace::detail::passes
