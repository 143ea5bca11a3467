// libkineto's on-demand traces on kinetrace (on_demand.h): the configs `dyno gputrace` sends
// are recorded by driving the framework's registered client as libkineto does (prepare with
// what was asked, start, stop before the trace is taken, its ops handed over), in duration and
// in iteration mode; the framework's own profiler and an on-demand window never overlap.

#include "on_demand.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "activity_profiler.h"
#include "kinetrace/config.h"
#include "libkineto.h"
#include "session/seam.h"
#include "session/session.h"
#include "session/session_support.h"
#include "support/temp_dir.h"

namespace kinetrace {
namespace {

using kineto::ActivityProfiler;
using kinetrace::testing::FakeGpuSource;
using kinetrace::testing::TempDir;
using libkineto::ActivityType;
using libkineto::CpuTraceBuffer;
using libkineto::GenericTraceActivity;

// PyTorch's registered client, as its kineto_client_interface.cpp behaves: start() begins
// recording ops, stop() hands them over through transferCpuTrace().
class FrameworkClient : public libkineto::ClientInterface {
 public:
  explicit FrameworkClient(ActivityProfiler& profiler) : profiler_(profiler) {}
  void init() override {}
  void prepare(bool shapes, bool memory, bool stack, bool flops, bool modules) override {
    calls.push_back(fmt("prepare", shapes, memory, stack, flops, modules));
  }
  void start() override {
    calls.push_back("start");
    startNs_ = internal::clockNowNs();
  }
  void stop() override {
    calls.push_back("stop");
    auto buffer = std::make_unique<CpuTraceBuffer>();
    buffer->span.startTime = startNs_;
    buffer->gpuOpCount = -1;
    buffer->emplace_activity(buffer->span, ActivityType::CPU_OP, "aten::on_demand_op");
    GenericTraceActivity& op = CpuTraceBuffer::toRef(buffer->activities.back());
    op.device = libkineto::processId();
    op.resource = libkineto::systemThreadId();
    op.startTime = startNs_;
    op.endTime = internal::clockNowNs();
    profiler_.transferCpuTrace(std::move(buffer));
  }
  void start_memory_profile() override {}
  void stop_memory_profile() override {}
  void export_memory_profile(const std::string&) override {}

  std::vector<std::string> calls;

 private:
  static std::string fmt(const char* name, bool a, bool b, bool c, bool d, bool e) {
    std::string text = name;
    for (bool flag : {a, b, c, d, e}) text += flag ? " 1" : " 0";
    return text;
  }
  ActivityProfiler& profiler_;
  int64_t startNs_ = 0;
};

class OnDemandTest : public ::testing::Test {
 protected:
  OnDemandTest()
      : backend_(/*cpuOnly=*/false, Config{}, /*activitiesFromEnvironment=*/false,
                 [this](const Config& config) {
                   detail::SessionOptions options;
                   options.gpuSourceFactory = [this] {
                     return std::make_unique<FakeGpuSource>(gpu_);
                   };
                   return detail::makeProfiler(config, std::move(options));
                 }),
        client_(backend_) {
    backend_.init();
    backend_.enableOnDemand(std::nullopt, dir_.path());
  }

  kineto::OnDemand& onDemand() { return *backend_.onDemand(); }
  // The trace a config asking for `path` writes (libkineto's "_<pid>" naming).
  std::string written(const std::string& name) {
    return dir_.path() + "/" + name + "_" + std::to_string(libkineto::processId()) + ".json";
  }
  nlohmann::json read(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    return nlohmann::json::parse(in);
  }
  bool holdsOp(const nlohmann::json& trace) {
    for (const auto& e : trace["traceEvents"]) {
      if (e.value("name", "") == "aten::on_demand_op") return true;
    }
    return false;
  }

  TempDir dir_{"kineto_on_demand"};
  std::shared_ptr<FakeGpuSource::State> gpu_ = std::make_shared<FakeGpuSource::State>();
  ActivityProfiler backend_;
  FrameworkClient client_;
};

TEST_F(OnDemandTest, ADurationConfigDrivesTheFrameworksClientAndWritesItsOps) {
  libkineto::api().registerClient(&client_);
  onDemand().handleConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                          "/timed.json\nACTIVITIES_DURATION_MSECS=100\n"
                          "PROFILE_REPORT_INPUT_SHAPES=true\nPROFILE_WITH_STACK=true\n"
                          "REQUEST_TRACE_ID=31\n");
  ASSERT_TRUE(onDemand().waitUntilIdle(20000));
  EXPECT_EQ(client_.calls, (std::vector<std::string>{"prepare 1 0 1 0 0", "start", "stop"}));
  const nlohmann::json trace = read(written("timed"));
  EXPECT_TRUE(holdsOp(trace)) << "the framework's ops are in the on-demand trace";
  EXPECT_EQ(trace["kinetrace_trigger"]["origin"], "dynolog");
  EXPECT_EQ(trace["kinetrace_trigger"]["request_trace_id"], "31");
  EXPECT_FALSE(backend_.isActive());
  libkineto::api().registerClient(nullptr);
}

// A rank's on-demand trace says which rank it is (as torchrun sets RANK and WORLD_SIZE), so
// that `kinetrace merge`, `kinetrace analyze` and HTA read a job's traces as its ranks; no
// torch.profiler runs to add its own distributedInfo then.
TEST_F(OnDemandTest, AnOnDemandTraceOfARankSaysItsRank) {
  ::setenv("RANK", "3", 1);
  ::setenv("WORLD_SIZE", "8", 1);
  onDemand().handleConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                          "/ranked.json\nACTIVITIES_DURATION_MSECS=10\n");
  const bool idle = onDemand().waitUntilIdle(20000);
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
  ASSERT_TRUE(idle);
  const nlohmann::json trace = read(written("ranked"));
  EXPECT_EQ(trace["distributedInfo"]["rank"], 3);
  EXPECT_EQ(trace["distributedInfo"]["world_size"], 8);
}

TEST_F(OnDemandTest, AnIterationConfigStartsAndEndsOnTheSteppingThreadAtTheStepsAsked) {
  libkineto::api().registerClient(&client_);
  for (int i = 0; i < 6; ++i) backend_.step();  // steps 0..5 done
  onDemand().handleConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                          "/steps.json\nPROFILE_START_ITERATION=0\n"
                          "PROFILE_START_ITERATION_ROUNDUP=4\nACTIVITIES_ITERATIONS=3\n");
  EXPECT_TRUE(onDemand().busy()) << "a window is pending";
  backend_.step();  // step 6
  backend_.step();  // step 7
  EXPECT_TRUE(client_.calls.empty()) << "nothing before step 8, the next multiple of 4";
  backend_.step();  // step 8: starts, on this thread, before step() returns
  EXPECT_EQ(client_.calls, (std::vector<std::string>{"prepare 0 0 0 0 0", "start"}));
  EXPECT_TRUE(backend_.isActive());
  backend_.step();  // 9
  backend_.step();  // 10
  backend_.step();  // 11 ends it
  EXPECT_EQ(client_.calls.back(), "stop");
  EXPECT_FALSE(backend_.isActive());
  ASSERT_TRUE(onDemand().waitUntilIdle(20000));
  const nlohmann::json trace = read(written("steps"));
  EXPECT_TRUE(holdsOp(trace));
  EXPECT_EQ(trace["kinetrace_steps"]["first"], 8);
  EXPECT_EQ(trace["kinetrace_steps"]["count"], 3);
  libkineto::api().registerClient(nullptr);
}

TEST_F(OnDemandTest, TheFrameworksOwnTraceAndAnOnDemandWindowNeverOverlap) {
  // The program's torch.profiler records: the daemon is told busy and a config is refused.
  backend_.prepareTrace({ActivityType::CPU_OP, ActivityType::CONCURRENT_KERNEL}, "");
  backend_.startTrace();
  EXPECT_TRUE(onDemand().busy());
  onDemand().handleConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                          "/refused.json\nACTIVITIES_DURATION_MSECS=50\n");
  ASSERT_TRUE(onDemand().waitUntilIdle(20000));
  (void)backend_.stopTrace();
  std::ifstream refused(written("refused"));
  EXPECT_FALSE(refused.good()) << "no on-demand trace while the framework's records";

  // An on-demand window records: the framework's start and stop leave it alone.
  onDemand().handleConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                          "/kept.json\nPROFILE_START_ITERATION=0\nACTIVITIES_ITERATIONS=1\n");
  backend_.step();  // starts
  ASSERT_TRUE(backend_.isActive());
  backend_.startTrace();              // refused: said once
  auto empty = backend_.stopTrace();  // an empty trace; the window goes on
  EXPECT_TRUE(empty->activities()->empty());
  EXPECT_TRUE(backend_.isActive());
  backend_.step();  // ends it
  ASSERT_TRUE(onDemand().waitUntilIdle(20000));
  std::ifstream kept(written("kept"));
  EXPECT_TRUE(kept.good());
}

TEST_F(OnDemandTest, AConfigOutsideTheAllowedDirectoriesWritesNothing) {
  onDemand().handleConfig(
      "ACTIVITIES_LOG_FILE=/etc/kinetrace-not-here.json\n"
      "ACTIVITIES_DURATION_MSECS=10\n");
  EXPECT_FALSE(onDemand().busy());
  EXPECT_FALSE(backend_.isActive());
}

// The allowed directories were checked on the text of the path: a link inside one led the
// trace wherever it pointed.
TEST_F(OnDemandTest, ALinkInsideTheAllowedDirectoryThatLeadsOutWritesNothing) {
  // Outside /tmp too (always allowed).
  const testing::TempDirOutsideTmp outsideDir;
  if (outsideDir.path().empty()) GTEST_SKIP() << "no directory outside /tmp could be made";
  const std::string& outside = outsideDir.path();
  ASSERT_EQ(::symlink(outside.c_str(), (dir_.path() + "/out").c_str()), 0);
  onDemand().handleConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                          "/out/t.json\nACTIVITIES_DURATION_MSECS=10\n");
  EXPECT_FALSE(onDemand().busy());
  EXPECT_FALSE(backend_.isActive());
  EXPECT_TRUE(std::filesystem::is_empty(outside));
}

TEST_F(OnDemandTest, AWindowThatCouldNeverStartIsRefusedAndLeavesTheProcessFree) {
  onDemand().handleConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                          "/never.json\nPROFILE_START_ITERATION=9000000000000000000\n");
  EXPECT_FALSE(onDemand().busy()) << "not pending for the rest of the process's life";
}

TEST_F(OnDemandTest, AForkedChildNeitherPollsNorRecordsNorWaitsForTheParentsThreads) {
#if defined(__SANITIZE_THREAD__)
  // The child allocates while the parent's driver thread runs: ThreadSanitizer's runtime does
  // not take its own locks across fork, and the child waited forever for one (a 300 s timeout
  // in CI's TSan stage, once). The plain and ASan builds run this test.
  GTEST_SKIP() << "a forked child of a multi-threaded process cannot allocate safely under "
                  "ThreadSanitizer";
#endif
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A DataLoader worker: its copy takes no config and its exit path joins nothing.
    onDemand().handleConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                            "/child.json\nACTIVITIES_DURATION_MSECS=10\n");
    const bool idle = !onDemand().busy();
    onDemand().shutDown();
    ::_exit(idle ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not end by itself";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's copy took a config";
  std::ifstream none(written("child"));
  EXPECT_FALSE(none.good());
  // The parent goes on as before.
  onDemand().handleConfig("ACTIVITIES_LOG_FILE=" + dir_.path() +
                          "/parent.json\nACTIVITIES_DURATION_MSECS=10\n");
  ASSERT_TRUE(onDemand().waitUntilIdle(20000));
  std::ifstream parent(written("parent"));
  EXPECT_TRUE(parent.good());
}

}  // namespace
}  // namespace kinetrace
