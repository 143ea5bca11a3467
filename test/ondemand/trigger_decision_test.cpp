// The one rule both channels (kinetrace trigger's socket, dynolog's configs) and both
// front-ends (the injection, libkineto_api) judge a request to record by.

#include "ondemand/trigger_decision.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>

#include "support/temp_dir.h"

namespace kinetrace::ondemand {
namespace {

TEST(TriggerDecisionTest, AFreeProcessTakesTheRequest) {
  EXPECT_FALSE(refusalNow(ProcessState{}).has_value());
}

TEST(TriggerDecisionTest, EachBusyStateSaysWhy) {
  ProcessState ending;
  ending.ending = true;
  EXPECT_EQ(*refusalNow(ending), "the process is ending, or its tracing is off");

  ProcessState recording;
  recording.recording = true;
  recording.window = 3;
  recording.recordingPath = "/t/w3.json";
  EXPECT_EQ(*refusalNow(recording), "a trace is already recording (window 3, to /t/w3.json)");
  recording.recordsUntilExit = true;
  EXPECT_EQ(*refusalNow(recording),
            "a trace is already recording (window 3, to /t/w3.json): it records until the "
            "process exits");

  ProcessState pending;
  pending.pendingPath = "/t/next.json";
  EXPECT_EQ(*refusalNow(pending),
            "a triggered recording is already about to start (to /t/next.json)");

  ProcessState held;
  held.heldBy = "it records between its own cudaProfilerStart/Stop calls";
  EXPECT_EQ(*refusalNow(held), "it records between its own cudaProfilerStart/Stop calls");
}

TEST(TriggerDecisionTest, RequestsMustSayHowLongAndStartAsTheirKindDoes) {
  TriggerRequest request;
  EXPECT_FALSE(checkRequest(request).ok()) << "neither a duration nor steps";
  request.durationNs = 1;
  request.steps = 1;
  EXPECT_FALSE(checkRequest(request).ok()) << "both";
  request.steps = 0;
  EXPECT_TRUE(checkRequest(request).ok());
  request.roundUpSteps = 10;
  EXPECT_EQ(checkRequest(request).why(),
            "round_up goes with steps; a window of a duration starts at start_at_ns");
  request = TriggerRequest{};
  request.steps = 5;
  request.roundUpSteps = 0;
  EXPECT_EQ(checkRequest(request).why(),
            "round_up must be 1 or more (the first step is a multiple of it), got 0");
  request.roundUpSteps = 1;
  request.startAtNs = 5;
  EXPECT_FALSE(checkRequest(request).ok());
}

TEST(TriggerDecisionTest, APathIsAFileADirectoryOrTheDefault) {
  kinetrace::testing::TempDir dir;
  EXPECT_EQ(triggeredPath("", "/out", "p.json"), "/out/p.json");
  EXPECT_EQ(triggeredPath("/x/t.json", "/out", "p.json"), "/x/t.json");
  EXPECT_EQ(triggeredPath("/x/new/", "/out", "p.json"), "/x/new/p.json");
  EXPECT_EQ(triggeredPath(dir.path(), "/out", "p.json"), dir.path() + "/p.json")
      << "an existing directory";
}

TEST(TriggerDecisionTest, ATracesDirectoriesAreMadeOrTheFailingPartIsNamed) {
  kinetrace::testing::TempDir dir;
  EXPECT_TRUE(makeParentDirectories(dir.path() + "/a/b/t.json").ok());
  struct stat info {};
  EXPECT_EQ(::stat((dir.path() + "/a/b").c_str(), &info), 0);
  EXPECT_TRUE(S_ISDIR(info.st_mode));
  EXPECT_TRUE(makeParentDirectories(dir.path() + "/a/b/t.json").ok()) << "already there";
  const std::string file = dir.path() + "/a/plain";
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_EQ(makeParentDirectories(file + "/t.json").why(), file + ": not a directory");
}

TEST(TriggerDecisionTest, TheAnswerAndTheMetadataSayWhatWasTaken) {
  TriggerRequest steps;
  steps.steps = 4;
  steps.roundUpSteps = 10;
  steps.origin = "dynolog";
  steps.requestTraceId = "77";
  const TriggerWindow window(steps, "/t.json", 0, 0, 12);
  EXPECT_EQ(acceptedAnswer(window, 12, "no steps yet"), "ok /t.json\tfrom step 20");
  EXPECT_EQ(acceptedAnswer(window, 0, "no steps yet"), "ok /t.json\tfrom step 20 (no steps yet)");
  const Value metadata = triggerMetadata(window);
  EXPECT_EQ(
      metadata,
      Value::object({{"origin", "dynolog"},
                     {"asked", Value::object({{"steps", 4}, {"first_step", 20}, {"round_up", 10}})},
                     {"request_trace_id", "77"}}));
  TriggerRequest duration;
  duration.durationNs = 9;
  const TriggerWindow timed(duration, "/d.json", 0, 0, 0);
  EXPECT_EQ(acceptedAnswer(timed, 0, "step"), "ok /d.json");
  EXPECT_EQ(triggerMetadata(timed),
            Value::object({{"origin", "kinetrace trigger"},
                           {"asked", Value::object({{"duration_ns", 9}, {"start_at_ns", 0}})}}));
}

}  // namespace
}  // namespace kinetrace::ondemand
