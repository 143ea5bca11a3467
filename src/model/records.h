#pragma once

#include <cstdint>
#include <type_traits>

#include "model/string_table.h"

// The trace model: compact plain records, strings interned in the trace's StringTable.
// Times are nanoseconds since the Unix epoch. Threads are indexes into TraceData::threads.

namespace kinetrace::detail {

enum class RangeCategory : uint8_t { UserAnnotation, CpuOp };

struct ThreadInfo {
  int64_t pid = 0;
  int64_t tid = 0;
  StringId name = StringTable::kEmpty;
};

struct RangeRecord {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t externalId = 0;  // links GPU work launched inside the range
  uint64_t parentId = 0;    // externalId of the enclosing range on the same thread; 0 at top
  StringId name = 0;
  uint32_t thread = 0;
  RangeCategory category = RangeCategory::UserAnnotation;
  bool unfinished = false;  // still open at stop; endNs is the stop time
};

struct InstantRecord {
  int64_t timeNs = 0;
  StringId name = 0;
  uint32_t thread = 0;
};

struct CounterRecord {
  int64_t timeNs = 0;
  double value = 0;
  StringId name = 0;
  uint32_t thread = 0;
};

// ---- GPU side ---------------------------------------------------------------------

// Where a GPU operation ran and which launch it belongs to.
struct GpuPlacement {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t externalId = 0;   // innermost host range at launch; 0 when none
  uint32_t correlationId = 0;
  uint32_t deviceId = 0;
  uint32_t contextId = 0;
  uint32_t streamId = 0;
  bool hasLaunchCall = false;  // its launch call is in the trace (an ac2g flow ends here)
};

struct KernelRecord {
  GpuPlacement at;
  int64_t queuedNs = 0;  // when the launch was queued; 0 when CUPTI did not report it
  StringId name = 0;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  uint32_t registersPerThread = 0;
  uint32_t staticSharedBytes = 0;
  uint32_t dynamicSharedBytes = 0;
  uint32_t graphNodeIdLow = 0;
  uint64_t graphNodeId = 0;
  uint32_t graphId = 0;
  float blocksPerSm = 0;
  float warpsPerSm = 0;
  float occupancyPercent = -1;  // estimated achieved occupancy; -1 when unknown
};

// Values follow CUpti_ActivityMemcpyKind / CUpti_ActivityMemoryKind; names are resolved
// by the decoder into the record's name.
struct MemcpyRecord {
  GpuPlacement at;
  uint64_t bytes = 0;
  // CUPTI gives a copy the driver call's correlation id and, separately, the runtime
  // call's; the launch may have been recorded under either.
  uint32_t runtimeCorrelationId = 0;
  StringId name = 0;  // "Memcpy HtoD (Pinned -> Device)"
  uint8_t copyKind = 0;
  uint8_t srcKind = 0;
  uint8_t dstKind = 0;
  bool peer = false;
  uint32_t srcDeviceId = 0;
  uint32_t dstDeviceId = 0;
};

struct MemsetRecord {
  GpuPlacement at;
  uint64_t bytes = 0;
  StringId name = 0;  // "Memset (Device)"
  uint32_t value = 0;
  uint8_t memoryKind = 0;
};

struct SyncRecord {
  GpuPlacement at;
  StringId name = 0;  // "Stream Sync", "Event Sync", "Context Sync", "Stream Wait Event"
  uint32_t eventId = 0;
};

// A device allocation or free, with the running totals of its device after it.
struct MemoryRecord {
  int64_t timeNs = 0;
  uint64_t address = 0;
  int64_t bytes = 0;  // positive for an allocation, negative for a free
  int64_t totalAllocated = 0;
  int64_t totalReserved = 0;
  uint32_t deviceId = 0;
  uint32_t thread = 0;
  uint32_t correlationId = 0;
  StringId memoryKind = 0;  // "Device", "Pinned", ...
};

enum class ApiDomain : uint8_t { Runtime, Driver };

// A host call into CUDA (launch, copy, sync, ...), on the thread that made it.
struct ApiCallRecord {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t externalId = 0;
  uint32_t correlationId = 0;
  uint32_t callbackId = 0;
  uint32_t thread = 0;
  StringId name = 0;
  ApiDomain domain = ApiDomain::Runtime;
  bool launchesGpuWork = false;  // a launch, copy or memset entry point
  bool hasGpuOp = false;         // its GPU operation is in the trace (an ac2g flow starts here)
};

// The GPU time of a host range on one stream: from the first to the last GPU operation
// launched inside it (or inside ranges nested in it).
struct GpuSpanRecord {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t externalId = 0;
  StringId name = 0;
  uint32_t deviceId = 0;
  uint32_t streamId = 0;
};

// CUPTI's own overhead (buffer flushes, instrumentation), on its own track.
struct OverheadRecord {
  int64_t startNs = 0;
  int64_t endNs = 0;
  StringId name = 0;
};

struct DeviceInfo {
  uint32_t id = 0;
  StringId name = 0;
  uint64_t totalGlobalMem = 0;
  int32_t computeMajor = 0;
  int32_t computeMinor = 0;
  int32_t maxThreadsPerBlock = 0;
  int32_t maxThreadsPerMultiprocessor = 0;
  int32_t maxBlocksPerMultiprocessor = 0;
  int32_t regsPerBlock = 0;
  int32_t regsPerMultiprocessor = 0;
  int32_t warpSize = 0;
  int32_t sharedMemPerBlock = 0;
  int32_t sharedMemPerBlockOptin = 0;
  int32_t sharedMemPerMultiprocessor = 0;
  int32_t numSms = 0;
};

static_assert(std::is_trivially_copyable_v<RangeRecord>);
static_assert(std::is_trivially_copyable_v<KernelRecord>);
static_assert(sizeof(RangeRecord) <= 48, "range records stay compact");

}  // namespace kinetrace::detail
