#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/records.h"
#include "model/string_table.h"

namespace kinetrace::detail {

// What was lost or is doubtful, counted so the trace can say so.
struct LossCounters {
  uint64_t droppedHostEvents = 0;       // a thread's share of the host buffer cap was full
  uint64_t droppedHostNameBytes = 0;    // copied names that did not fit (recorded as "<dropped>")
  uint64_t cuptiDroppedRecords = 0;     // cuptiActivityGetNumDroppedRecords, all contexts
  uint64_t cuptiBuffersRefused = 0;     // buffer requests kinetrace could not satisfy (cap)
  uint64_t cuptiRecordsUndecoded = 0;   // record kinds kinetrace does not decode
  uint64_t outOfWindowEvents = 0;       // outside [start, stop]
  uint64_t gpuOpsBeforeLaunch = 0;      // GPU op starting before its launch call (clock error)
  uint64_t gpuOpsWithoutLaunch = 0;     // GPU op whose launch call was not recorded
  uint64_t unfinishedRanges = 0;
};

// Everything a session recorded, ready to be written by any sink.
struct TraceData {
  StringTable strings;
  int64_t startNs = 0;
  int64_t stopNs = 0;
  int64_t pid = 0;

  std::vector<ThreadInfo> threads;
  std::vector<RangeRecord> ranges;
  std::vector<InstantRecord> instants;
  std::vector<CounterRecord> counters;

  std::vector<DeviceInfo> devices;
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<SyncRecord> syncs;
  std::vector<MemoryRecord> memory;
  std::vector<ApiCallRecord> apiCalls;
  std::vector<OverheadRecord> overheads;
  std::vector<GpuSpanRecord> gpuSpans;

  LossCounters losses;
  // When the stop-time synchronisation of every GPU context returned (0: none was made).
  // No GPU operation of the trace can truly end after it: a bound on clock skew.
  int64_t gpuSyncReturnNs = 0;
  // Top-level metadata, values as JSON text, in the order written.
  std::vector<std::pair<std::string, std::string>> metadataJson;

  // Index of the thread (pid, tid) in `threads`, adding it when new.
  uint32_t threadIndex(int64_t pidValue, int64_t tid);
  void setMetadataJson(const std::string& key, std::string json);
};

}  // namespace kinetrace::detail
