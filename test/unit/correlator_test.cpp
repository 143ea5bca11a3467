#include "correlate/correlator.h"

#include <gtest/gtest.h>

namespace kinetrace::detail {
namespace {

ApiCallRecord launchCall(uint32_t correlation, int64_t start, uint64_t externalId) {
  ApiCallRecord call;
  call.startNs = start;
  call.endNs = start + 5;
  call.correlationId = correlation;
  call.externalId = externalId;
  call.launchesGpuWork = true;
  return call;
}

KernelRecord kernelAt(uint32_t correlation, int64_t start, int64_t end, uint32_t stream) {
  KernelRecord kernel;
  kernel.at.correlationId = correlation;
  kernel.at.startNs = start;
  kernel.at.endNs = end;
  kernel.at.streamId = stream;
  return kernel;
}

RangeRecord range(uint64_t id, uint64_t parent, StringId name) {
  RangeRecord r;
  r.externalId = id;
  r.parentId = parent;
  r.name = name;
  return r;
}

TEST(CorrelatorTest, GpuOperationTakesTheExternalIdOfItsLaunchCallAndBothGetAFlow) {
  TraceData trace;
  trace.apiCalls.push_back(launchCall(7, 100, 42));
  trace.kernels.push_back(kernelAt(7, 150, 200, 1));
  correlate(trace, true);
  EXPECT_EQ(trace.kernels[0].at.externalId, 42u);
  EXPECT_TRUE(trace.kernels[0].at.hasLaunchCall);
  EXPECT_TRUE(trace.apiCalls[0].hasGpuOp);
  EXPECT_EQ(trace.losses.gpuOpsBeforeLaunch, 0u);
  EXPECT_EQ(trace.losses.gpuOpsWithoutLaunch, 0u);
}

TEST(CorrelatorTest, OperationStartingBeforeItsLaunchIsCounted) {
  TraceData trace;
  trace.apiCalls.push_back(launchCall(7, 100, 0));
  trace.kernels.push_back(kernelAt(7, 90, 120, 1));
  correlate(trace, true);
  EXPECT_EQ(trace.losses.gpuOpsBeforeLaunch, 1u);
}

TEST(CorrelatorTest, MissingLaunchCallIsCountedOnlyWhenLaunchesWereRecorded) {
  TraceData recorded;
  recorded.kernels.push_back(kernelAt(9, 90, 120, 1));
  correlate(recorded, true);
  EXPECT_EQ(recorded.losses.gpuOpsWithoutLaunch, 1u);
  EXPECT_FALSE(recorded.kernels[0].at.hasLaunchCall);

  TraceData notRecorded;
  notRecorded.kernels.push_back(kernelAt(9, 90, 120, 1));
  correlate(notRecorded, false);
  EXPECT_EQ(notRecorded.losses.gpuOpsWithoutLaunch, 0u);
}

TEST(CorrelatorTest, CopyLaunchedThroughTheRuntimeMatchesByItsRuntimeCorrelationId) {
  TraceData trace;
  trace.apiCalls.push_back(launchCall(30, 100, 5));
  MemcpyRecord copy;
  copy.at.correlationId = 31;  // the driver call's id
  copy.runtimeCorrelationId = 30;
  copy.at.startNs = 110;
  copy.at.endNs = 130;
  trace.memcpys.push_back(copy);
  correlate(trace, true);
  EXPECT_TRUE(trace.memcpys[0].at.hasLaunchCall);
  EXPECT_EQ(trace.memcpys[0].at.correlationId, 30u) << "flow ends must share the call's id";
  EXPECT_EQ(trace.memcpys[0].at.externalId, 5u);
}

TEST(CorrelatorTest, SynchronisationGetsNoFlowAndNoGpuSpan) {
  TraceData trace;
  trace.ranges.push_back(range(5, 0, 1));
  trace.apiCalls.push_back(launchCall(3, 100, 5));
  SyncRecord sync;
  sync.at.correlationId = 3;
  sync.at.startNs = 100;
  sync.at.endNs = 500;
  trace.syncs.push_back(sync);
  correlate(trace, true);
  EXPECT_FALSE(trace.syncs[0].at.hasLaunchCall);
  EXPECT_EQ(trace.syncs[0].at.externalId, 5u);
  EXPECT_TRUE(trace.gpuSpans.empty());
}

TEST(CorrelatorTest, RangeGetsAGpuSpanPerStreamCoveringItsWorkAndItsChildrensWork) {
  TraceData trace;
  trace.ranges.push_back(range(10, 0, 1));   // step
  trace.ranges.push_back(range(11, 10, 2));  // forward, inside step
  trace.apiCalls.push_back(launchCall(1, 100, 10));
  trace.apiCalls.push_back(launchCall(2, 110, 11));
  trace.apiCalls.push_back(launchCall(3, 120, 11));
  trace.kernels.push_back(kernelAt(1, 200, 250, 7));
  trace.kernels.push_back(kernelAt(2, 260, 300, 7));
  trace.kernels.push_back(kernelAt(3, 210, 400, 8));
  correlate(trace, true);
  auto span = [&](uint64_t id, uint32_t stream) -> const GpuSpanRecord* {
    for (const auto& s : trace.gpuSpans) {
      if (s.externalId == id && s.streamId == stream) return &s;
    }
    return nullptr;
  };
  ASSERT_EQ(trace.gpuSpans.size(), 4u);
  ASSERT_NE(span(10, 7), nullptr);
  EXPECT_EQ(span(10, 7)->startNs, 200);
  EXPECT_EQ(span(10, 7)->endNs, 300);
  EXPECT_EQ(span(10, 8)->startNs, 210);
  EXPECT_EQ(span(10, 8)->endNs, 400);
  EXPECT_EQ(span(11, 7)->startNs, 260);
  EXPECT_EQ(span(11, 7)->name, 2u);
  EXPECT_EQ(span(11, 8)->endNs, 400);
}

TEST(CorrelatorTest, MemoryEventsMoveToTheThreadThatAllocated) {
  TraceData trace;
  ApiCallRecord malloc = launchCall(4, 100, 0);
  malloc.thread = 3;
  malloc.launchesGpuWork = false;
  trace.apiCalls.push_back(malloc);
  MemoryRecord record;
  record.correlationId = 4;
  trace.memory.push_back(record);
  correlate(trace, true);
  EXPECT_EQ(trace.memory[0].thread, 3u);
}

TEST(CorrelatorTest, ClockOffsetBoundsComeFromLaunchesAndTheStopSynchronisation) {
  TraceData trace;
  trace.apiCalls.push_back(launchCall(1, 100, 0));
  trace.apiCalls.push_back(launchCall(2, 300, 0));
  trace.kernels.push_back(kernelAt(1, 140, 200, 1));  // starts 40 after its launch
  trace.kernels.push_back(kernelAt(2, 310, 900, 1));  // starts 10 after its launch
  trace.gpuSyncReturnNs = 1000;                       // last end 100 before the sync returned
  correlate(trace, true);
  ClockOffsetBounds bounds = measureClockOffsetBounds(trace);
  ASSERT_TRUE(bounds.hasHigh);
  ASSERT_TRUE(bounds.hasLow);
  EXPECT_EQ(bounds.highNs, 10);
  EXPECT_EQ(bounds.lowNs, -100);
}

TEST(CorrelatorTest, AStreamSynchronisationBoundsTheOffsetFromBelow) {
  TraceData trace;
  trace.apiCalls.push_back(launchCall(1, 100, 0));  // launch returns at 105
  trace.kernels.push_back(kernelAt(1, 140, 700, 4));
  ApiCallRecord syncCall = launchCall(2, 200, 0);
  syncCall.endNs = 720;  // cudaStreamSynchronize returned 20 after the kernel's end
  syncCall.launchesGpuWork = false;
  trace.apiCalls.push_back(syncCall);
  SyncRecord sync;
  sync.at.correlationId = 2;
  sync.at.streamId = 4;
  sync.name = trace.strings.intern("Stream Sync");
  trace.syncs.push_back(sync);
  correlate(trace, true);
  ClockOffsetBounds bounds = measureClockOffsetBounds(trace);
  ASSERT_TRUE(bounds.hasLow);
  EXPECT_EQ(bounds.lowNs, -20);
  EXPECT_EQ(bounds.highNs, 40);
}

TEST(CorrelatorTest, ASyncOnAnotherStreamSaysNothingAboutThisStream) {
  TraceData trace;
  trace.apiCalls.push_back(launchCall(1, 100, 0));
  trace.kernels.push_back(kernelAt(1, 140, 700, 4));
  ApiCallRecord syncCall = launchCall(2, 200, 0);
  syncCall.endNs = 300;
  trace.apiCalls.push_back(syncCall);
  SyncRecord sync;
  sync.at.correlationId = 2;
  sync.at.streamId = 5;
  sync.name = trace.strings.intern("Stream Sync");
  trace.syncs.push_back(sync);
  correlate(trace, true);
  EXPECT_FALSE(measureClockOffsetBounds(trace).hasLow);
}

}  // namespace
}  // namespace kinetrace::detail
