// The injection's controller as a client of the dynolog daemon (a stand-in written from the
// protocol's facts): `dyno gputrace` configs are judged like `kinetrace trigger` requests and
// recorded the same way, in duration and in iteration mode; the daemon is told "busy" while
// a window is pending or recording.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "inject/controller.h"
#include "kinetrace/host.h"
#include "ondemand/dynolog_stand_in.h"
#include "runfiles/trigger_channel.h"
#include "session/session.h"
#include "support/fake_gpu_source.h"
#include "support/temp_dir.h"

namespace kinetrace::inject {
namespace {

using runfiles::sendRequest;
using runfiles::TraceNaming;

using namespace std::chrono_literals;
using kinetrace::testing::DynologStandIn;
using kinetrace::testing::TempDir;

template <typename Condition>
bool eventually(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::yield();
  }
  return condition();
}

nlohmann::json readTrace(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

class ControllerDynologTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("KINETRACE_CONTROL_DIR", (dir_.path() + "/control").c_str(), 1);
  }
  void TearDown() override { ::unsetenv("KINETRACE_CONTROL_DIR"); }

  ControllerOptions options() {
    ControllerOptions o;
    o.config.activities = ActivitySet::parse("host,kernel");
    o.config.captureRange = CaptureRange::OnDemand;
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
    ondemand::DynologClientOptions dynolog;
    dynolog.intervalSeconds = 0.01;
    dynolog.socketDir = dir_.path();
    dynolog.identity.jobId = 77;
    dynolog.identity.pids = {4242, 4000, 1};
    o.dynolog = dynolog;
    o.onDemandDir = dir_.path();  // the temporary directory may be outside /tmp
    return o;
  }

  // The polls the daemon saw from now on, waiting until one of type `type` arrived.
  bool pollOfType(DynologStandIn& daemon, int32_t type) {
    const std::size_t seen = daemon.pollCount();
    return eventually([&] {
      const auto polls = daemon.polls();
      for (std::size_t i = seen; i < polls.size(); ++i) {
        if (polls[i].type == type) return true;
      }
      return false;
    });
  }

  TempDir dir_{"dyno"};
  kinetrace::testing::FakeGpuCalls gpu_;
};

TEST_F(ControllerDynologTest, ADurationConfigRecordsThatWindowToThePathDynoPrints) {
  DynologStandIn daemon(dir_.path());
  Controller controller(options());
  controller.begin();
  ASSERT_TRUE(daemon.waitForPolls(1));
  const auto first = daemon.polls().front();
  EXPECT_EQ(first.type, 2) << "idle: it asks for a config";
  EXPECT_EQ(first.jobId, 77);
  EXPECT_EQ(first.pids, (std::vector<int32_t>{4242, 4000, 1}));

  daemon.queueConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                     "/dyno.json\nPROFILE_START_TIME=0\nACTIVITIES_DURATION_MSECS=300\n"
                     "REQUEST_TRACE_ID=918273\n");
  ASSERT_TRUE(eventually([&] { return controller.recording(); }));
  { Range inside("inside the dynolog window"); }
  EXPECT_TRUE(pollOfType(daemon, 0)) << "recording: it tells the daemon it is busy";
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  const std::string path = dir_.path() + "/dyno_4242.json";
  EXPECT_EQ(controller.savedTraces()[0], path);
  EXPECT_TRUE(pollOfType(daemon, 2)) << "idle again: it asks again";

  const nlohmann::json trace = readTrace(path);
  bool inside = false;
  for (const auto& e : trace["traceEvents"])
    inside |= e.value("name", "") == "inside the dynolog window";
  EXPECT_TRUE(inside);
  EXPECT_EQ(trace["kinetrace_trigger"]["origin"], "dynolog");
  EXPECT_EQ(trace["kinetrace_trigger"]["request_trace_id"], "918273");
  EXPECT_EQ(trace["kinetrace_trigger"]["asked"]["duration_ns"], 300'000'000);
  controller.finish();
}

TEST_F(ControllerDynologTest, AnIterationConfigRecordsTheStepsAskedForRoundedUp) {
  DynologStandIn daemon(dir_.path());
  Controller controller(options());
  controller.begin();
  for (int i = 0; i < 3; ++i) controller.onStepMark();  // steps 0..2 done: the next is 3
  daemon.queueConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                     "/steps.json\nPROFILE_START_ITERATION=0\n"
                     "PROFILE_START_ITERATION_ROUNDUP=5\nACTIVITIES_ITERATIONS=2\n");
  TriggerRequest status;
  status.verb = TriggerRequest::Verb::Status;
  ASSERT_TRUE(eventually([&] {
    return sendRequest(controller.triggerSocket(), status) == "ok step=3 state=triggered";
  }));
  // Taken: a socket trigger now gets the answer a second dynolog config would.
  TriggerRequest second;
  second.durationNs = 1'000'000;
  EXPECT_EQ(sendRequest(controller.triggerSocket(), second),
            "refused a triggered recording is already about to start (to " + dir_.path() +
                "/steps_4242.json)");
  controller.onStepMark();  // step 3
  controller.onStepMark();  // step 4
  EXPECT_FALSE(controller.recording()) << "rounded up to step 5";
  controller.onStepMark();  // step 5 starts the window
  EXPECT_TRUE(controller.recording());
  { Range inside("step 5 work"); }
  controller.onStepMark();  // step 6
  controller.onStepMark();  // step 7 ends it
  EXPECT_FALSE(controller.recording());
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  const nlohmann::json trace = readTrace(dir_.path() + "/steps_4242.json");
  EXPECT_EQ(trace["kinetrace_steps"]["first"], 5);
  EXPECT_EQ(trace["kinetrace_steps"]["count"], 2);
  EXPECT_EQ(trace["kinetrace_trigger"]["asked"]["first_step"], 5);
  EXPECT_EQ(trace["kinetrace_trigger"]["asked"]["round_up"], 5);
  controller.finish();
}

TEST_F(ControllerDynologTest, AConfigThatCannotBeHonouredIsRefusedAndTheNextOneIsTaken) {
  DynologStandIn daemon(dir_.path());
  ControllerOptions o = options();
  o.onDemandDir.clear();  // /tmp/ only
  Controller controller(std::move(o));
  controller.begin();
  daemon.queueConfig(
      "ACTIVITIES_LOG_FILE=/etc/kinetrace-should-not-exist.json\n"
      "ACTIVITIES_DURATION_MSECS=100\n");
  ASSERT_TRUE(eventually([&] { return daemon.configsHanded() == 1; }));
  EXPECT_TRUE(pollOfType(daemon, 2)) << "refused: still idle, still asking";
  EXPECT_FALSE(controller.recording());
  TriggerRequest status;
  status.verb = TriggerRequest::Verb::Status;
  EXPECT_EQ(sendRequest(controller.triggerSocket(), status), "ok step=0 state=idle");
  controller.finish();
  EXPECT_TRUE(controller.savedTraces().empty());
}

// The allowed directory was checked on the text of the path: a link inside it (made by any
// user) led the traced process to write the trace and its summary wherever it pointed.
TEST_F(ControllerDynologTest, ALinkInTheAllowedDirectoryThatLeadsOutIsNotWrittenThrough) {
  const std::string allowed = dir_.path() + "/allowed";
  ASSERT_EQ(::mkdir(allowed.c_str(), 0700), 0);
  // Outside /tmp (always allowed) as well as outside the allowed directory.
  const testing::TempDirOutsideTmp outsideDir;
  if (outsideDir.path().empty()) GTEST_SKIP() << "no directory outside /tmp could be made";
  const std::string& outside = outsideDir.path();
  ASSERT_EQ(::symlink(outside.c_str(), (allowed + "/out").c_str()), 0);
  DynologStandIn daemon(dir_.path());
  ControllerOptions o = options();
  o.onDemandDir = allowed;
  Controller controller(std::move(o));
  controller.begin();
  daemon.queueConfig("ACTIVITIES_LOG_FILE=" + allowed +
                     "/out/t.json\nACTIVITIES_DURATION_MSECS=50\n");
  ASSERT_TRUE(eventually([&] { return daemon.configsHanded() == 1; }));
  EXPECT_TRUE(pollOfType(daemon, 2)) << "refused: still idle, still asking";
  EXPECT_FALSE(controller.recording());
  // The next one, inside, is taken: the refusal left the process free.
  daemon.queueConfig("ACTIVITIES_LOG_FILE=" + allowed +
                     "/in/t.json\nACTIVITIES_DURATION_MSECS=50\n");
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  EXPECT_EQ(controller.savedTraces()[0], allowed + "/in/t_4242.json");
  controller.finish();
  EXPECT_TRUE(std::filesystem::is_empty(outside));
}

// A window that could never start was taken, and the process answered "busy" to every later
// request for the rest of its life.
TEST_F(ControllerDynologTest, AWindowThatCouldNeverStartIsRefusedAndTheProcessStaysFree) {
  DynologStandIn daemon(dir_.path());
  Controller controller(options());
  controller.begin();
  daemon.queueConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                     "/never.json\nPROFILE_START_ITERATION=9000000000000000000\n"
                     "ACTIVITIES_ITERATIONS=5\n");
  ASSERT_TRUE(eventually([&] { return daemon.configsHanded() == 1; }));
  EXPECT_TRUE(pollOfType(daemon, 2)) << "refused: still idle, still asking";
  TriggerRequest status;
  status.verb = TriggerRequest::Verb::Status;
  EXPECT_EQ(sendRequest(controller.triggerSocket(), status), "ok step=0 state=idle");
  daemon.queueConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                     "/soon.json\nACTIVITIES_DURATION_MSECS=50\n");
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  controller.finish();
}

TEST_F(ControllerDynologTest, WithoutADaemonTheProcessRunsAndStopsAtOnce) {
  Controller controller(options());  // nothing listens at dir/dynolog
  controller.begin();
  TriggerRequest request;
  request.durationNs = 50'000'000;
  request.output = dir_.path() + "/socket.json";
  EXPECT_EQ(sendRequest(controller.triggerSocket(), request), "ok " + request.output)
      << "kinetrace trigger still works";
  ASSERT_TRUE(eventually([&] { return controller.savedTraces().size() == 1; }));
  controller.finish();
}

}  // namespace
}  // namespace kinetrace::inject
