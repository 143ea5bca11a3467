// The on-demand capture's window on its own: when a triggered window starts and ends, from the
// request and the times and steps given here.

#include "ondemand/trigger_window.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace kinetrace::ondemand {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TriggerRequest forDuration(int64_t durationNs, int64_t startAtNs = 0) {
  TriggerRequest request;
  request.durationNs = durationNs;
  request.startAtNs = startAtNs;
  return request;
}

TriggerRequest forSteps(int64_t steps, int64_t startStep = -1) {
  TriggerRequest request;
  request.steps = steps;
  request.startStep = startStep;
  return request;
}

TEST(TriggerWindowTest, ADurationStartsNowAndEndsThatLongAfterItStarted) {
  const TriggerWindow window(forDuration(2 * kSecond), "/t.json", 10 * kSecond, 500 * kSecond, 0);
  EXPECT_FALSE(window.bySteps());
  EXPECT_EQ(window.path(), "/t.json");
  EXPECT_TRUE(window.dueAtTime(10 * kSecond));
  EXPECT_FALSE(window.dueAtStep(1000)) << "a window of a duration ignores steps";
  EXPECT_EQ(window.endAtNs(11 * kSecond), 13 * kSecond);
}

TEST(TriggerWindowTest, AStartTimeOnTheWallClockBecomesOneOnTheBootClock) {
  // Asked to start at 503 s on the wall clock, now 500 s there and 10 s since boot.
  const TriggerWindow window(forDuration(kSecond, 503 * kSecond), "/t.json", 10 * kSecond,
                             500 * kSecond, 0);
  EXPECT_EQ(window.startAtNs(), 13 * kSecond);
  EXPECT_FALSE(window.dueAtTime(13 * kSecond - 1));
  EXPECT_TRUE(window.dueAtTime(13 * kSecond));
  const TriggerWindow past(forDuration(kSecond, 400 * kSecond), "/t.json", 10 * kSecond,
                           500 * kSecond, 0);
  EXPECT_EQ(past.startAtNs(), 10 * kSecond) << "a start time already past is now";
}

TEST(TriggerWindowTest, TheLongestDurationEndsAtTheEndOfTimeNotAtOnce) {
  const TriggerWindow window(forDuration(INT64_MAX), "/t.json", 10 * kSecond, 500 * kSecond, 0);
  EXPECT_EQ(window.endAtNs(10 * kSecond), INT64_MAX);
  const TriggerWindow far(forDuration(kSecond, INT64_MAX), "/t.json", 10 * kSecond, -5 * kSecond,
                          0);
  EXPECT_EQ(far.startAtNs(), INT64_MAX) << "a start time far ahead saturates";
}

TEST(TriggerWindowTest, StepsStartAtTheStepAskedForOrTheNextAndLastThatMany) {
  const TriggerWindow ahead(forSteps(5, 120), "/t.json", 0, 0, 100);
  EXPECT_TRUE(ahead.bySteps());
  EXPECT_EQ(ahead.startStep(), 120);
  EXPECT_FALSE(ahead.dueAtStep(119));
  EXPECT_TRUE(ahead.dueAtStep(120));
  EXPECT_FALSE(ahead.dueAtTime(INT64_MAX)) << "a window of steps ignores time";
  EXPECT_EQ(ahead.endAtStep(120), 125);
  const TriggerWindow passed(forSteps(5, 50), "/t.json", 0, 0, 100);
  EXPECT_EQ(passed.startStep(), 100) << "a start step already passed is the next step";
  const TriggerWindow next(forSteps(5), "/t.json", 0, 0, 100);
  EXPECT_EQ(next.startStep(), 100);
}

TEST(TriggerWindowTest, ARoundUpStartsAtTheNextMultipleSoProcessesAFewStepsApartAgree) {
  TriggerRequest request = forSteps(5);
  request.roundUpSteps = 100;
  // Two processes of a job got the request at steps 901 and 960: both start at 1000.
  const TriggerWindow early(request, "/a.json", 0, 0, 901);
  const TriggerWindow late(request, "/b.json", 0, 0, 960);
  EXPECT_EQ(early.startStep(), 1000);
  EXPECT_EQ(late.startStep(), 1000);
  EXPECT_EQ(late.endAtStep(1000), 1005);
  const TriggerWindow onAMultiple(request, "/c.json", 0, 0, 1000);
  EXPECT_EQ(onAMultiple.startStep(), 1000) << "a step that is a multiple already is kept";
  request.startStep = 1150;
  EXPECT_EQ(TriggerWindow(request, "/d.json", 0, 0, 901).startStep(), 1200)
      << "a start step asked for is rounded up too";
  request.startStep = INT64_MAX - 3;
  EXPECT_EQ(TriggerWindow(request, "/e.json", 0, 0, 0).startStep(), INT64_MAX)
      << "rounding saturates at the end of time";
}

TEST(TriggerWindowTest, SaturatingAddNeverWraps) {
  EXPECT_EQ(saturatingAdd(INT64_MAX - 1, 5), INT64_MAX);
  EXPECT_EQ(saturatingAdd(INT64_MIN + 1, -5), INT64_MIN);
  EXPECT_EQ(saturatingAdd(40, 2), 42);
}

}  // namespace
}  // namespace kinetrace::ondemand
