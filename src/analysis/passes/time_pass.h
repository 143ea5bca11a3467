#pragma once

#include "analysis/passes/analysis_common.h"
#include "analysis/passes/gap_table.h"
#include "analysis/passes/pass_context.h"
#include "analysis/spill.h"

namespace kinetrace::detail::passes {

// Where each GPU's time went: busy time by what ran, idle time by why (idle_causes.h), for
// the trace's window and each step's, with each stream's busy time, each device's busy
// timeline, and the gaps the report lists (gap_table.h). One sweep per device over its
// operations by start gives all of these: splitting them into passes would sweep twice.
class TimePass {
 public:
  // Takes the data-loading ranges (merged) from the trace.
  explicit TimePass(const PassContext& context);

  void add(const JoinedOp& op) { byDevice_.add(op); }

  // report.time, report.devices, report.syncRecords, each step's time (report.steps must be
  // final: steps_pass.h), report.gaps, report.otherWork and report.hostWaitAfterSync. Reads
  // the trace's synchronisations and host ranges.
  void finish(RankReport& report);

 private:
  const PassContext& context_;
  Intervals dataLoading_;  // sorted, merged
  ExternalSorter<JoinedOp, ByDeviceThenStart> byDevice_;
  GapTable gaps_;
};

}  // namespace kinetrace::detail::passes
