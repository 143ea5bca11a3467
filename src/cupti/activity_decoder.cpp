#include "cupti/activity_decoder.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <memory>


namespace kinetrace::detail {

const char* memoryKindName(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "Managed Static";
    default: return "Unknown";
  }
}

const char* memcpyKindName(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "Unknown";
  }
}

uint32_t ActivityDecoder::deviceOfContext(uint32_t contextId) const {
  auto found = contextDevices_.find(contextId);
  return found == contextDevices_.end() ? 0 : found->second;
}

std::size_t ActivityDecoder::decodeBuffer(uint8_t* buffer, std::size_t validSize) {
  std::size_t decoded = 0;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    decode(*record);
    ++decoded;
  }
  return decoded;
}

void ActivityDecoder::decode(const CUpti_Activity& record) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      decodeKernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      decodeMemcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      decodePeerMemcpy(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      decodeMemset(reinterpret_cast<const CUpti_ActivityMemset4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      decodeSync(reinterpret_cast<const CUpti_ActivitySynchronization2&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      decodeMemory(reinterpret_cast<const CUpti_ActivityMemory4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      decodeOverhead(reinterpret_cast<const CUpti_ActivityOverhead3&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& r = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record);
      externalIds_[r.correlationId] = r.externalId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto& r = reinterpret_cast<const CUpti_ActivityContext3&>(record);
      contextDevices_[r.contextId] = r.deviceId;
      break;
    }
    default:
      ++out_.losses.cuptiRecordsUndecoded;
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
  if (mangled == nullptr) return out_.strings.intern("<unnamed kernel>");
  auto found = kernelNames_.find(mangled);
  if (found != kernelNames_.end()) return found->second;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  StringId id = out_.strings.intern(status == 0 && demangled ? demangled.get() : mangled);
  kernelNames_.emplace(mangled, id);
  return id;
}

StringId ActivityDecoder::memcpyName(uint8_t copyKind, uint8_t srcKind, uint8_t dstKind) {
  uint32_t key = uint32_t{copyKind} << 16 | uint32_t{srcKind} << 8 | dstKind;
  auto found = memcpyNames_.find(key);
  if (found != memcpyNames_.end()) return found->second;
  StringId id = out_.strings.intern(fmt::format("Memcpy {} ({} -> {})", memcpyKindName(copyKind),
                                                memoryKindName(srcKind), memoryKindName(dstKind)));
  memcpyNames_.emplace(key, id);
  return id;
}

void ActivityDecoder::decodeKernel(const CUpti_ActivityKernel10& r) {
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
  out_.kernels.push_back(k);
}

void ActivityDecoder::decodeMemcpy(const CUpti_ActivityMemcpy6& r) {
  MemcpyRecord m;
  m.at = place(r.start, r.end, r.deviceId, r.contextId, r.streamId, r.correlationId);
  m.runtimeCorrelationId = r.runtimeCorrelationId;
  m.bytes = r.bytes;
  m.copyKind = r.copyKind;
  m.srcKind = r.srcKind;
  m.dstKind = r.dstKind;
  m.srcDeviceId = m.dstDeviceId = r.deviceId;
  m.name = memcpyName(r.copyKind, r.srcKind, r.dstKind);
  out_.memcpys.push_back(m);
}

void ActivityDecoder::decodePeerMemcpy(const CUpti_ActivityMemcpyPtoP4& r) {
  MemcpyRecord m;
  m.at = place(r.start, r.end, r.deviceId, r.contextId, r.streamId, r.correlationId);
  m.bytes = r.bytes;
  m.copyKind = r.copyKind;
  m.srcKind = r.srcKind;
  m.dstKind = r.dstKind;
  m.peer = true;
  m.srcDeviceId = r.srcDeviceId;
  m.dstDeviceId = r.dstDeviceId;
  m.name = memcpyName(r.copyKind, r.srcKind, r.dstKind);
  out_.memcpys.push_back(m);
}

void ActivityDecoder::decodeMemset(const CUpti_ActivityMemset4& r) {
  MemsetRecord m;
  m.at = place(r.start, r.end, r.deviceId, r.contextId, r.streamId, r.correlationId);
  m.bytes = r.bytes;
  m.value = r.value;
  m.memoryKind = static_cast<uint8_t>(r.memoryKind);
  m.name = out_.strings.intern(fmt::format("Memset ({})", memoryKindName(r.memoryKind)));
  out_.memsets.push_back(m);
}

void ActivityDecoder::decodeSync(const CUpti_ActivitySynchronization2& r) {
  const char* name = "Synchronization";
  switch (r.type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: name = "Event Sync"; break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: name = "Stream Wait Event"; break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: name = "Stream Sync"; break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: name = "Context Sync"; break;
    default: break;
  }
  SyncRecord s;
  // Synchronisation records carry no device: it comes from the context. A context-wide
  // sync has no stream either (CUPTI_SYNCHRONIZATION_INVALID_VALUE).
  uint32_t stream = r.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : r.streamId;
  s.at = place(r.start, r.end, deviceOfContext(r.contextId), r.contextId, stream, r.correlationId,
               /*learnDevice=*/false);
  s.eventId = r.cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : r.cudaEventId;
  s.name = out_.strings.intern(name);
  out_.syncs.push_back(s);
}

void ActivityDecoder::decodeMemory(const CUpti_ActivityMemory4& r) {
  MemoryRecord m;
  m.timeNs = cuptiTime(r.timestamp);
  m.address = r.address;
  m.deviceId = r.deviceId;
  m.correlationId = r.correlationId;
  m.memoryKind = out_.strings.intern(memoryKindName(r.memoryKind));
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
    ++out_.losses.cuptiRecordsUndecoded;
    return;
  }
  total += m.bytes;
  m.totalAllocated = total;
  // CUPTI sees the driver's allocations, which is what a caching allocator reserves.
  m.totalReserved = total;
  out_.memory.push_back(m);
}

void ActivityDecoder::decodeOverhead(const CUpti_ActivityOverhead3& r) {
  const char* name = "CUPTI overhead";
  switch (r.overheadKind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: name = "Driver compiler"; break;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: name = "CUPTI buffer flush"; break;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: name = "CUPTI instrumentation"; break;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: name = "CUPTI resource"; break;
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: name = "Module loading"; break;
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: name = "Lazy function loading"; break;
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: name = "Command buffer full"; break;
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: name = "Activity buffer request"; break;
    default: break;
  }
  OverheadRecord o;
  o.startNs = cuptiTime(r.start);
  o.endNs = cuptiTime(r.end);
  o.name = out_.strings.intern(name);
  out_.overheads.push_back(o);
}

}  // namespace kinetrace::detail
