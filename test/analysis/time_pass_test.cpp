// The time pass: each device swept once for busy and idle time, by what ran and why it
// waited, per device, stream and step; and the gap tables it fills.

#include "analysis/passes/time_pass.h"

#include <gtest/gtest.h>

#include <numeric>

#include "analysis/passes/steps_pass.h"
#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

// The steps, then the time pass, alone over the trace.
RankReport timesOf(CollectedTrace trace, AnalysisOptions options = {}) {
  PassFixture f(std::move(trace), options);
  RankReport report;
  TimePass time(f.context());
  StepsPass(f.context()).finish(report);
  f.addOperations(time);
  time.finish(report);
  return report;
}

TEST(TimePassTest, EachDeviceHasItsOwnRowAndTheTraceAndItsStepsSumThem) {
  TraceBuilder b;
  b.range("ProfilerStep#1", 0, 100);
  b.op("gemm", 0, 1, 10, 30);
  b.op("gemm", 2, 3, 50, 60, "kernel", 7, 0, 1);
  const RankReport r = timesOf(b.take());
  ASSERT_EQ(r.devices.size(), 2u);
  const TimeBreakdown& gpu0 = r.devices[0].time;
  EXPECT_EQ(r.devices[0].device, 0);
  EXPECT_EQ(gpu0.windowNs, 100 * kUs);
  EXPECT_EQ(gpu0.busyNs, 20 * kUs);
  EXPECT_EQ(gpu0.beforeFirstOpNs, 10 * kUs);
  EXPECT_EQ(gpu0.otherIdleNs, 70 * kUs) << "after the last operation";
  EXPECT_EQ(r.devices[1].device, 1);
  EXPECT_EQ(r.devices[1].time.beforeFirstOpNs, 50 * kUs);
  EXPECT_EQ(r.time.windowNs, 200 * kUs);
  EXPECT_EQ(r.time.busyNs, 30 * kUs);
  EXPECT_EQ(r.time.beforeFirstOpNs, 60 * kUs);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].time.windowNs, 200 * kUs) << "the step's length on each device";
  EXPECT_EQ(r.steps[0].time.busyNs, 30 * kUs);
}

TEST(TimePassTest, OverlappingOperationsCountOnceAndComputeWinsOverCommunication) {
  TraceBuilder b;
  b.op("gemm", 0, 1, 10, 30);
  b.op("gemm", 1, 2, 20, 40);                               // overlaps the first on its stream
  b.op("ncclKernel_AllReduce", 2, 3, 35, 60, "kernel", 9);  // overlaps compute 35-40
  const RankReport r = timesOf(b.take());
  ASSERT_EQ(r.devices.size(), 1u);
  const DeviceReport& d = r.devices[0];
  EXPECT_EQ(d.time.busyNs, 50 * kUs);
  EXPECT_EQ(d.time.computeNs, 30 * kUs);
  EXPECT_EQ(d.time.communicationNs, 20 * kUs) << "only where no compute ran";
  EXPECT_EQ(d.time.memoryNs, 0);
  EXPECT_EQ(d.communicationOverlapNs, 5 * kUs);
  ASSERT_EQ(d.streams.size(), 2u);
  EXPECT_EQ(d.streams[0].stream, 7);
  EXPECT_EQ(d.streams[0].operations, 2u);
  EXPECT_EQ(d.streams[0].busyNs, 30 * kUs);
  EXPECT_EQ(d.streams[1].stream, 9);
  EXPECT_EQ(d.streams[1].busyNs, 25 * kUs);
  // The timeline's bins hold the busy fraction of each: together, the busy time.
  ASSERT_EQ(d.busyTimeline.size(), static_cast<std::size_t>(DeviceReport::kTimelineBins));
  EXPECT_EQ(d.timelineStartNs, kBase);
  EXPECT_EQ(d.timelineBinNs, 250) << "60 us over 240 bins";
  const double busyBins = std::accumulate(d.busyTimeline.begin(), d.busyTimeline.end(), 0.0);
  EXPECT_NEAR(busyBins * static_cast<double>(d.timelineBinNs), 50.0 * kUs, 1e-6);
  EXPECT_DOUBLE_EQ(d.busyTimeline[0], 0.0) << "before the first kernel";
}

TEST(TimePassTest, TheLongestGapsAreListedWithWhatEndedThemAndWhatTheHostWasDoing) {
  TraceBuilder b;
  b.op("a", 0, 1, 2, 10);
  b.range("optimizer.step", 10, 50);
  b.range("inner", 20, 40);
  b.op("b", 45, 46, 50, 60);   // idle 10-50: host wait, the host in "inner" at its middle
  b.op("c", 61, 62, 70, 75);   // idle 60-70: host wait
  b.op("d", 63, 64, 95, 100);  // idle 75-95: queued, under 30 us: kernel wait
  AnalysisOptions options;
  options.top = 2;
  const RankReport r = timesOf(b.take(), options);
  ASSERT_EQ(r.gaps.size(), 2u);
  EXPECT_EQ(r.gaps[0].startNs, kBase + 10 * kUs);
  EXPECT_EQ(r.gaps[0].durationNs, 40 * kUs);
  EXPECT_EQ(r.gaps[0].cause, "host wait");
  EXPECT_EQ(r.gaps[0].endedBy, "b");
  EXPECT_EQ(r.gaps[0].hostWas, "inner") << "the innermost range open at the gap's middle";
  EXPECT_EQ(r.gaps[1].durationNs, 20 * kUs);
  EXPECT_EQ(r.gaps[1].cause, "kernel wait");
  EXPECT_EQ(r.gaps[1].endedBy, "d");
  EXPECT_EQ(r.gaps[1].hostWas, "");
  EXPECT_EQ(r.time.hostWaitNs, 35 * kUs + 1 * kUs) << "10-45 and 60-61";
  EXPECT_EQ(r.time.kernelWaitNs, 20 * kUs);
}

TEST(TimePassTest, GapsAreTalliedByTheSynchronisationFoundInThem) {
  TraceBuilder b;
  b.op("a", 0, 1, 2, 10);
  b.sync("Stream Wait Event", 2, 3, 7, 12);  // before b's launch, on its stream
  b.op("b", 3, 4, 60, 70);                   // idle 10-60, queued: waiting on other work
  b.sync("Stream Sync", 65, 80, 7);          // the host drains the stream
  b.op("c", 85, 86, 90, 95);                 // idle 70-90: host wait, after the sync
  const RankReport r = timesOf(b.take());
  EXPECT_EQ(r.syncRecords, 2u);
  ASSERT_EQ(r.otherWork.size(), 1u);
  EXPECT_EQ(r.otherWork[0].found, "Stream Wait Event on stream 7 (for stream 12's work)");
  EXPECT_EQ(r.otherWork[0].gaps, 1u);
  EXPECT_EQ(r.otherWork[0].ns, 50 * kUs);
  ASSERT_EQ(r.hostWaitAfterSync.size(), 1u);
  EXPECT_EQ(r.hostWaitAfterSync[0].found, "Stream Sync on stream 7");
  EXPECT_EQ(r.hostWaitAfterSync[0].ns, 20 * kUs);
  ASSERT_GE(r.gaps.size(), 2u);
  EXPECT_EQ(r.gaps[0].evidence, "Stream Wait Event on stream 7 (for stream 12's work)");
  EXPECT_EQ(r.gaps[1].evidence, "the host was in Stream Sync on stream 7");
  EXPECT_EQ(r.time.otherWorkWaitNs, 50 * kUs);
}

TEST(TimePassTest, AStepsTimeIsItsPartOfTheDevicesBusyAndIdleTime) {
  TraceBuilder b;
  b.range("ProfilerStep#1", 0, 50);
  b.range("ProfilerStep#2", 50, 100);
  b.range("enumerate(DataLoader)#next", 55, 75);
  b.op("a", 0, 1, 10, 60);
  b.op("b", 70, 71, 80, 100);  // idle 60-80: host wait 60-70, launch 70-80
  const RankReport r = timesOf(b.take());
  ASSERT_EQ(r.steps.size(), 2u);
  const TimeBreakdown& first = r.steps[0].time;
  EXPECT_EQ(first.windowNs, 50 * kUs);
  EXPECT_EQ(first.beforeFirstOpNs, 10 * kUs);
  EXPECT_EQ(first.busyNs, 40 * kUs);
  EXPECT_EQ(first.dataLoadingIdleNs, 0);
  const TimeBreakdown& second = r.steps[1].time;
  EXPECT_EQ(second.busyNs, 30 * kUs);
  EXPECT_EQ(second.hostWaitNs, 10 * kUs);
  EXPECT_EQ(second.launchNs, 10 * kUs);
  EXPECT_EQ(second.idleNs, 20 * kUs);
  EXPECT_EQ(second.dataLoadingIdleNs, 15 * kUs) << "idle 60-75 while the loader ran";
}

}  // namespace
}  // namespace kinetrace::detail::passes
