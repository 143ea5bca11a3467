#include "cupti/activity_decoder.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <climits>
#include <cstdlib>
#include <memory>

namespace kinetrace::detail {

CopyKind copyKindOf(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return CopyKind::HtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return CopyKind::DtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyKind::HtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyKind::AtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return CopyKind::AtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return CopyKind::AtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return CopyKind::DtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return CopyKind::DtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::HtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::PtoP;
    default: return CopyKind::Unknown;
  }
}

MemoryKind memoryKindOf(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return MemoryKind::Pageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return MemoryKind::Pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return MemoryKind::Device;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return MemoryKind::Array;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return MemoryKind::Managed;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return MemoryKind::DeviceStatic;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return MemoryKind::ManagedStatic;
    default: return MemoryKind::Unknown;
  }
}

SyncKind syncKindOf(uint32_t type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return SyncKind::EventSync;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return SyncKind::StreamWaitEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return SyncKind::StreamSync;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return SyncKind::ContextSync;
    default: return SyncKind::Unknown;
  }
}

OverheadKind overheadKindOf(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return OverheadKind::DriverCompiler;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return OverheadKind::CuptiBufferFlush;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return OverheadKind::CuptiInstrumentation;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return OverheadKind::CuptiResource;
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return OverheadKind::ModuleLoading;
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return OverheadKind::LazyFunctionLoading;
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return OverheadKind::CommandBufferFull;
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return OverheadKind::ActivityBufferRequest;
    default: return OverheadKind::Unknown;
  }
}

void ActivityDecoder::useStrings(StringTable& strings) {
  strings_ = &strings;
  kernelNames_.clear();
  graphNames_.clear();
}

uint32_t ActivityDecoder::deviceOfContext(uint32_t contextId) const {
  auto found = contextDevices_.find(contextId);
  return found == contextDevices_.end() ? 0 : found->second;
}

std::size_t ActivityDecoder::decodeBuffer(uint8_t* buffer, std::size_t validSize, GpuBatch& out) {
  std::size_t decoded = 0;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    decode(*record, out);
    ++decoded;
  }
  return decoded;
}

void ActivityDecoder::decode(const CUpti_Activity& record, GpuBatch& out) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      decodeKernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      decodeMemcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      decodePeerMemcpy(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      decodeMemset(reinterpret_cast<const CUpti_ActivityMemset4&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
      decodeGraph(reinterpret_cast<const CUpti_ActivityGraphTrace2&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      decodeSync(reinterpret_cast<const CUpti_ActivitySynchronization2&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      decodeMemory(reinterpret_cast<const CUpti_ActivityMemory4&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
      decodeMemoryPool(reinterpret_cast<const CUpti_ActivityMemoryPool3&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      decodeOverhead(reinterpret_cast<const CUpti_ActivityOverhead3&>(record), out);
      break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& r = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record);
      out.externalIds.emplace_back(r.correlationId, r.externalId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto& r = reinterpret_cast<const CUpti_ActivityContext3&>(record);
      contextDevices_[r.contextId] = r.deviceId;
      break;
    }
    default:
      ++out.undecoded;
      break;
  }
}

GpuPlacement ActivityDecoder::place(uint64_t start, uint64_t end, uint32_t device, uint32_t context,
                                    uint32_t stream, uint32_t correlation, bool learnDevice) {
  if (learnDevice) contextDevices_.try_emplace(context, device);
  GpuPlacement at;
  at.startNs = cuptiTime(start);
  at.endNs = cuptiTime(end);
  at.deviceId = device;
  at.contextId = context;
  at.streamId = stream;
  at.correlationId = correlation;
  return at;
}

StringId ActivityDecoder::kernelName(const char* mangled) {
  if (strings_ == nullptr) return StringTable::kEmpty;
  if (mangled == nullptr) return strings_->intern("<unnamed kernel>");
  auto found = kernelNames_.find(mangled);
  if (found != kernelNames_.end()) return found->second;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  StringId id = strings_->intern(status == 0 && demangled ? demangled.get() : mangled);
  kernelNames_.emplace(mangled, id);
  return id;
}

void ActivityDecoder::decodeKernel(const CUpti_ActivityKernel10& r, GpuBatch& out) {
  KernelRecord k;
  k.at = place(r.start, r.end, r.deviceId, r.contextId, r.streamId, r.correlationId);
  k.queuedNs = (r.queued == 0 || r.queued == CUPTI_TIMESTAMP_UNKNOWN) ? 0 : cuptiTime(r.queued);
  k.name = kernelName(r.name);
  k.grid[0] = r.gridX;
  k.grid[1] = r.gridY;
  k.grid[2] = r.gridZ;
  k.block[0] = r.blockX;
  k.block[1] = r.blockY;
  k.block[2] = r.blockZ;
  k.registersPerThread = r.registersPerThread;
  k.staticSharedBytes = static_cast<uint32_t>(r.staticSharedMemory);
  k.dynamicSharedBytes = static_cast<uint32_t>(r.dynamicSharedMemory);
  k.graphId = r.graphId;
  k.graphNodeId = r.graphNodeId;
  out.records.kernels.push_back(k);
}

void ActivityDecoder::decodeMemcpy(const CUpti_ActivityMemcpy6& r, GpuBatch& out) {
  MemcpyRecord m;
  m.at = place(r.start, r.end, r.deviceId, r.contextId, r.streamId, r.correlationId);
  m.runtimeCorrelationId = r.runtimeCorrelationId;
  m.bytes = r.bytes;
  m.copyKind = copyKindOf(r.copyKind);
  m.srcKind = memoryKindOf(r.srcKind);
  m.dstKind = memoryKindOf(r.dstKind);
  m.srcDeviceId = m.dstDeviceId = r.deviceId;
  m.graphId = r.graphId;
  m.graphNodeId = r.graphNodeId;
  out.records.memcpys.push_back(m);
}

void ActivityDecoder::decodePeerMemcpy(const CUpti_ActivityMemcpyPtoP4& r, GpuBatch& out) {
  MemcpyRecord m;
  m.at = place(r.start, r.end, r.deviceId, r.contextId, r.streamId, r.correlationId);
  m.bytes = r.bytes;
  m.copyKind = copyKindOf(r.copyKind);
  m.srcKind = memoryKindOf(r.srcKind);
  m.dstKind = memoryKindOf(r.dstKind);
  m.peer = true;
  m.srcDeviceId = r.srcDeviceId;
  m.dstDeviceId = r.dstDeviceId;
  m.graphId = r.graphId;
  m.graphNodeId = r.graphNodeId;
  out.records.memcpys.push_back(m);
}

void ActivityDecoder::decodeMemset(const CUpti_ActivityMemset4& r, GpuBatch& out) {
  MemsetRecord m;
  m.at = place(r.start, r.end, r.deviceId, r.contextId, r.streamId, r.correlationId);
  m.bytes = r.bytes;
  m.value = r.value;
  m.memoryKind = memoryKindOf(r.memoryKind);
  m.graphId = r.graphId;
  m.graphNodeId = r.graphNodeId;
  out.records.memsets.push_back(m);
}

void ActivityDecoder::decodeGraph(const CUpti_ActivityGraphTrace2& r, GpuBatch& out) {
  // A graph whose first node runs on the host (a host node) has no device or context at
  // its start (INT_MAX); it goes where its last node ran.
  constexpr uint32_t kOnHost = INT_MAX;
  const uint32_t device = r.deviceId == kOnHost ? r.endDeviceId : r.deviceId;
  const uint32_t context = r.contextId == kOnHost ? r.endContextId : r.contextId;
  GraphRecord g;
  g.at = place(r.start, r.end, device, context, r.streamId, r.correlationId);
  g.graphId = r.graphId;
  if (strings_ != nullptr) {
    auto& name = graphNames_[r.graphId];
    if (name == 0) name = strings_->intern(fmt::format("CUDA graph {}", r.graphId));
    g.name = name;
  }
  out.records.graphs.push_back(g);
}

void ActivityDecoder::decodeSync(const CUpti_ActivitySynchronization2& r, GpuBatch& out) {
  SyncRecord s;
  // Synchronisation records carry no device: it comes from the context. A context-wide
  // sync has no stream either (CUPTI_SYNCHRONIZATION_INVALID_VALUE).
  uint32_t stream = r.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : r.streamId;
  s.at = place(r.start, r.end, deviceOfContext(r.contextId), r.contextId, stream, r.correlationId,
               /*learnDevice=*/false);
  s.eventId = r.cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : r.cudaEventId;
  s.kind = syncKindOf(r.type);
  out.records.syncs.push_back(s);
}

void ActivityDecoder::decodeMemory(const CUpti_ActivityMemory4& r, GpuBatch& out) {
  MemoryRecord m;
  m.timeNs = cuptiTime(r.timestamp);
  m.address = r.address;
  m.deviceId = r.deviceId;
  m.correlationId = r.correlationId;
  m.memoryKind = memoryKindOf(r.memoryKind);
  int64_t& total = allocatedByDevice_[r.deviceId];
  if (r.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
    m.bytes = static_cast<int64_t>(r.bytes);
    liveAllocations_[r.address] = m.bytes;
  } else if (r.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
    // A release may report its size as zero; the matching allocation knows it.
    int64_t bytes = static_cast<int64_t>(r.bytes);
    auto live = liveAllocations_.find(r.address);
    if (live != liveAllocations_.end()) {
      if (bytes == 0) bytes = live->second;
      liveAllocations_.erase(live);
    }
    m.bytes = -bytes;
  } else {
    ++out.undecoded;
    return;
  }
  total += m.bytes;
  m.totalAllocated = total;
  // CUPTI sees the driver's allocations, which is what a caching allocator reserves.
  m.totalReserved = total;
  out.records.memory.push_back(m);
}

void ActivityDecoder::decodeMemoryPool(const CUpti_ActivityMemoryPool3& r, GpuBatch& out) {
  MemoryPoolRecord p;
  switch (r.memoryPoolOperationType) {
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
      p.operation = PoolOperation::Created;
      break;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
      p.operation = PoolOperation::Destroyed;
      break;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
      p.operation = PoolOperation::Trimmed;
      break;
    default:
      ++out.undecoded;
      return;
  }
  p.timeNs = cuptiTime(r.timestamp);
  p.address = r.address;
  p.deviceId = r.deviceId;
  p.correlationId = r.correlationId;
  p.imported = r.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED;
  p.managed = r.isManagedPool != 0;
  // Sizes are the pool's own only for a local pool (CUPTI's documentation).
  if (!p.imported) {
    p.sizeBytes = r.size;
    p.utilizedBytes = r.utilizedSize;
    p.releaseThresholdBytes = r.releaseThreshold;
  }
  if (p.operation == PoolOperation::Trimmed) p.minBytesToKeep = r.minBytesToKeep;
  out.records.memoryPools.push_back(p);
}

void ActivityDecoder::decodeOverhead(const CUpti_ActivityOverhead3& r, GpuBatch& out) {
  OverheadRecord o;
  o.startNs = cuptiTime(r.start);
  o.endNs = cuptiTime(r.end);
  o.kind = overheadKindOf(r.overheadKind);
  switch (r.objectKind) {
    case CUPTI_ACTIVITY_OBJECT_THREAD:
      o.object = OverheadObject::Thread;
      o.objectId = r.objectId.pt.threadId;
      break;
    case CUPTI_ACTIVITY_OBJECT_DEVICE:
    case CUPTI_ACTIVITY_OBJECT_CONTEXT:
    case CUPTI_ACTIVITY_OBJECT_STREAM:
      o.object = OverheadObject::Device;
      o.objectId = r.objectId.dcs.deviceId;
      break;
    default:
      break;
  }
  out.records.overheads.push_back(o);
}

}  // namespace kinetrace::detail
