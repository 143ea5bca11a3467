// The injection's controller: when it records, where and how it writes each window's trace,
// what the trace says about the run, what a signal or a fork does. The GPU backend is a
// stand-in; host ranges are real and go through the public host API.

#include "inject/controller.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "analysis/summary.h"
#include "inject/nvtx_injection.h"
#include "inject/nvtx_payload.h"
#include "kinetrace/host.h"
#include "session/session.h"
#include "support/fake_gpu_source.h"
#include "support/temp_dir.h"

namespace kinetrace::inject {
namespace {

using runfiles::summaryPathFor;

using namespace std::chrono_literals;
using kinetrace::testing::fileContents;
using kinetrace::testing::TempDir;

// Polls `condition` until it holds or 10 s pass: for state the control thread's timers
// change.
template <typename Condition>
bool eventually(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::yield();
  }
  return condition();
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

bool startsWith(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

// The trace's top-level keys in file order: those known when recording started come before
// "traceEvents", those known only at the stop after it.
std::vector<std::string> topLevelKeys(const nlohmann::ordered_json& trace) {
  std::vector<std::string> keys;
  for (const auto& item : trace.items()) keys.push_back(item.key());
  return keys;
}

std::ptrdiff_t positionOf(const std::vector<std::string>& keys, const std::string& key) {
  auto found = std::find(keys.begin(), keys.end(), key);
  return found == keys.end() ? -1 : found - keys.begin();
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

bool hasEventNamed(const nlohmann::ordered_json& trace, const std::string& name) {
  for (const auto& event : trace["traceEvents"]) {
    if (event.value("name", "") == name) return true;
  }
  return false;
}

class ControllerTest : public ::testing::Test {
 protected:
  static constexpr int64_t kNamingPid = 77;  // the pid trace names carry (not the real one)

  ControllerOptions options(const std::string& activities = "host") {
    ControllerOptions o;
    o.config.activities = ActivitySet::parse(activities);
    o.config.output = dir_.path();
    o.config.runId = "t1";
    o.naming = naming();
    o.processName = "trainer --fast";
    o.commandLine = "trainer --fast --epochs 1";
    o.afterSignal = [this](int signal) { signalled_.set_value(signal); };
    o.profilerFactory = [this](Config config, const internal::ProfilerOptions& made) {
      profilerConfig_ = config;
      profilerOptions_ = made;
      detail::SessionOptions session;
      session.insideDriverInit = made.insideDriverInit;
      session.profilerControl = made.profilerControl;
      session.processName = made.processName;
      session.gpuSourceFactory = [this] {
        return std::make_unique<kinetrace::testing::FakeGpuSource>(gpu_);
      };
      return detail::makeProfiler(std::move(config), std::move(session));
    };
    return o;
  }
  static TraceNaming naming() {
    return TraceNaming{"t1", "testhost", kNamingPid, std::string("0"), std::nullopt};
  }
  std::string traceName(int window = 1) const { return traceFileName(naming(), window); }
  std::string tracePath(int window = 1) const { return dir_.path() + "/" + traceName(window); }
  nlohmann::ordered_json readTrace(int window = 1) const {
    return nlohmann::ordered_json::parse(fileContents(tracePath(window)));
  }
  // Temporary files of window 1's trace in the directory ("<trace>.tmp.<pid>.<hex>").
  std::vector<std::string> temporaryFiles() const {
    std::vector<std::string> found;
    for (const std::string& name : dir_.entries()) {
      if (startsWith(name, traceName() + ".tmp.")) found.push_back(name);
    }
    return found;
  }

  TempDir dir_;
  kinetrace::testing::FakeGpuCalls gpu_;
  std::optional<Config> profilerConfig_;
  internal::ProfilerOptions profilerOptions_;
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

  nlohmann::ordered_json trace = readTrace();
  EXPECT_TRUE(hasEventNamed(trace, "step 1")) << "the range is in the trace";
  EXPECT_EQ(trace["kinetrace_capture"], "whole run");

  detail::Summary summary = detail::summaryFromJson(fileContents(summaryPathFor(tracePath())));
  EXPECT_EQ(summary.traceFile, tracePath());
  EXPECT_EQ(summary.hostRangeCount, 1u);
  EXPECT_EQ(summary.processName, "trainer --fast");
}

TEST_F(ControllerTest, TheProfilerIsMadeForRecordingInsideTheDriversInitialisation) {
  Controller controller(options());
  controller.begin();
  ASSERT_TRUE(profilerConfig_.has_value()) << "the factory made the profiler";
  EXPECT_TRUE(profilerOptions_.insideDriverInit) << "InitializeInjection runs inside cuInit";
  EXPECT_EQ(profilerOptions_.processName, "trainer --fast");
  EXPECT_EQ(profilerOptions_.profilerControl, nullptr) << "the whole run: no cudaProfilerApi hook";
  EXPECT_EQ(profilerConfig_->output, "") << "the controller names each window's file itself";
  EXPECT_EQ(profilerConfig_->runId, "t1");
  controller.finish();
}

TEST_F(ControllerTest, TheTraceIsWrittenAtItsPathWhileRecordingAndAppearsUnderItsNameAtTheStop) {
  Controller controller(options());
  controller.begin();
  { Range step("step 1"); }
  EXPECT_EQ(temporaryFiles().size(), 1u) << "written while recording, under a temporary name";
  EXPECT_FALSE(exists(tracePath())) << "never half a trace under its name";
  controller.finish();
  EXPECT_TRUE(exists(tracePath()));
  EXPECT_TRUE(temporaryFiles().empty());
  std::vector<std::string> expected = {traceName(), summaryPathFor(traceName())};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(dir_.entries(), expected)
      << "the trace and its summary (the run's manifest is made by `kinetrace run`, not here)";
}

TEST_F(ControllerTest, FinishingTwiceSavesOnce) {
  Controller controller(options());
  controller.begin();
  instant("something happened");
  controller.finish();
  controller.finish();
  EXPECT_EQ(controller.savedTraces().size(), 1u);
}

TEST_F(ControllerTest, AWindowThatRecordedNothingLeavesNoFile) {
  ControllerOptions o = options();
  o.config.runId = "";  // no manifest either: the directory must stay empty
  Controller controller(o);
  controller.begin();
  EXPECT_EQ(temporaryFiles().size(), 1u) << "the trace was being written";
  controller.finish();
  EXPECT_TRUE(controller.savedTraces().empty());
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{}) << "no trace, temporary file or summary";
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

TEST_F(ControllerTest, TheTraceSaysWhichRunCaptureAndWindowItIsBeforeItsEvents) {
  Controller controller(options());
  controller.begin();
  instant("something happened");
  controller.finish();

  nlohmann::ordered_json trace = readTrace();
  EXPECT_EQ(trace["kinetrace_run_id"], "t1");
  EXPECT_EQ(trace["kinetrace_capture"], "whole run");
  EXPECT_EQ(trace["kinetrace_command_line"], "trainer --fast --epochs 1");
  EXPECT_EQ(trace["kinetrace_window"], 1);
  const std::vector<std::string> keys = topLevelKeys(trace);
  const std::ptrdiff_t events = positionOf(keys, "traceEvents");
  ASSERT_GE(events, 0);
  for (const char* key :
       {"kinetrace_run_id", "kinetrace_capture", "kinetrace_command_line", "kinetrace_window"}) {
    EXPECT_GE(positionOf(keys, key), 0) << key;
    EXPECT_LT(positionOf(keys, key), events) << key << " is known when recording starts";
  }
}

TEST_F(ControllerTest, TheTraceCountsNvtxCallsAfterItsEvents) {
  Controller controller(options());
  controller.begin();
  instant("something happened");
  controller.finish();
  const NvtxCounts counts = nvtxCounts();  // no NVTX call since the stop took them
  const NvtxPayloadCounts payloads = nvtxPayloadCounts();

  nlohmann::ordered_json trace = readTrace();
  EXPECT_EQ(trace["kinetrace_nvtx"],
            nlohmann::ordered_json({{"instances", counts.instances},
                                    {"calls", counts.calls},
                                    {"recorded", counts.recorded},
                                    {"payload_schemas", payloads.schemas},
                                    {"payload_registrations_refused", payloads.refused},
                                    {"payloads_undecoded", payloads.undecoded}}));
  const std::vector<std::string> keys = topLevelKeys(trace);
  EXPECT_GT(positionOf(keys, "kinetrace_nvtx"), positionOf(keys, "traceEvents"))
      << "known only at the stop";
}

TEST_F(ControllerTest, TheProcessNameNamesTheHostProcessInTheTrace) {
  Controller controller(options());
  controller.begin();
  instant("something happened");
  controller.finish();
  const nlohmann::ordered_json trace = readTrace();
  std::vector<std::string> names;
  for (const auto& event : trace["traceEvents"]) {
    if (event.value("ph", "") == "M" && event.value("name", "") == "process_name" &&
        event.value("pid", int64_t{0}) == static_cast<int64_t>(::getpid())) {
      names.push_back(event["args"]["name"]);
    }
  }
  EXPECT_EQ(names, std::vector<std::string>{"trainer --fast"});
}

TEST_F(ControllerTest, DelayStartsLaterAndDurationEndsTheOnlyWindow) {
  ControllerOptions o = options();
  o.config.delayNs = 200'000'000;
  o.config.durationNs = 200'000'000;
  o.processStartBootNs = bootTimeNs();
  Controller controller(o);
  controller.begin();
  EXPECT_FALSE(controller.recording()) << "the delay has not passed";
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{}) << "no file before the window";
  ASSERT_TRUE(eventually([&] { return controller.recording(); })) << "the delay ended";
  instant("inside the window");
  ASSERT_TRUE(eventually([&] { return !controller.recording(); })) << "the duration ended";
  controller.finish();
  ASSERT_EQ(controller.savedTraces().size(), 1u);
  nlohmann::ordered_json trace = readTrace();
  const int64_t window = trace["kinetrace_window_stop_ns"].get<int64_t>() -
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
  EXPECT_NE(profilerOptions_.profilerControl, nullptr) << "the cudaProfilerStart/Stop hook";
  EXPECT_EQ(gpu_.enables, 1) << "CUPTI is subscribed up front";
  EXPECT_NE(gpu_.options().profilerControl, nullptr);
  EXPECT_TRUE(gpu_.options().deferCollection);
  EXPECT_TRUE(gpu_.options().insideDriverInit);
  EXPECT_EQ(gpu_.starts, 0) << "nothing collected before cudaProfilerStart()";
  EXPECT_FALSE(controller.recording());
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{}) << "no file before the first window";

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

  std::vector<std::string> saved = controller.savedTraces();
  std::sort(saved.begin(), saved.end());
  std::vector<std::string> expected = {tracePath(1), tracePath(2)};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(saved, expected);
  EXPECT_EQ(gpu_.starts, 2);
  EXPECT_EQ(gpu_.finishedWindows, 2);
  nlohmann::ordered_json first = readTrace(1);
  nlohmann::ordered_json second = readTrace(2);
  EXPECT_TRUE(hasEventNamed(first, "window 1 work"));
  EXPECT_FALSE(hasEventNamed(first, "window 2 work"));
  EXPECT_TRUE(hasEventNamed(second, "window 2 work"));
  EXPECT_FALSE(hasEventNamed(second, "window 1 work"));
  EXPECT_EQ(first["kinetrace_window"], 1);
  EXPECT_EQ(second["kinetrace_window"], 2);
  EXPECT_EQ(second["kinetrace_capture"], "cudaProfilerApi");
  for (int window : {1, 2}) {
    const std::string text = fileContents(tracePath(window));
    for (const char* key : {"\"kinetrace_nvtx\":", "\"kinetrace_window\":"}) {
      EXPECT_EQ(occurrences(text, key), 1u)
          << key << " in window " << window
          << ": a later window carries no stale copy of an earlier one's value";
    }
  }
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
  std::future<int> signalled = signalled_.get_future();
  ASSERT_EQ(signalled.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(signalled.get(), SIGTERM);
  EXPECT_EQ(controller.savedTraces().size(), 1u) << "saved before the signal is handed on";
  EXPECT_TRUE(hasEventNamed(readTrace(), "before the signal"));
}

TEST_F(ControllerTest, AForkedChildNeverRecordsOrSavesTheParentsTrace) {
  Controller controller(options());
  controller.begin();
  const pid_t child = ::fork();
  if (child == 0) {
    controller.abandonInForkedChild();
    const bool stillRecording = kinetrace::recording();
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
  EXPECT_FALSE(hasEventNamed(readTrace(), "child work"));
}

}  // namespace
}  // namespace kinetrace::inject
