// On-demand traces: `kinetrace trigger`'s channel to a traced process's controller. A process
// on demand records nothing (and does not touch CUPTI) until asked; a request records exactly
// the window asked for, to the path asked for; a request that overlaps a recording is
// refused with the reason; only the owner's private directory holds the sockets.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "inject/controller.h"
#include "kinetrace/host.h"
#include "ondemand/trigger_decision.h"
#include "runfiles/trigger_channel.h"
#include "session/session.h"
#include "support/fake_gpu_source.h"
#include "support/temp_dir.h"

namespace kinetrace::inject {
namespace {

using runfiles::controlDirectory;
using runfiles::formatRequest;
using runfiles::parseRequest;
using runfiles::sendRequest;
using runfiles::socketsOfJob;
using runfiles::socketsOfPid;
using runfiles::traceFileName;
using runfiles::TraceNaming;

using namespace std::chrono_literals;
using detail::Result;
using kinetrace::testing::TempDir;

template <typename Condition>
bool eventually(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::yield();
  }
  return condition();
}

bool startsWith(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

class TriggerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controlDir_ = dir_.path() + "/control";
    ::setenv("KINETRACE_CONTROL_DIR", controlDir_.c_str(), 1);
  }
  void TearDown() override { ::unsetenv("KINETRACE_CONTROL_DIR"); }

  ControllerOptions options(CaptureRange range) {
    ControllerOptions o;
    o.config.activities = ActivitySet::parse("host,kernel");
    o.config.captureRange = range;
    o.config.output = dir_.path();
    o.config.runId = "job7";
    o.naming = TraceNaming{"job7", "testhost", 4242, std::nullopt, std::nullopt};
    o.profilerFactory = [this](Config config, const internal::ProfilerOptions& made) {
      detail::SessionOptions session;
      session.insideDriverInit = made.insideDriverInit;
      session.gpuSourceFactory = [this] {
        return std::make_unique<kinetrace::testing::FakeGpuSource>(gpu_);
      };
      return detail::makeProfiler(std::move(config), std::move(session));
    };
    return o;
  }

  TempDir dir_;
  std::string controlDir_;
  kinetrace::testing::FakeGpuCalls gpu_;
};

TEST_F(TriggerTest, OnDemandRecordsNothingUntilAskedThenExactlyTheWindowAskedFor) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  ASSERT_EQ(controller.triggerSocket(), controlDir_ + "/job7.4242.sock");
  EXPECT_FALSE(controller.recording());
  EXPECT_EQ(gpu_.enables.load(), 0) << "idle on demand: CUPTI untouched";

  const std::string path = dir_.path() + "/asked.json";
  TriggerRequest request;
  request.durationNs = 300'000'000;
  request.output = path;
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request), "ok " + path);
  ASSERT_TRUE(eventually([&] { return controller.recording(); }));
  { Range inside("inside the window"); }
  ASSERT_TRUE(eventually([&] { return !controller.recording(); })) << "the duration ends it";
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  EXPECT_EQ(controller.savedTraces()[0], path);
  { Range after("after the window"); }

  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  bool inside = false, after = false;
  for (const auto& e : trace["traceEvents"]) {
    inside |= e.value("name", "") == "inside the window";
    after |= e.value("name", "") == "after the window";
  }
  EXPECT_TRUE(inside);
  EXPECT_FALSE(after);
  EXPECT_EQ(trace["kinetrace_capture"], "on demand");

  // The process waits for the next request: a second window, named by the run into a
  // directory asked for.
  request.output = dir_.path() + "/";
  const std::string answer = sendRequest(controller.triggerSocket(), request);
  EXPECT_EQ(answer,
            "ok " + dir_.path() + "/" + traceFileName(options(CaptureRange::OnDemand).naming, 2));
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 2; }));
  controller.finish();
  struct stat info {};
  EXPECT_NE(::stat(controller.triggerSocket().c_str(), &info), 0) << "the socket goes at exit";
}

TEST_F(TriggerTest, ARequestThatOverlapsARecordingIsRefusedWithTheReason) {
  Controller controller(options(CaptureRange::Whole));
  controller.begin();
  ASSERT_TRUE(controller.recording());
  TriggerRequest request;
  request.durationNs = 1'000'000'000;
  const std::string answer = sendRequest(controller.triggerSocket(), request);
  EXPECT_TRUE(startsWith(answer, "refused a trace is already recording (window 1")) << answer;
  EXPECT_NE(answer.find("until the process exits"), std::string::npos) << answer;
  controller.finish();
}

TEST_F(TriggerTest, AfterItsConfiguredWindowEndsAProcessCanBeTriggered) {
  ControllerOptions o = options(CaptureRange::Whole);
  o.config.durationNs = 100'000'000;
  Controller controller(o);
  controller.begin();
  ASSERT_TRUE(controller.recording());
  ASSERT_TRUE(eventually([&] { return !controller.recording(); })) << "the duration ends it";
  TriggerRequest request;
  request.durationNs = 100'000'000;
  request.output = dir_.path() + "/later.json";
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request), "ok " + request.output);
  ASSERT_TRUE(eventually([&] {
    const auto saved = controller.savedTraces();
    return !saved.empty() && saved.back() == request.output;
  }));
  controller.finish();
}

TEST_F(TriggerTest, ARequestWithoutADurationIsRefusedWithTheReason) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  TriggerRequest request;  // duration 0
  const std::string answer = sendRequest(controller.triggerSocket(), request);
  EXPECT_EQ(answer,
            "refused say how long to record: a duration (duration_ns > 0) or a number of steps "
            "(steps > 0), one of the two");
  EXPECT_FALSE(controller.recording());
  controller.finish();
}

TEST_F(TriggerTest, AnOutputDirectoryIsCreatedOrTheRequestRefusedSayingWhy) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  TriggerRequest request;
  request.durationNs = 100'000'000;
  request.output = dir_.path() + "/new/deeper/t.json";
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request), "ok " + request.output);
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  request.output = dir_.path() + "/new/deeper/t.json/under-a-file.json";
  const std::string answer = sendRequest(controller.triggerSocket(), request);
  EXPECT_EQ(answer, "refused the trace cannot be written to " + request.output + ": " +
                        dir_.path() + "/new/deeper/t.json: not a directory");
  controller.finish();
}

// "ok" was answered for outputs that then failed to be written.
TEST_F(TriggerTest, AnOutputThatCannotBeWrittenIsRefusedBeforeTheAnswer) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  TriggerRequest request;
  request.durationNs = 100'000'000;
  request.output = "/dev/null";
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request),
            "refused the trace cannot be written to /dev/null: it is a character device, not a "
            "regular file");
  request.output = "/proc/self/t.json";
  EXPECT_TRUE(startsWith(sendRequest(controller.triggerSocket(), request),
                         "refused the trace cannot be written to /proc/self/t.json: /proc/"));
  EXPECT_FALSE(controller.recording());
  request.output = dir_.path() + "/fine.json";
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request), "ok " + request.output)
      << "the refusals left the process free";
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  controller.finish();
}

TEST_F(TriggerTest, AStartTimeTooFarAheadIsRefusedWithTheLimit) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  TriggerRequest request;
  request.durationNs = 100'000'000;
  request.startAtNs = INT64_MAX;
  const std::string answer = sendRequest(controller.triggerSocket(), request);
  EXPECT_TRUE(startsWith(answer, "refused the window would start ")) << answer;
  TriggerRequest status;
  status.verb = TriggerRequest::Verb::Status;
  EXPECT_EQ(sendRequest(controller.triggerSocket(), status), "ok step=0 state=idle");
  controller.finish();
}

TEST_F(TriggerTest, AStartTimeLetsTheProcessesOfAJobStartTogether) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  TriggerRequest request;
  request.durationNs = 100'000'000;
  request.startAtNs = realTimeNs() + 400'000'000;
  const std::vector<std::string> sockets = socketsOfJob("job7");
  ASSERT_EQ(sockets, std::vector<std::string>{controller.triggerSocket()});
  EXPECT_EQ(socketsOfPid(4242), sockets);
  EXPECT_TRUE(startsWith(sendRequest(sockets[0], request), "ok "));
  EXPECT_FALSE(controller.recording()) << "not before its start time";
  // A second request while the first waits to start is refused.
  EXPECT_TRUE(startsWith(sendRequest(sockets[0], request), "refused a triggered recording"));
  ASSERT_TRUE(eventually([&] { return controller.recording(); }));
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  controller.finish();
}

TEST_F(TriggerTest, TheLongestDurationRecordsInsteadOfWrappingIntoAnEndAtOnce) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  TriggerRequest request;
  request.durationNs = INT64_MAX;
  request.output = dir_.path() + "/forever.json";
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request), "ok " + request.output);
  // Without saturation the window's end wrapped into the past: it started and stopped in
  // one round of the timers, never to be seen recording.
  ASSERT_TRUE(eventually([&] { return controller.recording(); }));
  TriggerRequest status;
  status.verb = TriggerRequest::Verb::Status;
  EXPECT_EQ(sendRequest(controller.triggerSocket(), status), "ok step=0 state=recording");
  controller.finish();
  EXPECT_EQ(controller.savedTraces(), std::vector<std::string>{request.output});
}

TEST_F(TriggerTest, AnOutputPathWithASpaceIsWrittenThere) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  TriggerRequest request;
  request.durationNs = 50'000'000;
  request.output = dir_.path() + "/my traces/a trace.json";
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request),
            "ok " + ondemand::encodedPath(request.output))
      << "the answer is one line of words, whatever the path holds";
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  EXPECT_EQ(controller.savedTraces()[0], request.output);
  controller.finish();
}

TEST_F(TriggerTest, ATriggeredWindowInADirectoryHasTheExtensionOfTheTraceFormat) {
  ControllerOptions o = options(CaptureRange::OnDemand);
  o.config.traceFormat = TraceFormat::Pftrace;
  Controller controller(o);
  controller.begin();
  TriggerRequest request;
  request.durationNs = 50'000'000;
  request.output = dir_.path() + "/asked/";
  const std::string answer = sendRequest(controller.triggerSocket(), request);
  EXPECT_EQ(answer, "ok " + dir_.path() + "/asked/kinetrace-job7-testhost-pid4242.pftrace");
  controller.finish();
}

// A client that connects and says nothing (or a byte now and then) must not hold the control
// thread: a termination signal is acted on while it still waits, unanswered.
TEST_F(TriggerTest, ASignalActsAtOnceWhileAClientHoldsAConnectionOpen) {
  ControllerOptions o = options(CaptureRange::OnDemand);
  o.triggerLimits.requestTimeoutNs = int64_t{3600} * 1'000'000'000;  // never, in this test
  std::atomic<int> signalled{0};
  o.afterSignal = [&](int signal) { signalled.store(signal); };
  Controller controller(o);
  controller.begin();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, controller.triggerSocket().c_str(),
              controller.triggerSocket().size() + 1);
  const int silent = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(silent, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::send(silent, "r", 1, MSG_NOSIGNAL), 1) << "a request begun, never finished";
  // Served beside it: the control thread is not waiting on the silent one.
  TriggerRequest status;
  status.verb = TriggerRequest::Verb::Status;
  EXPECT_EQ(sendRequest(controller.triggerSocket(), status), "ok step=0 state=idle");

  const unsigned char sigterm = SIGTERM;
  ASSERT_EQ(::write(controller.wakeFd(), &sigterm, 1), 1);
  ASSERT_TRUE(eventually([&] { return signalled.load() == SIGTERM; }));
  char byte = 0;
  EXPECT_EQ(::recv(silent, &byte, 1, MSG_DONTWAIT), -1)
      << "the silent client was not given up on to let the signal through";
  EXPECT_EQ(errno, EAGAIN);
  ::close(silent);
}

TEST_F(TriggerTest, AControlDirectoryOthersCanEnterIsNeverUsed) {
  ASSERT_EQ(::mkdir(controlDir_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(controlDir_.c_str(), 0755), 0);
  try {
    controlDirectory();
    FAIL() << "a directory open to others was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(controlDir_), std::string::npos) << e.what();
  }
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  EXPECT_EQ(controller.triggerSocket(), "") << "no socket where others could reach it";
  controller.finish();
}

// Why a request line is refused; "(accepted)" when it is not.
std::string whyRefused(const std::string& line) {
  const Result<TriggerRequest> parsed = parseRequest(line);
  return parsed.ok() ? "(accepted)" : parsed.why();
}

TEST(TriggerRequestTest, RequestsReadBackAsWrittenAndBadOnesSayWhy) {
  TriggerRequest request;
  request.durationNs = 5'000'000'000;
  request.output = "/data/t.json";
  request.startAtNs = 1234;
  const Result<TriggerRequest> parsed = parseRequest(formatRequest(request));
  ASSERT_TRUE(parsed.ok()) << parsed.why();
  EXPECT_EQ(parsed.value().durationNs, request.durationNs);
  EXPECT_EQ(parsed.value().output, request.output);
  EXPECT_EQ(parsed.value().startAtNs, 1234);
  EXPECT_EQ(whyRefused("stop"), "unknown request \"stop\" (expected \"record\" or \"status\")");
  EXPECT_EQ(whyRefused("record duration_ns=abc"),
            "\"duration_ns\" needs a whole number, got \"abc\"");
  EXPECT_EQ(whyRefused("record duration_ns=5 color=red"), "unknown field \"color\"");

  TriggerRequest steps;
  steps.steps = 20;
  steps.startStep = 400;
  const Result<TriggerRequest> stepsParsed = parseRequest(formatRequest(steps));
  ASSERT_TRUE(stepsParsed.ok()) << stepsParsed.why();
  EXPECT_EQ(stepsParsed.value().steps, 20);
  EXPECT_EQ(stepsParsed.value().startStep, 400);
  EXPECT_EQ(stepsParsed.value().durationNs, 0);
  EXPECT_FALSE(parseRequest("record steps=5 duration_ns=5").ok()) << "one of the two";
  EXPECT_EQ(whyRefused("record steps=5 start_at_ns=5"),
            "start_at_ns goes with a duration; a window of steps starts at start_step");
  EXPECT_FALSE(parseRequest("record duration_ns=5 start_step=5").ok());
  TriggerRequest status;
  status.verb = TriggerRequest::Verb::Status;
  ASSERT_TRUE(parseRequest(formatRequest(status)).ok());
  EXPECT_EQ(parseRequest("status").value().verb, TriggerRequest::Verb::Status);
}

// ---- steps ----------------------------------------------------------------------------

// What the NVTX injection does for a range named as a step: the mark, then the range.
void markStep(Controller& controller, int64_t step) {
  controller.onStepMark();
  beginRange("step " + std::to_string(step));
  endRange();
}

std::vector<std::string> stepRangesIn(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::vector<std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    const std::string name = e.value("name", "");
    if (e.value("ph", "") == "X" && name.rfind("step ", 0) == 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

nlohmann::json metadataOf(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  return nlohmann::json::parse(in).value(key, nlohmann::json());
}

TEST_F(TriggerTest, AWindowOfStepsHoldsExactlyTheStepsAskedFor) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  for (int64_t step = 0; step < 3; ++step) markStep(controller, step);
  TriggerRequest status;
  status.verb = TriggerRequest::Verb::Status;
  EXPECT_EQ(sendRequest(controller.triggerSocket(), status), "ok step=3 state=idle");

  const std::string path = dir_.path() + "/steps.json";
  TriggerRequest request;
  request.steps = 2;
  request.output = path;
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request), "ok " + path + "\tfrom step 3");
  EXPECT_EQ(sendRequest(controller.triggerSocket(), status), "ok step=3 state=triggered");
  EXPECT_FALSE(controller.recording()) << "a window of steps starts at a step mark";
  markStep(controller, 3);
  EXPECT_TRUE(controller.recording()) << "the mark of its first step starts it";
  markStep(controller, 4);
  markStep(controller, 5);  // the mark that ends it: not in it
  EXPECT_FALSE(controller.recording());
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  EXPECT_EQ(stepRangesIn(path), (std::vector<std::string>{"step 3", "step 4"}));
  const nlohmann::json steps = metadataOf(path, "kinetrace_steps");
  EXPECT_EQ(steps.value("first", -1), 3);
  EXPECT_EQ(steps.value("count", -1), 2);
  controller.finish();
}

TEST_F(TriggerTest, AStartStepLetsTheProcessesOfAJobStartAtTheSameStep) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  markStep(controller, 0);
  TriggerRequest request;
  request.steps = 1;
  request.startStep = 3;
  request.output = dir_.path() + "/at3.json";
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request),
            "ok " + request.output + "\tfrom step 3");
  markStep(controller, 1);
  markStep(controller, 2);
  EXPECT_FALSE(controller.recording());
  markStep(controller, 3);
  EXPECT_TRUE(controller.recording());
  markStep(controller, 4);
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  EXPECT_EQ(stepRangesIn(request.output), std::vector<std::string>{"step 3"});

  // A start step already passed: the next step, and the answer says which.
  request.startStep = 1;
  request.output = dir_.path() + "/late.json";
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request),
            "ok " + request.output + "\tfrom step 5");
  controller.finish();
}

TEST_F(TriggerTest, AWindowOfStepsAskedBeforeAnyStepSaysNoneWasSeen) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  TriggerRequest request;
  request.steps = 1;
  const std::string answer = sendRequest(controller.triggerSocket(), request);
  EXPECT_NE(answer.find("from step 0 (no step marks seen yet: NVTX ranges named "
                        "ProfilerStep#,step, or kinetrace::step() calls)"),
            std::string::npos)
      << answer;
  controller.finish();
}

TEST_F(TriggerTest, ExitDuringAWindowOfStepsSavesTheStepsItHad) {
  Controller controller(options(CaptureRange::OnDemand));
  controller.begin();
  TriggerRequest request;
  request.steps = 100;
  request.output = dir_.path() + "/cut.json";
  ASSERT_TRUE(startsWith(sendRequest(controller.triggerSocket(), request), "ok "));
  markStep(controller, 0);
  markStep(controller, 1);
  controller.finish();
  EXPECT_EQ(controller.savedTraces(), std::vector<std::string>{request.output});
  EXPECT_EQ(stepRangesIn(request.output), (std::vector<std::string>{"step 0", "step 1"}));
  EXPECT_EQ(metadataOf(request.output, "kinetrace_steps").value("count", -1), 2);
}

TEST_F(TriggerTest, AScheduleRecordsOneTracePerCycleOfItsActiveSteps) {
  ControllerOptions o = options(CaptureRange::Whole);
  o.config.set("schedule", "wait=1,warmup=1,active=2,repeat=2");
  Controller controller(o);
  controller.begin();
  EXPECT_FALSE(controller.recording()) << "nothing before the first step";
  EXPECT_EQ(gpu_.enables.load(), 0);

  TriggerRequest request;
  request.durationNs = 100'000'000;
  const std::string refused = sendRequest(controller.triggerSocket(), request);
  EXPECT_TRUE(startsWith(refused, "refused this process records by its step schedule")) << refused;

  markStep(controller, 0);  // wait
  markStep(controller, 1);  // warm-up: CUPTI set up, nothing recorded
  EXPECT_FALSE(controller.recording());
  EXPECT_GE(gpu_.enables.load(), 1) << "warm-up sets CUPTI up";
  markStep(controller, 2);  // active
  EXPECT_TRUE(controller.recording());
  markStep(controller, 3);
  for (int64_t step = 4; step < 9; ++step) markStep(controller, step);
  EXPECT_FALSE(controller.recording());
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 2; }));
  const std::vector<std::string> traces = controller.savedTraces();
  EXPECT_EQ(stepRangesIn(traces[0]), (std::vector<std::string>{"step 2", "step 3"}));
  EXPECT_EQ(stepRangesIn(traces[1]), (std::vector<std::string>{"step 6", "step 7"}));
  EXPECT_EQ(metadataOf(traces[1], "kinetrace_steps"),
            nlohmann::json({{"first", 6}, {"count", 2}, {"cycle", 2}}));
  EXPECT_EQ(metadataOf(traces[0], "kinetrace_capture"), "step schedule");

  // The schedule is over: a trigger is taken now.
  request.output = dir_.path() + "/after.json";
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request), "ok " + request.output);
  controller.finish();
}

}  // namespace
}  // namespace kinetrace::inject
