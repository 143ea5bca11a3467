#pragma once

#include <cstdint>
#include <vector>

#include "analysis/passes/pass_context.h"
#include "analysis/spill.h"

namespace kinetrace::detail::passes {

// Communication: a rank's NCCL kernels and what NCCL's calls moved; and the starts of its
// collectives (NCCL kernels, torch.distributed's calls), which stragglers() compares across
// ranks once every rank has been read.
class CommunicationPass {
 public:
  explicit CommunicationPass(const PassContext& context);

  void add(const JoinedOp& op);

  // report.communicationKernels and report.ncclCalls.
  void finish(RankReport& report);

  // The starts of the rank's collectives, by name, in order (reads the trace's collective
  // calls): what they take of the budget stays taken while they wait for the other ranks'.
  RankCollectives collectives();

 private:
  const PassContext& context_;
  uint64_t communicationKernels_ = 0;
  ExternalSorter<CollectiveStart, ByStart> kernelStarts_;
};

// The Nth collective of each name across ranks: the rank that started it last kept the
// others waiting, worst first (options.top). Nothing for one rank.
std::vector<StragglerReport> stragglers(const std::vector<RankCollectives>& ranks,
                                        const AnalysisOptions& options);

}  // namespace kinetrace::detail::passes
