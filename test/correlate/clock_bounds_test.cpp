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

}  // namespace
}  // namespace kinetrace::detail
