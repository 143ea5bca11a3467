#include "correlate/occupancy.h"

#include <gtest/gtest.h>

namespace kinetrace::detail {
namespace {

// An H100/H200 SXM: 132 SMs of 64 resident warps, 32 blocks, 64K registers and 228 KiB of
// shared memory each; compute capability 9.0.
DeviceInfo hopper() {
  DeviceInfo d;
  d.numSms = 132;
  d.warpSize = 32;
  d.maxThreadsPerMultiprocessor = 2048;
  d.maxBlocksPerMultiprocessor = 32;
  d.maxThreadsPerBlock = 1024;
  d.regsPerMultiprocessor = 65536;
  d.regsPerBlock = 65536;
  d.sharedMemPerMultiprocessor = 233472;
  d.sharedMemPerBlock = 49152;
  d.sharedMemPerBlockOptin = 232448;
  d.computeMajor = 9;
  d.computeMinor = 0;
  return d;
}

KernelRecord kernel(int32_t blocks, int32_t threadsPerBlock, uint32_t registers,
                    uint32_t staticShared = 0, uint32_t dynamicShared = 0) {
  KernelRecord k;
  k.grid[0] = blocks;
  k.grid[1] = 1;
  k.grid[2] = 1;
  k.block[0] = threadsPerBlock;
  k.block[1] = 1;
  k.block[2] = 1;
  k.registersPerThread = registers;
  k.staticSharedBytes = staticShared;
  k.dynamicSharedBytes = dynamicShared;
  return k;
}

constexpr int32_t kHugeGrid = 132 * 100;

TEST(OccupancyTest, LightKernelOnAHugeGridFillsTheSm) {
  // 8 warps per block, 32 registers (1024 per warp, 64 warps' worth), no shared memory:
  // only the 64-warp limit applies, 8 blocks resident.
  OccupancyEstimate e = estimateOccupancy(hopper(), kernel(kHugeGrid, 256, 32));
  EXPECT_FLOAT_EQ(e.blocksPerSm, 100.0f);
  EXPECT_FLOAT_EQ(e.warpsPerSm, 800.0f);
  EXPECT_FLOAT_EQ(e.occupancyPercent, 100.0f);
}

TEST(OccupancyTest, RegistersLimitResidentBlocks) {
  // 128 registers x 32 threads = 4096 per warp; 65536 / 4096 = 16 warps = 2 blocks of 8.
  OccupancyEstimate e = estimateOccupancy(hopper(), kernel(kHugeGrid, 256, 128));
  EXPECT_FLOAT_EQ(e.occupancyPercent, 25.0f);
}

TEST(OccupancyTest, RegisterCountIsRoundedToTheAllocationUnit) {
  // 33 registers x 32 = 1056, rounded to 1280 per warp: 65536 / 1280 = 51 warps -> 6
  // blocks of 8 warps = 48 of 64 warps.
  OccupancyEstimate e = estimateOccupancy(hopper(), kernel(kHugeGrid, 256, 33));
  EXPECT_FLOAT_EQ(e.occupancyPercent, 75.0f);
}

TEST(OccupancyTest, SharedMemoryLimitsResidentBlocksCountingStaticDynamicAndReserved) {
  // 16 KiB static + 32 KiB dynamic + 1 KiB reserved per block (cc >= 8.0) = 50176 bytes:
  // 233472 / 50176 = 4 blocks of 8 warps = 32 of 64 warps.
  OccupancyEstimate e = estimateOccupancy(hopper(), kernel(kHugeGrid, 256, 32, 16384, 32768));
  EXPECT_FLOAT_EQ(e.occupancyPercent, 50.0f);

  // 100 KiB dynamic + 1 KiB: 2 blocks.
  e = estimateOccupancy(hopper(), kernel(kHugeGrid, 256, 32, 0, 102400));
  EXPECT_FLOAT_EQ(e.occupancyPercent, 25.0f);
}

TEST(OccupancyTest, BlockLimitAppliesToTinyBlocks) {
  // 32-thread blocks: 64 would fit by warps, but at most 32 blocks are resident per SM.
  OccupancyEstimate e = estimateOccupancy(hopper(), kernel(kHugeGrid, 32, 16));
  EXPECT_FLOAT_EQ(e.occupancyPercent, 50.0f);
}

TEST(OccupancyTest, PartialWarpCountsAsAWholeWarp) {
  // 48 threads occupy 2 warps.
  OccupancyEstimate e = estimateOccupancy(hopper(), kernel(132, 48, 16));
  EXPECT_FLOAT_EQ(e.warpsPerSm, 2.0f);
}

// libkineto's "est. achieved occupancy %": resident blocks per SM are capped by the
// grid's blocks per SM, which may be a fraction of one (an idle SM contributes nothing).
TEST(OccupancyTest, SingleBlockGridLeavesTheDeviceAlmostIdle) {
  OccupancyEstimate e = estimateOccupancy(hopper(), kernel(1, 256, 32));
  EXPECT_FLOAT_EQ(e.blocksPerSm, 1.0f / 132.0f);
  EXPECT_FLOAT_EQ(e.warpsPerSm, 8.0f / 132.0f);
  // (1/132 blocks x 8 warps) / 64 warps.
  EXPECT_NEAR(e.occupancyPercent, 100.0 * (1.0 / 132.0) * 8.0 / 64.0, 1e-4);
  EXPECT_LT(e.occupancyPercent, 1.0f);
}

TEST(OccupancyTest, OneBlockMoreThanTheDeviceHasSmsDoesNotDoubleOccupancy) {
  // 133 blocks on 132 SMs: on average just over one block (8 warps) per SM.
  OccupancyEstimate e = estimateOccupancy(hopper(), kernel(133, 256, 32));
  EXPECT_NEAR(e.occupancyPercent, 100.0 * (133.0 / 132.0) * 8.0 / 64.0, 1e-3);
}

TEST(OccupancyTest, GridOfExactlyOneBlockPerSmUsesItsBlockOnly) {
  OccupancyEstimate e = estimateOccupancy(hopper(), kernel(132, 256, 32));
  EXPECT_FLOAT_EQ(e.blocksPerSm, 1.0f);
  EXPECT_FLOAT_EQ(e.occupancyPercent, 12.5f);
}

TEST(OccupancyTest, UnknownDeviceGivesUnknownOccupancy) {
  DeviceInfo unknown;  // numSms 0: the driver gave no properties
  OccupancyEstimate e = estimateOccupancy(unknown, kernel(kHugeGrid, 256, 32));
  EXPECT_FLOAT_EQ(e.occupancyPercent, -1.0f);
  EXPECT_FLOAT_EQ(e.blocksPerSm, 0.0f);
  EXPECT_FLOAT_EQ(e.warpsPerSm, 0.0f);
}

TEST(OccupancyTest, EmptyLaunchGivesUnknownOccupancy) {
  OccupancyEstimate e = estimateOccupancy(hopper(), kernel(0, 256, 32));
  EXPECT_FLOAT_EQ(e.occupancyPercent, -1.0f);
  e = estimateOccupancy(hopper(), kernel(10, 0, 32));
  EXPECT_FLOAT_EQ(e.occupancyPercent, -1.0f);
}

TEST(OccupancyTest, KernelThatCannotFitGivesZero) {
  // 255 registers x 1024 threads needs 261120 registers per block: none is resident.
  OccupancyEstimate e = estimateOccupancy(hopper(), kernel(kHugeGrid, 1024, 255));
  EXPECT_FLOAT_EQ(e.occupancyPercent, 0.0f);
}

}  // namespace
}  // namespace kinetrace::detail
