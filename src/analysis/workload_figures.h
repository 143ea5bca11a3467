#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

// Four figures of `kinetrace analyze` that read how the workload is built, each a pass of
// its own (analysis/passes/), set beside Holistic Trace Analysis's (HTA's) counterparts:
//
//   kernel sequences   chains of kernels that repeat (HTA: get_frequent_cuda_kernel_sequences),
//                      ranked by what fusing each would save
//   annotations        the GPU time of the work under each user annotation (HTA:
//                      get_gpu_user_annotation_breakdown, get_gpu_kernels_with_user_annotations)
//   full launch queue  per stream, the time its queue held the most operations CUDA queues
//                      (HTA: get_time_spent_blocked_on_full_queue)
//   copy bandwidth     per kind of copy and memset, the bandwidth over time and its summary
//                      (HTA: get_memory_bw_summary, get_memory_bw_time_series)
//
// Tables are bounded (the top options.top rows); what a pass left out (past its caps, on a
// hostile trace) is counted in its report's leftOut, by reason, and said.

namespace kinetrace::detail {

// ---- kernel sequences -----------------------------------------------------------------------

// A chain of kernels that ran back to back on one stream, launched by one thread, and how
// often it repeated. Fusing its kernels into one would save, each time it ran, the launch
// calls of all but its first kernel and the idle gaps between its kernels where the next
// was already queued (savedNs; sequence_pass.h).
struct KernelSequenceRow {
  std::vector<std::string> kernels;  // in the order they ran; HTA's mode: the op's, all of them
  uint64_t length = 0;               // kernels in the chain (kernels holds at most a few dozen)
  // The innermost host range that enclosed every launch call of the chain ("": none); in
  // HTA's mode, the operator whose kernels these are.
  std::string issuer;
  // No range enclosed them all, though ranges were open at the first launch: the chain
  // crosses ranges (one operator's kernel, then the next's).
  bool acrossRanges = false;
  uint64_t count = 0;      // times it ran (occurrences that do not overlap one another)
  int64_t gpuNs = 0;       // the kernels' durations, summed over the occurrences
  int64_t launchNs = 0;    // every launch call's duration, summed
  int64_t gapNs = 0;       // the idle time between the chain's kernels, the next one queued, summed
  int64_t savedNs = 0;     // launch calls after the first, and the gaps
  int64_t operatorNs = 0;  // HTA's mode: the operator's own duration, summed
};

struct KernelSequenceReport {
  // "windows": chains of `length` consecutive kernels, kinetrace's own; "operator": HTA's
  // exact mode (kinetrace analyze --sequence-op NAME).
  std::string mode = "windows";
  std::size_t length = 3;  // --min-pattern-len: HTA's min_pattern_len
  std::string operatorName;
  uint64_t chains = 0;                  // distinct chains found (kept or not)
  uint64_t counted = 0;                 // their occurrences
  // windows: those that ran twice or more, the most saved first; operator: HTA's order.
  std::vector<KernelSequenceRow> rows;
  // HTA's mode: why it finds none where that is not for want of the operator ("" else).
  std::string noneBecause;
  std::map<std::string, uint64_t> leftOut;
};

// ---- GPU time per annotation ----------------------------------------------------------------

struct AnnotationRow {
  std::string name;
  // The GPU operations attributed to it (to the innermost annotation, as HTA's
  // get_gpu_kernels_with_user_annotations does), their count and summed duration.
  uint64_t operations = 0;
  int64_t gpuNs = 0;
  // Its gpu_user_annotation spans (HTA's get_gpu_user_annotation_breakdown): how many, their
  // summed, shortest and longest duration. 0 where the trace has none of that name.
  uint64_t spans = 0;
  int64_t spanNs = 0;
  int64_t spanMinNs = 0;
  int64_t spanMaxNs = 0;
};

struct AnnotationReport {
  // What the operations were attributed by: "gpu_user_annotation" (the spans on the
  // operation's device and stream that overlap it, the shortest: HTA's), "host ranges" (the
  // innermost annotation around its launch call, for a trace whose annotations have no span
  // on the operations' streams), or "" when the trace has no annotation.
  std::string attributedBy;
  uint64_t annotations = 0;  // distinct names with time or spans
  uint64_t operations = 0;   // GPU operations in all
  uint64_t attributedOperations = 0;
  int64_t gpuNs = 0;  // every GPU operation's duration, summed
  int64_t attributedNs = 0;
  std::vector<AnnotationRow> rows;  // by GPU time, most first (top N); then by span time
  // The modules ("nn.Module: ...", torch.profiler's with_modules): each operation to the
  // innermost module around its launch call; by GPU time (top N). No spans.
  std::vector<AnnotationRow> modules;
  uint64_t moduleCount = 0;  // modules with operations
  std::map<std::string, uint64_t> leftOut;
};

// ---- time blocked on a full launch queue ----------------------------------------------------

struct FullQueueStream {
  int64_t device = 0;
  int64_t stream = 0;
  int maxDepth = 0;
  int64_t fullNs = 0;      // time at maxQueueLength operations or more
  double windowShare = 0;  // of the rank's window
};

struct FullQueueReport {
  int64_t maxQueueLength = 1024;  // --max-queue-length: HTA's max_queue_length
  int64_t windowNs = 0;
  int64_t fullNs = 0;                    // summed over the streams
  uint64_t streamsFull = 0;              // streams that reached the limit
  std::vector<FullQueueStream> streams;  // those that reached it, the longest full first (top N)
};

// ---- copy bandwidth -------------------------------------------------------------------------

// One kind's bandwidth (GB/s), as HTA's get_memory_bw_time_series draws it: the summed
// bandwidth of the copies of that kind running at each moment, a step that rises at a copy's
// start and falls at its end (a copy of no duration lasts 1 us); the summary is HTA's
// get_memory_bw_summary, over the values the step takes above 0.
struct CopyKindBandwidth {
  std::string kind;  // "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memset", ...
  uint64_t operations = 0;
  int64_t bytes = 0;  // of those that say
  int64_t gpuNs = 0;
  uint64_t samples = 0;  // values above 0
  double meanGbps = 0;
  double stdGbps = 0;  // sample standard deviation (n - 1), 0 for one value
  double minGbps = 0;
  double p25Gbps = 0;  // percentiles interpolated linearly between values, as pandas does
  double p50Gbps = 0;
  double p75Gbps = 0;
  double maxGbps = 0;
  // The time-weighted mean bandwidth of each of kTimelineBins slices of the window, from
  // CopyBandwidthReport::timelineStartNs.
  std::vector<double> timeline;
};

struct CopyBandwidthReport {
  static constexpr int kTimelineBins = 240;
  static constexpr std::size_t kMaxKinds = 16;
  int64_t timelineStartNs = 0;
  int64_t timelineBinNs = 0;
  std::vector<CopyKindBandwidth> kinds;  // by name
  std::map<std::string, uint64_t> leftOut;
};

}  // namespace kinetrace::detail
