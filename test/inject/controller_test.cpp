// The injection's controller: when it records, where and how it saves, what a signal or a
// fork does. GPU work is faked; host ranges are real.

#include "inject/controller.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "analysis/summary.h"
#include "host/host_recorder.h"
#include "kinetrace/host.h"

namespace kinetrace::inject {
namespace {

// Polls `condition` until it holds or 10 s pass; for state a background timer changes.
template <typename Condition>
bool eventually(Condition condition) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::yield();
  }
  return condition();
}

using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/kinetrace-controller-test-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class FakeGpuSource final : public detail::GpuSource {
 public:
  struct Seen {
    int enables = 0, starts = 0, stops = 0;
    detail::GpuOptions options;
  };
  explicit FakeGpuSource(Seen* seen) : seen_(seen) {}
  std::string enable(const detail::GpuOptions& options) override {
    ++seen_->enables;
    seen_->options = options;
    return "";
  }
  void start(int64_t) override { ++seen_->starts; }
  void stop(detail::TraceData&) override { ++seen_->stops; }
  void disable() noexcept override {}
  std::string describe() const override { return "fake GPU"; }

 private:
  Seen* seen_;
};

std::string readFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

class ControllerTest : public ::testing::Test {
 protected:
  ControllerOptions options(const std::string& activities = "host") {
    ControllerOptions o;
    o.config.activities = ActivitySet::parse(activities);
    o.config.output = dir_.path();
    o.config.runId = "t1";
    o.naming = TraceNaming{"t1", "testhost", 77, std::string("0"), std::nullopt};
    o.processName = "trainer --fast";
    o.commandLine = "trainer --fast";
    o.afterSignal = [this](int signal) { signalled_.set_value(signal); };
    o.gpuSourceFactory = [this] { return std::make_unique<FakeGpuSource>(&gpu_); };
    return o;
  }
  std::string tracePath(int window = 1) {
    return dir_.path() + "/" +
           traceFileName(TraceNaming{"t1", "testhost", 77, std::string("0"), std::nullopt}, window);
  }

  TempDir dir_;
  FakeGpuSource::Seen gpu_;
  std::promise<int> signalled_;
};

TEST_F(ControllerTest, WholeRunRecordsFromBeginAndSavesTraceAndSummaryAtFinish) {
  Controller controller(options());
  controller.begin();
  EXPECT_TRUE(controller.recording());
  { Range step("step 1"); }
  controller.finish();
  EXPECT_FALSE(controller.recording());
  ASSERT_EQ(controller.savedTraces(), std::vector<std::string>{tracePath()});

  nlohmann::json trace = nlohmann::json::parse(readFile(tracePath()));
  bool found = false;
  for (const auto& event : trace["traceEvents"]) found |= event.value("name", "") == "step 1";
  EXPECT_TRUE(found) << "the range is in the trace";
  EXPECT_EQ(trace["kinetrace_process_name"], "trainer --fast");
  EXPECT_EQ(trace["kinetrace_run_id"], "t1");
  EXPECT_EQ(trace["kinetrace_capture"], "whole run");

  detail::Summary summary = detail::summaryFromJson(readFile(summaryPathFor(tracePath())));
  EXPECT_EQ(summary.traceFile, tracePath());
  EXPECT_EQ(summary.hostRangeCount, 1u);
}

TEST_F(ControllerTest, FinishingTwiceSavesOnce) {
  Controller controller(options());
  controller.begin();
  instant("something happened");
  controller.finish();
  controller.finish();
  EXPECT_EQ(controller.savedTraces().size(), 1u);
}

TEST_F(ControllerTest, AWindowThatRecordedNothingWritesNoTrace) {
  Controller controller(options());
  controller.begin();
  controller.finish();
  EXPECT_TRUE(controller.savedTraces().empty());
  EXPECT_FALSE(exists(tracePath()));
}

TEST_F(ControllerTest, TheOutputDirectoryIsCreated) {
  ControllerOptions o = options();
  o.config.output = dir_.path() + "/nested/traces/";
  Controller controller(o);
  controller.begin();
  instant("something happened");
  controller.finish();
  EXPECT_EQ(controller.outputDirectory(), dir_.path() + "/nested/traces");
  ASSERT_EQ(controller.savedTraces().size(), 1u);
  EXPECT_TRUE(exists(controller.savedTraces()[0]));
}

TEST_F(ControllerTest, DelayStartsLaterAndDurationEndsTheOnlyWindow) {
  ControllerOptions o = options();
  o.config.delayNs = 200'000'000;
  o.config.durationNs = 200'000'000;
  o.processStartBootNs = bootTimeNs();
  Controller controller(o);
  controller.begin();
  EXPECT_FALSE(controller.recording()) << "the delay has not passed";
  // The control thread's timers move the state; wait for each change (bounded), no sleeps.
  ASSERT_TRUE(eventually([&] { return controller.recording(); })) << "the delay ended";
  instant("inside the window");
  ASSERT_TRUE(eventually([&] { return !controller.recording(); })) << "the duration ended";
  controller.finish();
  ASSERT_EQ(controller.savedTraces().size(), 1u);
  nlohmann::json trace = nlohmann::json::parse(readFile(tracePath()));
  int64_t window = trace["kinetrace_window_stop_ns"].get<int64_t>() -
                   trace["kinetrace_window_start_ns"].get<int64_t>();
  EXPECT_GE(window, 190'000'000);
  EXPECT_LT(window, 2'000'000'000) << "the duration timer ended the window";
  EXPECT_EQ(trace["kinetrace_capture"], "delay/duration");
}

TEST_F(ControllerTest, ADelayCountsFromProcessStartAndMayHavePassedAlready) {
  ControllerOptions o = options();
  o.config.delayNs = 1'000'000'000;
  o.processStartBootNs = bootTimeNs() - 10'000'000'000;
  Controller controller(o);
  controller.begin();
  EXPECT_TRUE(controller.recording());
}

TEST_F(ControllerTest, ProfilerApiWindowsAreSavedOneTraceEach) {
  ControllerOptions o = options("default");
  o.config.captureRange = CaptureRange::CudaProfilerApi;
  Controller controller(o);
  controller.begin();
  EXPECT_EQ(gpu_.enables, 1) << "CUPTI is subscribed up front";
  EXPECT_TRUE(gpu_.options.profilerControl);
  EXPECT_TRUE(gpu_.options.deferCollection);
  EXPECT_FALSE(controller.recording());

  controller.onProfilerApi(false);  // a stop before any start is ignored
  controller.onProfilerApi(true);
  EXPECT_TRUE(controller.recording());
  { Range step("window 1 work"); }
  controller.onProfilerApi(true);  // a second start while recording is ignored
  controller.onProfilerApi(false);
  EXPECT_FALSE(controller.recording());
  controller.onProfilerApi(true);
  { Range step("window 2 work"); }
  controller.onProfilerApi(false);
  controller.finish();

  auto saved = controller.savedTraces();
  std::sort(saved.begin(), saved.end());
  std::vector<std::string> expected = {tracePath(1), tracePath(2)};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(saved, expected);
  EXPECT_EQ(gpu_.starts, 2);
  EXPECT_EQ(gpu_.stops, 2);
  EXPECT_NE(readFile(tracePath(2)).find("window 2 work"), std::string::npos);
  EXPECT_EQ(readFile(tracePath(2)).find("window 1 work"), std::string::npos);
}

TEST_F(ControllerTest, ExitWhileRecordingAProfilerApiWindowSavesIt) {
  ControllerOptions o = options("default");
  o.config.captureRange = CaptureRange::CudaProfilerApi;
  Controller controller(o);
  controller.begin();
  controller.onProfilerApi(true);
  instant("something happened");
  controller.finish();
  EXPECT_EQ(controller.savedTraces().size(), 1u);
  controller.onProfilerApi(true);  // after exit began: nothing starts
  EXPECT_FALSE(controller.recording());
}

TEST_F(ControllerTest, ATerminationSignalSavesTheTraceThenHandsTheSignalOn) {
  Controller controller(options());
  controller.begin();
  { Range step("before the signal"); }
  unsigned char sigterm = SIGTERM;
  ASSERT_EQ(::write(controller.wakeFd(), &sigterm, 1), 1);  // what the signal handler does
  auto signalled = signalled_.get_future();
  ASSERT_EQ(signalled.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(signalled.get(), SIGTERM);
  EXPECT_EQ(controller.savedTraces().size(), 1u) << "saved before the signal is handed on";
  EXPECT_NE(readFile(tracePath()).find("before the signal"), std::string::npos);
}

TEST_F(ControllerTest, AForkedChildNeverRecordsOrSavesTheParentsTrace) {
  Controller controller(options());
  controller.begin();
  pid_t child = ::fork();
  if (child == 0) {
    controller.abandonInForkedChild();
    bool stillRecording = detail::HostRecorder::recordingGeneration.load() != 0;
    { Range work("child work"); }
    controller.finish();
    ::_exit(stillRecording || !controller.savedTraces().empty() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(exists(tracePath())) << "the child wrote nothing";
  EXPECT_TRUE(controller.recording()) << "the parent still records";
  instant("parent work");
  controller.finish();
  EXPECT_TRUE(exists(tracePath()));
  EXPECT_EQ(readFile(tracePath()).find("child work"), std::string::npos);
}

}  // namespace
}  // namespace kinetrace::inject
