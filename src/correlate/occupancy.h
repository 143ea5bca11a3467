#pragma once

#include <cstdint>

#include "model/records.h"

namespace kinetrace::detail {

struct OccupancyEstimate {
  float blocksPerSm = 0;       // the grid's blocks spread over the device's SMs
  float warpsPerSm = 0;
  float occupancyPercent = -1; // resident warps over the SM's maximum; -1 when unknown
};

// Estimates a kernel's occupancy the way CUDA's occupancy calculator does: resident blocks
// per SM are limited by threads, registers, shared memory and the block limit, and by how
// many blocks the grid has for each SM. Without the device's limits everything stays
// unknown (zero, and -1 for the percentage).
OccupancyEstimate estimateOccupancy(const DeviceInfo& device, const KernelRecord& kernel);

}  // namespace kinetrace::detail
