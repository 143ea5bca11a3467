#include "model/lane_spans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace kinetrace::detail {
namespace {

TEST(LaneSpansTest, NoLaneIsApartFromAnythingUntilOneIsAdded) {
  LaneSpans spans;
  EXPECT_EQ(spans.firstApart(INT64_MAX, INT64_MIN), LaneSpans::kNone);
  EXPECT_EQ(spans.firstApart(0, 0), LaneSpans::kNone);
}

TEST(LaneSpansTest, FindsTheFirstLaneEndedByATimeOrStartingAfterOne) {
  LaneSpans spans;
  EXPECT_EQ(spans.add(10, 20), 0u);
  EXPECT_EQ(spans.add(30, 40), 1u);
  EXPECT_EQ(spans.add(0, 5), 2u);
  EXPECT_EQ(spans.firstApart(20, 100), 0u);  // lane 0 has ended at 20
  EXPECT_EQ(spans.firstApart(19, 100), 2u);  // only lane 2 has
  EXPECT_EQ(spans.firstApart(4, 100), LaneSpans::kNone);
  EXPECT_EQ(spans.firstApart(4, 29), 1u);  // lane 1 starts after 29
  EXPECT_EQ(spans.firstApart(4, 30), LaneSpans::kNone);
  // Lane 2 has ended by 5, lane 0 starts after 9: the first of them.
  EXPECT_EQ(spans.firstApart(5, 9), 0u);
}

TEST(LaneSpansTest, AWidenedLaneIsApartOnlyFromWhatItsWholeSpanIs) {
  LaneSpans spans;
  spans.add(10, 20);
  spans.add(50, 60);
  spans.widen(0, 40, 45);  // lane 0 now spans [10, 45]
  EXPECT_EQ(spans.firstApart(44, 100), LaneSpans::kNone);
  EXPECT_EQ(spans.firstApart(45, 100), 0u);
  spans.widen(0, 5, 6);  // [5, 45]: starts after 4, not after 5
  EXPECT_EQ(spans.firstApart(0, 4), 0u);
  EXPECT_EQ(spans.firstApart(0, 5), 1u);
}

TEST(LaneSpansTest, UnusedLanesAreNeverFoundAtTheExtremesOfTime) {
  LaneSpans spans;
  for (int64_t i = 0; i < 5; ++i) spans.add(i, INT64_MAX);  // capacity 8: 3 unused leaves
  EXPECT_EQ(spans.firstApart(INT64_MAX - 1, INT64_MAX), LaneSpans::kNone);
  EXPECT_EQ(spans.firstApart(INT64_MAX, INT64_MAX), 0u);
  EXPECT_EQ(spans.firstApart(INT64_MIN, INT64_MIN), 0u);
  EXPECT_EQ(spans.firstApart(INT64_MIN, 0), 1u);
  EXPECT_EQ(spans.firstApart(INT64_MIN, 4), LaneSpans::kNone);
}

// Against trying every lane in turn, over many lanes added and widened at random.
TEST(LaneSpansTest, AgreesWithTryingEveryLaneInTurn) {
  struct Span {
    int64_t from, until;
  };
  std::mt19937_64 random(42);
  std::uniform_int_distribution<int64_t> time(0, 10'000);
  LaneSpans spans;
  std::vector<Span> plain;
  for (int i = 0; i < 5'000; ++i) {
    int64_t a = time(random), b = time(random);
    if (a > b) std::swap(a, b);
    if (plain.empty() || random() % 3 == 0) {
      ASSERT_EQ(spans.add(a, b), plain.size());
      plain.push_back({a, b});
    } else {
      const std::size_t lane = random() % plain.size();
      spans.widen(lane, a, b);
      plain[lane] = {std::min(plain[lane].from, a), std::max(plain[lane].until, b)};
    }
    const int64_t endsBy = time(random), startsAfter = time(random);
    std::size_t expected = LaneSpans::kNone;
    for (std::size_t lane = 0; lane < plain.size(); ++lane) {
      if (plain[lane].until <= endsBy || plain[lane].from > startsAfter) {
        expected = lane;
        break;
      }
    }
    ASSERT_EQ(spans.firstApart(endsBy, startsAfter), expected) << "after " << i;
  }
}

}  // namespace
}  // namespace kinetrace::detail
