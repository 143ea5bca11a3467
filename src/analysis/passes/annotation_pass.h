#pragma once

#include <cstdint>

#include "analysis/passes/pass_context.h"
#include "analysis/spill.h"

namespace kinetrace::detail::passes {

// GPU time per user annotation (record_function, NVTX ranges, with_modules' modules): each
// GPU operation is attributed to one annotation, the innermost, and each annotation's
// operations summed. Two ways, the first the trace allows:
//
//   gpu_user_annotation   the annotations' spans on the GPU (torch.profiler's): of the spans
//                         on the operation's device and stream that overlap it, the shortest
//                         (HTA's get_gpu_kernels_with_user_annotations; of spans as short,
//                         the later)
//   host ranges           the innermost annotation range around the operation's launch
//                         call, on the launching thread (a trace whose annotations have no
//                         span on the operations' streams: kinetrace's NVTX ranges)
//
// Beside each, its spans' count and time (HTA's get_gpu_user_annotation_breakdown). And the
// modules (torch.profiler's with_modules): each operation to the innermost module range
// around its launch call, whatever annotation the way above chose. Reads
// the trace's GPU annotations and host ranges. Overlapping nonsense is bounded: at most
// kMostOpen annotations open at once on a stream or thread, the rest counted as left out.
class AnnotationPass {
 public:
  explicit AnnotationPass(const PassContext& context);

  void add(const JoinedOp& op);

  // report.annotations.
  void finish(RankReport& report);

  static constexpr std::size_t kMostOpen = 256;

 private:
  struct OnStream {
    int64_t device = 0;
    int64_t stream = 0;
    int64_t startNs = 0;
    int64_t endNs = 0;
    uint64_t sequence = 0;
  };
  struct ByStreamThenStart {
    bool operator()(const OnStream& a, const OnStream& b) const;
  };
  // An operation's launch call, on its thread.
  struct OnThread {
    int64_t tid = 0;
    int64_t startNs = 0;
    int64_t endNs = 0;
    int64_t operationNs = 0;
    uint64_t sequence = 0;
  };
  struct ByThreadThenStart {
    bool operator()(const OnThread& a, const OnThread& b) const;
  };
  // What a name is credited with: a span of its own, or an operation by either way.
  // ByModule: an operation to the innermost module around its launch, whichever annotation
  // took it.
  enum class Credit : uint8_t { Span, ByGpuSpan, ByHostRange, ByModule };
  struct Credited {
    uint32_t name = 0;
    Credit credit = Credit::Span;
    int64_t ns = 0;
  };
  struct ByName {
    bool operator()(const Credited& a, const Credited& b) const { return a.name < b.name; }
  };

  void byGpuSpans(ExternalSorter<Credited, ByName>& credits, AnnotationReport& out);
  void byHostRanges(ExternalSorter<Credited, ByName>& credits, AnnotationReport& out);
  void table(ExternalSorter<Credited, ByName>& credits, Credit chosen, AnnotationReport& out);
  bool isModule(uint32_t name) const;

  const PassContext& context_;
  ExternalSorter<OnStream, ByStreamThenStart> operations_;
  ExternalSorter<OnThread, ByThreadThenStart> calls_;
  uint64_t count_ = 0;
  int64_t gpuNs_ = 0;
  uint64_t byGpuSpan_ = 0;    // operations a span took
  uint64_t byHostRange_ = 0;  // operations a host range took
  int64_t byGpuSpanNs_ = 0;
  int64_t byHostRangeNs_ = 0;
};

}  // namespace kinetrace::detail::passes
