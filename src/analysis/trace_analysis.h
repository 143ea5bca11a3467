#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/gpu_bound.h"
#include "analysis/passes/critical_path_report.h"
#include "analysis/read_budget.h"
#include "analysis/trace_collector.h"
#include "analysis/workload_figures.h"

// `kinetrace analyze`: why the GPU was idle, from the events of one or more traces (one per
// rank). Definitions, chosen to match Holistic Trace Analysis (HTA) where it has the same
// analysis:
//
//   window       the span of the trace's events (or of its steps, per step)
//   busy         time with at least one kernel, copy or memset running on the device
//                (overlapping operations counted once); idle = window - busy
//   compute / communication / memory
//                busy time split by what ran: compute when a non-NCCL kernel ran, else
//                communication when an NCCL kernel ran, else memory (copies, memsets)
//   idle causes  for each gap in the device's busy time, by the operation that ended it:
//                  before the first GPU operation   the time from the window's start to the
//                                   device's first operation: the program starting, the
//                                   profiler warming up; no launch was late
//                  host wait        its launch call began after the gap opened: the GPU
//                                   waited for the host, up to the call's start; the rest,
//                                   from the call to the operation's start, is "launch",
//                                   and so is the time the launching thread was still in
//                                   an earlier operation's launch call
//                the call came before the gap (the operation was queued):
//                  kernel wait      the gap is shorter than the consecutive-kernel delay:
//                                   the GPU moving from one kernel to the next
//                  launch           the launch call was still running when the gap opened:
//                                   the host was inside it (lazy module loading makes a
//                                   first launch take milliseconds)
//                  waiting on other work   the trace shows what it waited on: a Stream Wait
//                                   Event on its stream issued after the stream's previous
//                                   launch and before its own (each gap names it). Event,
//                                   stream and context syncs block the host, not queued
//                                   work: they explain host wait instead (a host-wait gap
//                                   that opened while the host was in one says so)
//                  other            nothing in the trace says why (and any gap without a
//                                   known launch call, and the time after the last
//                                   operation)
//                HTA's breakdown (per stream, from each stream's first kernel) has the same
//                host wait (with launch in it, but for launchQueuedNs) and kernel wait; its
//                "other" is waiting on other work, other, and launchQueuedNs
//   consecutive-kernel delay   30 us by default, as HTA computes it: its
//                consecutive_kernel_delay defaults to 30 and is compared with gaps in the
//                trace's microseconds (its docstring says nanoseconds); real gaps between
//                queued kernels are 1-3 us, so a threshold of 30 ns would never be met
//   launch latency   an operation's start minus its launch call's start
//   queue depth  per stream, operations launched and not yet started (HTA's queue length)
//   tiny kernels     kernels shorter than a threshold (default 10 us)
//
// The analysis reads the trace's lists of records (trace_collector.h) a few times, each in
// the order one figure needs, so its memory is the trace's budget whatever its length;
// exact figures (percentiles included), the same as with every record in memory.

namespace kinetrace::detail {

struct AnalysisOptions {
  int64_t tinyKernelNs = 10'000;
  // A queued operation's gap shorter than this is "kernel wait" (HTA's
  // consecutive_kernel_delay: 30 us in effect, see above); `kinetrace analyze
  // --kernel-wait-us`.
  int64_t consecutiveKernelNs = 30'000;
  std::size_t top = 10;  // rows of each table
  // Steps shown in the text and HTML reports (the JSON has them all): a long run has
  // thousands.
  std::size_t stepsShown = 30;
  // Kernel sequences (workload_figures.h): the chains' length (HTA's min_pattern_len, 3 by
  // default; at most kMaxSequenceLength), and HTA's exact mode: the operator whose kernels
  // make the sequences ("" for kinetrace's own chains); `kinetrace analyze
  // --min-pattern-len`, `--sequence-op`.
  static constexpr std::size_t kMaxSequenceLength = 16;
  std::size_t sequenceLength = 3;
  std::string sequenceOperator;
  // A stream's launch queue holding this many operations is full (HTA's max_queue_length:
  // CUDA's 1024); `kinetrace analyze --max-queue-length`.
  int64_t maxQueueLength = 1024;
  // Each step's critical path (passes/critical_path_pass.h): `kinetrace analyze
  // --critical-path`; the trace must have been collected with its critical-path events.
  bool criticalPath = false;
  // And the marks of the paths' events, to lay over the trace (--critical-path-trace).
  bool criticalPathMarks = false;
};

struct Distribution {
  uint64_t count = 0;
  int64_t totalNs = 0;
  int64_t meanNs = 0;
  int64_t p50Ns = 0;
  int64_t p90Ns = 0;
  int64_t p99Ns = 0;
  int64_t maxNs = 0;
};

struct TimeBreakdown {
  int64_t windowNs = 0;
  int64_t busyNs = 0;
  int64_t computeNs = 0;
  int64_t communicationNs = 0;
  int64_t memoryNs = 0;
  int64_t idleNs = 0;
  int64_t beforeFirstOpNs = 0;  // before the device's first operation
  int64_t hostWaitNs = 0;
  int64_t launchNs = 0;
  // Of launchNs, the host still in a launch call when the GPU ran out of work (a first
  // launch loading its module takes milliseconds): of a queued operation's own call (HTA:
  // other), or of an operation that already ran (HTA: host wait).
  int64_t launchQueuedNs = 0;
  int64_t launchPreviousNs = 0;
  int64_t kernelWaitNs = 0;
  int64_t otherWorkWaitNs = 0;
  int64_t otherIdleNs = 0;
  int64_t dataLoadingIdleNs = 0;  // idle while a data-loading range was open
};

struct StreamBreakdown {
  int64_t device = 0;
  int64_t stream = 0;
  uint64_t operations = 0;
  int64_t busyNs = 0;
  int maxQueueDepth = 0;  // operations launched and not yet started, at most
};

// How many operations waited in one stream's queue over the window: the most launched and not
// yet started in each bin of its device's timeline (DeviceReport::timelineStartNs and
// timelineBinNs), so a burst shorter than a bin still shows. Bounded: kTimelineBins a stream.
struct QueueDepthTimeline {
  int64_t device = 0;
  int64_t stream = 0;
  std::vector<int> maxDepth;
};

struct DeviceReport {
  int64_t device = 0;
  TimeBreakdown time;
  std::vector<StreamBreakdown> streams;
  int64_t communicationOverlapNs = 0;  // NCCL kernels running while compute kernels ran
  // The busy fraction (0..1) of each of kTimelineBins equal slices of the window, from
  // timelineStartNs: the timeline overview of the HTML report.
  static constexpr int kTimelineBins = 240;
  int64_t timelineStartNs = 0;
  int64_t timelineBinNs = 0;
  std::vector<double> busyTimeline;
};

struct StepReport {
  std::string name;
  int64_t startNs = 0;
  int64_t endNs = 0;
  TimeBreakdown time;                // over the devices, summed
  int64_t allocatedAtEndBytes = -1;  // -1: no memory samples up to the step's end
  // What bounded its kernels (gpu_bound.h), weighted by their overlap with the step; empty
  // when the trace has no GPU metrics.
  BoundMix bound;
};

struct KernelRow {
  std::string name;
  std::string kind;  // compute, communication, memory
  Distribution duration;
  double share = 0;  // of all kernel time
  // What bounded this name's kernels (their time-weighted averages, classed; for kernels
  // shorter than a sample, the values the fit solved, or unknown when it could not tell);
  // empty when the trace has no GPU metrics, and for copies and memsets.
  BoundMix bound;
  MetricFitRow fit;
};

struct GapReport {
  int64_t device = 0;
  int64_t startNs = 0;
  int64_t durationNs = 0;
  // before the first GPU operation, host wait, launch, kernel wait, waiting on other work,
  // other
  std::string cause;
  // What was found: for waiting on other work, what it waited on ("Stream Wait Event on
  // stream 7"); for host wait, the sync the host was in when the gap opened.
  std::string evidence;
  std::string endedBy;  // the operation that ended it
  std::string hostWas;  // the innermost host range open on the launching thread, or ""
};

struct TinyKernelReport {
  int64_t thresholdNs = 0;
  uint64_t count = 0;
  int64_t kernelNs = 0;
  int64_t launchNs = 0;            // their launch calls' time, where known
  uint64_t launchLongerCount = 0;  // whose launch call took longer than the kernel
  double shareOfKernels = 0;       // count over all kernels
  std::vector<std::pair<std::string, uint64_t>> issuers;  // host range -> count, most first
};

// Gaps by the synchronisation found in them ("Stream Wait Event on stream 7").
struct FoundRow {
  std::string found;
  uint64_t gaps = 0;
  int64_t ns = 0;
};

struct LaunchOutlier {
  std::string name;
  int64_t startNs = 0;
  int64_t latencyNs = 0;
};

// What NCCL's calls moved (from their NVTX payloads, where the trace has them).
struct NcclCallRow {
  std::string call;  // "ncclAllReduce"
  uint64_t operations = 0;
  uint64_t bytes = 0;
  int64_t gpuNs = 0;
  double gigabytesPerSecond = 0;  // bytes over GPU time: NCCL's "algorithm bandwidth"
};

// The host's side of a trace, what a trace without GPU operations has to show: the ranges by
// name and the threads that ran them.
struct HostRangeRow {
  std::string name;
  uint64_t count = 0;
  int64_t totalNs = 0;  // inclusive: ranges nested in one count in both
  int64_t maxNs = 0;
};
struct HostThreadRow {
  int64_t tid = 0;
  std::string name;  // its thread_name, "" when the trace names none
  uint64_t ranges = 0;
  int64_t busyNs = 0;  // covered by at least one of its ranges
};
struct HostReport {
  uint64_t ranges = 0;
  int64_t windowNs = 0;                // from the first to the last event of the trace
  std::vector<HostRangeRow> top;       // by total time, longest first (top N)
  std::vector<HostThreadRow> threads;  // by busy time, busiest first (top N)
  uint64_t threadCount = 0;            // threads with ranges, shown or not
  // Why the trace has no GPU activity, as the recorder said (kinetrace_gpu_status: "no
  // NVIDIA driver: ..."); "" when it did not say, or when it did record GPU activity
  // (gpuRecorded): then no GPU operation ran in the window.
  std::string gpuStatus;
  bool gpuRecorded = false;
};

struct MemoryReport {
  uint64_t samples = 0;
  int64_t peakBytes = 0;
  int64_t peakAtNs = 0;
  int64_t firstBytes = 0;
  int64_t lastBytes = 0;
  bool growsEveryStep = false;  // allocated at step end rose in each of >= 3 steps
  int64_t growthPerStepBytes = 0;
};

struct RankReport {
  std::string path;
  int64_t rank = -1;
  uint64_t events = 0;
  TimeBreakdown time;  // all devices, summed
  std::vector<DeviceReport> devices;
  std::vector<StepReport> steps;
  std::vector<KernelRow> kernels;  // by total time, longest first (top N)
  std::vector<KernelRow> kinds;
  uint64_t kernelCount = 0;
  int64_t kernelNs = 0;
  TinyKernelReport tiny;
  Distribution launchLatency;
  std::vector<LaunchOutlier> launchOutliers;
  std::vector<GapReport> gaps;      // longest first (top N)
  std::vector<FoundRow> otherWork;  // waiting on other work, by what it waited on (top N)
  // Host-wait gaps that opened while the host was in a sync (Stream Sync, ...), by it.
  std::vector<FoundRow> hostWaitAfterSync;
  uint64_t gpuOps = 0;            // kernels, copies, memsets
  uint64_t opsWithHostRange = 0;  // of them, tied to the host range that issued them
  uint64_t syncRecords = 0;       // cuda_sync records in the trace
  int64_t slowestCallNs = 0;      // the longest launch call of a GPU operation
  std::string slowestCallOf;      // that operation
  MemoryReport memory;
  HostReport host;
  // Launch latencies by power-of-two bucket: [0] under 1 us, [k] from 2^(k-1) to 2^k us,
  // the last everything from 2^(kLatencyBuckets-2) us up.
  static constexpr int kLatencyBuckets = 20;
  std::vector<uint64_t> launchLatencyHistogram;
  // Allocated memory over time, at most kMemoryCurvePoints (the highest value of each
  // stretch, so no peak is lost).
  static constexpr std::size_t kMemoryCurvePoints = 400;
  std::vector<MemorySample> memoryCurve;
  uint64_t communicationKernels = 0;
  std::vector<NcclCallRow> ncclCalls;  // by GPU time, longest first
  // By device, then stream: those with a launch call to count.
  std::vector<QueueDepthTimeline> queueDepthTimelines;
  // GPU hardware metrics: the metrics kernels carry, what bounded the kernels, what
  // sampling lost (gpu_bound.h). Empty (any() false) for a trace without them.
  GpuMetricsReport gpuMetrics;
  // How the workload is built (workload_figures.h).
  KernelSequenceReport kernelSequences;
  AnnotationReport annotations;
  FullQueueReport fullQueue;
  CopyBandwidthReport copyBandwidth;
  // Each step's critical path, when asked (AnalysisOptions::criticalPath).
  CriticalPathReport criticalPath;
  // What the steps, devices and streams above take of the read budget, given back when the
  // last copy of the report goes (null for a report made by hand).
  std::shared_ptr<BudgetHold> held;
};

// A collective that started much later on one rank than on the others.
struct StragglerReport {
  // What its start is: an NCCL kernel's, or a torch.distributed call's (c10d::...).
  enum class Source { Kernel, HostCall };
  std::string collective;
  Source source = Source::Kernel;
  uint64_t occurrence = 0;  // the Nth of that name on each rank
  int64_t slowRank = -1;    // started last
  int64_t lateByNs = 0;     // its start minus the earliest rank's
};

// Every kind of finding `analyze` makes, by the id a program reading --json keys on; an id
// keeps its meaning for good. docs/ANALYSIS.md holds this table (a test compares them).
struct FindingKind {
  const char* id;
  const char* about;
};
inline constexpr FindingKind kFindingKinds[] = {
    {"gpu-time",
     "where each GPU's window went: busy, waiting for the host, launching, "
     "between kernels, waiting on other work"},
    {"no-gpu-operations", "the trace holds no kernel, copy or memset"},
    {"before-first-gpu-operation",
     "a tenth of the window or more passed before the first GPU "
     "operation"},
    {"first-launch-module-loading",
     "the GPU ran out of work while the host was inside a launch "
     "call (lazy module loading)"},
    {"host-wait-data-loading", "the GPU waited for the host mostly while data loading ran"},
    {"host-wait-launching", "the GPU waited for the host: launching is too slow"},
    {"sync-before-launch", "gaps that opened while the host was in a synchronisation"},
    {"tiny-kernels", "many kernels shorter than --tiny-us, and what issued them"},
    {"no-host-ranges", "no GPU operation can be tied to host code"},
    {"no-steps", "the trace has no step ranges"},
    {"data-loading-starves-gpu", "the GPU idled while data loading ran"},
    {"memory-grows-every-step", "allocated memory grew at the end of every step"},
    {"communication-overlap",
     "NCCL kernels' share of busy time and their overlap with "
     "compute"},
    {"nccl-bandwidth", "NCCL calls' GPU time, sizes and bandwidth"},
    {"gpu-bound", "what bounded the kernel time by the GPU's hardware metrics"},
    {"gpu-metric-samples-lost", "GPU metric samples lost or corrupted"},
    {"gpu-metrics-without-kernels", "GPU metrics were sampled but no kernel ran then"},
    {"launch-latency-outliers", "launch latency's p99 far above its median"},
    {"straggler", "one rank started a collective late and the others waited for it"},
    {"fusable-kernel-sequence",
     "a chain of kernels repeats back to back; fusing it would save its launches and gaps"},
    {"launch-queue-full", "a stream's launch queue was full: the host blocked in launch calls"},
    {"gpu-time-by-annotation", "the user annotations whose GPU operations took the most time"},
    {"slow-host-copies", "host-device copies far below the link's bandwidth took much time"},
};
// The table as Markdown (what docs/ANALYSIS.md holds).
std::string findingKindsMarkdown();

// One thing `analyze` says: a sentence with its numbers for people, and for programs
// reading --json an id (kFindingKinds), the rank it is about and the figures it rests on.
struct Finding {
  std::string id;                   // "host-wait-launching", "tiny-kernels", ...
  std::optional<std::size_t> rank;  // its index in AnalysisReport::ranks; none: the job's
  std::string text;
  // The figures the sentence says, by name: nanoseconds ("..._ns"), shares of 1 ("..._share"),
  // counts and rates, as numbers.
  std::vector<std::pair<std::string, double>> evidence;
};
// Prints the text (what a test failure shows).
std::ostream& operator<<(std::ostream& out, const Finding& finding);

struct AnalysisReport {
  std::vector<RankReport> ranks;
  std::vector<StragglerReport> stragglers;  // worst first (top N)
  std::vector<Finding> findings;            // most telling first
};

// What the straggler analysis needs of a rank once its trace is let go: the starts of its
// collectives, by name, in order: NCCL kernels, and torch.distributed's calls.
struct RankCollectives {
  int64_t rank = -1;
  std::map<std::string, std::vector<int64_t>> kernelStarts;
  std::map<std::string, std::vector<int64_t>> callStarts;
  // What the starts take of the read budget while they wait for the other ranks.
  std::shared_ptr<BudgetHold> held;
};

struct RankAnalysis {
  RankReport report;
  RankCollectives collectives;
};

// One rank's trace, read through (its lists are consumed): its report, and its collectives
// for combineRanks. Memory: the trace's budget (CollectedTrace::budget), in memory and
// temporary files, whatever the trace's length; what the report and the collectives keep
// stays taken from it while they live. Throws the budget's error naming what grew (step
// ranges, devices, streams, collective starts) when it cannot hold them.
RankAnalysis analyzeRank(CollectedTrace trace, const AnalysisOptions& options);
RankReport analyzeTrace(CollectedTrace trace, const AnalysisOptions& options);
// The ranks' reports (in rank order), then what only several ranks show (stragglers), then
// the findings. Each rank's trace can be analysed and let go before the next is read, so a
// job's analysis holds one rank's records at a time.
AnalysisReport combineRanks(std::vector<RankReport> ranks,
                            const std::vector<RankCollectives>& collectives,
                            const AnalysisOptions& options);
// analyzeRank of each trace, combined.
AnalysisReport analyzeTraces(std::vector<CollectedTrace> traces, const AnalysisOptions& options);
// The findings of a report, most telling first.
std::vector<Finding> findingsOf(const AnalysisReport& report, const AnalysisOptions& options);

std::string formatReport(const AnalysisReport& report, const AnalysisOptions& options);
std::string reportJson(const AnalysisReport& report);
// One self-contained HTML page (inline SVG charts, no script, nothing fetched).
std::string reportHtml(const AnalysisReport& report, const AnalysisOptions& options);

}  // namespace kinetrace::detail
