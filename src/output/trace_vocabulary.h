#pragma once

// The Chrome trace's vocabulary: every category, argument key, naming event and trace-level
// key that kinetrace writes and reads back, spelled once. The writer (trace_events.cpp,
// chrome_json_sink.cpp, session/metadata.cpp), the Perfetto writer, the readers and analysis
// (src/analysis) and PyTorch's backend (libkineto_api) all use these names, so a key renamed
// here is renamed everywhere, and a key the readers look for is one the writer writes.
//
// The names are PyTorch's profiler's (libkineto's) where it has them, so that Perfetto,
// TensorBoard and Holistic Trace Analysis read kinetrace's traces as they read PyTorch's:
// they search for these exact strings ("kernel", "External id", "ProfilerStep#3"). Those
// that are kinetrace's own begin with "kinetrace_" (trace-level keys) or name what they hold
// in words (argument keys).
//
// char arrays rather than string_views: they convert to both `const char*` and
// `std::string_view`, which the writer's and readers' interfaces take.

namespace kinetrace::detail::chrome {

// ---- categories ("cat") --------------------------------------------------------------------
// GPU operations, on the GPU's process (pid = device).
inline constexpr char kCatKernel[] = "kernel";
inline constexpr char kCatMemcpy[] = "gpu_memcpy";
inline constexpr char kCatMemset[] = "gpu_memset";
inline constexpr char kCatCudaGraph[] = "cuda_graph";  // a graph launch traced whole
inline constexpr char kCatCudaSync[] = "cuda_sync";
// A host range's span over the GPU work it launched.
inline constexpr char kCatGpuAnnotation[] = "gpu_user_annotation";
// Host side, on the process's own pid.
inline constexpr char kCatCudaRuntime[] = "cuda_runtime";
inline constexpr char kCatCudaDriver[] = "cuda_driver";
inline constexpr char kCatCpuOp[] = "cpu_op";                    // a framework operator
inline constexpr char kCatUserAnnotation[] = "user_annotation";  // a user's range
inline constexpr char kCatUserInstant[] = "user_instant";
inline constexpr char kCatCounter[] = "counter";
inline constexpr char kCatCpuInstant[] = "cpu_instant_event";  // [memory] events
inline constexpr char kCatOverhead[] = "overhead";             // CUPTI's own overhead
// GPU hardware metric samples: counters on the GPU's process, one per metric, on the
// process's "GPU metrics" thread (tid kGpuMetricsTid in output/trace_events.h). The event's
// name is the metric's display name; its one series is keyed by the unit (kUnit...).
inline constexpr char kCatGpuMetric[] = "gpu_metric";
// A memory pool created, destroyed or trimmed: an instant on the GPU's process, on its
// "memory pools" thread, named by what happened (kMemoryPool...).
inline constexpr char kCatGpuMemoryPool[] = "gpu_memory_pool";
// Flow categories: a launch call to its GPU work, a forward op to its backward.
inline constexpr char kFlowLaunch[] = "ac2g";
inline constexpr char kFlowForwardBackward[] = "fwdbwd";

// ---- event names with a meaning -----------------------------------------------------------
inline constexpr char kMemoryEventName[] = "[memory]";
inline constexpr char kProfilerStepPrefix[] = "ProfilerStep#";  // "ProfilerStep#3"
inline constexpr char kOverheadProcessName[] = "CUPTI overhead";
inline constexpr char kGpuMetricsThreadName[] = "GPU metrics";
inline constexpr char kMemoryPoolsThreadName[] = "memory pools";
inline constexpr char kMemoryPoolCreated[] = "Memory pool created";
inline constexpr char kMemoryPoolDestroyed[] = "Memory pool destroyed";
inline constexpr char kMemoryPoolTrimmed[] = "Memory pool trimmed";
// The units of GPU metrics, as counter series keys and in kernels' metric arguments.
inline constexpr char kUnitPercent[] = "%";
inline constexpr char kUnitBytesPerSecond[] = "bytes/s";
inline constexpr char kUnitPerSecond[] = "/s";
inline constexpr char kUnitValue[] = "value";

// ---- argument keys ("args") ---------------------------------------------------------------
// Linking.
inline constexpr char kArgExternalId[] = "External id";   // the host range that issued it
inline constexpr char kArgCorrelation[] = "correlation";  // CUPTI's launch correlation id
inline constexpr char kArgCallbackId[] = "cbid";
// Where a GPU operation ran.
inline constexpr char kArgDevice[] = "device";
inline constexpr char kArgContext[] = "context";
inline constexpr char kArgStream[] = "stream";
// Kernels.
inline constexpr char kArgQueued[] = "queued";  // ns from its launch call's end to its start
inline constexpr char kArgRegistersPerThread[] = "registers per thread";
inline constexpr char kArgSharedMemory[] = "shared memory";
inline constexpr char kArgBlocksPerSm[] = "blocks per SM";
inline constexpr char kArgWarpsPerSm[] = "warps per SM";
inline constexpr char kArgGrid[] = "grid";
inline constexpr char kArgBlock[] = "block";
inline constexpr char kArgOccupancy[] = "est. achieved occupancy %";
// Copies and sets.
inline constexpr char kArgBytes[] = "bytes";
inline constexpr char kArgBandwidth[] = "memory bandwidth (GB/s)";
inline constexpr char kArgSrcDevice[] = "src device";
inline constexpr char kArgDstDevice[] = "dst device";
// Syncs.
inline constexpr char kArgEvent[] = "event";
// CUDA graphs.
inline constexpr char kArgGraphId[] = "graph id";
inline constexpr char kArgGraphNodeId[] = "graph node id";
inline constexpr char kArgGraphNodeCreatedBy[] = "graph node created by";
inline constexpr char kArgGraphNodeCreationCorrelation[] = "graph node creation correlation";
inline constexpr char kArgGraphNodeCreatedIn[] = "graph node created in";
inline constexpr char kArgGraphNodeCreationExternalId[] = "graph node creation External id";
// How the launch of a conditional body's node (CUPTI gives it no correlation id) was found:
// the launch whose earlier node started last before it, or the only launch of its graph
// left once the calls' order, streams and synchronisations rule the others out.
inline constexpr char kArgGraphLaunchFoundBy[] = "graph launch found by";
inline constexpr char kGraphLaunchByEarlierNode[] = "earlier node of the launch";
inline constexpr char kGraphLaunchByElimination[] = "only launch left";
// NCCL, from its NVTX payloads and kernel names.
inline constexpr char kArgNcclCall[] = "nccl call";
inline constexpr char kArgNcclBytes[] = "nccl bytes";
inline constexpr char kArgNcclCommunicator[] = "nccl communicator";
inline constexpr char kArgNcclOperation[] = "nccl operation";
inline constexpr char kArgNcclCollective[] = "nccl collective";
inline constexpr char kArgNcclReduction[] = "nccl reduction";
inline constexpr char kArgNcclDatatype[] = "nccl datatype";
inline constexpr char kArgNcclAlgorithm[] = "nccl algorithm";
inline constexpr char kArgNcclProtocol[] = "nccl protocol";
// A kernel's GPU metric averages: one argument per metric, keyed "<display name> (<unit>)"
// ("SM throughput (%)", "DRAM read (bytes/s)"; output/kind_names.h: gpuMetricArgKey), the
// mean of the samples it overlaps weighted by the overlap.
// Host ranges.
inline constexpr char kArgUnfinished[] = "unfinished";  // still open when the window closed
// [memory] events, as PyTorch's allocator reports them.
inline constexpr char kArgTotalAllocated[] = "Total Allocated";
inline constexpr char kArgTotalReserved[] = "Total Reserved";
inline constexpr char kArgMemoryBytes[] = "Bytes";
inline constexpr char kArgAddress[] = "Addr";
inline constexpr char kArgDeviceType[] = "Device Type";
inline constexpr char kArgDeviceId[] = "Device Id";
// Memory pool events (and kArgAddress, kArgDevice, kArgCorrelation): what the pool holds,
// how much of it is allocated, what it keeps when idle, what a trim kept at least; "local"
// or "imported", "device" or "managed" memory.
inline constexpr char kArgPoolBytes[] = "pool bytes";
inline constexpr char kArgPoolUtilizedBytes[] = "utilized bytes";
inline constexpr char kArgPoolReleaseThreshold[] = "release threshold";
inline constexpr char kArgPoolMinBytesToKeep[] = "min bytes to keep";
inline constexpr char kArgPoolType[] = "pool type";
inline constexpr char kArgPoolMemory[] = "pool memory";

// ---- naming events (phase "M") and their one argument ------------------------------------
inline constexpr char kProcessName[] = "process_name";
inline constexpr char kProcessLabels[] = "process_labels";
inline constexpr char kProcessSortIndex[] = "process_sort_index";
inline constexpr char kThreadName[] = "thread_name";
inline constexpr char kThreadSortIndex[] = "thread_sort_index";
inline constexpr char kNamingName[] = "name";
inline constexpr char kNamingLabels[] = "labels";
inline constexpr char kNamingSortIndex[] = "sort_index";

// ---- the trace object's keys, and its metadata ---------------------------------------------
inline constexpr char kTraceEvents[] = "traceEvents";
inline constexpr char kTraceName[] = "traceName";
inline constexpr char kDisplayTimeUnit[] = "displayTimeUnit";
inline constexpr char kBaseTimeNanoseconds[] = "baseTimeNanoseconds";  // epoch ns of ts 0
inline constexpr char kSchemaVersion[] = "schemaVersion";
inline constexpr char kDeviceProperties[] = "deviceProperties";
inline constexpr char kDistributedInfo[] = "distributedInfo";  // {"rank", "world_size", ...}
inline constexpr char kRank[] = "rank";
inline constexpr char kWorldSize[] = "world_size";
// A trace `kinetrace merge` wrote: distributedInfo's count of the ranks it holds, and the
// footer's list of them, each {"rank", "path", ..., "header", "footer"} (its own metadata).
inline constexpr char kMergedRanks[] = "kinetrace_merged_ranks";
inline constexpr char kMergeFooter[] = "kinetrace_merge";
// kinetrace's own: how it was recorded and what was lost.
inline constexpr char kGpuStatus[] = "kinetrace_gpu_status";
// {"metrics": [{"name", "display_name", "unit"}], "interval_ns", "samples", "lost",
//  "corrupted", "setup_dropped", "kernels_without_their_samples",
//  "kernels_without_their_samples_because": {"let_go", "late", "memory_cap"}}: only when
//  sampled. let_go: the kernel's record came after its samples were let go; late: its
//  samples did not come within a grace; memory_cap: given up under memory_mb.
inline constexpr char kGpuMetrics[] = "kinetrace_gpu_metrics";

}  // namespace kinetrace::detail::chrome
