#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>

#include "analysis/read_budget.h"
#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"

// One rank's analysis is a set of passes over its collected trace (trace_collector.h), each
// computing one family of figures with its own state, as trace processors keep one tracker
// per concern. Every pass has the same shape:
//
//   explicit XPass(const PassContext& context);
//   void add(const JoinedOp& op);      // only a pass that reads the GPU operations
//   void finish(RankReport& report);  // fills its figures of the report
//
// The GPU operations are read once, joined to their launch calls (joinOperations), and each
// is handed to every pass that reads them; a pass keeps what it needs in lists of its own,
// sorted in the order its figures need (spill.h), so the analysis's memory is the trace's
// budget whatever its length. The rest of the trace's lists are read by the one pass each
// that needs them. trace_analysis.cpp runs the passes, in the order their figures need one
// another (steps before the device sweep, devices before queue depths); the GPU-bound pass
// (analyzeGpuBounds, gpu_bound.h) is a function, as it reads the kernels' metric averages
// only.

namespace kinetrace::detail::passes {

// What every pass reads, and where what it keeps comes from. Read-only for the passes: they
// read (and so consume) the trace's lists and take their memory from the holds.
struct PassContext {
  // Each of its lists is read by the one pass that needs it: a list is read once.
  CollectedTrace& trace;
  const AnalysisOptions& options;
  // What the analysis holds until it is done.
  BudgetHold& working;
  // What the report keeps, given back when its last copy goes (RankReport::held).
  std::shared_ptr<BudgetHold> reportHold;

  ReadBudget& budget() const { return *trace.budget; }
  // A name the report keeps a copy of (a top kernel's, a gap's): a name may be megabytes,
  // and the copy is taken from the report's hold.
  std::string keptName(uint32_t id) const;
};

// The budget's names for what the passes take, in its errors.
inline constexpr const char* kAnalysisLists = "the analysis's lists";
inline constexpr const char* kStreams = "streams";

// A GPU operation joined to its launch call.
struct JoinedOp : CollectedGpuOp {
  int64_t callStartNs = 0;
  int64_t callEndNs = 0;
  int64_t callTid = 0;
  bool hasCall = false;
};

// The order of a device's sweep (time_pass.h): by device, then start, ties by the trace's
// order.
struct ByDeviceThenStart {
  bool operator()(const JoinedOp& a, const JoinedOp& b) const {
    return std::tie(a.device, a.startNs, a.sequence) < std::tie(b.device, b.startNs, b.sequence);
  }
};

// Reads the trace's GPU operations and launch calls (both consumed) and calls visit(op) for
// each operation, joined to its launch call by correlation id, in correlation order. An
// operation of no correlation id, or whose call the trace lacks, comes without a call.
template <typename Visit>
void joinOperations(CollectedTrace& trace, Visit&& visit) {
  ExternalSorter<CollectedGpuOp, ByCorrelation>& ops = trace.gpuOps;
  ExternalSorter<CollectedCall, ByCorrelation>& calls = trace.calls;
  ops.sort();
  calls.sort();
  for (; !ops.done(); ops.pop()) {
    const CollectedGpuOp& op = ops.front();
    JoinedOp j;
    static_cast<CollectedGpuOp&>(j) = op;
    if (op.correlationId != 0) {
      while (!calls.done() && calls.front().correlationId < op.correlationId) calls.pop();
      // Of calls with one id (never, in practice), the first sorted is taken.
      if (!calls.done() && calls.front().correlationId == op.correlationId) {
        const CollectedCall& call = calls.front();
        j.hasCall = true;
        j.callStartNs = call.startNs;
        j.callEndNs = call.endNs;
        j.callTid = call.tid;
      }
    }
    visit(static_cast<const JoinedOp&>(j));
  }
  while (!calls.done()) calls.pop();  // lets the calls' memory and file go
}

}  // namespace kinetrace::detail::passes
