#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "analysis/passes/pass_context.h"
#include "analysis/passes/sequence_ops.h"
#include "analysis/spill.h"

namespace kinetrace::detail::passes {

// HTA's frequent CUDA kernel sequences (get_frequent_cuda_kernel_sequences), exactly: the
// kernel sequence of each host range whose name contains the operator's name and that sits
// at the least depth of all such ranges in the call tree, with options.sequenceLength
// operations or more; sequences counted by the operator's name and every operation's name in
// start order; summed: the operations' GPU time and the operator's own time.
//
// HTA's call tree, as its CallGraph builds it: a thread's host ranges nest by time (depth 0
// at the top); a launch call's GPU operation is its child (operations on stream 0 are linked
// to none); and when one thread has ProfilerStep ranges and one other thread autograd::
// ranges (the backward pass), that thread's top ranges and calls hang under the "## backward
// ##" range of the first that holds them (else the ProfilerStep), so their depth counts from
// there. Where a GPU annotation bears the name, HTA's least depth is its -1, held by no range
// with operations: HTA finds none, and so does this mode (said in leftOut).
class OperatorSequences {
 public:
  explicit OperatorSequences(const PassContext& context);

  // Reads the operations (in the windows mode's order) and the trace's host ranges.
  void finish(ExternalSorter<SequenceOp, SequenceOpsByStreamThenStart>& ops,
              KernelSequenceReport& out);

  // The names a row keeps of a sequence, the rest counted in its length.
  static constexpr std::size_t kNamesKept = 32;

 private:
  // A host range, with its place in the trace: the operator occurrence's identity.
  struct Range {
    CollectedRange range;
    uint64_t index = 0;
  };
  struct RangeByThreadThenStart {
    bool operator()(const Range& a, const Range& b) const;
  };
  struct OpByThreadThenCall {
    bool operator()(const SequenceOp& a, const SequenceOp& b) const;
  };
  // The shallowest range whose name holds the operator's, among a node's ancestors.
  struct Candidate {
    int64_t depth = -1;  // -1: none
    uint64_t index = 0;
    uint32_t name = 0;
    int64_t durationNs = 0;
  };
  // A node on a thread's stack: a range, its depth and its shallowest candidate (itself
  // included).
  struct Open {
    Range range;
    int64_t depth = 0;
    Candidate candidate;
  };
  // A "## backward ##" (or ProfilerStep) range of the forward thread, under which the
  // backward thread's top nodes hang.
  struct Parent {
    int64_t startNs = 0;
    int64_t endNs = 0;
    int64_t depth = 0;
    Candidate candidate;
    uint64_t index = 0;  // its place in the trace
  };
  // An operation under a candidate.
  struct Under {
    uint64_t root = 0;
    int64_t rootDepth = 0;
    int64_t rootNs = 0;
    int64_t startNs = 0;
    uint64_t sequence = 0;
    int64_t ns = 0;
    uint32_t rootName = 0;
    uint32_t name = 0;
  };
  struct ByRootThenStart {
    bool operator()(const Under& a, const Under& b) const;
  };
  // One operator occurrence's sequence.
  struct Occurrence {
    uint32_t operatorName = 0;
    uint64_t length = 0;
    uint64_t hash = 0;  // of every name in the sequence
    std::array<uint32_t, kNamesKept> names{};
    int64_t gpuNs = 0;
    int64_t operatorNs = 0;
  };
  struct BySequence {
    bool operator()(const Occurrence& a, const Occurrence& b) const;
  };

  bool matches(uint32_t name) const;
  void threads();
  void linkParents();
  void sweep(ExternalSorter<SequenceOp, OpByThreadThenCall>& ops,
             ExternalSorter<Under, ByRootThenStart>& under, KernelSequenceReport& out);
  Open opened(const Range& range, const std::vector<Open>& stack, int64_t tid) const;
  std::optional<Parent> parentOf(int64_t startNs, int64_t endNs) const;
  void occurrences(ExternalSorter<Under, ByRootThenStart>& under,
                   ExternalSorter<Occurrence, BySequence>& out) const;
  void table(ExternalSorter<Occurrence, BySequence>& occurrences, KernelSequenceReport& out) const;

  const PassContext& context_;
  std::vector<bool> matching_;  // by name id: whether it holds the operator's name
  std::optional<int64_t> forwardTid_;
  std::optional<int64_t> backwardTid_;
  std::vector<Parent> parents_;  // by start
  int64_t leastDepth_ = INT64_MAX;
};

}  // namespace kinetrace::detail::passes
