// The memory pass: allocated memory over the window, at each step's end, and whether it
// grew in every step.

#include "analysis/passes/memory_pass.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

StepReport stepEndingAt(int64_t endUs) {
  StepReport step;
  step.endNs = kBase + endUs * kUs;
  return step;
}

RankReport memoryOf(CollectedTrace trace, std::vector<StepReport> steps = {}) {
  PassFixture f(std::move(trace));
  RankReport report;
  report.steps = std::move(steps);
  MemoryPass(f.context()).finish(report);
  return report;
}

TEST(MemoryPassTest, ThePeakFirstAndLastSamplesAndEachStepsAllocationAtItsEnd) {
  TraceBuilder b;
  b.memory(0, 100).memory(10, 300).memory(20, 200).memory(30, 400).memory(40, 500);
  const RankReport r =
      memoryOf(b.take(), {stepEndingAt(15), stepEndingAt(25), stepEndingAt(45), stepEndingAt(40)});
  const MemoryReport& m = r.memory;
  EXPECT_EQ(m.samples, 5u);
  EXPECT_EQ(m.peakBytes, 500);
  EXPECT_EQ(m.peakAtNs, kBase + 40 * kUs);
  EXPECT_EQ(m.firstBytes, 100);
  EXPECT_EQ(m.lastBytes, 500);
  EXPECT_EQ(r.steps[0].allocatedAtEndBytes, 300) << "the last sample at or before its end";
  EXPECT_EQ(r.steps[1].allocatedAtEndBytes, 200);
  EXPECT_EQ(r.steps[2].allocatedAtEndBytes, 500);
  EXPECT_EQ(r.steps[3].allocatedAtEndBytes, 500) << "a sample at its very end counts";
  EXPECT_FALSE(m.growsEveryStep);
  EXPECT_EQ(r.memoryCurve.size(), 5u);
}

TEST(MemoryPassTest, MemoryThatRoseAtTheEndOfEveryStepIsALeaksSignature) {
  TraceBuilder b;
  b.memory(0, 100).memory(10, 200).memory(20, 300).memory(30, 400);
  const RankReport r = memoryOf(b.take(), {stepEndingAt(12), stepEndingAt(22), stepEndingAt(32)});
  EXPECT_TRUE(r.memory.growsEveryStep);
  EXPECT_EQ(r.memory.growthPerStepBytes, 100);

  TraceBuilder two;
  two.memory(0, 100).memory(10, 200).memory(20, 300);
  EXPECT_FALSE(memoryOf(two.take(), {stepEndingAt(12), stepEndingAt(22)}).memory.growsEveryStep)
      << "two steps are too few to say";
}

TEST(MemoryPassTest, AStepEndingBeforeTheFirstSampleHasNoAllocation) {
  TraceBuilder b;
  b.memory(10, 100).memory(20, 200);
  const RankReport r = memoryOf(b.take(), {stepEndingAt(5), stepEndingAt(15)});
  EXPECT_EQ(r.steps[0].allocatedAtEndBytes, -1);
  EXPECT_EQ(r.steps[1].allocatedAtEndBytes, 100);
}

TEST(MemoryPassTest, TheCurveIsBoundedAndKeepsEachStretchsHighestSample) {
  TraceBuilder b;
  for (int i = 0; i < 1000; ++i) b.memory(i, i == 500 ? 1'000'000 : (i % 7) * 10);
  const RankReport r = memoryOf(b.take());
  EXPECT_EQ(r.memoryCurve.size(), 334u) << "1,000 samples in stretches of 3";
  EXPECT_LE(r.memoryCurve.size(), RankReport::kMemoryCurvePoints);
  const auto highest = std::max_element(r.memoryCurve.begin(), r.memoryCurve.end(),
                                        [](const MemorySample& x, const MemorySample& y) {
                                          return x.allocatedBytes < y.allocatedBytes;
                                        });
  EXPECT_EQ(highest->allocatedBytes, 1'000'000) << "the spike is not lost";
  EXPECT_EQ(highest->timeNs, kBase + 500 * kUs);
}

TEST(MemoryPassTest, ATraceWithoutSamplesHasNoMemoryFigures) {
  TraceBuilder b;
  b.op("gemm", 0, 1, 2, 3);
  const RankReport r = memoryOf(b.take(), {stepEndingAt(5)});
  EXPECT_EQ(r.memory.samples, 0u);
  EXPECT_EQ(r.memory.peakBytes, 0);
  EXPECT_TRUE(r.memoryCurve.empty());
  EXPECT_EQ(r.steps[0].allocatedAtEndBytes, -1);
}

}  // namespace
}  // namespace kinetrace::detail::passes
