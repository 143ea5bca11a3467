#pragma once

#include <array>
#include <cstdint>

#include "analysis/passes/pass_context.h"
#include "analysis/passes/sequence_ops.h"
#include "analysis/spill.h"

namespace kinetrace::detail::passes {

// Frequent kernel sequences, ranked by what fusing each would save. Two modes:
//
//   windows (kinetrace's)  every run of options.sequenceLength compute kernels that ran one
//                          after another on a stream, launched by one thread, with the
//                          innermost host range around all their launch calls as issuer;
//                          counted where occurrences do not overlap on their stream; the
//                          chains that ran twice or more are the rows
//   operator (HTA's)       options.sequenceOperator named: HTA's
//                          get_frequent_cuda_kernel_sequences (operator_sequences.h)
//
// A chain's saving, each time it ran, is what fusing its kernels into one would remove: the
// launch calls of every kernel but the first (host time), and the GPU's idle time between
// two of its kernels where the second was already queued when the first ended (the GPU
// moving from one kernel to the next). Idle time the GPU spent waiting for the host to
// launch the next kernel is not counted: the host's work between the launches stays.
class SequencePass {
 public:
  explicit SequencePass(const PassContext& context);

  void add(const JoinedOp& op);

  // report.kernelSequences.
  void finish(RankReport& report);

 private:
  // One run of `length` kernels on a stream.
  struct Window {
    ChainNames names{};
    uint32_t issuer = 0;  // a name id, or kNoIssuer, or kAcrossRanges
    int64_t tid = 0;
    int64_t firstCallNs = 0;  // the earliest launch call's start
    int64_t lastCallEndNs = 0;
    int64_t device = 0;
    int64_t stream = 0;
    uint64_t position = 0;  // of its first kernel among the stream's operations
    int64_t gpuNs = 0;
    int64_t launchNs = 0;
    int64_t savedLaunchNs = 0;
    int64_t gapNs = 0;
  };
  struct ByThreadThenCall {
    bool operator()(const Window& a, const Window& b) const;
  };
  // By chain and issuer, then where it ran: a chain's occurrences together, in order.
  struct ByChain {
    bool operator()(const Window& a, const Window& b) const;
  };
  static constexpr uint32_t kNoIssuer = ~uint32_t{0};
  static constexpr uint32_t kAcrossRanges = ~uint32_t{0} - 1;

  void windows(ExternalSorter<Window, ByThreadThenCall>& out);
  void issuers(ExternalSorter<Window, ByThreadThenCall>& windows,
               ExternalSorter<Window, ByChain>& out, KernelSequenceReport& report);
  void table(ExternalSorter<Window, ByChain>& chains, KernelSequenceReport& report);

  const PassContext& context_;
  ExternalSorter<SequenceOp, SequenceOpsByStreamThenStart> ops_;
};

}  // namespace kinetrace::detail::passes
