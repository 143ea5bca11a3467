#include "correlate/occupancy.h"

#include <algorithm>
#include <cmath>

namespace kinetrace::detail {
namespace {

int64_t roundUp(int64_t value, int64_t granularity) {
  return granularity <= 0 ? value : (value + granularity - 1) / granularity * granularity;
}

// Register allocation granularity, in registers per warp, on every architecture since
// Maxwell; the CUDA occupancy calculator uses the same figure.
constexpr int64_t kRegisterGranularity = 256;
// Since compute capability 8.0 the driver reserves 1 KiB of shared memory per block.
constexpr int64_t kReservedSharedPerBlock = 1024;

}  // namespace

OccupancyEstimate estimateOccupancy(const DeviceInfo& device, const KernelRecord& kernel) {
  OccupancyEstimate estimate;
  const int64_t threads = int64_t{kernel.block[0]} * kernel.block[1] * kernel.block[2];
  const int64_t blocks = int64_t{kernel.grid[0]} * kernel.grid[1] * kernel.grid[2];
  if (device.numSms <= 0 || device.warpSize <= 0 || threads <= 0 || blocks <= 0) return estimate;

  const int64_t warpsPerBlock = (threads + device.warpSize - 1) / device.warpSize;
  estimate.blocksPerSm = static_cast<float>(blocks) / static_cast<float>(device.numSms);
  estimate.warpsPerSm = estimate.blocksPerSm * static_cast<float>(warpsPerBlock);

  const int64_t maxWarpsPerSm = device.maxThreadsPerMultiprocessor / device.warpSize;
  if (maxWarpsPerSm <= 0) return estimate;

  int64_t resident = maxWarpsPerSm / warpsPerBlock;
  if (device.maxBlocksPerMultiprocessor > 0) {
    resident = std::min<int64_t>(resident, device.maxBlocksPerMultiprocessor);
  }
  if (kernel.registersPerThread > 0 && device.regsPerMultiprocessor > 0) {
    int64_t registersPerWarp = roundUp(int64_t{kernel.registersPerThread} * device.warpSize,
                                       kRegisterGranularity);
    int64_t warpsByRegisters = device.regsPerMultiprocessor / registersPerWarp;
    resident = std::min(resident, warpsByRegisters / warpsPerBlock);
  }
  int64_t shared = int64_t{kernel.staticSharedBytes} + kernel.dynamicSharedBytes;
  if (device.sharedMemPerMultiprocessor > 0 && shared > 0) {
    if (device.computeMajor >= 8) shared += kReservedSharedPerBlock;
    resident = std::min(resident, device.sharedMemPerMultiprocessor / shared);
  }
  // A grid smaller than the device cannot fill every SM.
  float residentBlocks = std::min(static_cast<float>(std::max<int64_t>(0, resident)), estimate.blocksPerSm);
  estimate.occupancyPercent =
      100.0f * residentBlocks * static_cast<float>(warpsPerBlock) / static_cast<float>(maxWarpsPerSm);
  return estimate;
}

}  // namespace kinetrace::detail
