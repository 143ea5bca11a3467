// Each capture mode's policy on its own: what it asks for when CUDA starts, at its timers, at
// the program's profiler-API calls and at step marks, with the times and steps given here.

#include "inject/capture_policy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kinetrace/config.h"

namespace kinetrace::inject {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(CapturePolicyTest, TheWholeRunStartsWhenCudaStartsAndNeverStops) {
  auto policy = wholeRunPolicy();
  EXPECT_STREQ(policy->name(), "whole run");
  const CaptureStep first = policy->begin(5 * kSecond);
  EXPECT_TRUE(first.start);
  EXPECT_EQ(first.stopAtNs, 0) << "until the exit";
  EXPECT_FALSE(first.released);
  EXPECT_EQ(policy->nextTimerNs(), 0);
  EXPECT_FALSE(policy->usesProfilerApi());
  EXPECT_FALSE(policy->followsSteps());
}

TEST(CapturePolicyTest, ADelayCountsFromTheProcessStartAndTheDurationFromTheWindowStart) {
  auto policy = delayDurationPolicy(3 * kSecond, 2 * kSecond, 1 * kSecond);
  EXPECT_STREQ(policy->name(), "delay/duration");
  EXPECT_FALSE(policy->begin(2 * kSecond).start) << "the delay has not passed";
  EXPECT_EQ(policy->nextTimerNs(), 4 * kSecond);
  EXPECT_EQ(policy->refusal(), "this process starts recording after its configured delay");
  EXPECT_FALSE(policy->onTimer(4 * kSecond - 1).start);
  const CaptureStep step = policy->onTimer(4 * kSecond + 7);
  EXPECT_TRUE(step.start);
  EXPECT_STREQ(step.why, "the delay passed");
  EXPECT_EQ(step.stopAtNs, 6 * kSecond + 7);
  EXPECT_TRUE(step.released) << "its one window is all it records";
  EXPECT_EQ(policy->nextTimerNs(), 0);
  EXPECT_FALSE(policy->onTimer(9 * kSecond).start) << "once";
}

TEST(CapturePolicyTest, ADelayThatHadPassedWhenCudaStartedStartsAtOnce) {
  auto policy = delayDurationPolicy(1 * kSecond, 0, 1 * kSecond);
  const CaptureStep step = policy->begin(5 * kSecond);
  EXPECT_TRUE(step.start);
  EXPECT_STREQ(step.why, "the delay had passed when CUDA started");
  EXPECT_EQ(step.stopAtNs, 0) << "no duration: until the exit";
}

TEST(CapturePolicyTest, TheLongestDelayAndDurationSaturateInsteadOfWrapping) {
  auto policy = delayDurationPolicy(INT64_MAX, INT64_MAX, 5 * kSecond);
  EXPECT_FALSE(policy->begin(6 * kSecond).start) << "a wrapped start time would be past";
  EXPECT_EQ(policy->nextTimerNs(), INT64_MAX);
  auto now = delayDurationPolicy(0, INT64_MAX, 0);
  EXPECT_EQ(now->begin(6 * kSecond).stopAtNs, INT64_MAX) << "a wrapped end would be past";
  EXPECT_EQ(saturatingAdd(INT64_MIN + 1, -5), INT64_MIN);
}

TEST(CapturePolicyTest, TheProfilerApiRecordsBetweenTheProgramsStartAndStopCalls) {
  auto policy = profilerApiPolicy(0);
  EXPECT_TRUE(policy->usesProfilerApi());
  const CaptureStep first = policy->begin(0);
  EXPECT_TRUE(first.prepare) << "set up, so the first cudaProfilerStart records";
  EXPECT_FALSE(first.start);
  EXPECT_FALSE(policy->onProfilerApi(false, false, 1).stop) << "a stop without a start";
  const CaptureStep start = policy->onProfilerApi(true, false, 2);
  EXPECT_TRUE(start.start);
  EXPECT_STREQ(start.why, "cudaProfilerStart()");
  EXPECT_FALSE(policy->onProfilerApi(true, true, 3).start) << "already recording";
  const CaptureStep stop = policy->onProfilerApi(false, true, 4);
  EXPECT_TRUE(stop.stop);
  EXPECT_FALSE(stop.released) << "the program may start again";
  EXPECT_TRUE(policy->onProfilerApi(true, false, 5).start);
}

TEST(CapturePolicyTest, AScheduleRecordsEachCyclesActiveStepsThenLetsGo) {
  Schedule schedule;
  schedule.wait = 1;
  schedule.warmup = 1;
  schedule.active = 2;
  schedule.repeat = 2;
  auto policy = schedulePolicy(schedule);
  EXPECT_TRUE(policy->followsSteps());
  EXPECT_FALSE(policy->begin(0).start) << "steps decide";
  bool recording = false;
  std::vector<int64_t> starts, stops, prepares;
  bool released = false;
  for (int64_t step = 0; step < 10 && !released; ++step) {
    const CaptureStep s = policy->onStep(step, recording);
    if (s.stop) {
      stops.push_back(step);
      recording = false;
    }
    if (s.prepare) prepares.push_back(step);
    if (s.start) {
      starts.push_back(step);
      EXPECT_EQ(s.firstStep, step);
      EXPECT_EQ(s.cycle, static_cast<int64_t>(starts.size()));
      EXPECT_EQ(s.stopAtNs, 0) << "steps end it, never a time";
      recording = true;
    }
    if (s.released) {
      released = true;
      EXPECT_EQ(step, 8) << "at the mark after the second cycle's last step";
    }
  }
  EXPECT_EQ(starts, (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(stops, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(prepares, (std::vector<int64_t>{1, 5}));
  EXPECT_TRUE(released);
  EXPECT_EQ(policy->refusal(),
            "this process records by its step schedule (skip_first=0,wait=1,warmup=1,active=2,"
            "repeat=2); it "
            "can be triggered once the schedule's last cycle has ended");
}

TEST(CapturePolicyTest, AScheduleCycleThatCouldNotStartLeavesTheNextToStart) {
  Schedule schedule;
  schedule.warmup = 0;
  schedule.active = 1;
  schedule.repeat = 3;
  auto policy = schedulePolicy(schedule);
  policy->begin(0);
  ASSERT_TRUE(policy->onStep(0, false).start);
  EXPECT_TRUE(policy->startFailed()) << "the policy still waits";
  EXPECT_TRUE(policy->onStep(1, false).start) << "the next cycle starts";
}

TEST(CapturePolicyTest, OnDemandLetsGoAtOnceAndAsksForNothing) {
  auto policy = onDemandPolicy();
  const CaptureStep first = policy->begin(0);
  EXPECT_TRUE(first.released);
  EXPECT_FALSE(first.start);
  EXPECT_FALSE(first.prepare) << "not even CUPTI until a trigger";
}

TEST(CapturePolicyTest, TheConfigurationPicksThePolicy) {
  Config config;
  EXPECT_STREQ(makeCapturePolicy(config, 0)->name(), "whole run");
  config.durationNs = kSecond;
  EXPECT_STREQ(makeCapturePolicy(config, 0)->name(), "delay/duration");
  config.captureRange = CaptureRange::CudaProfilerApi;
  EXPECT_STREQ(makeCapturePolicy(config, 0)->name(), "cudaProfilerApi");
  config.captureRange = CaptureRange::OnDemand;
  EXPECT_STREQ(makeCapturePolicy(config, 0)->name(), "on demand");
  config.set("schedule", "wait=0,warmup=0,active=1,repeat=1");
  EXPECT_STREQ(makeCapturePolicy(config, 0)->name(), "step schedule") << "a schedule wins";
}

}  // namespace
}  // namespace kinetrace::inject
