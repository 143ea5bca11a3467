#include "correlate/clock_bounds.h"

#include <gtest/gtest.h>

namespace kinetrace::detail {
namespace {

GpuPlacement op(int64_t start, int64_t end, uint32_t stream = 7) {
  GpuPlacement at;
  at.startNs = start;
  at.endNs = end;
  at.streamId = stream;
  return at;
}

SyncRecord streamSync(uint32_t stream = 7) {
  SyncRecord s;
  s.kind = SyncKind::StreamSync;
  s.at.streamId = stream;
  return s;
}

TEST(ClockBoundsTest, HighIsTheSmallestLeadOfWorkOverItsLaunch) {
  ClockBoundsTracker tracker;
  tracker.addLaunched(op(150, 200), 100, 110);
  tracker.addLaunched(op(320, 400), 300, 310);
  ClockOffsetBounds b = tracker.finish(0);
  ASSERT_TRUE(b.hasHigh);
  EXPECT_EQ(b.highNs, 20);
  EXPECT_FALSE(b.hasLow);
}

TEST(ClockBoundsTest, ASyncBoundsOnlyWorkLaunchedBeforeItsCallOnItsStream) {
  ClockBoundsTracker tracker;
  tracker.addLaunched(op(150, 900), 100, 110);            // before the sync: counts
  tracker.addLaunched(op(2000, 5000), 1500, 1600);        // after the sync call began
  tracker.addLaunched(op(150, 99999, /*stream=*/8), 100, 110);  // another stream
  tracker.addSync(streamSync(), 1000, 1100);
  tracker.advance(1200);
  ClockOffsetBounds b = tracker.finish(0);
  ASSERT_TRUE(b.hasLow);
  EXPECT_EQ(b.lowNs, 900 - 1100);
}

TEST(ClockBoundsTest, FoldingOldLaunchesKeepsTheirLatestEnd) {
  ClockBoundsTracker tracker;
  for (int i = 0; i < 1000; ++i) tracker.addLaunched(op(i * 100 + 50, i * 100 + 90), i * 100, i * 100 + 10);
  tracker.advance(99000);
  const std::size_t held = tracker.heldBytes();
  tracker.addSync(streamSync(), 100000, 100010);
  tracker.advance(200000);
  EXPECT_LT(held, 1000 * 16u) << "launches nobody can ask about any more are folded";
  ClockOffsetBounds b = tracker.finish(0);
  ASSERT_TRUE(b.hasLow);
  EXPECT_EQ(b.lowNs, 999 * 100 + 90 - 100010);
}

TEST(ClockBoundsTest, SheddingFreesTheLaunchesAndKeepsTheBoundTrue) {
  ClockBoundsTracker tracker;
  for (int i = 0; i < 1000; ++i) tracker.addLaunched(op(i * 100 + 50, i * 100 + 90), i * 100, i * 100 + 10);
  tracker.addSync(streamSync(), 100000, 100010);
  const std::size_t held = tracker.heldBytes();
  tracker.shed();
  EXPECT_LT(tracker.heldBytes(), held / 10);
  ClockOffsetBounds b = tracker.finish(0);
  ASSERT_TRUE(b.hasLow);
  EXPECT_EQ(b.lowNs, 999 * 100 + 90 - 100010) << "the waiting sync was judged before the fold";
}

TEST(ClockBoundsTest, TheEndOfWindowSyncBoundsEveryOperation) {
  ClockBoundsTracker tracker;
  tracker.addOperation(op(10, 500));
  tracker.addOperation(op(10, 700));
  ClockOffsetBounds b = tracker.finish(1000);
  ASSERT_TRUE(b.hasLow);
  EXPECT_EQ(b.lowNs, -300);
}

// Each GPU's clock is converted to the host's on its own: each device's bounds come from its
// own work, while the trace's hold for both devices at once.
TEST(ClockBoundsTest, EachDeviceHasItsOwnBounds) {
  ClockBoundsTracker tracker;
  auto on = [](uint32_t device, GpuPlacement at) {
    at.deviceId = device;
    return at;
  };
  tracker.addLaunched(on(0, op(150, 900)), 100, 110);  // device 0: lead 50
  tracker.addLaunched(on(1, op(130, 2050)), 100, 110);  // device 1: lead 30
  SyncRecord sync0 = streamSync();
  SyncRecord sync1 = streamSync();
  sync1.at.deviceId = 1;
  tracker.addSync(sync0, 1000, 1100);  // device 0: 900 - 1100
  tracker.addSync(sync1, 2000, 2100);  // device 1: 2050 - 2100
  tracker.advance(3000);
  tracker.addOperation(on(0, op(3000, 3100)));
  ClockOffsetBounds b = tracker.finish(/*syncReturnNs=*/3500);
  ASSERT_TRUE(b.hasLow && b.hasHigh);
  EXPECT_EQ(b.highNs, 30);
  EXPECT_EQ(b.lowNs, -50);
  ASSERT_EQ(b.devices.size(), 2u);
  EXPECT_EQ(b.devices[0].first, 0u);
  EXPECT_EQ(b.devices[0].second.highNs, 50);
  EXPECT_EQ(b.devices[0].second.lowNs, -200) << "its sync; the window's end (-400) is looser";
  EXPECT_EQ(b.devices[1].first, 1u);
  EXPECT_EQ(b.devices[1].second.highNs, 30);
  EXPECT_EQ(b.devices[1].second.lowNs, -50);
}

}  // namespace
}  // namespace kinetrace::detail
