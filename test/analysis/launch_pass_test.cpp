// The launch pass: launch latency (distribution, histogram, outliers), the slowest launch
// call, and each stream's queue depth over its device's timeline.

#include "analysis/passes/launch_pass.h"

#include <gtest/gtest.h>

#include <vector>

#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

// Latencies 2, 5, 40 and 1000 us on stream 7; c's launch call takes 30 us; a kernel
// without a launch call.
CollectedTrace launches() {
  TraceBuilder b;
  b.op("a", 0, 1, 2, 3);
  b.op("b", 0, 1, 5, 6);
  b.op("c", 10, 40, 50, 60);
  b.op("d", 1, 2, 1001, 1002);
  b.kernel("graph", 70, 80);
  return b.take();
}

// Device 0's report as the time pass leaves it: a timeline of 10 us bins from the trace's
// start, and stream 7.
DeviceReport deviceZero() {
  DeviceReport device;
  device.timelineStartNs = kBase;
  device.timelineBinNs = 10 * kUs;
  device.busyTimeline.assign(DeviceReport::kTimelineBins, 0.0);
  StreamBreakdown stream;
  stream.stream = 7;
  device.streams.push_back(stream);
  return device;
}

RankReport launchesOf(CollectedTrace trace, AnalysisOptions options = {},
                      std::vector<DeviceReport> devices = {}) {
  PassFixture f(std::move(trace), options);
  RankReport report;
  report.devices = std::move(devices);
  LaunchPass launch(f.context());
  f.addOperations(launch);
  launch.finish(report);
  return report;
}

TEST(LaunchPassTest, LatencyRunsFromTheLaunchCallsStartToTheOperationsStart) {
  const RankReport r = launchesOf(launches());
  const Distribution& d = r.launchLatency;
  EXPECT_EQ(d.count, 4u) << "the kernel without a launch call has none";
  EXPECT_EQ(d.totalNs, 1047 * kUs);
  EXPECT_EQ(d.meanNs, 261'750);
  EXPECT_EQ(d.p50Ns, 40 * kUs);
  EXPECT_EQ(d.p90Ns, 1000 * kUs);
  EXPECT_EQ(d.maxNs, 1000 * kUs);
  EXPECT_EQ(r.slowestCallNs, 30 * kUs);
  EXPECT_EQ(r.slowestCallOf, "c");
}

TEST(LaunchPassTest, TheHistogramHasAPowerOfTwoBucketOfMicrosecondsEach) {
  const RankReport r = launchesOf(launches());
  ASSERT_EQ(r.launchLatencyHistogram.size(), static_cast<std::size_t>(RankReport::kLatencyBuckets));
  std::vector<uint64_t> expected(RankReport::kLatencyBuckets, 0);
  expected[2] = 1;   // 2 us: 2-4
  expected[3] = 1;   // 5 us: 4-8
  expected[6] = 1;   // 40 us: 32-64
  expected[10] = 1;  // 1000 us: 512-1024
  EXPECT_EQ(r.launchLatencyHistogram, expected);
}

TEST(LaunchPassTest, OutliersAreTheWorstLatenciesWorstFirst) {
  AnalysisOptions options;
  options.top = 2;
  const RankReport r = launchesOf(launches(), options);
  ASSERT_EQ(r.launchOutliers.size(), 2u);
  EXPECT_EQ(r.launchOutliers[0].name, "d");
  EXPECT_EQ(r.launchOutliers[0].latencyNs, 1000 * kUs);
  EXPECT_EQ(r.launchOutliers[0].startNs, kBase + 1001 * kUs);
  EXPECT_EQ(r.launchOutliers[1].name, "c");
}

TEST(LaunchPassTest, AStreamsQueueDepthIsTheMostLaunchedAndNotYetStartedPerBin) {
  const RankReport r = launchesOf(launches(), {}, {deviceZero()});
  EXPECT_EQ(r.devices[0].streams[0].maxQueueDepth, 3) << "a, b and d launched by 1 us";
  ASSERT_EQ(r.queueDepthTimelines.size(), 1u);
  const QueueDepthTimeline& t = r.queueDepthTimelines[0];
  EXPECT_EQ(t.device, 0);
  EXPECT_EQ(t.stream, 7);
  ASSERT_EQ(t.maxDepth.size(), static_cast<std::size_t>(DeviceReport::kTimelineBins));
  EXPECT_EQ(t.maxDepth[0], 3);
  EXPECT_EQ(t.maxDepth[1], 2) << "a and b started; d still queued and c launched";
  EXPECT_EQ(t.maxDepth[4], 2);
  EXPECT_EQ(t.maxDepth[5], 1) << "c started at 50 us";
  EXPECT_EQ(t.maxDepth[100], 1) << "d waited until 1001 us";
  EXPECT_EQ(t.maxDepth[101], 0);
}

TEST(LaunchPassTest, AStreamOnADeviceWithoutATimelineHasNoQueueTimeline) {
  const RankReport r = launchesOf(launches());
  EXPECT_TRUE(r.queueDepthTimelines.empty());
}

}  // namespace
}  // namespace kinetrace::detail::passes
