// SliceLanes against the order Perfetto's trace processor reads slices in: by time, equal
// times in file order, each SLICE_END closing the innermost open slice of its track.

#include "output/perfetto_lanes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <tuple>
#include <vector>

#include "output/slice_lanes_reference.h"

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

// The header's rules: a slice written after `earlier` on its lane nests with it.
bool nestsAfter(const Slice& earlier, const Slice& later) {
  const bool apart = earlier.end <= later.start || later.end < earlier.start;
  const bool inside = earlier.start <= later.start && later.end <= earlier.end;
  const bool holds = (later.start < earlier.start && earlier.end <= later.end) ||
                     (later.start == earlier.start && later.end == earlier.end);
  const bool emptyAtAnEdge =
      earlier.start == earlier.end && (earlier.start == later.start || earlier.start == later.end);
  return apart || inside || holds || emptyAtAnEdge;
}

// Checks that every lane replays to its slices' own durations, and that each slice nests
// with every one written before it on its lane.
void checkLanes(const std::vector<Slice>& slices, const std::vector<std::size_t>& placed) {
  std::vector<std::vector<Slice>> lanes;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    if (placed[i] >= lanes.size()) lanes.resize(placed[i] + 1);
    lanes[placed[i]].push_back(slices[i]);
  }
  for (std::size_t lane = 0; lane < lanes.size(); ++lane) {
    const std::vector<Slice>& onLane = lanes[lane];
    const std::vector<int64_t> durations = replay(onLane);
    for (std::size_t i = 0; i < onLane.size(); ++i) {
      EXPECT_EQ(durations[i], onLane[i].end - onLane[i].start)
          << "lane " << lane << " slice [" << onLane[i].start << ", " << onLane[i].end << "]";
      for (std::size_t j = 0; j < i; ++j) {
        ASSERT_TRUE(nestsAfter(onLane[j], onLane[i]))
            << "lane " << lane << ": [" << onLane[i].start << ", " << onLane[i].end
            << "] written after [" << onLane[j].start << ", " << onLane[j].end << "]";
      }
    }
  }
}

// Places the slices and checks every lane.
std::vector<std::size_t> placeAndCheck(const std::vector<Slice>& slices) {
  SliceLanes lanes;
  std::vector<std::size_t> placed;
  for (const Slice& s : slices) placed.push_back(lanes.place(s.start, s.end));
  checkLanes(slices, placed);
  return placed;
}

// Each slice on the first lane where it nests with everything written there before: what
// trying every lane in turn gives.
std::vector<std::size_t> firstLanesWhereTheyNest(const std::vector<Slice>& slices) {
  std::vector<std::vector<Slice>> lanes;
  std::vector<std::size_t> placed;
  for (const Slice& s : slices) {
    std::size_t lane = 0;
    while (lane < lanes.size() &&
           !std::all_of(lanes[lane].begin(), lanes[lane].end(),
                        [&s](const Slice& earlier) { return nestsAfter(earlier, s); })) {
      ++lane;
    }
    if (lane == lanes.size()) lanes.emplace_back();
    lanes[lane].push_back(s);
    placed.push_back(lane);
  }
  return placed;
}

// laneAt by its contract, over every slice placed: the lane of the slice holding the time
// (from its start until before its end, or starting at it) with the latest start, then the
// shortest, then on the lowest lane.
std::size_t innermostLane(const std::vector<Slice>& slices, const std::vector<std::size_t>& placed,
                          int64_t time) {
  const Slice* best = nullptr;
  std::size_t lane = 0;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    if (!(s.start <= time && (time < s.end || s.start == time))) continue;
    if (best == nullptr || std::make_tuple(s.start, best->end - best->start, lane) >
                               std::make_tuple(best->start, s.end - s.start, placed[i])) {
      best = &s;
      lane = placed[i];
    }
  }
  return lane;
}

// Slices of a few shapes on a small span of time, so that equal starts and ends are common:
// random ones, some empty; bursts of kernels crossing one another; ranges nested in each
// other, written outermost first or innermost first.
std::vector<Slice> mixedSlices(std::mt19937_64& random, int count, int64_t span, int64_t maxLength,
                               int burst) {
  std::vector<Slice> slices;
  auto uniform = [&random](int64_t from, int64_t to) {
    return std::uniform_int_distribution<int64_t>(from, to)(random);
  };
  while (static_cast<int>(slices.size()) < count) {
    const int64_t start = uniform(0, span);
    switch (uniform(0, 3)) {
      case 0:
      case 1: {
        const int64_t length = uniform(0, 4) == 0 ? 0 : uniform(1, maxLength);
        slices.push_back({start, start + length});
        break;
      }
      case 2: {
        const int64_t length = uniform(burst, burst + maxLength);
        for (int i = 0; i < burst; ++i) slices.push_back({start + i, start + i + length});
        break;
      }
      default: {
        std::vector<Slice> nested;
        int64_t from = start, to = start + uniform(1, maxLength);
        for (int i = 0; i < burst && from <= to; ++i) {
          nested.push_back({from, to});
          from += uniform(0, 2);
          to -= uniform(0, 2);
        }
        if (uniform(0, 1) == 0) std::reverse(nested.begin(), nested.end());
        slices.insert(slices.end(), nested.begin(), nested.end());
        break;
      }
    }
  }
  return slices;
}

// The shapes that made a try on a lane slow, and those that test its ties.
enum class Shape {
  kNestedOutermostFirst,  // ranges inside ranges, each written before those inside it
  kNestedInnermostFirst,  // the same, each written after those inside it
  kBackwards,             // slices apart or overlapping a little, from the last to the first
  kShuffled,              // mixedSlices in a random order
  kCrossing,              // each crossing every other
  kEmpty,                 // empty slices at a few times, and a few slices around them
  kEqualTimes,            // short slices on a few times: many starts and ends equal
};
constexpr Shape kShapes[] = {Shape::kNestedOutermostFirst,
                             Shape::kNestedInnermostFirst,
                             Shape::kBackwards,
                             Shape::kShuffled,
                             Shape::kCrossing,
                             Shape::kEmpty,
                             Shape::kEqualTimes};

// Ranges inside ranges, outermost first: one to three inside each, some sharing a start or
// an end with the range that holds them or with the one beside them, many deep.
std::vector<Slice> nestedRanges(std::mt19937_64& random, int count) {
  auto uniform = [&random](int64_t from, int64_t to) {
    return std::uniform_int_distribution<int64_t>(from, to)(random);
  };
  std::vector<Slice> slices;
  std::vector<Slice> todo{{0, 4 * static_cast<int64_t>(count)}};
  while (!todo.empty() && static_cast<int>(slices.size()) < count) {
    const Slice s = todo.back();
    todo.pop_back();
    slices.push_back(s);
    const int64_t inside = s.end - s.start < 2 ? 0 : std::max<int64_t>(1, uniform(-1, 3));
    int64_t at = s.start + uniform(0, 1);
    std::vector<Slice> children;
    for (int64_t i = 0; i < inside && at <= s.end; ++i) {
      // Mostly nearly as long as the room left, so that ranges nest deep.
      const int64_t room = (s.end - at) / (inside - i);
      const int64_t length =
          uniform(0, 3) == 0 ? uniform(0, room) : std::max<int64_t>(0, room - uniform(0, 1));
      children.push_back({at, at + length});
      at += length + uniform(0, 1);
    }
    // Popped first to last: written in time order, as a thread's ranges are.
    todo.insert(todo.end(), children.rbegin(), children.rend());
  }
  return slices;
}

std::vector<Slice> shapedSlices(std::mt19937_64& random, Shape shape, int count) {
  auto uniform = [&random](int64_t from, int64_t to) {
    return std::uniform_int_distribution<int64_t>(from, to)(random);
  };
  std::vector<Slice> slices;
  switch (shape) {
    case Shape::kNestedOutermostFirst:
      return nestedRanges(random, count);
    case Shape::kNestedInnermostFirst:
      slices = nestedRanges(random, count);
      std::reverse(slices.begin(), slices.end());
      return slices;
    case Shape::kBackwards: {
      int64_t end = 3 * static_cast<int64_t>(count);
      for (int i = 0; i < count; ++i) {
        const int64_t start = end - uniform(0, 3);
        slices.push_back({start, end});
        end = start + (uniform(0, 7) == 0 ? uniform(1, 3) : -uniform(0, 2));
      }
      return slices;
    }
    case Shape::kShuffled:
      slices = mixedSlices(random, count, count, 25, 4);
      std::shuffle(slices.begin(), slices.end(), random);
      return slices;
    case Shape::kCrossing:
      for (int64_t i = 0; i < count; ++i) {
        slices.push_back({i + uniform(0, 2), i + count + uniform(0, 2)});
      }
      return slices;
    case Shape::kEmpty:
      for (int i = 0; i < count; ++i) {
        const int64_t at = uniform(0, 3);
        slices.push_back(uniform(0, 9) == 0 ? Slice{at, at + uniform(0, 3)} : Slice{at, at});
      }
      return slices;
    case Shape::kEqualTimes:
      for (int i = 0; i < count; ++i) {
        const int64_t start = uniform(0, 8);
        slices.push_back({start, start + uniform(0, 4)});
      }
      return slices;
  }
  return slices;
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

// Kernels on one stream that all cross one another need a lane each; placing them must not
// try every lane for each (quadratic): this many would take minutes under the sanitizers.
TEST(SliceLanesTest, MutuallyCrossingSlicesGetALaneEachAndEveryLaneNests) {
  constexpr int64_t kCount = 3'000;
  std::vector<Slice> slices;
  for (int64_t i = 0; i < kCount; ++i) slices.push_back({i, i + kCount});
  SliceLanes lanes;
  std::vector<std::size_t> placed;
  for (const Slice& s : slices) placed.push_back(lanes.place(s.start, s.end));
  checkLanes(slices, placed);
  EXPECT_EQ(lanes.laneCount(), static_cast<std::size_t>(kCount));
  for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(placed[i], static_cast<std::size_t>(i));
  // A point belongs to the slice that started last before it.
  EXPECT_EQ(lanes.laneAt(0), 0u);
  EXPECT_EQ(lanes.laneAt(20), 20u);
  EXPECT_EQ(lanes.laneAt(kCount - 1), static_cast<std::size_t>(kCount - 1));
  EXPECT_EQ(lanes.laneAt(kCount + 20), static_cast<std::size_t>(kCount - 1));
  EXPECT_EQ(lanes.laneAt(2 * kCount - 2), static_cast<std::size_t>(kCount - 1));
  EXPECT_EQ(lanes.laneAt(2 * kCount - 1), 0u);  // all have ended
}

// Past the lanes tried in turn, a lane whose slices have all ended takes the next slice: a
// stream of kernels 40 at a time needs 40 lanes, however long.
TEST(SliceLanesTest, FurtherLanesAreReusedOnceTheirSlicesHaveEnded) {
  constexpr int64_t kOverlapping = 40;
  SliceLanes lanes;
  for (int64_t i = 0; i < 2'000; ++i) {
    ASSERT_EQ(lanes.place(i, i + kOverlapping), static_cast<std::size_t>(i % kOverlapping));
  }
  EXPECT_EQ(lanes.laneCount(), static_cast<std::size_t>(kOverlapping));
  // Written from the last to the first, the slices of a further lane start after the new one.
  SliceLanes backwards;
  for (int64_t i = 2'000; i > 0; --i) backwards.place(i, i + kOverlapping);
  EXPECT_EQ(backwards.laneCount(), static_cast<std::size_t>(kOverlapping + 1));
}

// Where trying every lane in turn stays within the lanes tried, slices go where it puts
// them, and points where laneAt's contract says.
TEST(SliceLanesTest, RandomSlicesOnFewLanesGoOnTheFirstLaneWhereTheyNest) {
  std::mt19937_64 random(20261206);
  int compared = 0;
  for (int round = 0; round < 300; ++round) {
    const std::vector<Slice> slices = mixedSlices(random, 60, 80, 25, 4);
    const std::vector<std::size_t> expected = firstLanesWhereTheyNest(slices);
    if (*std::max_element(expected.begin(), expected.end()) >= SliceLanes::kTriedLanes) continue;
    ++compared;
    SliceLanes lanes;
    std::vector<std::size_t> placed;
    for (const Slice& s : slices) placed.push_back(lanes.place(s.start, s.end));
    ASSERT_EQ(placed, expected) << "round " << round;
    checkLanes(slices, placed);
    for (int64_t t = -1; t <= 120; ++t) {
      ASSERT_EQ(lanes.laneAt(t), innermostLane(slices, placed, t)) << "round " << round;
    }
  }
  EXPECT_GT(compared, 250);
}

TEST(SliceLanesTest, RandomNestedRangesWrittenInAnyOrderStayOnTheTrack) {
  // Ranges inside ranges, apart from their siblings, in a random order.
  std::mt19937_64 random(7);
  std::vector<Slice> slices;
  std::vector<Slice> todo{{0, 1'000'000}};
  while (!todo.empty() && slices.size() < 3'000) {
    const Slice s = todo.back();
    todo.pop_back();
    slices.push_back(s);
    int64_t at = s.start + 1;
    while (s.end - at > 20) {
      const int64_t length = std::uniform_int_distribution<int64_t>(0, (s.end - at) / 2)(random);
      todo.push_back({at, at + length});
      at += length + 1 + std::uniform_int_distribution<int64_t>(0, 3)(random);
    }
  }
  std::shuffle(slices.begin(), slices.end(), random);
  EXPECT_EQ(placeAndCheck(slices), std::vector<std::size_t>(slices.size(), 0));
}

// Many slices crossing many others: past the lanes tried in turn every lane still nests,
// and a point still finds its innermost slice.
TEST(SliceLanesTest, RandomSlicesPastTheTriedLanesStillNest) {
  std::mt19937_64 random(1206);
  for (int round = 0; round < 20; ++round) {
    const std::vector<Slice> slices = mixedSlices(random, 600, 300, 150, 30);
    SliceLanes lanes;
    std::vector<std::size_t> placed;
    for (const Slice& s : slices) placed.push_back(lanes.place(s.start, s.end));
    EXPECT_GT(lanes.laneCount(), SliceLanes::kTriedLanes);
    checkLanes(slices, placed);
    for (int64_t t = -1; t <= 500; ++t) {
      ASSERT_EQ(lanes.laneAt(t), innermostLane(slices, placed, t)) << "round " << round;
    }
  }
}

// Forgetting keeps the lanes nesting and the points finding their lanes among what is
// remembered: the further lanes know what their forgotten slices spanned.
TEST(SliceLanesTest, PastTheBudgetFurtherLanesStillNest) {
  std::mt19937_64 random(99);
  std::vector<Slice> slices = mixedSlices(random, 5'000, 20'000, 100, 30);
  // Mostly in time order, as a trace is: what was forgotten ended long before the last
  // slices, whose points are checked below against every slice placed.
  std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    return std::tie(a.start, a.end) < std::tie(b.start, b.end);
  });
  SliceLanes lanes(/*budget=*/256);
  std::vector<std::size_t> placed;
  for (const Slice& s : slices) {
    placed.push_back(lanes.place(s.start, s.end));
    ASSERT_LE(lanes.remembered(), 256u);
  }
  EXPECT_GT(lanes.laneCount(), SliceLanes::kTriedLanes);
  checkLanes(slices, placed);
  int onFurtherLanes = 0;
  for (std::size_t i = slices.size() - 100; i < slices.size(); ++i) {
    const std::size_t expected = innermostLane(slices, placed, slices[i].start);
    EXPECT_EQ(lanes.laneAt(slices[i].start), expected) << "at " << slices[i].start;
    if (expected >= SliceLanes::kTriedLanes) ++onFurtherLanes;
  }
  EXPECT_GT(onFurtherLanes, 0);
}

// Ranges nested deeper than a thread's stack could recurse, each written after those inside
// it (as kinetrace writes ranges): placed, forgotten past the budget and freed without
// recursing down the nesting.
TEST(SliceLanesTest, RangesNestedHalfAMillionDeepArePlacedForgottenAndFreed) {
  SliceLanes lanes;
  std::vector<std::size_t> used;
  for (int64_t i = 1; i <= 500'000; ++i) {
    const std::size_t lane = lanes.place(-i, i);
    if (used.empty() || used.back() != lane) used.push_back(lane);
    ASSERT_LE(lanes.remembered(), SliceLanes::kDefaultBudget);
  }
  // Each lane takes ranges until the budget forgets the inner half of what it holds: one
  // written later starts before what the lane forgot.
  EXPECT_EQ(used, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(lanes.laneAt(-499'999), 2u);
  EXPECT_EQ(lanes.laneAt(500'000), 0u);  // all have ended
}

// Empty slices at one time all nest, side by side: a quarter of a million of them (counters
// written as slices, say) do not nest a quarter of a million deep.
TEST(SliceLanesTest, ManyEmptySlicesAtOneTimeStayOnTheTrack) {
  SliceLanes lanes;
  for (int i = 0; i < 250'000; ++i) ASSERT_EQ(lanes.place(5, 5), 0u);
  EXPECT_EQ(lanes.place(0, 10), 0u);  // holds them all
  EXPECT_EQ(lanes.place(5, 5), 0u);
  EXPECT_EQ(lanes.place(5, 7), 0u);
  EXPECT_EQ(lanes.place(4, 6), 1u);  // crosses [5, 7]
  EXPECT_EQ(lanes.laneAt(5), 0u);
  EXPECT_EQ(lanes.laneCount(), 2u);
  // Against trace processor's replay, on a smaller number.
  std::vector<Slice> slices(300, Slice{5, 5});
  slices.push_back({0, 10});
  slices.push_back({5, 5});
  slices.push_back({5, 7});
  slices.push_back({4, 6});
  std::vector<std::size_t> expected(303, 0);
  expected.push_back(1);
  EXPECT_EQ(placeAndCheck(slices), expected);
}

// The search trees against the nesting trees they replace (slice_lanes_reference.h), on
// slices of every shape, a few hundred at a time: each slice on the same lane, each point on
// the same lane, with and without forgetting. Compared up to where the nesting trees
// forgot less than a quarter of what they remembered, which SliceLanes no longer does.
TEST(SliceLanesTest, PlacesEverySliceWhereTheNestingTreesDid) {
  std::mt19937_64 random(20261207);
  int whole = 0;
  for (int round = 0; round < 3'000; ++round) {
    const Shape shape = kShapes[round % std::size(kShapes)];
    const int count = std::uniform_int_distribution<int>(1, 300)(random);
    const std::size_t budget = round % 3 == 0
                                   ? SliceLanes::kDefaultBudget
                                   : std::uniform_int_distribution<std::size_t>(1, 64)(random);
    const std::vector<Slice> slices = shapedSlices(random, shape, count);
    SliceLanes lanes(budget);
    reference::SliceLanes expected(budget);
    std::vector<std::size_t> placed;
    int64_t first = INT64_MAX, last = INT64_MIN;
    bool parted = false;
    for (std::size_t i = 0; i < slices.size(); ++i) {
      const Slice& s = slices[i];
      placed.push_back(lanes.place(s.start, s.end));
      const std::size_t lane = expected.place(s.start, s.end);
      if (expected.scantForgettings() > 0) {
        parted = true;
        break;
      }
      ASSERT_EQ(placed.back(), lane) << "round " << round << " slice " << i;
      ASSERT_EQ(lanes.remembered(), expected.remembered()) << "round " << round << " slice " << i;
      first = std::min(first, s.start);
      last = std::max(last, s.end);
      // Where a launch arrow to the slice would go, and somewhere else.
      const int64_t elsewhere = std::uniform_int_distribution<int64_t>(first - 1, last + 1)(random);
      for (const int64_t t : {s.start, s.end, elsewhere}) {
        ASSERT_EQ(lanes.laneAt(t), expected.laneAt(t)) << "round " << round << " at " << t;
      }
    }
    if (parted) continue;
    ++whole;
    checkLanes(slices, placed);
    for (int64_t t = first - 1; t <= last + 1; ++t) {
      ASSERT_EQ(lanes.laneAt(t), expected.laneAt(t)) << "round " << round << " at " << t;
    }
  }
  // Those that part are the empty slices and the equal times, forgetting: compared up to
  // there, and most of them whole too.
  EXPECT_GT(whole, 2'500);
}

// Every shape, ten thousand slices, within the budget and forgetting past a small one:
// every lane nests, by the header's rules and as trace processor reads it.
TEST(SliceLanesTest, ManySlicesOfEveryShapeNestOnEveryLane) {
  std::mt19937_64 random(1207);
  for (const Shape shape : kShapes) {
    for (const std::size_t budget : {SliceLanes::kDefaultBudget, std::size_t{1'000}}) {
      const std::vector<Slice> slices = shapedSlices(random, shape, 10'000);
      SliceLanes lanes(budget);
      std::vector<std::size_t> placed;
      for (const Slice& s : slices) placed.push_back(lanes.place(s.start, s.end));
      SCOPED_TRACE(testing::Message()
                   << "shape " << static_cast<int>(shape) << ", budget " << budget);
      checkLanes(slices, placed);
    }
  }
}

// Forgetting frees at least a quarter of what is remembered, even when most of it ends at
// one time: forgetting only what ends before it, a slice or two, each slice placed after
// would forget again, going through all that is remembered each time.
TEST(SliceLanesTest, ForgettingFreesAQuarterEvenWhenMostSlicesEndTogether) {
  constexpr std::size_t kBudget = 64;
  constexpr int64_t kEnd = 1'000'000;
  std::vector<Slice> slices{{0, 1}};
  // Ranges that all end together, each holding the last (written innermost first).
  for (int64_t i = 0; i < static_cast<int64_t>(kBudget) - 2; ++i) {
    slices.push_back({1'000 - i, kEnd});
  }
  for (int64_t i = 0; i < 1'000; ++i) slices.push_back({10 + 2 * i, 11 + 2 * i});
  SliceLanes lanes(kBudget);
  std::vector<std::size_t> placed;
  int forgettings = 0;
  for (const Slice& s : slices) {
    const std::size_t before = lanes.remembered();
    placed.push_back(lanes.place(s.start, s.end));
    if (lanes.remembered() <= before) {
      ++forgettings;
      EXPECT_LE(lanes.remembered(), kBudget * 3 / 4);
    }
  }
  EXPECT_LE(forgettings, static_cast<int>(slices.size() / (kBudget / 4)));
  checkLanes(slices, placed);
}

// Slices that end at the last nanosecond are forgotten like any others (no horizon after
// them overflows), and a lane that forgot them takes only what starts there.
TEST(SliceLanesTest, SlicesEndingAtTheLastNanosecondAreForgottenAndLanesStillNest) {
  std::vector<Slice> slices;
  for (int64_t i = 0; i < 40; ++i) slices.push_back({i, INT64_MAX});
  SliceLanes lanes(/*budget=*/8);
  std::vector<std::size_t> placed;
  for (const Slice& s : slices) {
    placed.push_back(lanes.place(s.start, s.end));
    ASSERT_LE(lanes.remembered(), 8u);
  }
  slices.push_back({INT64_MAX, INT64_MAX});
  placed.push_back(lanes.place(INT64_MAX, INT64_MAX));
  EXPECT_EQ(placed.back(), 0u);
  checkLanes(slices, placed);
}

}  // namespace
}  // namespace kinetrace::detail
