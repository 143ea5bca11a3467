#pragma once

#include <cstdint>
#include <vector>

#include "analysis/passes/analysis_common.h"
#include "analysis/passes/idle_causes.h"
#include "analysis/passes/pass_context.h"

namespace kinetrace::detail::passes {

// The gaps the report lists, from those the time pass's sweep finds (time_pass.h): the
// longest (options.top, a trace has as many gaps as operations) with why and what the host
// was doing, and the gaps by the synchronisation found in them.
class GapTable {
 public:
  explicit GapTable(const PassContext& context);

  // A gap of the trace's window on `device`, classed: kept if among the longest and ended by
  // an operation, tallied if a synchronisation was found in it.
  void add(int64_t device, const Gap& gap);

  // report.gaps (longest first, each with the innermost host range open on the launching
  // thread at its middle: reads the trace's host ranges), report.otherWork and
  // report.hostWaitAfterSync; a GPU is named only when `severalDevices`.
  void finish(RankReport& report, bool severalDevices);

 private:
  struct KeptGap {
    int64_t device = 0;
    Gap gap;
  };
  // Gaps, longest first; then the earlier, then the lower device.
  struct Longer {
    bool operator()(const KeptGap& a, const KeptGap& b) const;
  };
  struct FoundTally {
    uint64_t gaps = 0;
    int64_t ns = 0;
  };

  std::vector<GapReport> longestGaps(bool severalDevices);
  std::vector<FoundRow> foundRows(const BudgetMap<Found, FoundTally>& tallies,
                                  bool severalDevices) const;

  const PassContext& context_;
  TopN<KeptGap, Longer> longest_;
  // Gaps by what was found: a few kinds, and the streams.
  BudgetMap<Found, FoundTally> otherWork_;
  BudgetMap<Found, FoundTally> hostSyncs_;
};

}  // namespace kinetrace::detail::passes
