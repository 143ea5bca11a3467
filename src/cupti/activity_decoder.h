#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "model/gpu_source.h"

// Turns CUPTI activity records into kinetrace's typed records. No CUPTI state, no GPU;
// tests feed it buffers of real CUPTI structs filled in by hand.
//
// Records are decoded in the order CUPTI wrote them into a GpuBatch. Kinds become enums;
// the only string work is a kernel's name, demangled and interned once per distinct CUPTI
// name pointer (CUPTI shares one name among every record of a kernel). Timestamps are
// shifted by `gpuClockOffsetNs` (zero when CUPTI stamps records with kinetrace's clock).

namespace kinetrace::detail {

class ActivityDecoder {
 public:
  void setGpuClockOffset(int64_t offsetNs) { gpuClockOffsetNs_ = offsetNs; }
  // Names of later records go into `strings` (a new trace's table): the name cache, which
  // refers into the previous table, is emptied.
  void useStrings(StringTable& strings);

  // Decodes every record of a completed buffer into `out`. Returns how many it decoded.
  std::size_t decodeBuffer(uint8_t* buffer, std::size_t validSize, GpuBatch& out);
  void decode(const CUpti_Activity& record, GpuBatch& out);

  // context id -> device id, from CONTEXT records and every record that carries both.
  uint32_t deviceOfContext(uint32_t contextId) const;

 private:
  void decodeKernel(const CUpti_ActivityKernel10& r, GpuBatch& out);
  void decodeMemcpy(const CUpti_ActivityMemcpy6& r, GpuBatch& out);
  void decodePeerMemcpy(const CUpti_ActivityMemcpyPtoP4& r, GpuBatch& out);
  void decodeMemset(const CUpti_ActivityMemset4& r, GpuBatch& out);
  void decodeGraph(const CUpti_ActivityGraphTrace2& r, GpuBatch& out);
  void decodeSync(const CUpti_ActivitySynchronization2& r, GpuBatch& out);
  void decodeMemory(const CUpti_ActivityMemory4& r, GpuBatch& out);
  void decodeMemoryPool(const CUpti_ActivityMemoryPool3& r, GpuBatch& out);
  void decodeOverhead(const CUpti_ActivityOverhead3& r, GpuBatch& out);

  // Every CUPTI timestamp, GPU- or host-stamped, is in CUPTI's time base.
  int64_t cuptiTime(uint64_t cuptiNs) const { return static_cast<int64_t>(cuptiNs) + gpuClockOffsetNs_; }
  GpuPlacement place(uint64_t start, uint64_t end, uint32_t device, uint32_t context,
                     uint32_t stream, uint32_t correlation, bool learnDevice = true);
  StringId kernelName(const char* mangled);

  StringTable* strings_ = nullptr;
  int64_t gpuClockOffsetNs_ = 0;
  std::unordered_map<const char*, StringId> kernelNames_;
  std::unordered_map<uint32_t, StringId> graphNames_;  // "CUDA graph 12" by graph id
  std::unordered_map<uint32_t, uint32_t> contextDevices_;
  std::unordered_map<uint32_t, int64_t> allocatedByDevice_;
  std::unordered_map<uint64_t, int64_t> liveAllocations_;  // address -> bytes
};

// The model's kinds for CUPTI's enum values.
CopyKind copyKindOf(uint32_t cuptiKind);
MemoryKind memoryKindOf(uint32_t cuptiKind);
SyncKind syncKindOf(uint32_t cuptiType);
OverheadKind overheadKindOf(uint32_t cuptiKind);

}  // namespace kinetrace::detail
