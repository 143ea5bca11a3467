#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "model/trace_data.h"

// Turns CUPTI activity records into kinetrace's trace model. Pure: no CUPTI state, no
// GPU; tests feed it buffers of real CUPTI structs filled in by hand.
//
// Records are decoded in the order CUPTI wrote them, into `out` (kernels, memcpys,
// memsets, syncs, memory, overheads). Names are interned once per distinct CUPTI name
// pointer (kernel names are demangled). Timestamps are shifted by `gpuClockOffsetNs`
// (zero when CUPTI stamps records with kinetrace's own clock).

namespace kinetrace::detail {

class ActivityDecoder {
 public:
  explicit ActivityDecoder(TraceData& out) : out_(out) {}

  void setGpuClockOffset(int64_t offsetNs) { gpuClockOffsetNs_ = offsetNs; }

  // Decodes every record of a completed buffer. Returns how many records it decoded.
  std::size_t decodeBuffer(uint8_t* buffer, std::size_t validSize);
  void decode(const CUpti_Activity& record);

  // correlation id -> external id, from EXTERNAL_CORRELATION records.
  const std::unordered_map<uint32_t, uint64_t>& externalIds() const { return externalIds_; }
  // context id -> device id, from CONTEXT records and every record that carries both.
  uint32_t deviceOfContext(uint32_t contextId) const;

 private:
  void decodeKernel(const CUpti_ActivityKernel10& r);
  void decodeMemcpy(const CUpti_ActivityMemcpy6& r);
  void decodePeerMemcpy(const CUpti_ActivityMemcpyPtoP4& r);
  void decodeMemset(const CUpti_ActivityMemset4& r);
  void decodeSync(const CUpti_ActivitySynchronization2& r);
  void decodeMemory(const CUpti_ActivityMemory4& r);
  void decodeOverhead(const CUpti_ActivityOverhead3& r);

  // Every CUPTI timestamp, GPU- or host-stamped, is in CUPTI's time base.
  int64_t cuptiTime(uint64_t cuptiNs) const { return static_cast<int64_t>(cuptiNs) + gpuClockOffsetNs_; }
  GpuPlacement place(uint64_t start, uint64_t end, uint32_t device, uint32_t context,
                     uint32_t stream, uint32_t correlation, bool learnDevice = true);
  StringId kernelName(const char* mangled);
  StringId memcpyName(uint8_t copyKind, uint8_t srcKind, uint8_t dstKind);

  TraceData& out_;
  int64_t gpuClockOffsetNs_ = 0;
  std::unordered_map<const char*, StringId> kernelNames_;
  std::unordered_map<uint32_t, StringId> memcpyNames_;
  std::unordered_map<uint32_t, uint64_t> externalIds_;
  std::unordered_map<uint32_t, uint32_t> contextDevices_;
  std::unordered_map<uint32_t, int64_t> allocatedByDevice_;
  std::unordered_map<uint64_t, int64_t> liveAllocations_;  // address -> bytes
};

// "Pinned", "Device", ... for a CUpti_ActivityMemoryKind value.
const char* memoryKindName(uint32_t kind);
// "HtoD", "DtoH", "PtoP", ... for a CUpti_ActivityMemcpyKind value.
const char* memcpyKindName(uint32_t kind);

}  // namespace kinetrace::detail
