// SliceIndex against a list searched from end to end, on slices inserted in time order,
// backwards and at random, with equal starts, ends and lanes, forgetting as it goes.

#include "output/slice_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <tuple>
#include <vector>

namespace kinetrace::detail {
namespace {

using Slice = SliceIndex::Slice;

// The order of the contract: a later start, then shorter, then on a lower lane comes last.
bool before(const Slice& a, const Slice& b) {
  return std::make_tuple(a.start, -a.end, -static_cast<int64_t>(a.lane)) <
         std::make_tuple(b.start, -b.end, -static_cast<int64_t>(b.lane));
}

std::optional<Slice> lastWhere(const std::vector<Slice>& slices, int64_t time, bool startsCount) {
  std::optional<Slice> best;
  for (const Slice& s : slices) {
    const bool holds = s.start <= time && (time < s.end || (startsCount && s.start == time));
    if (holds && (!best || !before(s, *best))) best = s;
  }
  return best;
}

void expectSame(const std::optional<Slice>& got, const std::optional<Slice>& expected,
                const char* what, int64_t time) {
  ASSERT_EQ(got.has_value(), expected.has_value()) << what << " at " << time;
  if (!got) return;
  EXPECT_EQ(std::make_tuple(got->start, got->end, got->lane),
            std::make_tuple(expected->start, expected->end, expected->lane))
      << what << " at " << time;
}

TEST(SliceIndexTest, AnswersAsAListWouldWhateverOrderTheSlicesComeIn) {
  std::mt19937_64 random(1208);
  auto uniform = [&random](int64_t from, int64_t to) {
    return std::uniform_int_distribution<int64_t>(from, to)(random);
  };
  for (int round = 0; round < 2'000; ++round) {
    SliceIndex index;
    std::vector<Slice> slices;
    const int64_t order = uniform(0, 2);  // in time order, backwards, at random
    int64_t at = order == 1 ? 400 : 0;
    const int count = static_cast<int>(uniform(1, 200));
    for (int i = 0; i < count; ++i) {
      int64_t start = uniform(0, 60);
      if (order == 0) start = at += uniform(0, 2);
      if (order == 1) start = at -= uniform(0, 2);
      const Slice slice{start, start + uniform(0, 8), static_cast<std::size_t>(uniform(0, 3))};
      index.insert(slice);
      slices.push_back(slice);
      if (uniform(0, 30) == 0) {
        const int64_t last = uniform(0, 400);
        const std::size_t kept = static_cast<std::size_t>(std::count_if(
            slices.begin(), slices.end(), [last](const Slice& s) { return s.end > last; }));
        ASSERT_EQ(index.forgetEndingBy(last), slices.size() - kept);
        slices.erase(std::remove_if(slices.begin(), slices.end(),
                                    [last](const Slice& s) { return s.end <= last; }),
                     slices.end());
      }
      ASSERT_EQ(index.size(), slices.size());
      std::optional<Slice> last;
      for (const Slice& s : slices) {
        if (!last || !before(s, *last)) last = s;
      }
      expectSame(index.last(), last, "last", 0);
      for (int probe = 0; probe < 4; ++probe) {
        const int64_t time = slice.start + uniform(-10, 10);
        expectSame(index.innermost(time), lastWhere(slices, time, true), "innermost", time);
        expectSame(index.innermostOpen(time), lastWhere(slices, time, false), "innermostOpen",
                   time);
      }
    }
    std::vector<int64_t> ends, expected;
    index.collectEnds(&ends);
    for (const Slice& s : slices) expected.push_back(s.end);
    std::sort(ends.begin(), ends.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(ends, expected) << "round " << round;
  }
}

// A million slices in time order and as many backwards, [2i, 2i + 1]: each found, none
// lost, the first half forgotten.
TEST(SliceIndexTest, AMillionSlicesInOrderOrBackwardsAreAllFound) {
  constexpr int64_t kCount = 1'000'000;
  for (const bool backwards : {false, true}) {
    SliceIndex index;
    for (int64_t i = 0; i < kCount; ++i) {
      const int64_t start = 2 * (backwards ? kCount - 1 - i : i);
      index.insert({start, start + 1, 0});
    }
    for (int64_t i = 0; i < kCount; i += 997) {
      const std::optional<Slice> found = index.innermostOpen(2 * i);
      ASSERT_TRUE(found.has_value()) << i;
      EXPECT_EQ(found->start, 2 * i);
      EXPECT_FALSE(index.innermostOpen(2 * i + 1).has_value());
    }
    EXPECT_EQ(index.forgetEndingBy(kCount), static_cast<std::size_t>(kCount / 2));
    EXPECT_EQ(index.size(), static_cast<std::size_t>(kCount / 2));
    EXPECT_EQ(index.last()->start, 2 * (kCount - 1));
  }
}

}  // namespace
}  // namespace kinetrace::detail
