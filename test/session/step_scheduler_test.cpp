// Step schedules: the steps a schedule asks for, recorded one cycle per trace, by the
// program's own step marks; nothing recorded outside them.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kinetrace/error.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "kinetrace/schedule.h"
#include "session/session_support.h"
#include "support/temp_dir.h"

namespace kinetrace {
namespace {

// The host ranges of a trace file, by name, in file order.
std::vector<std::string> rangeNames(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::vector<std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") == "X") names.push_back(e.value("name", ""));
  }
  return names;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A loop of `steps` steps, each with a range "work#i", ended by kinetrace::step().
void runLoop(int steps) {
  for (int i = 0; i < steps; ++i) {
    { Range work("work#" + std::to_string(i)); }
    kinetrace::step();
  }
}

TEST(StepSchedulerTest, EachCycleRecordsExactlyItsActiveStepsToAFileOfItsOwn) {
  testing::TempDir dir;
  Profiler profiler(testing::hostOnly());
  std::vector<int64_t> cyclesSeen;
  {
    StepScheduler scheduler(profiler,
                            Schedule{/*skipFirst=*/1, /*wait=*/1, /*warmup=*/1,
                                     /*active=*/2, /*repeat=*/2},
                            (dir / "step.json").string(),
                            [&](const Trace&, int64_t cycle) { cyclesSeen.push_back(cycle); });
    runLoop(12);
    EXPECT_EQ(scheduler.steps(), 12);
    EXPECT_EQ(scheduler.cyclesDone(), 2);
    EXPECT_FALSE(profiler.recording()) << "after the last cycle nothing records";
  }
  EXPECT_EQ(cyclesSeen, (std::vector<int64_t>{1, 2}));
  // skip 1 (step 0), then cycle 1: wait step 1, warmup step 2, active steps 3-4; cycle 2:
  // wait 5, warmup 6, active 7-8; steps 9-11: the two cycles are done.
  const std::vector<std::string> first = rangeNames((dir / "step-cycle1.json").string());
  const std::vector<std::string> second = rangeNames((dir / "step-cycle2.json").string());
  for (const char* name : {"work#3", "work#4", "ProfilerStep#3", "ProfilerStep#4"}) {
    EXPECT_TRUE(contains(first, name)) << name;
  }
  for (const char* name : {"work#2", "work#5", "work#7"})
    EXPECT_FALSE(contains(first, name)) << name;
  for (const char* name : {"work#7", "work#8", "ProfilerStep#7", "ProfilerStep#8"}) {
    EXPECT_TRUE(contains(second, name)) << name;
  }
  for (const char* name : {"work#6", "work#9"}) EXPECT_FALSE(contains(second, name)) << name;
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"step-cycle1.json", "step-cycle2.json"}));
}

TEST(StepSchedulerTest, RepeatZeroKeepsGoingAndTheDestructorCompletesTheCycleInProgress) {
  testing::TempDir dir;
  Profiler profiler(testing::hostOnly());
  {
    StepScheduler scheduler(profiler, Schedule{0, 0, 0, 3, 0}, (dir / "c{cycle}.json").string());
    runLoop(7);  // cycles 1 (steps 0-2) and 2 (3-5) done; 3 has step 6 when the loop ends
    EXPECT_EQ(scheduler.cyclesDone(), 2);
    EXPECT_TRUE(profiler.recording());
  }
  EXPECT_FALSE(profiler.recording());
  EXPECT_TRUE(contains(rangeNames((dir / "c3.json").string()), "work#6"));
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"c1.json", "c2.json", "c3.json"}));
}

TEST(StepSchedulerTest, StepWithoutASchedulerDoesNothingAndOnlyOneSchedulerAtATime) {
  kinetrace::step();  // no scheduler: nothing happens
  testing::TempDir dir;
  Profiler profiler(testing::hostOnly());
  StepScheduler scheduler(profiler, Schedule{}, (dir / "a.json").string());
  EXPECT_THROW(StepScheduler(profiler, Schedule{}, (dir / "b.json").string()), Error);
}

TEST(StepSchedulerTest, BadSchedulesAreRefusedWithTheReason) {
  Profiler profiler(testing::hostOnly());
  try {
    StepScheduler scheduler(profiler, Schedule{0, 0, 0, 0, 1}, "x.json");
    FAIL() << "active 0 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("active"), std::string::npos) << e.what();
  }
  EXPECT_THROW(StepScheduler(profiler, Schedule{-1, 0, 0, 1, 1}, "x.json"), Error);
  EXPECT_THROW(StepScheduler(profiler, Schedule{}, ""), Error);
}

TEST(StepSchedulerTest, CycleFileNamesGoBeforeTheExtension) {
  Profiler profiler(testing::hostOnly());
  StepScheduler scheduler(profiler, Schedule{}, "/tmp/run.d/trace.json.gz");
  EXPECT_EQ(scheduler.pathOfCycle(2), "/tmp/run.d/trace-cycle2.json.gz");
}

}  // namespace
}  // namespace kinetrace
