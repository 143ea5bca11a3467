#pragma once

#include <cstdint>
#include <type_traits>

namespace kinetrace::detail {

// A GPU operation (a kernel, copy, memset, whole-graph run or synchronisation) once it is in
// trace terms: when it ran (nanoseconds since the Unix epoch, on the host's clock), where
// (device and stream), the launch call it shares CUPTI's correlation id with, and the host
// range or framework op open at that launch (its External id).
//
// The one shape every layer gives a GPU operation: the tracer's assembled records
// (GpuPlacement, with their track), what `kinetrace analyze` reads back from any Chrome trace
// (CollectedGpuOp) and the operations handed to front-ends (internal::TraceOperation). Each
// adds only what is its own. Kept apart, because they are not this:
//  - CUPTI's activity records, decoded in src/cupti: on the GPU's clock, not yet joined to a
//    launch, in CUPTI's versioned layouts;
//  - a launch call (ApiCallRecord): host work, on a thread, not on a stream;
//  - a host range's GPU time (GpuSpanRecord): a span over many operations, not one;
//  - a synchronisation read back from a trace (CollectedSync): it may be on no stream.
struct GpuOp {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t externalId = 0;     // the host range or framework op open at the launch; 0: none
  uint32_t correlationId = 0;  // CUPTI's, shared with the launch call; 0: none
  uint32_t deviceId = 0;
  uint32_t streamId = 0;
};

static_assert(std::is_trivially_copyable_v<GpuOp>, "kept in records and spilled to files");

}  // namespace kinetrace::detail
