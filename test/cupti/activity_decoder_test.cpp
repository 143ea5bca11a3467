#include "cupti/activity_decoder.h"

#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "synthetic_buffer.h"

// Every test builds a buffer of real CUPTI structs and decodes it with the real
// cuptiActivityGetNextRecord, as poll() does with CUPTI's own buffers.

namespace kinetrace::detail {
namespace {

using synthetic::SyntheticBuffer;

class ActivityDecoderTest : public ::testing::Test {
 protected:
  void SetUp() override { decoder_.useStrings(strings_); }
  std::size_t decode(SyntheticBuffer& buffer) {
    return decoder_.decodeBuffer(buffer.data(), buffer.size(), batch_);
  }
  std::string name(StringId id) const { return std::string(strings_.get(id)); }

  StringTable strings_;
  ActivityDecoder decoder_;
  GpuBatch batch_;
  TraceRecords& records_ = batch_.records;
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
  ASSERT_EQ(records_.kernels.size(), 1u);
  const KernelRecord& r = records_.kernels[0];
  EXPECT_EQ(name(r.name), "kernel(float*, int)");
  EXPECT_EQ(r.at.startNs, 1000);
  EXPECT_EQ(r.at.endNs, 2500);
  EXPECT_EQ(r.queuedNs, 900);
  EXPECT_EQ(r.at.deviceId, 1u);
  EXPECT_EQ(r.at.contextId, 3u);
  EXPECT_EQ(r.at.streamId, 7u);
  EXPECT_EQ(r.at.correlationId, 77u);
  EXPECT_EQ(r.at.externalId, 0u) << "joined later, from the external correlation records";
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
  ASSERT_EQ(records_.kernels.size(), 1u);
  EXPECT_EQ(name(records_.kernels[0].name), "my_c_kernel");
}

TEST_F(ActivityDecoderTest, KernelWithoutANameIsCalledUnnamed) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::kernelRecord(nullptr, 10, 20, 1));
  decode(buffer);
  ASSERT_EQ(records_.kernels.size(), 1u);
  EXPECT_EQ(name(records_.kernels[0].name), "<unnamed kernel>");
}

TEST_F(ActivityDecoderTest, KernelWithoutQueuedTimeHasZeroQueued) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::kernelRecord("k", 10, 20, 1));  // queued = 0
  auto unknown = synthetic::kernelRecord("k", 10, 20, 2);
  unknown.queued = CUPTI_TIMESTAMP_UNKNOWN;
  buffer.add(unknown);
  decoder_.setGpuClockOffset(500);
  decode(buffer);
  ASSERT_EQ(records_.kernels.size(), 2u);
  EXPECT_EQ(records_.kernels[0].queuedNs, 0) << "not shifted by the clock offset";
  EXPECT_EQ(records_.kernels[1].queuedNs, 0);
}

TEST_F(ActivityDecoderTest, MemcpyKeepsItsCopyKindAndMemoryKinds) {
  auto m =
      synthetic::memcpyRecord(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                              CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, 100, 300, 55);
  m.deviceId = 2;
  m.contextId = 4;
  m.streamId = 9;
  m.runtimeCorrelationId = 54;
  SyntheticBuffer buffer;
  buffer.add(m);

  ASSERT_EQ(decode(buffer), 1u);
  ASSERT_EQ(records_.memcpys.size(), 1u);
  const MemcpyRecord& r = records_.memcpys[0];
  EXPECT_EQ(r.copyKind, CopyKind::HtoD);
  EXPECT_EQ(r.srcKind, MemoryKind::Pinned);
  EXPECT_EQ(r.dstKind, MemoryKind::Device);
  EXPECT_EQ(r.bytes, uint64_t{1} << 20);
  EXPECT_EQ(r.at.startNs, 100);
  EXPECT_EQ(r.at.endNs, 300);
  EXPECT_EQ(r.at.deviceId, 2u);
  EXPECT_EQ(r.at.contextId, 4u);
  EXPECT_EQ(r.at.streamId, 9u);
  EXPECT_EQ(r.at.correlationId, 55u);
  EXPECT_EQ(r.runtimeCorrelationId, 54u);
  EXPECT_FALSE(r.peer);
  EXPECT_EQ(r.srcDeviceId, 2u);
  EXPECT_EQ(r.dstDeviceId, 2u);
  EXPECT_EQ(strings_.size(), 1u) << "a copy adds no string: sinks name its kinds";
}

TEST_F(ActivityDecoderTest, PeerCopyKeepsSourceAndDestinationDevices) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::peerMemcpyRecord(0, 1, 4096, 100, 200, 66));
  ASSERT_EQ(decode(buffer), 1u);
  ASSERT_EQ(records_.memcpys.size(), 1u);
  const MemcpyRecord& r = records_.memcpys[0];
  EXPECT_EQ(r.copyKind, CopyKind::PtoP);
  EXPECT_EQ(r.srcKind, MemoryKind::Device);
  EXPECT_EQ(r.dstKind, MemoryKind::Device);
  EXPECT_TRUE(r.peer);
  EXPECT_EQ(r.srcDeviceId, 0u);
  EXPECT_EQ(r.dstDeviceId, 1u);
  EXPECT_EQ(r.bytes, 4096u);
  EXPECT_EQ(r.at.correlationId, 66u);
}

TEST_F(ActivityDecoderTest, MemsetKeepsItsMemoryKind) {
  auto m = synthetic::memsetRecord(256, 0xAB, 10, 20, 8);
  m.streamId = 3;
  SyntheticBuffer buffer;
  buffer.add(m);
  ASSERT_EQ(decode(buffer), 1u);
  ASSERT_EQ(records_.memsets.size(), 1u);
  EXPECT_EQ(records_.memsets[0].memoryKind, MemoryKind::Device);
  EXPECT_EQ(records_.memsets[0].bytes, 256u);
  EXPECT_EQ(records_.memsets[0].value, 0xABu);
  EXPECT_EQ(records_.memsets[0].at.streamId, 3u);
  EXPECT_EQ(records_.memsets[0].at.correlationId, 8u);
}

// A copy or memset replayed from a CUDA graph names the graph and node, as a kernel does.
TEST_F(ActivityDecoderTest, CopiesAndMemsetsKeepTheGraphAndNodeThatRanThem) {
  auto copy =
      synthetic::memcpyRecord(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                              CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 64, 100, 200, 5);
  copy.graphId = 43;
  copy.graphNodeId = 0x2b00000003;
  auto peer = synthetic::peerMemcpyRecord(0, 1, 64, 200, 300, 5);
  peer.graphId = 43;
  peer.graphNodeId = 0x2b00000004;
  auto set = synthetic::memsetRecord(64, 0, 300, 400, 5);
  set.graphId = 43;
  set.graphNodeId = 0x2b00000005;
  auto loose = synthetic::memsetRecord(64, 0, 400, 500, 6);
  SyntheticBuffer buffer;
  buffer.add(copy);
  buffer.add(peer);
  buffer.add(set);
  buffer.add(loose);
  ASSERT_EQ(decode(buffer), 4u);
  ASSERT_EQ(records_.memcpys.size(), 2u);
  ASSERT_EQ(records_.memsets.size(), 2u);
  EXPECT_EQ(records_.memcpys[0].graphId, 43u);
  EXPECT_EQ(records_.memcpys[0].graphNodeId, 0x2b00000003u);
  EXPECT_EQ(records_.memcpys[1].graphId, 43u);
  EXPECT_EQ(records_.memcpys[1].graphNodeId, 0x2b00000004u);
  EXPECT_EQ(records_.memsets[0].graphId, 43u);
  EXPECT_EQ(records_.memsets[0].graphNodeId, 0x2b00000005u);
  EXPECT_EQ(records_.memsets[1].graphId, 0u);
}

// Graph-level tracing: one record per launch, named after its graph, on the launch's
// stream; a graph whose first node runs on the host is placed where its last node ran.
TEST_F(ActivityDecoderTest, GraphLevelRecordsBecomeOneNamedRunPerLaunch) {
  auto graph = [](uint32_t graphId, uint64_t start, uint64_t end, uint32_t correlation) {
    CUpti_ActivityGraphTrace2 g{};
    g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
    g.graphId = graphId;
    g.start = start;
    g.end = end;
    g.correlationId = correlation;
    g.deviceId = g.endDeviceId = 1;
    g.contextId = g.endContextId = 3;
    g.streamId = 13;
    return g;
  };
  auto hostFirst = graph(7, 300, 400, 12);
  hostFirst.deviceId = INT_MAX;
  hostFirst.contextId = INT_MAX;
  hostFirst.endDeviceId = 2;
  hostFirst.endContextId = 4;
  SyntheticBuffer buffer;
  buffer.add(graph(5, 100, 200, 11));
  buffer.add(hostFirst);
  buffer.add(graph(5, 500, 600, 13));
  ASSERT_EQ(decode(buffer), 3u);
  ASSERT_EQ(records_.graphs.size(), 3u);
  EXPECT_EQ(batch_.undecoded, 0u);
  const GraphRecord& first = records_.graphs[0];
  EXPECT_EQ(name(first.name), "CUDA graph 5");
  EXPECT_EQ(first.graphId, 5u);
  EXPECT_EQ(first.at.correlationId, 11u);
  EXPECT_EQ(first.at.deviceId, 1u);
  EXPECT_EQ(first.at.contextId, 3u);
  EXPECT_EQ(first.at.streamId, 13u);
  EXPECT_EQ(first.at.endNs - first.at.startNs, 100);
  EXPECT_EQ(records_.graphs[1].at.deviceId, 2u);
  EXPECT_EQ(records_.graphs[1].at.contextId, 4u);
  EXPECT_EQ(name(records_.graphs[1].name), "CUDA graph 7");
  EXPECT_EQ(records_.graphs[2].name, first.name) << "one name per graph, interned once";
}

TEST_F(ActivityDecoderTest, SyncRecordsKeepTheirKindAndArePlacedOnTheContextsDevice) {
  constexpr uint32_t kInvalid = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  SyntheticBuffer buffer;
  buffer.add(synthetic::contextRecord(5, 3));
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 5, 7,
                                   kInvalid, 10, 20, 1));
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 5,
                                   kInvalid, 42, 30, 40, 2));
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 5,
                                   kInvalid, kInvalid, 50, 60, 3));
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 5, 8, 43,
                                   70, 80, 4));

  ASSERT_EQ(decode(buffer), 5u);
  ASSERT_EQ(records_.syncs.size(), 4u);
  EXPECT_EQ(records_.syncs[0].kind, SyncKind::StreamSync);
  EXPECT_EQ(records_.syncs[1].kind, SyncKind::EventSync);
  EXPECT_EQ(records_.syncs[2].kind, SyncKind::ContextSync);
  EXPECT_EQ(records_.syncs[3].kind, SyncKind::StreamWaitEvent);
  for (const SyncRecord& s : records_.syncs) {
    EXPECT_EQ(s.at.deviceId, 3u);
    EXPECT_EQ(s.at.contextId, 5u);
  }
  EXPECT_EQ(records_.syncs[0].at.streamId, 7u);
  EXPECT_EQ(records_.syncs[0].eventId, 0u);      // invalid event -> 0
  EXPECT_EQ(records_.syncs[1].at.streamId, 0u);  // invalid stream -> 0
  EXPECT_EQ(records_.syncs[1].eventId, 42u);
  EXPECT_EQ(records_.syncs[2].at.streamId, 0u);
  EXPECT_EQ(records_.syncs[2].eventId, 0u);
  EXPECT_EQ(records_.syncs[3].at.streamId, 8u);
  EXPECT_EQ(records_.syncs[3].eventId, 43u);
  EXPECT_EQ(records_.syncs[3].at.correlationId, 4u);
}

// A sync record carries no device: decoding one must not teach the decoder a wrong
// context -> device mapping that hides the one a later record carries.
TEST_F(ActivityDecoderTest, SyncBeforeAnyDeviceRecordDoesNotHideTheContextsDevice) {
  constexpr uint32_t kInvalid = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  auto kernel = synthetic::kernelRecord("k", 30, 40, 2);
  kernel.contextId = 7;
  kernel.deviceId = 2;
  SyntheticBuffer buffer;
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 7,
                                   kInvalid, kInvalid, 10, 20, 1));
  buffer.add(kernel);
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 7,
                                   kInvalid, kInvalid, 50, 60, 3));
  decode(buffer);

  EXPECT_EQ(decoder_.deviceOfContext(7), 2u);
  ASSERT_EQ(records_.syncs.size(), 2u);
  EXPECT_EQ(records_.syncs[1].at.deviceId, 2u);
}

TEST_F(ActivityDecoderTest, AllocationsAndReleasesKeepRunningTotalsPerDevice) {
  constexpr auto kAlloc = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  constexpr auto kRelease = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  auto release = synthetic::memoryRecord(kRelease, 0x2000, 500, 0, 40);
  release.correlationId = 9;
  SyntheticBuffer buffer;
  buffer.add(synthetic::memoryRecord(kAlloc, 0x1000, 1000, 0, 10));
  buffer.add(synthetic::memoryRecord(kAlloc, 0x2000, 500, 0, 20));
  buffer.add(synthetic::memoryRecord(kAlloc, 0x3000, 300, 1, 30));
  buffer.add(release);
  decode(buffer);

  ASSERT_EQ(records_.memory.size(), 4u);
  EXPECT_EQ(records_.memory[0].bytes, 1000);
  EXPECT_EQ(records_.memory[0].totalAllocated, 1000);
  EXPECT_EQ(records_.memory[1].totalAllocated, 1500);
  EXPECT_EQ(records_.memory[2].deviceId, 1u);
  EXPECT_EQ(records_.memory[2].totalAllocated, 300) << "each device has its own total";
  EXPECT_EQ(records_.memory[3].bytes, -500);
  EXPECT_EQ(records_.memory[3].totalAllocated, 1000);
  EXPECT_EQ(records_.memory[3].totalReserved, 1000);
  EXPECT_EQ(records_.memory[3].address, 0x2000u);
  EXPECT_EQ(records_.memory[3].timeNs, 40);
  EXPECT_EQ(records_.memory[3].correlationId, 9u);
  EXPECT_EQ(records_.memory[3].memoryKind, MemoryKind::Device);
}

TEST_F(ActivityDecoderTest, ReleaseWithoutSizeUsesTheAllocationSize) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 4096,
                                     0, 10));
  buffer.add(
      synthetic::memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x1000, 0, 0, 20));
  decode(buffer);

  ASSERT_EQ(records_.memory.size(), 2u);
  EXPECT_EQ(records_.memory[1].bytes, -4096);
  EXPECT_EQ(records_.memory[1].totalAllocated, 0);
}

TEST_F(ActivityDecoderTest, AllocationsDecodedInEarlierBuffersSizeLaterReleases) {
  SyntheticBuffer first;
  first.add(synthetic::memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 4096,
                                    0, 10));
  SyntheticBuffer second;
  second.add(
      synthetic::memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x1000, 0, 0, 20));
  decode(first);
  decode(second);

  ASSERT_EQ(records_.memory.size(), 2u);
  EXPECT_EQ(records_.memory[1].bytes, -4096);
  EXPECT_EQ(records_.memory[1].totalAllocated, 0);
}

TEST_F(ActivityDecoderTest, MemoryOperationsOtherThanAllocateAndReleaseAreUndecoded) {
  SyntheticBuffer buffer;
  buffer.add(
      synthetic::memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID, 0x1000, 64, 0, 10));
  ASSERT_EQ(decode(buffer), 1u);
  EXPECT_TRUE(records_.memory.empty());
  EXPECT_EQ(batch_.undecoded, 1u);
}

// A pool's creation, trim and destruction, with what it held: sizes only where CUPTI gives
// them (a local pool), the bytes a trim kept only for a trim.
TEST_F(ActivityDecoderTest, MemoryPoolRecordsSayWhatHappenedAndWhatThePoolHeld) {
  constexpr auto kLocal = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  SyntheticBuffer buffer;
  buffer.add(synthetic::memoryPoolRecord(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED, kLocal,
                                         0x7000, 0, 0, 10));
  buffer.add(synthetic::memoryPoolRecord(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED, kLocal,
                                         0x7000, 2 << 20, 1 << 20, 20));
  buffer.add(synthetic::memoryPoolRecord(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED,
                                         CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED, 0x9000, 8 << 20,
                                         8 << 20, 30));
  buffer.add(synthetic::memoryPoolRecord(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_INVALID, kLocal,
                                         0x7000, 0, 0, 40));
  ASSERT_EQ(decode(buffer), 4u);

  ASSERT_EQ(records_.memoryPools.size(), 3u);
  EXPECT_EQ(batch_.undecoded, 1u) << "an operation CUPTI does not name";
  const MemoryPoolRecord& created = records_.memoryPools[0];
  EXPECT_EQ(created.operation, PoolOperation::Created);
  EXPECT_EQ(created.timeNs, 10);
  EXPECT_EQ(created.address, 0x7000u);
  EXPECT_EQ(created.deviceId, 1u);
  EXPECT_EQ(created.correlationId, 77u);
  EXPECT_FALSE(created.imported);
  EXPECT_EQ(created.releaseThresholdBytes, uint64_t{1} << 20);
  EXPECT_EQ(created.minBytesToKeep, 0u) << "only a trim keeps bytes";
  const MemoryPoolRecord& trimmed = records_.memoryPools[1];
  EXPECT_EQ(trimmed.operation, PoolOperation::Trimmed);
  EXPECT_EQ(trimmed.sizeBytes, uint64_t{2} << 20);
  EXPECT_EQ(trimmed.utilizedBytes, uint64_t{1} << 20);
  EXPECT_EQ(trimmed.minBytesToKeep, 4096u);
  const MemoryPoolRecord& destroyed = records_.memoryPools[2];
  EXPECT_EQ(destroyed.operation, PoolOperation::Destroyed);
  EXPECT_TRUE(destroyed.imported);
  EXPECT_EQ(destroyed.sizeBytes, 0u) << "an imported pool's sizes are not its own";
  EXPECT_EQ(destroyed.utilizedBytes, 0u);
}

TEST_F(ActivityDecoderTest, OverheadRecordsKeepTheirKindAndTimes) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::overheadRecord(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 10, 20));
  buffer.add(synthetic::overheadRecord(CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER, 30, 40));
  buffer.add(synthetic::overheadRecord(CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION, 50, 60));
  buffer.add(synthetic::overheadRecord(CUPTI_ACTIVITY_OVERHEAD_UNKNOWN, 70, 80));
  decode(buffer);

  ASSERT_EQ(records_.overheads.size(), 4u);
  EXPECT_EQ(records_.overheads[0].kind, OverheadKind::CuptiBufferFlush);
  EXPECT_EQ(records_.overheads[1].kind, OverheadKind::DriverCompiler);
  EXPECT_EQ(records_.overheads[2].kind, OverheadKind::CuptiInstrumentation);
  EXPECT_EQ(records_.overheads[3].kind, OverheadKind::Unknown);
  EXPECT_EQ(records_.overheads[0].startNs, 10);
  EXPECT_EQ(records_.overheads[0].endNs, 20);
  EXPECT_EQ(records_.overheads[0].object, OverheadObject::Unknown);
  EXPECT_EQ(records_.overheads[0].objectId, 0u);
}

// The overhead goes on the track of what it was spent for: a thread, or a device (contexts
// and streams are on their device's track).
TEST_F(ActivityDecoderTest, OverheadRecordsNameTheThreadOrDeviceTheyWereSpentFor) {
  constexpr auto kFlush = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  SyntheticBuffer buffer;
  buffer.add(synthetic::threadOverheadRecord(kFlush, 100, 4321, 10, 20));
  buffer.add(
      synthetic::deviceOverheadRecord(kFlush, CUPTI_ACTIVITY_OBJECT_DEVICE, 2, 0, 0, 30, 40));
  buffer.add(
      synthetic::deviceOverheadRecord(kFlush, CUPTI_ACTIVITY_OBJECT_CONTEXT, 3, 7, 0, 50, 60));
  buffer.add(
      synthetic::deviceOverheadRecord(kFlush, CUPTI_ACTIVITY_OBJECT_STREAM, 1, 7, 9, 70, 80));
  decode(buffer);

  ASSERT_EQ(records_.overheads.size(), 4u);
  EXPECT_EQ(records_.overheads[0].object, OverheadObject::Thread);
  EXPECT_EQ(records_.overheads[0].objectId, 4321u);
  EXPECT_EQ(records_.overheads[1].object, OverheadObject::Device);
  EXPECT_EQ(records_.overheads[1].objectId, 2u);
  EXPECT_EQ(records_.overheads[2].object, OverheadObject::Device);
  EXPECT_EQ(records_.overheads[2].objectId, 3u);
  EXPECT_EQ(records_.overheads[3].object, OverheadObject::Device);
  EXPECT_EQ(records_.overheads[3].objectId, 1u);
}

TEST_F(ActivityDecoderTest, ExternalCorrelationRecordsBecomeExternalIds) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::externalCorrelationRecord(42, 7));
  buffer.add(synthetic::externalCorrelationRecord(43, 0x10000000001ull));
  EXPECT_EQ(decode(buffer), 2u);
  using Pair = std::pair<uint32_t, uint64_t>;
  EXPECT_EQ(batch_.externalIds, (std::vector<Pair>{{42, 7}, {43, 0x10000000001ull}}));
  EXPECT_TRUE(records_.empty()) << "they are joined later, not records of their own";
}

TEST_F(ActivityDecoderTest, UnknownKindsAreCountedAsUndecoded) {
  auto api = synthetic::zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  api.cbid = 211;
  SyntheticBuffer buffer;
  buffer.add(api);
  buffer.add(synthetic::kernelRecord("k", 1, 2, 1));
  buffer.add(api);

  EXPECT_EQ(decode(buffer), 3u);
  EXPECT_EQ(batch_.undecoded, 2u);
  EXPECT_EQ(records_.kernels.size(), 1u);
}

TEST_F(ActivityDecoderTest, OnlyKernelNamesAreInternedAndEachOnce) {
  static const char kMangled[] = "_Z6kernelPfi";
  std::string sameTextElsewhere = kMangled;  // another pointer, same name
  SyntheticBuffer buffer;
  for (int i = 0; i < 1000; ++i) {
    buffer.add(synthetic::kernelRecord(i % 2 == 0 ? kMangled : sameTextElsewhere.c_str(), i * 10,
                                       i * 10 + 5, i));
    buffer.add(
        synthetic::memcpyRecord(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 64, i * 10, i * 10 + 5, i));
    buffer.add(synthetic::memsetRecord(64, 0, i * 10, i * 10 + 5, i));
  }
  EXPECT_EQ(decode(buffer), 3000u);

  ASSERT_EQ(records_.kernels.size(), 1000u);
  EXPECT_EQ(records_.kernels.front().name, records_.kernels.back().name);
  EXPECT_EQ(records_.kernels[0].name, records_.kernels[1].name);
  EXPECT_EQ(strings_.size(), 2u) << "\"\" and the kernel";
}

// CUPTI gives every record of a kernel the same name pointer: the decoder demangles and
// interns once per pointer and, from then on, does not read the name again.
TEST_F(ActivityDecoderTest, KernelNameIsLookedUpOncePerCuptiNamePointer) {
  char cuptiName[] = "_Z6kernelPfi";
  SyntheticBuffer first;
  first.add(synthetic::kernelRecord(cuptiName, 10, 20, 1));
  decode(first);
  cuptiName[3] = 'K';  // same pointer, other text ("Kernel"): not read again
  SyntheticBuffer second;
  second.add(synthetic::kernelRecord(cuptiName, 30, 40, 2));
  decode(second);

  ASSERT_EQ(records_.kernels.size(), 2u);
  EXPECT_EQ(records_.kernels[1].name, records_.kernels[0].name);
  EXPECT_EQ(name(records_.kernels[1].name), "kernel(float*, int)");
  EXPECT_EQ(strings_.size(), 2u);
}

// A new trace's table: ids cached for the previous table mean nothing in it.
TEST_F(ActivityDecoderTest, UseStringsSendsLaterNamesToTheNewTable) {
  static const char kMangled[] = "_Z6kernelPfi";
  SyntheticBuffer buffer;
  buffer.add(synthetic::kernelRecord(kMangled, 10, 20, 1));
  decode(buffer);

  StringTable next;
  next.intern("a name of the next trace");  // takes the id the kernel has in the first table
  decoder_.useStrings(next);
  GpuBatch later;
  decoder_.decodeBuffer(buffer.data(), buffer.size(), later);

  ASSERT_EQ(later.records.kernels.size(), 1u);
  EXPECT_EQ(next.get(later.records.kernels[0].name), "kernel(float*, int)");
  EXPECT_EQ(strings_.size(), 2u) << "the first table is left alone";
}

TEST_F(ActivityDecoderTest, GpuClockOffsetShiftsEveryTimestamp) {
  auto k = synthetic::kernelRecord("k", 1000, 2000, 1);
  k.queued = 900;
  SyntheticBuffer buffer;
  buffer.add(k);
  buffer.add(synthetic::memcpyRecord(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                                     CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                                     CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 8, 3000, 3100, 2));
  buffer.add(synthetic::memsetRecord(8, 0, 4000, 4100, 3));
  buffer.add(synthetic::syncRecord(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 0, 1,
                                   CUPTI_SYNCHRONIZATION_INVALID_VALUE, 5000, 5100, 4));
  buffer.add(
      synthetic::memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x10, 8, 0, 6000));
  buffer.add(synthetic::overheadRecord(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 7000, 7100));
  buffer.add(synthetic::peerMemcpyRecord(0, 1, 8, 8000, 8100, 5));
  decoder_.setGpuClockOffset(-500);
  decode(buffer);

  ASSERT_EQ(records_.kernels.size(), 1u);
  EXPECT_EQ(records_.kernels[0].at.startNs, 500);
  EXPECT_EQ(records_.kernels[0].at.endNs, 1500);
  EXPECT_EQ(records_.kernels[0].queuedNs, 400);
  EXPECT_EQ(records_.memcpys.at(0).at.startNs, 2500);
  EXPECT_EQ(records_.memcpys.at(0).at.endNs, 2600);
  EXPECT_EQ(records_.memsets.at(0).at.startNs, 3500);
  EXPECT_EQ(records_.syncs.at(0).at.startNs, 4500);
  EXPECT_EQ(records_.memory.at(0).timeNs, 5500);
  EXPECT_EQ(records_.overheads.at(0).startNs, 6500);
  EXPECT_EQ(records_.overheads.at(0).endNs, 6600);
  EXPECT_EQ(records_.memcpys.at(1).at.startNs, 7500);
}

TEST_F(ActivityDecoderTest, EmptyBufferDecodesNothing) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::kernelRecord("k", 1, 2, 1));
  EXPECT_EQ(decoder_.decodeBuffer(buffer.data(), 0, batch_), 0u);
  EXPECT_TRUE(records_.kernels.empty());
}

TEST_F(ActivityDecoderTest, DecodingAppendsToWhatTheBatchHolds) {
  SyntheticBuffer buffer;
  buffer.add(synthetic::kernelRecord("k", 1, 2, 1));
  decode(buffer);
  decode(buffer);
  EXPECT_EQ(records_.kernels.size(), 2u);
}

// ---- CUPTI's enum values to the model's kinds -----------------------------------------

TEST(CuptiKindsTest, CopyKindsMapOneToOne) {
  const std::vector<std::pair<uint32_t, CopyKind>> cases = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CopyKind::HtoD},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CopyKind::DtoH},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, CopyKind::HtoA},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, CopyKind::AtoH},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, CopyKind::AtoA},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, CopyKind::AtoD},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, CopyKind::DtoA},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CopyKind::DtoD},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CopyKind::HtoH},
      {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CopyKind::PtoP},
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, CopyKind::Unknown},
      {999, CopyKind::Unknown},
  };
  for (const auto& [cupti, kind] : cases) EXPECT_EQ(copyKindOf(cupti), kind) << cupti;
}

TEST(CuptiKindsTest, MemoryKindsMapOneToOne) {
  const std::vector<std::pair<uint32_t, MemoryKind>> cases = {
      {CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, MemoryKind::Pageable},
      {CUPTI_ACTIVITY_MEMORY_KIND_PINNED, MemoryKind::Pinned},
      {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, MemoryKind::Device},
      {CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, MemoryKind::Array},
      {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, MemoryKind::Managed},
      {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, MemoryKind::DeviceStatic},
      {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, MemoryKind::ManagedStatic},
      {CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, MemoryKind::Unknown},
      {999, MemoryKind::Unknown},
  };
  for (const auto& [cupti, kind] : cases) EXPECT_EQ(memoryKindOf(cupti), kind) << cupti;
}

TEST(CuptiKindsTest, SyncKindsMapOneToOne) {
  const std::vector<std::pair<uint32_t, SyncKind>> cases = {
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, SyncKind::EventSync},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, SyncKind::StreamWaitEvent},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, SyncKind::StreamSync},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, SyncKind::ContextSync},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN, SyncKind::Unknown},
      {999, SyncKind::Unknown},
  };
  for (const auto& [cupti, kind] : cases) EXPECT_EQ(syncKindOf(cupti), kind) << cupti;
}

TEST(CuptiKindsTest, OverheadKindsMapOneToOne) {
  const std::vector<std::pair<uint32_t, OverheadKind>> cases = {
      {CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER, OverheadKind::DriverCompiler},
      {CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, OverheadKind::CuptiBufferFlush},
      {CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION, OverheadKind::CuptiInstrumentation},
      {CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE, OverheadKind::CuptiResource},
      {CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING, OverheadKind::ModuleLoading},
      {CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING, OverheadKind::LazyFunctionLoading},
      {CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL, OverheadKind::CommandBufferFull},
      {CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST, OverheadKind::ActivityBufferRequest},
      {CUPTI_ACTIVITY_OVERHEAD_UNKNOWN, OverheadKind::Unknown},
      {999, OverheadKind::Unknown},
  };
  for (const auto& [cupti, kind] : cases) EXPECT_EQ(overheadKindOf(cupti), kind) << cupti;
}

}  // namespace
}  // namespace kinetrace::detail
