#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "model/gpu_op.h"
#include "model/record_kinds.h"
#include "model/string_table.h"

// The trace model: compact plain records, kinds as enums, strings interned in the trace's
// StringTable. Times are nanoseconds since the Unix epoch. Host threads are indexes into
// the trace's thread table. Display names of kinds ("Memcpy HtoD", "Stream Sync") exist only
// in sinks (src/output/kind_names.h): nothing here holds or compares them.

namespace kinetrace::detail {

// ---- kinds ------------------------------------------------------------------------------

enum class CopyKind : uint8_t { Unknown, HtoD, DtoH, HtoA, AtoH, AtoA, AtoD, DtoA, DtoD, HtoH, PtoP };

enum class MemoryKind : uint8_t {
  Unknown,
  Pageable,
  Pinned,
  Device,
  Array,
  Managed,
  DeviceStatic,
  ManagedStatic,
};

enum class SyncKind : uint8_t { Unknown, EventSync, StreamWaitEvent, StreamSync, ContextSync };

enum class OverheadKind : uint8_t {
  Unknown,
  DriverCompiler,
  CuptiBufferFlush,
  CuptiInstrumentation,
  CuptiResource,
  ModuleLoading,
  LazyFunctionLoading,
  CommandBufferFull,
  ActivityBufferRequest,
};

// What happened to a device memory pool (CUPTI's memory pool records).
enum class PoolOperation : uint8_t { Unknown, Created, Destroyed, Trimmed };

// What CUPTI says an overhead record was spent on.
enum class OverheadObject : uint8_t { Unknown, Thread, Device };

enum class ApiDomain : uint8_t { Runtime, Driver };

// What a CUDA API call may produce on the GPU side, so the assembler knows which calls to
// keep until their records arrive. Chosen from the call's name when callbacks are set up.
enum class CallEffect : uint8_t {
  None,    // nothing kinetrace records (cudaGetDevice, ...)
  Kernel,  // a kernel launch
  Copy,    // a memcpy
  Set,     // a memset
  Graph,   // a graph launch: any number of kernels, copies and memsets share its id
  Sync,    // a synchronisation (stream, event, context, stream-wait-event)
  Memory,  // an allocation or free
};

enum class RangeCategory : uint8_t { UserAnnotation, CpuOp };

// ---- host side --------------------------------------------------------------------------

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
  bool async = false;       // an async range: `lane` is its track among the async tracks
  uint16_t lane = 0;
  // Its arguments (an NVTX payload), if any: TraceTables::argsOfRange[externalId].
};

struct InstantRecord {
  int64_t timeNs = 0;
  StringId name = 0;
  uint32_t thread = 0;
  uint32_t args = 0;  // its arguments (an NVTX payload): TraceTables::eventArgs[args - 1]; 0: none
};

struct CounterRecord {
  int64_t timeNs = 0;
  double value = 0;
  StringId name = 0;
  uint32_t thread = 0;
};

// A host call into CUDA (launch, copy, sync, ...), on the thread that made it.
struct ApiCallRecord {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t externalId = 0;  // innermost host range open at the call (0: none)
  uint32_t correlationId = 0;
  uint32_t callbackId = 0;
  uint32_t thread = 0;
  StringId name = 0;  // "cudaLaunchKernel"; set by the assembler
  ApiDomain domain = ApiDomain::Runtime;
  CallEffect effect = CallEffect::None;
};

// What a graph launch, graph instantiation or synchronisation call acted on, read from its
// parameters by the launch callback: recorded just before the call's ApiCallRecord (same
// correlation id), only for those calls. Ids are CUPTI's, as its activity records give them.
struct LaunchTarget {
  uint32_t correlationId = 0;
  uint32_t graphExecId = 0;  // the executable graph launched or instantiated (cuptiGetGraphExecId)
  uint32_t contextId = 0;
  uint32_t streamId = 0;
  bool graphLaunched = false;      // graphExecId is the graph this call launched
  bool graphInstantiated = false;  // graphExecId is the graph this call made
  bool streamKnown = false;        // streamId: the stream launched on or synchronised
  bool contextKnown = false;       // contextId: the call's context (synchronised whole, for a
                                   // context synchronisation)
};

// The start of a launch -> GPU work arrow, at the launch call: written once the GPU
// operation it points to is in the trace, so every arrow has both ends.
struct FlowRecord {
  int64_t startNs = 0;  // the launch call's start
  uint32_t correlationId = 0;
  uint32_t thread = 0;
};

// ---- GPU side ---------------------------------------------------------------------------

// How a GPU operation's launch call was found.
enum class LaunchFoundBy : uint8_t {
  Correlation,  // CUPTI's correlation id: the usual way
  // A node of a conditional's body (correlation id 0), by its graph's launches:
  EarlierNode,  // the launch whose first node started last before it (graph_launches.h)
  OnlyLaunch,   // the only launch of its graph it can belong to
};

// A GPU operation as the tracer records it: the operation, and where it goes in the trace.
struct GpuPlacement : GpuOp {
  uint32_t contextId = 0;
  uint16_t lane = 0;           // 0: the stream's own track; others where ops overlap on it
  bool hasLaunchCall = false;  // its launch call is in the trace (an arrow ends here)
  LaunchFoundBy launchFoundBy = LaunchFoundBy::Correlation;
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
  uint32_t graphId = 0;
  uint64_t graphNodeId = 0;
  uint32_t graphNodeSite = 0;  // where the node was created: TraceTables::graphNodeSites, 1-based
  float blocksPerSm = 0;
  float warpsPerSm = 0;
  float occupancyPercent = -1;  // estimated achieved occupancy; -1 when unknown
  // Its GPU metric averages, one per metric of TraceTables::gpuMetrics, weighted by its
  // overlap with the samples: TraceRecords::metricValues from index metricAverages - 1;
  // 0 when no sample overlapped it (or metrics are not sampled).
  uint32_t metricAverages = 0;
};

struct MemcpyRecord {
  GpuPlacement at;
  uint64_t bytes = 0;
  // CUPTI gives a copy the driver call's correlation id and, separately, the runtime
  // call's; the launch may have been recorded under either.
  uint32_t runtimeCorrelationId = 0;
  uint32_t srcDeviceId = 0;
  uint32_t dstDeviceId = 0;
  CopyKind copyKind = CopyKind::Unknown;
  MemoryKind srcKind = MemoryKind::Unknown;
  MemoryKind dstKind = MemoryKind::Unknown;
  bool peer = false;
  uint32_t graphId = 0;  // the graph that ran it (0: not replayed from a graph)
  uint64_t graphNodeId = 0;
  uint32_t graphNodeSite = 0;  // as KernelRecord's
};

struct MemsetRecord {
  GpuPlacement at;
  uint64_t bytes = 0;
  uint32_t value = 0;
  MemoryKind memoryKind = MemoryKind::Unknown;
  uint32_t graphId = 0;  // the graph that ran it (0: not replayed from a graph)
  uint64_t graphNodeId = 0;
  uint32_t graphNodeSite = 0;  // as KernelRecord's
};

// One run of a whole CUDA graph, from its first node's start to its last node's end, when
// graphs are traced at graph level (CUPTI_ACTIVITY_KIND_GRAPH_TRACE): CUPTI then reports no
// record for the graph's nodes, one of these per launch instead.
struct GraphRecord {
  GpuPlacement at;
  StringId name = 0;  // "CUDA graph 12"
  uint32_t graphId = 0;
};

// A synchronisation: the host (or a stream) waiting. On a track of its own per stream,
// since it overlaps the work it waits for.
struct SyncRecord {
  GpuPlacement at;
  uint32_t eventId = 0;
  SyncKind kind = SyncKind::Unknown;
};

// A device allocation or free, with the running totals of its device after it.
struct MemoryRecord {
  int64_t timeNs = 0;
  uint64_t address = 0;
  int64_t bytes = 0;  // positive for an allocation, negative for a free
  int64_t totalAllocated = 0;
  int64_t totalReserved = 0;
  uint32_t deviceId = 0;
  uint32_t thread = 0;  // the thread whose call allocated (or the first thread seen)
  uint32_t correlationId = 0;
  MemoryKind memoryKind = MemoryKind::Unknown;
};

// A device memory pool created, destroyed or trimmed (cudaMemPoolCreate, cudaMemPoolDestroy,
// cudaMemPoolTrimTo, and the pools stream-ordered allocation and graph memory nodes use),
// with what it held then: the pool's side of "memory that creeps up", which the
// allocations' [memory] events do not show (a freed allocation's memory stays in its pool).
struct MemoryPoolRecord {
  int64_t timeNs = 0;
  uint64_t address = 0;                // the pool's
  uint64_t sizeBytes = 0;              // what the pool holds (local pools)
  uint64_t utilizedBytes = 0;          // of that, allocated
  uint64_t releaseThresholdBytes = 0;  // what it keeps when idle (local pools)
  uint64_t minBytesToKeep = 0;         // a trim's
  uint32_t deviceId = 0;
  uint32_t correlationId = 0;  // of the call that did it
  PoolOperation operation = PoolOperation::Unknown;
  bool imported = false;  // imported from another process; else the process's own
  bool managed = false;   // of managed memory; else pinned device memory
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
  uint16_t lane = 0;
};

// CUPTI's own overhead (buffer flushes, instrumentation), on the track of the thread or
// device it was spent for.
struct OverheadRecord {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t objectId = 0;  // OS thread id or device id, per `object`
  OverheadKind kind = OverheadKind::Unknown;
  OverheadObject object = OverheadObject::Unknown;
  uint16_t lane = 0;
};

// One sample window of GPU metrics on one device: each metric's value over [startNs, endNs),
// in the host's clock. The values are TraceRecords::metricValues from index `values`, one
// per metric of TraceTables::gpuMetrics, in its order.
struct GpuMetricSampleRecord {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint32_t deviceId = 0;
  uint32_t values = 0;
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

// Assembled records, grouped by kind: a batch handed from the assembler to whoever keeps or
// writes them, and the body of a finished trace.
struct TraceRecords {
  // A vector per kind: ranges, instants, ..., kernels, ... (model/record_kinds.h).
#define KINETRACE_RECORD_VECTOR(Kind, Type, member, countKey, stat) std::vector<Type> member;
  KINETRACE_RECORD_KINDS(KINETRACE_RECORD_VECTOR)
#undef KINETRACE_RECORD_VECTOR
  // The values of metric samples and kernels' metric averages (not records: each belongs to
  // the sample or kernel that indexes it). append() keeps the indexes right.
  std::vector<double> metricValues;

  // Calls f(kind, vector) for each kind's vector.
  template <typename F>
  void forEachKind(F&& f) {
#define KINETRACE_RECORD_VISIT(Kind, Type, member, countKey, stat) f(RecordKind::Kind, member);
    KINETRACE_RECORD_KINDS(KINETRACE_RECORD_VISIT)
  }
  template <typename F>
  void forEachKind(F&& f) const {
    KINETRACE_RECORD_KINDS(KINETRACE_RECORD_VISIT)
#undef KINETRACE_RECORD_VISIT
  }
  bool empty() const;
  std::size_t size() const;
  // Bytes the records and metric values occupy (capacity excluded): what a batch costs the
  // memory budget.
  std::size_t bytes() const;
  void clear();
  // Moves every record of `other` to the end of this one's vectors.
  void append(TraceRecords&& other);
};

static_assert(std::is_trivially_copyable_v<RangeRecord>);
static_assert(std::is_trivially_copyable_v<KernelRecord>);
static_assert(sizeof(RangeRecord) <= 48, "range records stay compact");
static_assert(sizeof(GpuPlacement) <= 48, "every GPU record carries one");

}  // namespace kinetrace::detail
