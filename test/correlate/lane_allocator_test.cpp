#include "correlate/lane_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
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

// Whether two intervals may not share a lane: they overlap, or start at one time (a point
// at another's start), as LaneAllocator keeps them apart.
bool clash(std::pair<int64_t, int64_t> a, std::pair<int64_t, int64_t> b) {
  return a.first == b.first || (a.first < b.second && b.first < a.second);
}

void expectNoClashOnALane(const std::vector<std::pair<int64_t, int64_t>>& intervals,
                          const std::vector<uint16_t>& placed) {
  std::map<uint16_t, std::vector<std::pair<int64_t, int64_t>>> lanes;
  for (std::size_t i = 0; i < intervals.size(); ++i) lanes[placed[i]].push_back(intervals[i]);
  for (const auto& [lane, onLane] : lanes) {
    for (std::size_t i = 0; i < onLane.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        ASSERT_FALSE(clash(onLane[i], onLane[j]))
            << "lane " << lane << ": [" << onLane[i].first << ", " << onLane[i].second << "] and ["
            << onLane[j].first << ", " << onLane[j].second << "]";
      }
    }
  }
}

// Operations of one stream that all overlap one another need a lane each; placing them must
// not try every lane for each (quadratic: minutes for this many under the sanitizers).
TEST(LaneAllocatorTest, MutuallyOverlappingIntervalsGetALaneEach) {
  constexpr int64_t kCount = 20'000;
  LaneAllocator lanes;
  std::vector<std::pair<int64_t, int64_t>> intervals;
  std::vector<uint16_t> placed;
  for (int64_t i = 0; i < kCount; ++i) {
    intervals.push_back({i, i + kCount});
    placed.push_back(lanes.place(i, i + kCount));
    ASSERT_EQ(placed.back(), i);
  }
  EXPECT_EQ(lanes.laneCount(), static_cast<std::size_t>(kCount));
  // Each lane holds one interval: the check is linear here.
  expectNoClashOnALane(intervals, placed);
  // The further lanes' spans are held, and counted.
  EXPECT_GT(lanes.heldBytes(), static_cast<std::size_t>(kCount) * 32);
}

// Past the lanes tried in turn, a lane is taken again once all it holds has ended (or, for
// intervals written backwards, when all it holds starts later).
TEST(LaneAllocatorTest, FurtherLanesAreReusedOnceApart) {
  constexpr int64_t kOverlapping = 40;
  LaneAllocator forwards;
  for (int64_t i = 0; i < 2'000; ++i) {
    ASSERT_EQ(forwards.place(i, i + kOverlapping), i % kOverlapping);
  }
  EXPECT_EQ(forwards.laneCount(), static_cast<std::size_t>(kOverlapping));
  // The lanes tried in turn keep what is after the last kKeep they were given: written
  // backwards, they soon take nothing more, and the further lanes take it all.
  LaneAllocator backwards;
  for (int64_t i = 2'000; i > 0; --i) backwards.place(i, i + kOverlapping);
  EXPECT_LE(backwards.laneCount(), LaneAllocator::kTriedLanes + kOverlapping);
}

// Points at one time clash, also on the further lanes, and a point at an interval's end
// does not.
TEST(LaneAllocatorTest, PointsOnFurtherLanesKeepApartFromWhatStartsWithThem) {
  LaneAllocator lanes;
  for (int64_t i = 0; i < static_cast<int64_t>(LaneAllocator::kTriedLanes); ++i) {
    lanes.place(0, 1'000);  // fill the lanes tried in turn
  }
  const uint16_t first = lanes.place(100, 100);
  EXPECT_EQ(first, LaneAllocator::kTriedLanes);
  EXPECT_NE(lanes.place(100, 100), first);
  EXPECT_NE(lanes.place(100, 200), first);
  EXPECT_EQ(lanes.place(101, 200), first);
  EXPECT_EQ(lanes.place(200, 200), first);  // at the end of [101, 200]
  EXPECT_EQ(lanes.place(50, 99), first);    // ends before the point at 100
  // The extremes of time.
  const uint16_t last = lanes.place(INT64_MAX, INT64_MAX);
  EXPECT_NE(lanes.place(INT64_MAX, INT64_MAX), last);
}

// While the lanes tried in turn suffice and none has forgotten anything, each interval goes
// on the first lane where it clashes with nothing; past that, lanes still never clash.
TEST(LaneAllocatorTest, RandomIntervalsGoOnTheFirstLaneFreeOrNeverClash) {
  std::mt19937_64 random(1206);
  int compared = 0;
  for (int round = 0; round < 200; ++round) {
    const int64_t span = round < 100 ? 300 : 40;  // dense: many lanes, equal times common
    std::uniform_int_distribution<int64_t> start(0, span), length(0, 30);
    LaneAllocator lanes;
    std::vector<std::vector<std::pair<int64_t, int64_t>>> firstFree;
    std::vector<std::pair<int64_t, int64_t>> intervals;
    std::vector<uint16_t> placed;
    bool same = true;
    for (int i = 0; i < 200; ++i) {
      const int64_t s = start(random);
      const int64_t e = s + (random() % 4 == 0 ? 0 : length(random));
      intervals.push_back({s, e});
      placed.push_back(lanes.place(s, e));
      std::size_t lane = 0;
      while (lane < firstFree.size() &&
             std::any_of(firstFree[lane].begin(), firstFree[lane].end(), [&](const auto& other) {
               return clash(other, {s, e});
             })) {
        ++lane;
      }
      if (lane == firstFree.size()) firstFree.emplace_back();
      firstFree[lane].push_back({s, e});
      same = same && lane < LaneAllocator::kTriedLanes;
      if (same) {
        ASSERT_EQ(placed.back(), lane) << "round " << round << ", interval " << i;
        ++compared;
      }
      same = same && firstFree[lane].size() <= LaneAllocator::kKeep;
    }
    expectNoClashOnALane(intervals, placed);
  }
  EXPECT_GT(compared, 5'000);
}

}  // namespace
}  // namespace kinetrace::detail
