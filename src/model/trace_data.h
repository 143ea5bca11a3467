#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kinetrace/value.h"
#include "model/event_args.h"
#include "model/gpu_metrics.h"
#include "model/records.h"
#include "model/string_table.h"

namespace kinetrace::detail {

// What was lost or is doubtful, counted so the trace can say so.
struct LossCounters {
  uint64_t droppedHostEvents = 0;        // the memory cap left no room in a thread's buffer
  uint64_t cuptiDroppedRecords = 0;      // cuptiActivityGetNumDroppedRecords, all contexts
  uint64_t cuptiBuffersRefused = 0;      // buffer requests kinetrace refused (memory cap)
  uint64_t cuptiRecordsUndecoded = 0;    // record kinds kinetrace does not decode
  uint64_t droppedAssembledRecords = 0;  // assembled records the memory cap left no room for
  uint64_t droppedNames = 0;             // names the memory cap left no room for
  uint64_t namesCut = 0;                 // names longer than the limit, cut (host/host_recorder.h)
  uint64_t droppedMetadata = 0;          // addMetadata() entries past their share of the cap
  uint64_t outOfWindowEvents = 0;        // outside [start, stop]
  uint64_t gpuOpsBeforeLaunch = 0;       // GPU op starting before its launch call (clock error)
  uint64_t gpuOpsWithoutLaunch = 0;      // GPU op whose launch call was not recorded
  // Of those, nodes of conditional bodies (correlation id 0) that more than one launch of
  // their graph could have run: left without a launch rather than given a guess.
  uint64_t gpuOpsAmbiguousGraphLaunch = 0;
  uint64_t unfinishedRanges = 0;
  uint64_t graphNodeSitesNotKept = 0;  // graph nodes created past the cap on creation sites
  uint64_t eventArgsNotKept = 0;       // events whose arguments came past the cap on them
  uint64_t gpuMetricSamplesLost = 0;   // GpuMetricLosses, summed over the window
  uint64_t gpuMetricSamplesCorrupted = 0;
  uint64_t gpuMetricSetupSamplesDropped = 0;
  // Kernels written without metric averages although their device was sampled: their
  // samples had been let go before the kernel's record came, did not come within a grace,
  // or were given up under the memory cap. The first two are counted apart too.
  uint64_t kernelsWithoutTheirSamples = 0;
  uint64_t kernelsWhoseSamplesWereLetGo = 0;
  uint64_t kernelsWhoseSamplesCameLate = 0;
};

// Where a CUDA graph node was created: the call that captured or added it, and the host
// range open then. Kernels, copies and memsets replayed from the node (or from its clones
// in executable graphs) point here.
struct GraphNodeSite {
  uint64_t externalId = 0;               // the innermost host range open at creation; 0: none
  uint32_t correlationId = 0;            // of the call that created it; 0: not recorded
  StringId call = StringTable::kEmpty;   // "cudaLaunchKernel", "cudaGraphAddKernelNode"
  StringId range = StringTable::kEmpty;  // the range's name, when kinetrace recorded it
};

// What a sink needs besides the records to name them: the interned strings, the host
// threads records point at, the process, and where graph nodes were created.
struct TraceTables {
  StringTable strings;
  std::vector<ThreadInfo> threads;
  std::vector<GraphNodeSite> graphNodeSites;  // records' graphNodeSite - 1
  // Host events' arguments (NVTX payloads): records' args - 1. A range's are also found by
  // its External id, so the GPU work launched inside NCCL's ranges can carry them.
  std::vector<StoredArgs> eventArgs;
  std::unordered_map<uint64_t, uint32_t> argsOfRange;  // External id -> index + 1
  // The GPU metrics sampled: what metric samples' values and kernels' averages are.
  GpuMetricSet gpuMetrics;
  int64_t pid = 0;
  std::string processName = "host";
};

// What the trace proves about the offset between GPU and host timestamps
// (offset = GPU timestamp - true host time): GPU work cannot start before its launch call,
// so offset <= min(op start - call start); it cannot end after a synchronisation that
// waited for it returned, so offset >= max(op end - sync return).
// Each GPU's clock is converted to the host's on its own, so each device gets its bounds
// too (`devices`, by device id); the trace-wide ones hold for every device at once.
struct ClockOffsetBound {
  bool hasHigh = false;
  bool hasLow = false;
  int64_t highNs = 0;
  int64_t lowNs = 0;
  void atMost(int64_t ns) {
    highNs = hasHigh ? std::min(highNs, ns) : ns;
    hasHigh = true;
  }
  void atLeast(int64_t ns) {
    lowNs = hasLow ? std::max(lowNs, ns) : ns;
    hasLow = true;
  }
};
struct ClockOffsetBounds : ClockOffsetBound {
  std::vector<std::pair<uint32_t, ClockOffsetBound>> devices;  // by device id, ascending
};

// Everything a session recorded, immutable once the session has stopped.
struct TraceData {
  TraceTables tables;
  std::vector<DeviceInfo> devices;
  TraceRecords records;  // empty when the events were written while recording
  RecordCounts counts;   // of every record, written or held
  LossCounters losses;
  ClockOffsetBounds clockBounds;
  int64_t startNs = 0;
  int64_t stopNs = 0;
  uint64_t peakMemoryBytes = 0;
  uint64_t memoryCapBytes = 0;
  // Top-level metadata known when recording started (written before the events), and
  // what is known only at the end (written after them).
  Metadata header;
  Metadata footer;
  // The trace's digest (output/trace_summary.h, as a typed value), built as records streamed by.
  Value summary;
  std::string outputPath;  // where the events were written while recording
  std::string saveError;   // why that failed
  bool hasEvents = true;   // the records are here (not only in the file)
};

}  // namespace kinetrace::detail
