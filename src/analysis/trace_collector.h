#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/gpu_bound.h"
#include "analysis/spill.h"
#include "kinetrace/sink.h"
#include "model/gpu_op.h"

// What `kinetrace analyze` keeps of a trace while reading it: compact records of the events
// its analyses use, taken from any Chrome trace's events (kinetrace's, torch.profiler's) by
// their categories and arguments, as libkineto lays traces out (the names:
// output/trace_vocabulary.h):
//
//   GPU operations   "X" of category kernel, gpu_memcpy, gpu_memset, cuda_graph (a whole
//                    graph's run, traced at graph level: compute); device from the
//                    "device" argument (else pid), stream from "stream" (else tid),
//                    "correlation", "External id"
//   launch calls     "X" of category cuda_runtime or cuda_driver with a "correlation"
//   synchronisation  "X" of category cuda_sync (Stream Wait Event, Event Sync, Stream Sync,
//                    Context Sync): device and stream as for GPU operations, and the
//                    stream a Stream Wait Event waits on ("wait_on_stream", torch.profiler's)
//   host ranges      "X" of any other category on a host process: steps (ProfilerStep#N,
//                    or a range named "step" and a number: "step 12", NVTX step marks),
//                    data-loading ranges (a name containing "DataLoader", "dataloader",
//                    "data_loader" or "data loader"), and the names of ranges with an
//                    "External id" (what issued a kernel)
//   memory           "[memory]" instants: "Total Allocated" over time
//   collective calls host ranges named "c10d::..." (torch.distributed's operators:
//                    c10d::allreduce_, c10d::broadcast_, ...), whichever the backend: with
//                    gloo, the collectives run on the host and no NCCL kernel shows them
//   NCCL calls       GPU operations carrying "nccl call" and "nccl bytes" (kinetrace's, from
//                    NCCL's NVTX payloads): totals per call, the communicator's creation
//                    and destruction left out
//   GPU metrics      kernels' metric averages, args keyed "<display name> (<unit>)" of a
//                    unit GPU metrics have ("%", "bytes/s"), whichever the metric; and the
//                    "kinetrace_gpu_metrics" metadata (what sampling lost)
//
// Memory: bounded by the budget given (`kinetrace analyze --memory-mb`), not by the trace's
// length: the records go into lists that keep a share of the budget each in memory and the
// rest in temporary files (spill.h). What stays in memory is each distinct name once, the
// steps, the data-loading ranges and the NCCL calls' totals.

namespace kinetrace::detail {

enum class GpuOpKind : uint8_t { Compute, Communication, Memory };

struct CollectedGpuOp : GpuOp {
  uint64_t sequence = 0;  // its place among the trace's GPU operations: ties go by it
  uint32_t name = 0;
  GpuOpKind kind = GpuOpKind::Compute;
};

enum class SyncKind : uint8_t { StreamWaitEvent, EventSync, StreamSync, ContextSync, Other };

struct CollectedSync {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t sequence = 0;  // syncs starting together keep the trace's order
  uint32_t device = 0;
  int32_t stream = -1;        // -1: none (a context-wide sync)
  int32_t waitOnStream = -1;  // a Stream Wait Event's event's stream, where the trace says
  SyncKind kind = SyncKind::Other;
};
struct ByDeviceThenStartTime {
  bool operator()(const CollectedSync& a, const CollectedSync& b) const {
    if (a.device != b.device) return a.device < b.device;
    return a.startNs != b.startNs ? a.startNs < b.startNs : a.sequence < b.sequence;
  }
};

struct CollectedCall {
  uint64_t correlationId = 0;
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t tid = 0;
};

struct CollectedRange {
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t tid = 0;
  uint32_t name = 0;
};

// The GPU operations of one NCCL call (ncclAllReduce, ...), summed.
struct NcclCallTotals {
  uint64_t operations = 0;
  uint64_t bytes = 0;  // the calls' message sizes
  int64_t gpuNs = 0;   // the operations' durations
};

struct MemorySample {
  int64_t timeNs = 0;
  int64_t allocatedBytes = 0;
};

// A host range that carries an External id: what issued the GPU operations of that id.
struct ExternalIdRange {
  uint64_t externalId = 0;
  uint64_t sequence = 0;  // of repeats, the first in the trace is kept
  uint32_t name = 0;
};

struct SequencedSample {
  MemorySample sample;
  uint64_t sequence = 0;  // samples at one time keep the trace's order
};

// A collective's start: an NCCL kernel's (a GPU operation), or a host call's (a c10d::
// operator of torch.distributed, whichever the backend).
struct CollectiveStart {
  int64_t startNs = 0;
  uint64_t sequence = 0;  // collectives starting together keep the trace's order
  uint32_t name = 0;
};
struct ByStart {
  bool operator()(const CollectiveStart& a, const CollectiveStart& b) const {
    return a.startNs != b.startNs ? a.startNs < b.startNs : a.sequence < b.sequence;
  }
};

// One of a kernel's GPU metric averages; a kernel without any has one record of kNoMetric,
// so its time counts as "unknown" in a trace that has metrics.
struct KernelMetricValue {
  static constexpr uint32_t kNoMetric = ~uint32_t{0};
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t sequence = 0;  // the kernel's, among the trace's GPU operations
  double value = 0;
  uint32_t name = 0;
  uint32_t metric = kNoMetric;  // in CollectedTrace::gpuMetrics.metrics
};
// By start, then kernel: a kernel's records are read together.
struct ByStartThenKernel {
  bool operator()(const KernelMetricValue& a, const KernelMetricValue& b) const {
    if (a.startNs != b.startNs) return a.startNs < b.startNs;
    if (a.sequence != b.sequence) return a.sequence < b.sequence;
    return a.metric < b.metric;
  }
};
// A trace keeps at most this many distinct metrics (a sampling session has at most 32);
// averages of more are left out and counted.
inline constexpr std::size_t kMaxKernelMetrics = 64;

struct ByCorrelation {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a.correlationId < b.correlationId;
  }
};
struct ByExternalId {
  bool operator()(const ExternalIdRange& a, const ExternalIdRange& b) const {
    return a.externalId != b.externalId ? a.externalId < b.externalId : a.sequence < b.sequence;
  }
};
struct BySampleTime {
  bool operator()(const SequencedSample& a, const SequencedSample& b) const {
    return a.sample.timeNs != b.sample.timeNs ? a.sample.timeNs < b.sample.timeNs
                                              : a.sequence < b.sequence;
  }
};

// What `kinetrace analyze` may hold in memory by default, and the share of it each list of
// records keeps before it writes to a temporary file: at most a dozen lists (the
// collector's and the analysis's) are alive together, and a list being read holds up to
// twice its share.
constexpr std::size_t kDefaultAnalysisMemoryBytes = std::size_t{256} << 20;
constexpr std::size_t listBytesOf(std::size_t memoryBytes) {
  return memoryBytes / 32;
}

struct CollectedTrace {
  explicit CollectedTrace(std::size_t bytesPerList = listBytesOf(kDefaultAnalysisMemoryBytes))
      : listBytes(bytesPerList),
        gpuOps(bytesPerList),
        calls(bytesPerList),
        syncs(bytesPerList),
        hostRanges(bytesPerList),
        rangeOfExternalId(bytesPerList),
        memory(bytesPerList),
        collectiveCalls(bytesPerList),
        kernelMetrics(bytesPerList) {}

  std::string path;
  int64_t rank = -1;  // distributedInfo.rank; -1 when absent
  int64_t firstNs = 0;
  int64_t lastNs = 0;  // the span of every event
  uint64_t events = 0;
  std::size_t listBytes;  // what each list keeps in memory; the analysis's lists too
  std::vector<std::string> names;
  // Read once each, sorted (the analysis joins operations to their launch calls by
  // correlation id: CUPTI's ids are unique within a process, and a trace holds one).
  ExternalSorter<CollectedGpuOp, ByCorrelation> gpuOps;
  ExternalSorter<CollectedCall, ByCorrelation> calls;
  ExternalSorter<CollectedSync, ByDeviceThenStartTime> syncs;
  std::vector<CollectedRange> steps;
  std::vector<CollectedRange> dataLoading;
  SpilledList<CollectedRange> hostRanges;  // every host range, for "what the host was doing"
  ExternalSorter<ExternalIdRange, ByExternalId> rangeOfExternalId;
  ExternalSorter<SequencedSample, BySampleTime> memory;
  ExternalSorter<CollectiveStart, ByStart> collectiveCalls;       // torch.distributed's calls
  std::vector<std::pair<std::string, NcclCallTotals>> ncclCalls;  // by call name, first seen first
  // Kernels' metric averages; the metrics found and the sampling metadata in gpuMetrics.
  ExternalSorter<KernelMetricValue, ByStartThenKernel> kernelMetrics;
  GpuMetricsReport gpuMetrics;
  // Events left out of the analysis, by reason ("events with a negative duration"): said,
  // never summed in.
  std::map<std::string, uint64_t> leftOut;

  const std::string& name(uint32_t id) const { return names[id]; }
};

class TraceCollector final : public Sink {
 public:
  // `memoryBytes`: what the trace's records (and then their analysis) may hold in memory.
  explicit TraceCollector(std::string path, std::size_t memoryBytes = kDefaultAnalysisMemoryBytes)
      : trace_(listBytesOf(memoryBytes)) {
    trace_.path = std::move(path);
  }

  void begin(const TraceHeader& header) override;
  void write(const Event& event) override;
  void end(const Metadata& footer) override;

  CollectedTrace take() { return std::move(trace_); }

 private:
  uint32_t intern(std::string_view name);
  void noteNcclCall(const Event& event);
  void noteKernelMetrics(const Event& event, const CollectedGpuOp& op);
  void noteMetricsMetadata(const Metadata& metadata);
  CollectedTrace trace_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::unordered_map<std::string, uint32_t> metricIds_;  // by the args' key
  std::string key_;
  bool any_ = false;
};

}  // namespace kinetrace::detail
