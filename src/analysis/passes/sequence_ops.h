#pragma once

#include <array>
#include <cstdint>

#include "analysis/passes/pass_context.h"

// What the kernel sequences' two modes share (sequence_pass.h, operator_sequences.h): the
// operations they read, in the order they read them.

namespace kinetrace::detail::passes {

// A GPU operation as the kernel sequences read it.
struct SequenceOp {
  int64_t device = 0;
  int64_t stream = 0;
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t callStartNs = 0;
  int64_t callEndNs = 0;
  int64_t callTid = 0;
  uint64_t sequence = 0;
  uint64_t correlationId = 0;  // kernels of one graph launch share their launch call's
  uint32_t name = 0;
  GpuOpKind kind = GpuOpKind::Compute;
  bool hasCall = false;
};

// The names of a chain: at most AnalysisOptions::kMaxSequenceLength, the rest 0.
using ChainNames = std::array<uint32_t, AnalysisOptions::kMaxSequenceLength>;

// By stream, then start: the order both modes read the operations in.
struct SequenceOpsByStreamThenStart {
  bool operator()(const SequenceOp& a, const SequenceOp& b) const {
    if (a.device != b.device) return a.device < b.device;
    if (a.stream != b.stream) return a.stream < b.stream;
    return a.startNs != b.startNs ? a.startNs < b.startNs : a.sequence < b.sequence;
  }
};

}  // namespace kinetrace::detail::passes
