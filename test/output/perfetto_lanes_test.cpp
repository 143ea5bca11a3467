// SliceLanes against the order Perfetto's trace processor reads slices in: by time, equal
// times in file order, each SLICE_END closing the innermost open slice of its track.

#include "output/perfetto_lanes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

namespace kinetrace::detail {
namespace {

struct Slice {
  int64_t start, end;
};

// Replays trace_processor on one lane's slices, written in this order (BEGIN, END of each
// one after the other): the duration each gets.
std::vector<int64_t> replay(const std::vector<Slice>& slices) {
  struct Packet {
    int64_t ts;
    std::size_t order;
    bool begin;
    std::size_t slice;
  };
  std::vector<Packet> packets;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    packets.push_back({slices[i].start, packets.size(), true, i});
    packets.push_back({slices[i].end, packets.size(), false, i});
  }
  std::sort(packets.begin(), packets.end(), [](const Packet& a, const Packet& b) {
    return std::tie(a.ts, a.order) < std::tie(b.ts, b.order);
  });
  std::vector<int64_t> durations(slices.size(), -1);
  std::vector<std::size_t> open;
  for (const Packet& p : packets) {
    if (p.begin) {
      open.push_back(p.slice);
    } else if (!open.empty()) {
      durations[open.back()] = p.ts - slices[open.back()].start;
      open.pop_back();
    }
  }
  return durations;
}

// Places the slices and checks that every lane replays to the slices' own durations.
std::vector<std::size_t> placeAndCheck(const std::vector<Slice>& slices) {
  SliceLanes lanes;
  std::vector<std::size_t> placed;
  for (const Slice& s : slices) placed.push_back(lanes.place(s.start, s.end));
  for (std::size_t lane = 0; lane < lanes.laneCount(); ++lane) {
    std::vector<Slice> onLane;
    for (std::size_t i = 0; i < slices.size(); ++i) {
      if (placed[i] == lane) onLane.push_back(slices[i]);
    }
    const std::vector<int64_t> durations = replay(onLane);
    for (std::size_t i = 0; i < onLane.size(); ++i) {
      EXPECT_EQ(durations[i], onLane[i].end - onLane[i].start)
          << "lane " << lane << " slice [" << onLane[i].start << ", " << onLane[i].end << "]";
    }
  }
  return placed;
}

TEST(SliceLanesTest, NestedSlicesInAnyOrderStayOnTheTrack) {
  // A range written after the ranges inside it (kinetrace), and in start order (torch).
  EXPECT_EQ(placeAndCheck({{10, 20}, {30, 40}, {0, 100}, {5, 50}}),
            (std::vector<std::size_t>{0, 0, 0, 0}));
  EXPECT_EQ(placeAndCheck({{0, 100}, {5, 50}, {10, 20}, {30, 40}, {60, 100}}),
            (std::vector<std::size_t>{0, 0, 0, 0, 0}));
}

TEST(SliceLanesTest, OverlappingKernelsGoOnTheNextFreeLane) {
  EXPECT_EQ(placeAndCheck({{0, 20}, {16, 32}, {18, 40}, {25, 30}, {41, 50}}),
            (std::vector<std::size_t>{0, 1, 2, 0, 0}));
}

TEST(SliceLanesTest, EqualTimesFollowTheFileOrder) {
  // Same start: the one written first opens first, so a longer one written later does not
  // nest in it; the same span does.
  EXPECT_EQ(placeAndCheck({{0, 10}, {0, 20}}), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(placeAndCheck({{0, 20}, {0, 10}}), (std::vector<std::size_t>{0, 0}));
  EXPECT_EQ(placeAndCheck({{0, 10}, {0, 10}}), (std::vector<std::size_t>{0, 0}));
  // One that ends where an earlier-written one starts would close it.
  EXPECT_EQ(placeAndCheck({{10, 20}, {0, 10}}), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(placeAndCheck({{0, 10}, {10, 20}}), (std::vector<std::size_t>{0, 0}));
  // Empty slices at an edge open and close in place.
  EXPECT_EQ(placeAndCheck({{10, 10}, {0, 10}, {0, 0}, {10, 20}}),
            (std::vector<std::size_t>{0, 0, 0, 0}));
}

// A slice inside another may not end where a slice written earlier starts, beside the one
// holding it: that one's BEGIN, first in the file, would be closed by the new one's END.
TEST(SliceLanesTest, ASliceEndingWhereAnEarlierOneStartsGoesElsewhereEvenInsideAnother) {
  EXPECT_EQ(placeAndCheck({{0, 10}, {10, 20}, {5, 10}}), (std::vector<std::size_t>{0, 0, 1}));
  EXPECT_EQ(placeAndCheck({{0, 10}, {2, 10}, {10, 20}, {5, 10}}),
            (std::vector<std::size_t>{0, 0, 0, 1}));
  // An empty slice there nests: it opens and closes after the later one's BEGIN.
  EXPECT_EQ(placeAndCheck({{0, 10}, {10, 20}, {10, 10}}), (std::vector<std::size_t>{0, 0, 0}));
}

TEST(SliceLanesTest, ManyRandomSlicesReplayToTheirDurations) {
  std::vector<Slice> slices;
  uint64_t x = 12345;
  for (int i = 0; i < 2000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const auto start = static_cast<int64_t>((x >> 33) % 5000);
    const auto length = static_cast<int64_t>((x >> 13) % 7 == 0 ? 0 : (x >> 17) % 300);
    slices.push_back({start, start + length});
  }
  placeAndCheck(slices);
}

TEST(SliceLanesTest, PastTheBudgetLanesStillNest) {
  SliceLanes lanes(/*budget=*/8);
  std::vector<std::size_t> placed;
  for (int64_t i = 0; i < 40; ++i) placed.push_back(lanes.place(i * 10, i * 10 + 5));
  EXPECT_EQ(placed, std::vector<std::size_t>(40, 0));
  EXPECT_EQ(lanes.place(0, 1000), 1u);   // holds what lane 0 forgot: it cannot tell
  EXPECT_EQ(lanes.place(395, 396), 0u);  // after lane 0's horizon
  EXPECT_EQ(lanes.place(392, 393), 0u);  // inside the last slice, still remembered

  // A stream's kernels in time order, far past the budget: one lane, each placed once.
  SliceLanes stream(/*budget=*/64);
  std::size_t lanesUsed = 0;
  for (int64_t i = 0; i < 100'000; ++i) lanesUsed = std::max(lanesUsed, stream.place(i, i + 1));
  EXPECT_EQ(lanesUsed, 0u);
  EXPECT_EQ(stream.laneCount(), 1u);
}

// A writer with many tracks bounds their lanes together: told to forget, a track keeps the
// later half of what it remembers, and what it places afterwards still nests.
TEST(SliceLanesTest, ForgettingOnRequestKeepsTheLaterHalfAndLanesStillNest) {
  SliceLanes lanes;
  for (int64_t i = 0; i < 100; ++i) lanes.place(i * 10, i * 10 + 5);
  EXPECT_EQ(lanes.remembered(), 100u);
  lanes.forgetOlderHalf();
  EXPECT_EQ(lanes.remembered(), 50u);
  EXPECT_EQ(lanes.place(992, 993), 0u);  // inside the last slice, still remembered
  EXPECT_EQ(lanes.place(0, 2000), 1u);   // holds what lane 0 forgot: another lane
  EXPECT_EQ(lanes.place(1000, 1005), 0u);
}

TEST(SliceLanesTest, APointBelongsToTheLaneOfItsInnermostSlice) {
  SliceLanes lanes;
  lanes.place(0, 100);   // lane 0
  lanes.place(50, 150);  // lane 1
  lanes.place(60, 70);   // lane 0, inside the first
  EXPECT_EQ(lanes.laneAt(10), 0u);
  EXPECT_EQ(lanes.laneAt(55), 1u);
  EXPECT_EQ(lanes.laneAt(60), 0u);
  EXPECT_EQ(lanes.laneAt(120), 1u);
  EXPECT_EQ(lanes.laneAt(100), 1u);  // the first has ended there
  EXPECT_EQ(lanes.laneAt(500), 0u);
}

}  // namespace
}  // namespace kinetrace::detail
