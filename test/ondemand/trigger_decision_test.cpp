// The one rule both channels (kinetrace trigger's socket, dynolog's configs) and both
// front-ends (the injection, libkineto_api) judge a request to record by.

#include "ondemand/trigger_decision.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

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
  EXPECT_TRUE(prepareOutput(dir.path() + "/a/b/t.json", {}).ok());
  struct stat info {};
  EXPECT_EQ(::stat((dir.path() + "/a/b").c_str(), &info), 0);
  EXPECT_TRUE(S_ISDIR(info.st_mode));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"a"}) << "the probe left nothing";
  EXPECT_TRUE(prepareOutput(dir.path() + "/a/b/t.json", {}).ok()) << "already there";
  const std::string file = dir.path() + "/a/plain";
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_EQ(prepareOutput(file + "/t.json", {}).why(), file + ": not a directory");
}

// "ok" was answered for outputs that then failed: a trace is taken only where it can be made.
TEST(TriggerDecisionTest, AnOutputThatCannotBeWrittenIsRefusedBeforeTheAnswer) {
  if (::access("/dev/null", F_OK) == 0) {
    EXPECT_EQ(prepareOutput("/dev/null", {}).why(), "it is a character device, not a regular file");
  }
  const detail::Status proc = prepareOutput("/proc/self/t.json", {});
  ASSERT_FALSE(proc.ok());
  EXPECT_NE(proc.why().find("/proc/"), std::string::npos) << proc.why();
}

TEST(TriggerDecisionTest, ADynologRequestsTraceStaysInItsAllowedDirectoriesOnceLinksAreFollowed) {
  kinetrace::testing::TempDir dir;
  const std::string allowed = dir.path() + "/allowed";
  const std::string outside = dir.path() + "/outside";
  ASSERT_EQ(::mkdir(allowed.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(outside.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(outside.c_str(), (allowed + "/link").c_str()), 0);
  detail::PathRule rule;
  rule.allowedDirectories = {allowed};
  rule.confinedBecause = "why";
  EXPECT_TRUE(prepareOutput(allowed + "/new/t.json", rule).ok());
  const detail::Status refused = prepareOutput(allowed + "/link/t.json", rule);
  EXPECT_EQ(refused.why(),
            "it lands in " + outside + ", outside the directories allowed (" + allowed + "): why");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"allowed", "outside"}));
}

TEST(TriggerDecisionTest, APathIsOneWordOfTheLineWhateverItHolds) {
  const std::string path = "/t/a b%c\nd\te.json";
  EXPECT_EQ(encodedPath(path), "/t/a%20b%25c%0Ad%09e.json");
  EXPECT_EQ(decodedPath(encodedPath(path)), path);
  EXPECT_EQ(decodedPath("%4"), std::nullopt);
  EXPECT_EQ(decodedPath("%zz"), std::nullopt);
}

TEST(TriggerDecisionTest, APathWithANulOrAControlCharacterIsUnusable) {
  EXPECT_EQ(whyPathUnusable(std::string("/tmp/a\0b", 8)),
            "the path holds a NUL byte, which would cut it short");
  EXPECT_EQ(whyPathUnusable("/tmp/a\nb"), "the path holds a control character (0x0A)");
  EXPECT_EQ(whyPathUnusable("/tmp/a b.json"), std::nullopt);
}

// A window that would start in centuries (or at step INT64_MAX) left the process "busy" to
// every later request for the rest of its life.
TEST(TriggerDecisionTest, AWindowThatWouldStartTooFarAheadIsRefusedWithTheLimit) {
  TriggerRequest late;
  late.durationNs = 1'000'000;
  late.startAtNs = INT64_MAX;
  const TriggerWindow never(late, "/t.json", 100, 1'000, 0);
  EXPECT_EQ(whyStartTooFar(never, 100, 0).value_or("").rfind("the window would start ", 0), 0u);
  EXPECT_NE(whyStartTooFar(never, 100, 0)
                .value_or("")
                .find("a window starts at most 3600 s ahead, since one waiting to start holds off "
                      "every other request"),
            std::string::npos);
  late.startAtNs = 1'000 + kMaxStartLeadNs;  // exactly the limit
  EXPECT_EQ(whyStartTooFar(TriggerWindow(late, "/t.json", 100, 1'000, 0), 100, 0), std::nullopt);

  TriggerRequest steps;
  steps.steps = 5;
  steps.startStep = INT64_MAX - 1;
  const TriggerWindow far(steps, "/t.json", 0, 0, 10);
  EXPECT_EQ(*whyStartTooFar(far, 0, 10),
            "the window would start at step 9223372036854775806, 9223372036854775796 steps "
            "ahead of the next one (10); a window starts at most 1000000 steps ahead, since one "
            "waiting to start holds off every other request");
  steps.startStep = 10 + kMaxStartLeadSteps;
  EXPECT_EQ(whyStartTooFar(TriggerWindow(steps, "/t.json", 0, 0, 10), 0, 10), std::nullopt);
  steps.startStep = -1;
  steps.roundUpSteps = INT64_MAX;  // the next multiple of it is out of reach
  EXPECT_TRUE(whyStartTooFar(TriggerWindow(steps, "/t.json", 0, 0, 10), 0, 10).has_value());
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
  const TriggerWindow spaced(duration, "/a b\nc.json", 0, 0, 0);
  EXPECT_EQ(acceptedAnswer(spaced, 0, "step"), "ok /a%20b%0Ac.json") << "one line, one word";
  EXPECT_EQ(triggerMetadata(timed),
            Value::object({{"origin", "kinetrace trigger"},
                           {"asked", Value::object({{"duration_ns", 9}, {"start_at_ns", 0}})}}));
}

}  // namespace
}  // namespace kinetrace::ondemand
