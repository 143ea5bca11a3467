#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

// CUPTI activity records made by hand: the real structs of the installed cupti_activity.h,
// packed the way CUPTI packs them (one after another, each at an 8-byte aligned offset, in
// an 8-byte aligned buffer). The real cuptiActivityGetNextRecord walks such a buffer without
// a GPU, so the decoder and the CUPTI source are tested on the parsing they run in
// production.

namespace kinetrace::synthetic {

class SyntheticBuffer {
 public:
  template <typename Record>
  SyntheticBuffer& add(const Record& record) {
    static_assert(std::is_trivially_copyable_v<Record>, "CUPTI records are plain structs");
    const std::size_t offset = (size_ + 7) / 8 * 8;
    words_.resize((offset + sizeof(Record) + 7) / 8, 0);
    std::memcpy(data() + offset, &record, sizeof(Record));
    size_ = offset + sizeof(Record);
    return *this;
  }

  uint8_t* data() { return reinterpret_cast<uint8_t*>(words_.data()); }
  std::size_t size() const { return size_; }

  // Copies the records into a buffer CUPTI lent out (as CUPTI fills it); returns the number
  // of valid bytes, or 0 when they do not fit.
  std::size_t copyTo(uint8_t* buffer, std::size_t capacity) const {
    if (buffer == nullptr || size_ > capacity) return 0;
    std::memcpy(buffer, words_.data(), size_);
    return size_;
  }

 private:
  std::vector<uint64_t> words_;  // uint64_t storage: 8-byte alignment for free
  std::size_t size_ = 0;
};

template <typename Record>
Record zeroed(CUpti_ActivityKind kind) {
  Record record;
  std::memset(static_cast<void*>(&record), 0, sizeof record);
  record.kind = kind;
  return record;
}

inline CUpti_ActivityKernel10 kernelRecord(const char* name, uint64_t start, uint64_t end,
                                           uint32_t correlationId) {
  auto r = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  r.name = name;
  r.start = start;
  r.end = end;
  r.correlationId = correlationId;
  r.gridX = r.gridY = r.gridZ = 1;
  r.blockX = r.blockY = r.blockZ = 1;
  return r;
}

inline CUpti_ActivityMemcpy6 memcpyRecord(uint8_t copyKind, uint8_t srcKind, uint8_t dstKind,
                                          uint64_t bytes, uint64_t start, uint64_t end,
                                          uint32_t correlationId) {
  auto r = zeroed<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  r.copyKind = copyKind;
  r.srcKind = srcKind;
  r.dstKind = dstKind;
  r.bytes = bytes;
  r.start = start;
  r.end = end;
  r.correlationId = correlationId;
  return r;
}

inline CUpti_ActivityMemcpyPtoP4 peerMemcpyRecord(uint32_t srcDevice, uint32_t dstDevice,
                                                  uint64_t bytes, uint64_t start, uint64_t end,
                                                  uint32_t correlationId) {
  auto r = zeroed<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2);
  r.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  r.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  r.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  r.srcDeviceId = srcDevice;
  r.dstDeviceId = dstDevice;
  r.deviceId = srcDevice;
  r.bytes = bytes;
  r.start = start;
  r.end = end;
  r.correlationId = correlationId;
  return r;
}

inline CUpti_ActivityMemset4 memsetRecord(uint64_t bytes, uint32_t value, uint64_t start,
                                          uint64_t end, uint32_t correlationId) {
  auto r = zeroed<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  r.bytes = bytes;
  r.value = value;
  r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  r.start = start;
  r.end = end;
  r.correlationId = correlationId;
  return r;
}

inline CUpti_ActivitySynchronization2 syncRecord(CUpti_ActivitySynchronizationType type,
                                                 uint32_t contextId, uint32_t streamId,
                                                 uint32_t eventId, uint64_t start, uint64_t end,
                                                 uint32_t correlationId) {
  auto r = zeroed<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  r.type = type;
  r.contextId = contextId;
  r.streamId = streamId;
  r.cudaEventId = eventId;
  r.start = start;
  r.end = end;
  r.correlationId = correlationId;
  return r;
}

inline CUpti_ActivityContext3 contextRecord(uint32_t contextId, uint32_t deviceId) {
  auto r = zeroed<CUpti_ActivityContext3>(CUPTI_ACTIVITY_KIND_CONTEXT);
  r.contextId = contextId;
  r.deviceId = deviceId;
  return r;
}

inline CUpti_ActivityMemory4 memoryRecord(CUpti_ActivityMemoryOperationType operation,
                                          uint64_t address, uint64_t bytes, uint32_t deviceId,
                                          uint64_t timestamp) {
  auto r = zeroed<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
  r.memoryOperationType = operation;
  r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  r.address = address;
  r.bytes = bytes;
  r.deviceId = deviceId;
  r.timestamp = timestamp;
  return r;
}

// A memory pool's operation; sizes as CUPTI gives them for a local pool.
inline CUpti_ActivityMemoryPool3 memoryPoolRecord(CUpti_ActivityMemoryPoolOperationType operation,
                                                  CUpti_ActivityMemoryPoolType type,
                                                  uint64_t address, uint64_t size,
                                                  uint64_t utilized, uint64_t timestamp) {
  auto r = zeroed<CUpti_ActivityMemoryPool3>(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
  r.memoryPoolOperationType = operation;
  r.memoryPoolType = type;
  r.address = address;
  r.size = size;
  r.utilizedSize = utilized;
  r.releaseThreshold = 1 << 20;
  r.minBytesToKeep = 4096;
  r.deviceId = 1;
  r.correlationId = 77;
  r.timestamp = timestamp;
  return r;
}

// Overhead spent for no particular object (CUPTI_ACTIVITY_OBJECT_UNKNOWN).
inline CUpti_ActivityOverhead3 overheadRecord(CUpti_ActivityOverheadKind overheadKind,
                                              uint64_t start, uint64_t end) {
  auto r = zeroed<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
  r.overheadKind = overheadKind;
  r.start = start;
  r.end = end;
  return r;
}

// Overhead spent for a thread: CUPTI names it by process and thread id.
inline CUpti_ActivityOverhead3 threadOverheadRecord(CUpti_ActivityOverheadKind overheadKind,
                                                    uint32_t processId, uint32_t threadId,
                                                    uint64_t start, uint64_t end) {
  auto r = overheadRecord(overheadKind, start, end);
  r.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  r.objectId.pt.processId = processId;
  r.objectId.pt.threadId = threadId;
  return r;
}

// Overhead spent for a device, a context or a stream (`objectKind`): CUPTI names all three
// by device, context and stream id.
inline CUpti_ActivityOverhead3 deviceOverheadRecord(CUpti_ActivityOverheadKind overheadKind,
                                                    CUpti_ActivityObjectKind objectKind,
                                                    uint32_t deviceId, uint32_t contextId,
                                                    uint32_t streamId, uint64_t start,
                                                    uint64_t end) {
  auto r = overheadRecord(overheadKind, start, end);
  r.objectKind = objectKind;
  r.objectId.dcs.deviceId = deviceId;
  r.objectId.dcs.contextId = contextId;
  r.objectId.dcs.streamId = streamId;
  return r;
}

inline CUpti_ActivityExternalCorrelation externalCorrelationRecord(uint32_t correlationId,
                                                                   uint64_t externalId) {
  auto r = zeroed<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  r.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  r.correlationId = correlationId;
  r.externalId = externalId;
  return r;
}

}  // namespace kinetrace::synthetic
