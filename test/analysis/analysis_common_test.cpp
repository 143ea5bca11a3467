// What the analysis's passes share: intervals, distributions, the bounded top N, and the
// short forms of names and durations.

#include "analysis/passes/analysis_common.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace kinetrace::detail::passes {
namespace {

TEST(AnalysisCommonTest, TheUnionMergesOverlappingAndTouchingIntervalsAndDropsEmptyOnes) {
  EXPECT_EQ(unionOf({{5, 10}, {0, 3}, {3, 4}, {8, 12}, {20, 20}, {30, 25}}),
            (Intervals{{0, 4}, {5, 12}}));
  EXPECT_TRUE(unionOf({}).empty());
}

TEST(AnalysisCommonTest, OverlapCountsOnlyThePartOfTheWindowTheIntervalsCover) {
  const Intervals items{{0, 4}, {5, 12}};
  EXPECT_EQ(overlapWith(items, 2, 6), 3);
  EXPECT_EQ(overlapWith(items, 4, 5), 0) << "the hole between them";
  EXPECT_EQ(overlapWith(items, 12, 20), 0) << "an interval's end is not in it";
  EXPECT_EQ(overlapWith(items, -5, 100), 11);
}

TEST(AnalysisCommonTest, PercentilesAreTheValuesAtTheirPlaceAmongTheSortedValues) {
  DistributionBuilder builder(100);
  for (int64_t v = 1; v <= 100; ++v) builder.add(v);
  const Distribution d = builder.finish();
  EXPECT_EQ(d.count, 100u);
  EXPECT_EQ(d.totalNs, 5050);
  EXPECT_EQ(d.meanNs, 50);
  EXPECT_EQ(d.p50Ns, 51) << "place 49.5 rounds up to 50";
  EXPECT_EQ(d.p90Ns, 90);
  EXPECT_EQ(d.p99Ns, 99);
  EXPECT_EQ(d.maxNs, 100);

  DistributionBuilder one(1);
  one.add(7);
  const Distribution single = one.finish();
  EXPECT_EQ(single.p50Ns, 7);
  EXPECT_EQ(single.p99Ns, 7);
  EXPECT_EQ(DistributionBuilder(0).finish().meanNs, 0) << "no values: no division by zero";
}

TEST(AnalysisCommonTest, TopNKeepsTheBestAndAdmitsOnlyWhatItWouldKeep) {
  TopN<int, std::greater<int>> top(3, std::greater<int>());
  for (int v : {5, 1, 9, 7, 3}) top.add(v);
  EXPECT_FALSE(top.admits(4)) << "worse than the worst kept (5)";
  EXPECT_TRUE(top.admits(6));
  std::vector<int> kept = top.take();
  std::sort(kept.begin(), kept.end(), std::greater<int>());
  EXPECT_EQ(kept, (std::vector<int>{9, 7, 5}));

  TopN<int, std::greater<int>> none(0, std::greater<int>());
  EXPECT_FALSE(none.admits(100));
  none.add(100);
  EXPECT_TRUE(none.take().empty());
}

TEST(AnalysisCommonTest, AShortNameCutsASignatureAtItsArgumentsNotACopysDirection) {
  EXPECT_EQ(shortName("void gemm<float>(int, float*)"), "void gemm<float>");
  EXPECT_EQ(shortName("Memcpy HtoD (Pageable -> Device)"), "Memcpy HtoD (Pageable -> Device)");
  const std::string longName(90, 'k');
  EXPECT_EQ(shortName(longName), std::string(57, 'k') + "...");
}

TEST(AnalysisCommonTest, AShortDurationIsInMicrosecondsUnderAMillisecond) {
  EXPECT_EQ(shortDuration(12'500), "12.5 us");
  EXPECT_EQ(shortDuration(999'900), "999.9 us");
  EXPECT_EQ(shortDuration(3'200'000), "3.20 ms");
}

TEST(AnalysisCommonTest, FinishedTimesDeriveMemoryAndIdleAndAreZeroWithoutAWindow) {
  TimeBreakdown t;
  t.windowNs = 100;
  t.busyNs = 60;
  t.computeNs = 30;
  t.communicationNs = 10;
  finishTimes(t);
  EXPECT_EQ(t.memoryNs, 20);
  EXPECT_EQ(t.idleNs, 40);

  TimeBreakdown sum;
  addTimes(sum, t);
  addTimes(sum, t);
  EXPECT_EQ(sum.windowNs, 200);
  EXPECT_EQ(sum.memoryNs, 40);

  TimeBreakdown empty;
  empty.busyNs = 5;
  finishTimes(empty);
  EXPECT_EQ(empty.busyNs, 0) << "no window, no figures";
}

}  // namespace
}  // namespace kinetrace::detail::passes
