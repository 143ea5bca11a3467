// The steps pass: the trace's step ranges as report.steps, in time order, each name once.

#include "analysis/passes/steps_pass.h"

#include <gtest/gtest.h>

#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

TEST(StepsPassTest, StepsComeInTimeOrderEachNameOnceAsItsLongestRange) {
  TraceBuilder b;
  b.range("ProfilerStep#2", 100, 200);
  b.range("ProfilerStep#1", 0, 90, 0, "user_annotation", 2);
  b.range("ProfilerStep#1", 0, 100);  // the same step marked on another thread, longer
  b.range("optimizer.step", 20, 30);  // not a step: no number
  PassFixture f(b.take());
  RankReport report;
  StepsPass(f.context()).finish(report);
  ASSERT_EQ(report.steps.size(), 2u);
  EXPECT_EQ(report.steps[0].name, "ProfilerStep#1");
  EXPECT_EQ(report.steps[0].startNs, kBase);
  EXPECT_EQ(report.steps[0].endNs, kBase + 100 * kUs);
  EXPECT_EQ(report.steps[1].name, "ProfilerStep#2");
  EXPECT_EQ(report.steps[1].allocatedAtEndBytes, -1) << "the memory pass fills it";
}

TEST(StepsPassTest, StepsStartingTogetherPutTheOuterFirstThenGoByName) {
  TraceBuilder b;
  b.range("step 2", 0, 50);
  b.range("step 1", 0, 50);
  b.range("ProfilerStep#1", 0, 100);
  PassFixture f(b.take());
  RankReport report;
  StepsPass(f.context()).finish(report);
  ASSERT_EQ(report.steps.size(), 3u);
  EXPECT_EQ(report.steps[0].name, "ProfilerStep#1");
  EXPECT_EQ(report.steps[1].name, "step 1");
  EXPECT_EQ(report.steps[2].name, "step 2");
}

TEST(StepsPassTest, WhatTheStepsTakeIsHeldForTheAnalysisAndTheReport) {
  TraceBuilder b;
  PassFixture none(b.take());
  RankReport empty;
  StepsPass(none.context()).finish(empty);
  EXPECT_TRUE(empty.steps.empty());
  EXPECT_EQ(none.context().working.bytes(), 0u);

  TraceBuilder c;
  c.range("ProfilerStep#1", 0, 10);
  c.range("ProfilerStep#2", 10, 20);
  PassFixture two(c.take());
  RankReport report;
  StepsPass(two.context()).finish(report);
  EXPECT_GT(two.context().working.bytes(), 0u);
  EXPECT_EQ(two.context().reportHold->bytes(), 2 * 2 * sizeof(StepReport))
      << "names of 15 letters or fewer are kept in the string itself";
}

}  // namespace
}  // namespace kinetrace::detail::passes
