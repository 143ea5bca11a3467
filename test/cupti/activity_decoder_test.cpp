#include "cupti/activity_decoder.h"

#include <gtest/gtest.h>

#include <string>

#include "synthetic_buffer.h"

// Every test builds a buffer of real CUPTI structs and decodes it with the real
// cuptiActivityGetNextRecord, as the decoder thread does with CUPTI's own buffers.

namespace kinetrace::detail {
namespace {

using synthetic::SyntheticBuffer;

class ActivityDecoderTest : public ::testing::Test {
 protected:
  std::size_t decode(SyntheticBuffer& buffer) { return decoder_.decodeBuffer(buffer.data(), buffer.size()); }
  std::string name(StringId id) const { return std::string(trace_.strings.get(id)); }

  TraceData trace_;
  ActivityDecoder decoder_{trace_};
};

TEST_F(ActivityDecoderTest, KernelDecodesEveryField) {
  auto k = synthetic::kernelRecord("_Z6kernelPfi", 1000, 2500, 77);
  k.queued = 900;
  k.deviceId = 1;
  k.contextId = 3;
  k.streamId = 7;
  k.gridX = 128;
  k.gridY = 2;
  k.gridZ = 3;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 2;
  k.registersPerThread = 40;
  k.staticSharedMemory = 4096;
  k.dynamicSharedMemory = 8192;
  k.graphId = 12;
  k.graphNodeId = 0x123456789ull;
  SyntheticBuffer buffer;
  buffer.add(k);

  ASSERT_EQ(decode(buffer), 1u);
  ASSERT_EQ(trace_.kernels.size(), 1u);
  const KernelRecord& r = trace_.kernels[0];
  EXPECT_EQ(name(r.name), "kernel(float*, int)");
  EXPECT_EQ(r.at.startNs, 1000);
  EXPECT_EQ(r.at.endNs, 2500);
  EXPECT_EQ(r.queuedNs, 900);
  EXPECT_EQ(r.at.deviceId, 1u);
  EXPECT_EQ(r.at.contextId, 3u);
  EXPECT_EQ(r.at.streamId, 7u);
  EXPECT_EQ(r.at.correlationId, 77u);
  EXPECT_EQ(r.at.externalId, 0u);
  EXPECT_EQ(r.grid[0], 128);
  EXPECT_EQ(r.grid[1], 2);
  EXPECT_EQ(r.grid[2], 3);
  EXPECT_EQ(r.block[0], 256);
  EXPECT_EQ(r.block[1], 1);
  EXPECT_EQ(r.block[2], 2);
  EXPECT_EQ(r.registersPerThread, 40u);
  EXPECT_EQ(r.staticSharedBytes, 4096u);
  EXPECT_EQ(r.dynamicSharedBytes, 8192u);
  EXPECT_EQ(r.graphId, 12u);
  EXPECT_EQ(r.graphNodeId, 0x123456789ull);
  EXPECT_EQ(decoder_.deviceOfContext(3), 1u);
}

TEST_F(ActivityDecoderTest, KernelNameThatIsNotMangledIsKeptAsIs) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::kernelRecord("my_c_kernel", 10, 20, 1));
  decode(buffer);
  ASSERT_EQ(trace_.kernels.size(), 1u);
  EXPECT_EQ(name(trace_.kernels[0].name), "my_c_kernel");
}

TEST_F(ActivityDecoderTest, KernelWithoutQueuedTimeHasZeroQueued) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::kernelRecord("k", 10, 20, 1));  // queued = CUPTI_TIMESTAMP_UNKNOWN (0)
  decoder_.setGpuClockOffset(500);
  decode(buffer);
  ASSERT_EQ(trace_.kernels.size(), 1u);
  EXPECT_EQ(trace_.kernels[0].queuedNs, 0);
}

TEST_F(ActivityDecoderTest, MemcpyIsNamedByKindAndMemoryKinds) {
  auto m = synthetic::memcpyRecord(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                                 CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, 100, 300, 55);
  m.deviceId = 2;
  m.contextId = 4;
  m.streamId = 9;
  m.runtimeCorrelationId = 54;
  SyntheticBuffer buffer;
  buffer.add(m);

  ASSERT_EQ(decode(buffer), 1u);
  ASSERT_EQ(trace_.memcpys.size(), 1u);
  const MemcpyRecord& r = trace_.memcpys[0];
  EXPECT_EQ(name(r.name), "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(r.bytes, uint64_t{1} << 20);
  EXPECT_EQ(r.at.startNs, 100);
  EXPECT_EQ(r.at.endNs, 300);
  EXPECT_EQ(r.at.deviceId, 2u);
  EXPECT_EQ(r.at.contextId, 4u);
  EXPECT_EQ(r.at.streamId, 9u);
  EXPECT_EQ(r.at.correlationId, 55u);
  EXPECT_EQ(r.runtimeCorrelationId, 54u);
  EXPECT_EQ(r.copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  EXPECT_FALSE(r.peer);
  EXPECT_EQ(r.srcDeviceId, 2u);
  EXPECT_EQ(r.dstDeviceId, 2u);
}

TEST_F(ActivityDecoderTest, PeerCopyKeepsSourceAndDestinationDevices) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::peerMemcpyRecord(0, 1, 4096, 100, 200, 66));
  ASSERT_EQ(decode(buffer), 1u);
  ASSERT_EQ(trace_.memcpys.size(), 1u);
  const MemcpyRecord& r = trace_.memcpys[0];
  EXPECT_EQ(name(r.name), "Memcpy PtoP (Device -> Device)");
  EXPECT_TRUE(r.peer);
  EXPECT_EQ(r.srcDeviceId, 0u);
  EXPECT_EQ(r.dstDeviceId, 1u);
  EXPECT_EQ(r.bytes, 4096u);
  EXPECT_EQ(r.at.correlationId, 66u);
}

TEST_F(ActivityDecoderTest, MemsetIsNamedByMemoryKind) {
  auto m = synthetic::memsetRecord(256, 0xAB, 10, 20, 8);
  m.streamId = 3;
  SyntheticBuffer buffer;
  buffer.add(m);
  ASSERT_EQ(decode(buffer), 1u);
  ASSERT_EQ(trace_.memsets.size(), 1u);
  EXPECT_EQ(name(trace_.memsets[0].name), "Memset (Device)");
  EXPECT_EQ(trace_.memsets[0].bytes, 256u);
  EXPECT_EQ(trace_.memsets[0].value, 0xABu);
  EXPECT_EQ(trace_.memsets[0].at.streamId, 3u);
  EXPECT_EQ(trace_.memsets[0].at.correlationId, 8u);
}

TEST_F(ActivityDecoderTest, SyncRecordsAreNamedByTypeAndPlacedOnTheContextsDevice) {
  constexpr uint32_t kInvalid = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  SyntheticBuffer buffer;
  buffer.add(synthetic::contextRecord(5, 3));
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 5, 7, kInvalid, 10, 20, 1));
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 5, kInvalid, 42, 30, 40, 2));
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 5, kInvalid, kInvalid, 50, 60, 3));
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 5, 8, 43, 70, 80, 4));

  ASSERT_EQ(decode(buffer), 5u);
  ASSERT_EQ(trace_.syncs.size(), 4u);
  EXPECT_EQ(name(trace_.syncs[0].name), "Stream Sync");
  EXPECT_EQ(name(trace_.syncs[1].name), "Event Sync");
  EXPECT_EQ(name(trace_.syncs[2].name), "Context Sync");
  EXPECT_EQ(name(trace_.syncs[3].name), "Stream Wait Event");
  for (const SyncRecord& s : trace_.syncs) {
    EXPECT_EQ(s.at.deviceId, 3u);
    EXPECT_EQ(s.at.contextId, 5u);
  }
  EXPECT_EQ(trace_.syncs[0].at.streamId, 7u);
  EXPECT_EQ(trace_.syncs[0].eventId, 0u);  // invalid event -> 0
  EXPECT_EQ(trace_.syncs[1].at.streamId, 0u);  // invalid stream -> 0
  EXPECT_EQ(trace_.syncs[1].eventId, 42u);
  EXPECT_EQ(trace_.syncs[2].at.streamId, 0u);
  EXPECT_EQ(trace_.syncs[2].eventId, 0u);
  EXPECT_EQ(trace_.syncs[3].at.streamId, 8u);
  EXPECT_EQ(trace_.syncs[3].eventId, 43u);
  EXPECT_EQ(trace_.syncs[3].at.correlationId, 4u);
}

// A sync record carries no device: decoding one must not teach the decoder a wrong
// context -> device mapping that hides the one a later record carries.
TEST_F(ActivityDecoderTest, SyncBeforeAnyDeviceRecordDoesNotHideTheContextsDevice) {
  constexpr uint32_t kInvalid = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  auto kernel = synthetic::kernelRecord("k", 30, 40, 2);
  kernel.contextId = 7;
  kernel.deviceId = 2;
  SyntheticBuffer buffer;
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 7, kInvalid, kInvalid, 10, 20, 1));
  buffer.add(kernel);
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 7, kInvalid, kInvalid, 50, 60, 3));
  decode(buffer);

  EXPECT_EQ(decoder_.deviceOfContext(7), 2u);
  ASSERT_EQ(trace_.syncs.size(), 2u);
  EXPECT_EQ(trace_.syncs[1].at.deviceId, 2u);
}

TEST_F(ActivityDecoderTest, AllocationsAndReleasesKeepRunningTotalsPerDevice) {
  constexpr auto kAlloc = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  constexpr auto kRelease = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  SyntheticBuffer buffer;
  buffer.add(synthetic::memoryRecord(kAlloc, 0x1000, 1000, 0, 10));
  buffer.add(synthetic::memoryRecord(kAlloc, 0x2000, 500, 0, 20));
  buffer.add(synthetic::memoryRecord(kAlloc, 0x3000, 300, 1, 30));
  buffer.add(synthetic::memoryRecord(kRelease, 0x2000, 500, 0, 40));
  decode(buffer);

  ASSERT_EQ(trace_.memory.size(), 4u);
  EXPECT_EQ(trace_.memory[0].bytes, 1000);
  EXPECT_EQ(trace_.memory[0].totalAllocated, 1000);
  EXPECT_EQ(trace_.memory[1].totalAllocated, 1500);
  EXPECT_EQ(trace_.memory[2].deviceId, 1u);
  EXPECT_EQ(trace_.memory[2].totalAllocated, 300);
  EXPECT_EQ(trace_.memory[3].bytes, -500);
  EXPECT_EQ(trace_.memory[3].totalAllocated, 1000);
  EXPECT_EQ(trace_.memory[3].totalReserved, 1000);
  EXPECT_EQ(trace_.memory[3].address, 0x2000u);
  EXPECT_EQ(trace_.memory[3].timeNs, 40);
  EXPECT_EQ(name(trace_.memory[3].memoryKind), "Device");
}

TEST_F(ActivityDecoderTest, ReleaseWithoutSizeUsesTheAllocationSize) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 4096, 0, 10));
  buffer.add(synthetic::memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x1000, 0, 0, 20));
  decode(buffer);

  ASSERT_EQ(trace_.memory.size(), 2u);
  EXPECT_EQ(trace_.memory[1].bytes, -4096);
  EXPECT_EQ(trace_.memory[1].totalAllocated, 0);
}

TEST_F(ActivityDecoderTest, OverheadRecordsAreNamedByKind) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::overheadRecord(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 10, 20));
  buffer.add(synthetic::overheadRecord(CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER, 30, 40));
  buffer.add(synthetic::overheadRecord(CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION, 50, 60));
  buffer.add(synthetic::overheadRecord(CUPTI_ACTIVITY_OVERHEAD_UNKNOWN, 70, 80));
  decode(buffer);

  ASSERT_EQ(trace_.overheads.size(), 4u);
  EXPECT_EQ(name(trace_.overheads[0].name), "CUPTI buffer flush");
  EXPECT_EQ(name(trace_.overheads[1].name), "Driver compiler");
  EXPECT_EQ(name(trace_.overheads[2].name), "CUPTI instrumentation");
  EXPECT_EQ(name(trace_.overheads[3].name), "CUPTI overhead");
  EXPECT_EQ(trace_.overheads[0].startNs, 10);
  EXPECT_EQ(trace_.overheads[0].endNs, 20);
}

TEST_F(ActivityDecoderTest, ExternalCorrelationRecordsFillTheExternalIdMap) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::externalCorrelationRecord(42, 7));
  buffer.add(synthetic::externalCorrelationRecord(43, 0x10000000001ull));
  EXPECT_EQ(decode(buffer), 2u);
  ASSERT_EQ(decoder_.externalIds().size(), 2u);
  EXPECT_EQ(decoder_.externalIds().at(42), 7u);
  EXPECT_EQ(decoder_.externalIds().at(43), 0x10000000001ull);
}

TEST_F(ActivityDecoderTest, UnknownKindsAreCountedAsUndecoded) {
  auto api = synthetic::zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  api.cbid = 211;
  SyntheticBuffer buffer;
  buffer.add(api);
  buffer.add(synthetic::kernelRecord("k", 1, 2, 1));
  buffer.add(api);

  EXPECT_EQ(decode(buffer), 3u);
  EXPECT_EQ(trace_.losses.cuptiRecordsUndecoded, 2u);
  EXPECT_EQ(trace_.kernels.size(), 1u);
}

TEST_F(ActivityDecoderTest, NameRepeatedInManyRecordsIsInternedOnce) {
  static const char kMangled[] = "_Z6kernelPfi";
  std::string sameTextElsewhere = kMangled;  // another pointer, same name
  SyntheticBuffer buffer;
  for (int i = 0; i < 1000; ++i) {
    buffer.add(synthetic::kernelRecord(i % 2 == 0 ? kMangled : sameTextElsewhere.c_str(), i * 10, i * 10 + 5, i));
    buffer.add(synthetic::memcpyRecord(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                     CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 64, i * 10, i * 10 + 5, i));
    buffer.add(synthetic::memsetRecord(64, 0, i * 10, i * 10 + 5, i));
  }
  EXPECT_EQ(decode(buffer), 3000u);

  ASSERT_EQ(trace_.kernels.size(), 1000u);
  EXPECT_EQ(trace_.kernels.front().name, trace_.kernels.back().name);
  EXPECT_EQ(trace_.kernels[0].name, trace_.kernels[1].name);
  // "", the kernel, the copy and the memset.
  EXPECT_EQ(trace_.strings.size(), 4u);
}

TEST_F(ActivityDecoderTest, GpuClockOffsetShiftsEveryTimestamp) {
  auto k = synthetic::kernelRecord("k", 1000, 2000, 1);
  k.queued = 900;
  SyntheticBuffer buffer;
  buffer.add(k);
  buffer.add(synthetic::memcpyRecord(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                                   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 8, 3000, 3100, 2));
  buffer.add(synthetic::memsetRecord(8, 0, 4000, 4100, 3));
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 0, 1,
                                 CUPTI_SYNCHRONIZATION_INVALID_VALUE, 5000, 5100, 4));
  buffer.add(synthetic::memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x10, 8, 0, 6000));
  buffer.add(synthetic::overheadRecord(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 7000, 7100));
  decoder_.setGpuClockOffset(-500);
  decode(buffer);

  ASSERT_EQ(trace_.kernels.size(), 1u);
  EXPECT_EQ(trace_.kernels[0].at.startNs, 500);
  EXPECT_EQ(trace_.kernels[0].at.endNs, 1500);
  EXPECT_EQ(trace_.kernels[0].queuedNs, 400);
  EXPECT_EQ(trace_.memcpys.at(0).at.startNs, 2500);
  EXPECT_EQ(trace_.memcpys.at(0).at.endNs, 2600);
  EXPECT_EQ(trace_.memsets.at(0).at.startNs, 3500);
  EXPECT_EQ(trace_.syncs.at(0).at.startNs, 4500);
  EXPECT_EQ(trace_.memory.at(0).timeNs, 5500);
  EXPECT_EQ(trace_.overheads.at(0).startNs, 6500);
  EXPECT_EQ(trace_.overheads.at(0).endNs, 6600);
}

TEST_F(ActivityDecoderTest, EmptyBufferDecodesNothing) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::kernelRecord("k", 1, 2, 1));
  EXPECT_EQ(decoder_.decodeBuffer(buffer.data(), 0), 0u);
  EXPECT_TRUE(trace_.kernels.empty());
}

TEST(ActivityKindNamesTest, MemoryAndCopyKindsHaveReadableNames) {
  EXPECT_STREQ(memoryKindName(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE), "Pageable");
  EXPECT_STREQ(memoryKindName(CUPTI_ACTIVITY_MEMORY_KIND_PINNED), "Pinned");
  EXPECT_STREQ(memoryKindName(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED), "Managed");
  EXPECT_STREQ(memoryKindName(999), "Unknown");
  EXPECT_STREQ(memcpyKindName(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), "DtoD");
  EXPECT_STREQ(memcpyKindName(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), "PtoP");
  EXPECT_STREQ(memcpyKindName(999), "Unknown");
}

}  // namespace
}  // namespace kinetrace::detail
