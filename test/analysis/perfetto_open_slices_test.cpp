// Slices begun and waiting for their end: nested per track, begins past half the budget
// counted instead of kept and their ends matched to them, the unended counted.

#include "analysis/perfetto_open_slices.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "kinetrace/error.h"

namespace kinetrace::detail {
namespace {

DecodedEvent beginOn(uint64_t track, std::string name, int64_t timeNs = 0) {
  DecodedEvent e;
  e.track = track;
  e.name = std::move(name);
  e.timeNs = timeNs;
  return e;
}

TEST(PerfettoOpenSlicesTest, EndsCloseTheLatestBeginOfTheirTrack) {
  ReadBudget budget;
  OpenSlices open(budget);
  open.begin(beginOn(1, "outer", 10));
  open.begin(beginOn(1, "inner", 20));
  open.begin(beginOn(2, "other", 30));
  EXPECT_EQ(open.unended(), 3u);
  std::optional<DecodedEvent> end = open.end(1);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->name, "inner");
  end = open.end(2);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->name, "other");
  end = open.end(1);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->name, "outer");
  EXPECT_EQ(end->timeNs, 10);
  EXPECT_EQ(open.unended(), 0u);
}

TEST(PerfettoOpenSlicesTest, AnEndWithoutItsBeginIsAnError) {
  ReadBudget budget;
  OpenSlices open(budget);
  open.begin(beginOn(1, "a"));
  try {
    open.end(2);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "a slice end without its begin");
  }
}

TEST(PerfettoOpenSlicesTest, BeginsPastHalfTheBudgetAreCountedAndTheirEndsMatched) {
  ReadBudget budget(64 << 10);
  {
    OpenSlices open(budget);
    open.begin(beginOn(1, "kept"));
    // Each too large for half of the 64 KiB: left out, counted as a run on the track.
    open.begin(beginOn(1, std::string(40 << 10, 'x')));
    open.begin(beginOn(1, std::string(40 << 10, 'y')));
    EXPECT_EQ(open.unended(), 3u);
    EXPECT_FALSE(open.end(1));
    EXPECT_FALSE(open.end(1));
    const std::optional<DecodedEvent> kept = open.end(1);
    ASSERT_TRUE(kept);
    EXPECT_EQ(kept->name, "kept");
    // A track whose first begin is left out still matches its end.
    open.begin(beginOn(2, std::string(40 << 10, 'z')));
    EXPECT_FALSE(open.end(2));
    EXPECT_EQ(open.unended(), 0u);
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(PerfettoOpenSlicesTest, WhatStaysOpenIsGivenBackToTheBudgetAtTheEnd) {
  ReadBudget budget;
  {
    OpenSlices open(budget);
    open.begin(beginOn(1, std::string(1000, 'n')));
    EXPECT_GE(budget.used(), OpenSlices::bytesOf(beginOn(1, std::string(1000, 'n'))));
    EXPECT_EQ(open.unended(), 1u);
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(PerfettoOpenSlicesTest, ABeginCountsItsHeapStringsFlowsAndAnnotations) {
  DecodedEvent e = beginOn(1, "short");  // within the string's own room
  const std::size_t bare = OpenSlices::bytesOf(e);
  e.name = std::string(100, 'n');
  EXPECT_EQ(OpenSlices::bytesOf(e), bare + 100 + 1 + kAllocationOverheadBytes);
  e.flowIds = {1, 2};
  EXPECT_EQ(OpenSlices::bytesOf(e), bare + 101 + kAllocationOverheadBytes + 2 * sizeof(uint64_t));
  e.annotations.push_back(Annotation{});
  EXPECT_EQ(OpenSlices::bytesOf(e),
            bare + 101 + kAllocationOverheadBytes + 2 * sizeof(uint64_t) + sizeof(Annotation));
}

}  // namespace
}  // namespace kinetrace::detail
