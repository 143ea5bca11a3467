#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/gpu_bound.h"
#include "analysis/read_budget.h"
#include "analysis/spill.h"
#include "kinetrace/sink.h"

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
//   GPU annotations  "X" of category gpu_user_annotation: device and stream as for GPU
//                    operations
//   copies           GPU operations named "Memcpy ..." or "Memset ...": their kind (HTA's:
//                    the name's first 11 letters, "Memcpy HtoD"; "Memset"), bytes and
//                    bandwidth
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
// steps, the data-loading ranges and the NCCL calls' totals, all of it drawn from the budget:
// a trace that needs more is an error naming what grew.
//
// Ids are what the trace says, in 64 bits: devices, streams, correlation and External ids.
// An operation whose device or stream is a number past them is left out and counted.

namespace kinetrace::detail {

enum class GpuOpKind : uint8_t { Compute, Communication, Memory };

// A GPU operation read back from a trace. Not model/gpu_op.h's GpuOp, whose ids are CUPTI's
// 32-bit ones: a trace from elsewhere may number its devices and streams in 64 bits.
struct CollectedGpuOp {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t externalId = 0;     // the host range or framework op open at the launch; 0: none
  uint64_t correlationId = 0;  // shared with the launch call; 0: none
  int64_t device = 0;
  int64_t stream = 0;
  uint64_t sequence = 0;  // its place among the trace's GPU operations: ties go by it
  uint32_t name = 0;
  GpuOpKind kind = GpuOpKind::Compute;
};

enum class SyncKind : uint8_t { StreamWaitEvent, EventSync, StreamSync, ContextSync, Other };

struct CollectedSync {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t sequence = 0;  // syncs starting together keep the trace's order
  int64_t device = 0;
  int64_t stream = -1;        // -1: none (a context-wide sync)
  int64_t waitOnStream = -1;  // a Stream Wait Event's event's stream, where the trace says
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
  uint32_t name = 0;  // cudaLaunchKernel, cudaStreamSynchronize, ...
};

// What a host range is, by its category: a framework operator (torch.profiler's cpu_op),
// a user's range (record_function, NVTX: user_annotation), a module's (torch.profiler's
// with_modules: a python_function named "nn.Module: ..."), or anything else.
enum class HostRangeCategory : uint8_t { Other, CpuOp, UserAnnotation, Module };

struct CollectedRange {
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t tid = 0;
  uint32_t name = 0;
  HostRangeCategory category = HostRangeCategory::Other;
  // A user's annotation: a user_annotation range (record_function, an NVTX range), or a
  // module's.
  bool annotation() const {
    return category == HostRangeCategory::UserAnnotation || category == HostRangeCategory::Module;
  }
};

// A gpu_user_annotation: a host range's span over the GPU work it launched, on the device
// and stream of that work (torch.profiler's; kinetrace's NVTX ranges' spans).
struct CollectedGpuAnnotation {
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t device = 0;
  int64_t stream = 0;
  uint64_t sequence = 0;  // its place among the trace's GPU annotations
  uint32_t name = 0;
};

// A copy or memset, by its name as HTA kinds it ("Memcpy HtoD", "Memset"), with what it
// moved: the trace's "memory bandwidth (GB/s)", else its bytes over its duration.
struct CollectedCopy {
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t device = 0;
  int64_t bytes = -1;  // -1: the trace does not say
  double gigabytesPerSecond = 0;
  uint64_t sequence = 0;
  uint32_t kind = 0;  // a name id: "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memset", ...
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
// A GPU metric sample's value, as kinetrace writes samples (a gpu_metric counter event per
// metric): on its device, from its start until the device's next sample.
struct MetricSampleValue {
  int64_t device = 0;
  int64_t startNs = 0;
  double value = 0;
  uint32_t metric = 0;  // in CollectedTrace::gpuMetrics.metrics
};
// By device, then start, then metric: a sample's values are read together.
struct ByDeviceThenSampleStart {
  bool operator()(const MetricSampleValue& a, const MetricSampleValue& b) const {
    if (a.device != b.device) return a.device < b.device;
    if (a.startNs != b.startNs) return a.startNs < b.startNs;
    return a.metric < b.metric;
  }
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

// An event the critical path reads (passes/critical_path_steps.h), as the trace has it: host
// ranges, CUDA runtime and driver calls, GPU operations and synchronisation records, in the
// trace's order. Kept only when asked (TraceCollector::keepCriticalPathEvents).
enum class PathEventKind : uint8_t { HostRange, Call, GpuOp, Sync };
struct CriticalPathEvent {
  // A host range's detail bits.
  static constexpr uint8_t kOperator = 1;     // category cpu_op: a framework's operator
  static constexpr uint8_t kAnnotation = 2;   // category user_annotation
  static constexpr uint8_t kDataLoading = 4;  // a data-loading range (isDataLoading)
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t pid = 0;  // a GPU operation's or synchronisation's device
  int64_t tid = 0;  // a GPU operation's or synchronisation's stream (-1: none)
  uint64_t correlationId = 0;
  // A synchronisation: the cudaEventRecord call whose event it waits on (torch.profiler's
  // "wait_on_cuda_event_record_corr_id"; 0: unsaid) and that event's stream (-1: unsaid).
  uint64_t eventRecordCorrelation = 0;
  int64_t waitOnStream = -1;
  uint64_t ordinal = 0;  // its place among the events the collector was given, from 0
  uint32_t name = 0;
  PathEventKind kind = PathEventKind::HostRange;
  // HostRange: the bits above; GpuOp: its GpuOpKind; Sync: its SyncKind.
  uint8_t detail = 0;
};

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

// The share of the budget each list of records keeps in memory at most before it writes to a
// temporary file: at most a dozen lists (the collector's and the analysis's) are alive
// together. Lists take their room as they grow and only while the budget gives it.
constexpr std::size_t listBytesOf(std::size_t budgetBytes) {
  return budgetBytes / 32;
}

// The most distinct NCCL call names a trace's totals keep (NCCL has about fifteen);
// operations of calls past them are left out and counted.
inline constexpr std::size_t kMaxNcclCalls = 64;

struct CollectedTrace {
  // The lists' and names' memory comes from `budget`, which outlives the trace; each list
  // keeps at most `bytesPerList` in memory.
  CollectedTrace(ReadBudget& budget, std::size_t bytesPerList);

  ReadBudget* budget;
  std::string path;
  int64_t rank = -1;  // distributedInfo.rank; -1 when absent
  int64_t firstNs = 0;
  int64_t lastNs = 0;  // the span of every event
  uint64_t events = 0;
  std::size_t listBytes;  // what each list keeps in memory at most; the analysis's lists too
  BudgetVector<BudgetString> names;
  // Read once each, sorted (the analysis joins operations to their launch calls by
  // correlation id: CUPTI's ids are unique within a process, and a trace holds one).
  ExternalSorter<CollectedGpuOp, ByCorrelation> gpuOps;
  ExternalSorter<CollectedCall, ByCorrelation> calls;
  ExternalSorter<CollectedSync, ByDeviceThenStartTime> syncs;
  BudgetVector<CollectedRange> steps;
  BudgetVector<CollectedRange> dataLoading;
  SpilledList<CollectedRange> hostRanges;  // every host range, for "what the host was doing"
  SpilledList<CollectedGpuAnnotation> gpuAnnotations;
  SpilledList<CollectedCopy> copies;
  ExternalSorter<ExternalIdRange, ByExternalId> rangeOfExternalId;
  ExternalSorter<SequencedSample, BySampleTime> memory;
  ExternalSorter<CollectiveStart, ByStart> collectiveCalls;  // torch.distributed's calls
  // By call name, first seen first.
  BudgetVector<std::pair<BudgetString, NcclCallTotals>> ncclCalls;
  // Kernels' metric averages; the metrics found and the sampling metadata in gpuMetrics.
  ExternalSorter<KernelMetricValue, ByStartThenKernel> kernelMetrics;
  // The metric samples themselves, for the metrics of kernels shorter than a sample.
  ExternalSorter<MetricSampleValue, ByDeviceThenSampleStart> metricSamples;
  GpuMetricsReport gpuMetrics;
  // The events the critical path reads, when the collector was asked to keep them.
  SpilledList<CriticalPathEvent> criticalPathEvents;
  bool keptCriticalPathEvents = false;
  // Threads' names (thread_name metadata): tid and name id, in the trace's order.
  BudgetVector<std::pair<int64_t, uint32_t>> threadNames;
  // kinetrace_gpu_status: why the recorder had no GPU activity to record, or how it recorded
  // it ("" when unsaid).
  std::string gpuStatus;
  bool gpuRecorded = false;  // CUPTI recorded (the trace says its version)
  // Events left out of the analysis, by reason ("events with a negative duration"): said,
  // never summed in.
  std::map<std::string, uint64_t> leftOut;
  // What the GPU metrics' names (gpuMetrics.metrics, and their index) take of the budget.
  BudgetHold metricsHeld;

  std::string_view name(uint32_t id) const {
    return std::string_view(names[id].data(), names[id].size());
  }
};

class TraceCollector final : public Sink {
 public:
  // What the trace's records (and then their analysis) hold comes from `budget`, which
  // outlives the collector and the trace it collects.
  TraceCollector(std::string path, ReadBudget& budget);
  // With lists that keep at most `bytesPerList` in memory (listBytesOf(the cap) above): a
  // smaller share sends records to files sooner.
  TraceCollector(std::string path, ReadBudget& budget, std::size_t bytesPerList);
  TraceCollector(const TraceCollector&) = delete;
  TraceCollector& operator=(const TraceCollector&) = delete;

  void begin(const TraceHeader& header) override;
  void write(const Event& event) override;
  void end(const Metadata& footer) override;

  CollectedTrace take() { return std::move(trace_); }

  // Keeps the events the critical path reads too (CollectedTrace::criticalPathEvents): a
  // list as long as the trace, so only for an analysis that asks for it. Before begin().
  void keepCriticalPathEvents() { trace_.keptCriticalPathEvents = true; }

 private:
  // The name table's index: ids whose names hash and compare as the names do, so each name
  // is kept once (in trace_.names). kProbe stands for the name being looked up.
  static constexpr uint32_t kProbe = ~uint32_t{0};
  struct NameHash {
    const TraceCollector* collector;
    std::size_t operator()(uint32_t id) const {
      return std::hash<std::string_view>()(collector->nameOf(id));
    }
  };
  struct NameEqual {
    const TraceCollector* collector;
    bool operator()(uint32_t a, uint32_t b) const {
      return collector->nameOf(a) == collector->nameOf(b);
    }
  };
  std::string_view nameOf(uint32_t id) const { return id == kProbe ? probe_ : trace_.name(id); }

  uint32_t intern(std::string_view name);
  void noteNcclCall(const Event& event);
  void noteCopy(const Event& event, const CollectedGpuOp& op);
  void noteKernelMetrics(const Event& event, const CollectedGpuOp& op);
  void noteMetricSample(const Event& event);
  // The index of the metric an args' key names ("SM throughput (%)"), added when new;
  // nullopt (and counted in leftOut) when the key names none or the metrics are too many.
  std::optional<uint32_t> metricIdOf(std::string_view key);
  void noteMetricsMetadata(const Metadata& metadata);
  void noteRankAndGpuStatus(const Metadata& metadata);
  void noteCriticalPathEvent(const Event& event, int64_t endNs, uint64_t ordinal);
  CollectedTrace trace_;
  BudgetUnorderedSet<uint32_t, NameHash, NameEqual> ids_;
  std::string_view probe_;
  std::unordered_map<std::string, uint32_t> metricIds_;  // by the args' key: kMaxKernelMetrics
  std::string key_;
  std::string sampleKey_;
  bool any_ = false;
  uint64_t written_ = 0;  // events given to write(), metadata included: their ordinals
};

}  // namespace kinetrace::detail
