#include "correlate/lane_allocator.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace kinetrace::detail {
namespace {

TEST(LaneAllocatorTest, DisjointIntervalsShareTheFirstLane) {
  LaneAllocator lanes;
  EXPECT_EQ(lanes.place(0, 10), 0);
  EXPECT_EQ(lanes.place(10, 20), 0) << "touching is not overlapping";
  EXPECT_EQ(lanes.place(30, 40), 0);
  EXPECT_EQ(lanes.laneCount(), 1u);
}

TEST(LaneAllocatorTest, AnOverlapGoesOnTheNextFreeLane) {
  LaneAllocator lanes;
  EXPECT_EQ(lanes.place(0, 100), 0);
  EXPECT_EQ(lanes.place(50, 150), 1);
  EXPECT_EQ(lanes.place(60, 70), 2);
  EXPECT_EQ(lanes.place(120, 130), 0);
}

TEST(LaneAllocatorTest, IntervalsArrivingOutOfOrderNeverOverlapOnALane) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int64_t> start(0, 1'000'000), length(1, 5'000);
  LaneAllocator lanes;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> placed;
  for (int i = 0; i < 20000; ++i) {
    int64_t s = start(random);
    int64_t e = s + length(random);
    uint16_t lane = lanes.place(s, e);
    if (placed.size() <= lane) placed.resize(lane + 1);
    placed[lane].push_back({s, e});
  }
  for (auto& lane : placed) {
    std::sort(lane.begin(), lane.end());
    for (std::size_t i = 1; i < lane.size(); ++i) {
      ASSERT_LE(lane[i - 1].second, lane[i].first) << "overlap on a lane";
    }
  }
}

// A lane forgets all but its last kKeep intervals, and what may not start before the
// forgotten: after a point, not at the point's time either.
TEST(LaneAllocatorTest, APointALaneForgotStillKeepsAnotherAtItsTimeOffThatLane) {
  LaneAllocator lanes;
  EXPECT_EQ(lanes.place(0, 0), 0);
  for (int64_t i = 1; i <= static_cast<int64_t>(LaneAllocator::kKeep); ++i) {
    ASSERT_EQ(lanes.place(i * 10, i * 10 + 5), 0);
  }
  EXPECT_EQ(lanes.place(0, 0), 1);
  EXPECT_EQ(lanes.place(1, 1), 0);
}

// Points at the end of time clash with each other.
TEST(LaneAllocatorTest, PointsAtTheEndOfTimeTakeALaneEach) {
  LaneAllocator lanes;
  EXPECT_EQ(lanes.place(INT64_MAX, INT64_MAX), 0);
  EXPECT_EQ(lanes.place(INT64_MAX, INT64_MAX), 1);
  EXPECT_EQ(lanes.place(0, INT64_MAX - 1), 0);
}

}  // namespace
}  // namespace kinetrace::detail
