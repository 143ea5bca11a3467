#pragma once

// One pass of the analysis run alone (analysis/passes/pass_context.h), over a small trace
// made by TraceBuilder (analysis_trace_builder.h): the pass's context, and the trace's
// operations joined to their launch calls and handed to the passes as the analysis does.

#include <memory>
#include <utility>

#include "analysis/passes/pass_context.h"
#include "analysis_trace_builder.h"

namespace kinetrace::detail::passes {

class PassFixture {
 public:
  explicit PassFixture(CollectedTrace trace, AnalysisOptions options = {})
      : trace_(std::move(trace)),
        options_(options),
        working_(*trace_.budget),
        context_{trace_, options_, working_, std::make_shared<BudgetHold>(*trace_.budget)} {}
  PassFixture(const PassFixture&) = delete;
  PassFixture& operator=(const PassFixture&) = delete;

  const PassContext& context() const { return context_; }
  CollectedTrace& trace() { return trace_; }

  // Every GPU operation, joined to its launch call, to each of `passes`' add().
  template <typename... Passes>
  void addOperations(Passes&... passes) {
    joinOperations(trace_, [&](const JoinedOp& op) { (passes.add(op), ...); });
  }

 private:
  CollectedTrace trace_;
  AnalysisOptions options_;
  BudgetHold working_;
  PassContext context_;
};

}  // namespace kinetrace::detail::passes
