#include "session/session.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "kinetrace/error.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "host/host_recorder.h"
#include "model/clock.h"
#include "support/test_support.h"

namespace kinetrace::detail {
namespace {

using kinetrace::testing::errorOf;

// A GPU source that refuses or reports what the test says, and counts calls.
class FakeGpuSource final : public GpuSource {
 public:
  std::string refusal;
  std::function<void(TraceData&)> onStop;
  int enables = 0, starts = 0, stops = 0, disables = 0;
  GpuOptions seenOptions;

  std::string enable(const GpuOptions& options) override {
    ++enables;
    seenOptions = options;
    return refusal;
  }
  void start(int64_t) override { ++starts; }
  void stop(TraceData& trace) override {
    ++stops;
    if (onStop) onStop(trace);
  }
  void disable() noexcept override { ++disables; }
  std::string describe() const override { return "fake GPU"; }
};

Config gpuConfig() {
  Config config;
  config.activities = ActivitySet::defaults();
  return config;
}

TEST(SessionTest, RefusedGpuStillRecordsHostActivityAndSaysWhy) {
  Session session(gpuConfig());
  auto fake = std::make_unique<FakeGpuSource>();
  fake->refusal = "CUPTI is already in use by another profiler";
  FakeGpuSource* gpu = fake.get();
  session.setGpuSourceForTesting(std::move(fake));
  session.start();
  {
    Range range("host work");
  }
  Trace trace = session.stop();
  EXPECT_EQ(session.gpuStatus(), "CUPTI is already in use by another profiler");
  EXPECT_EQ(gpu->starts, 0);
  EXPECT_EQ(gpu->stops, 0);
  EXPECT_EQ(trace.data().ranges.size(), 1u);
  bool statusInMetadata = false;
  for (const auto& [key, value] : trace.data().metadataJson) {
    if (key == "kinetrace_gpu_status") statusInMetadata = value.find("already in use") != std::string::npos;
  }
  EXPECT_TRUE(statusInMetadata);
}

TEST(SessionTest, GpuOptionsFollowTheConfiguredActivities) {
  Config config;
  config.activities = ActivitySet::parse("kernel,launch");
  config.gpuBufferKb = 64;
  config.gpuBufferMb = 2;
  Session session(config);
  auto fake = std::make_unique<FakeGpuSource>();
  FakeGpuSource* gpu = fake.get();
  session.setGpuSourceForTesting(std::move(fake));
  session.prepare();
  EXPECT_EQ(gpu->enables, 1);
  EXPECT_TRUE(gpu->seenOptions.kernels);
  EXPECT_TRUE(gpu->seenOptions.launchCalls);
  EXPECT_FALSE(gpu->seenOptions.memcpy);
  EXPECT_FALSE(gpu->seenOptions.allRuntimeCalls);
  EXPECT_EQ(gpu->seenOptions.bufferBytes, 64u * 1024);
  EXPECT_EQ(gpu->seenOptions.capBytes, 2u * 1024 * 1024);
  session.start();  // prepared already: not enabled twice
  session.stop();
  EXPECT_EQ(gpu->enables, 1);
}

TEST(SessionTest, HostOnlyConfigurationNeverTouchesTheGpuSource) {
  Config config;
  config.activities = ActivitySet::parse("host");
  Session session(config);
  auto fake = std::make_unique<FakeGpuSource>();
  FakeGpuSource* gpu = fake.get();
  session.setGpuSourceForTesting(std::move(fake));
  session.start();
  session.stop();
  EXPECT_EQ(gpu->enables, 0);
  EXPECT_EQ(session.gpuStatus(), "GPU activity not requested");
}

TEST(SessionTest, GpuRecordsAreCorrelatedWithTheLaunchingRange) {
  Session session(gpuConfig());
  auto fake = std::make_unique<FakeGpuSource>();
  uint64_t rangeId = 0;
  fake->onStop = [&](TraceData& trace) {
    // What the CUPTI source would deliver: the launch call (recorded by the callback on the
    // application's thread) and the kernel it started.
    ApiCallRecord call;
    call.correlationId = 77;
    call.externalId = rangeId;
    call.startNs = trace.startNs + 10;
    call.endNs = trace.startNs + 20;
    call.launchesGpuWork = true;
    trace.apiCalls.push_back(call);
    KernelRecord kernel;
    kernel.at.correlationId = 77;
    kernel.at.startNs = trace.startNs + 30;
    kernel.at.endNs = trace.startNs + 40;
    kernel.name = trace.strings.intern("gemm");
    trace.kernels.push_back(kernel);
  };
  session.setGpuSourceForTesting(std::move(fake));
  session.start();
  {
    Range step("step");
    rangeId = HostRecorder::innermostOpenRange();
  }
  Trace trace = session.stop();
  ASSERT_EQ(trace.data().kernels.size(), 1u);
  EXPECT_EQ(trace.data().kernels[0].at.externalId, rangeId);
  EXPECT_TRUE(trace.data().kernels[0].at.hasLaunchCall);
  ASSERT_EQ(trace.data().gpuSpans.size(), 1u);
  EXPECT_EQ(trace.data().gpuSpans[0].externalId, rangeId);
}

TEST(SessionTest, StartWhileRecordingIsAnError) {
  Profiler profiler(Config{});
  profiler.start();
  EXPECT_NE(errorOf([&] { profiler.start(); }).find("already recording"), std::string::npos);
  profiler.stop();
}

TEST(SessionTest, SecondProfilerCannotRecordAtTheSameTime) {
  Config config;
  config.activities = ActivitySet::parse("host");
  Profiler first(config);
  Profiler second(config);
  first.start();
  EXPECT_NE(errorOf([&] { second.start(); }).find("another kinetrace::Profiler"), std::string::npos);
  first.stop();
  second.start();  // free again
  second.stop();
}

TEST(SessionTest, StopWithoutStartIsAnError) {
  Profiler profiler(Config{});
  EXPECT_NE(errorOf([&] { profiler.stop(); }).find("without start()"), std::string::npos);
}

TEST(SessionTest, OutputNamingADirectoryGetsOneFilePerSession) {
  std::string dir = "/tmp/kinetrace_session_test_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  Config config;
  config.activities = ActivitySet::parse("host");
  config.output = dir;
  Profiler profiler(config);
  profiler.start();
  profiler.stop();
  profiler.start();
  profiler.stop();
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().extension(), ".json");
    ++files;
  }
  EXPECT_EQ(files, 2u);
  std::filesystem::remove_all(dir);
}

TEST(SessionTest, UnwritableOutputIsAnErrorNamingThePath) {
  Config config;
  config.activities = ActivitySet::parse("host");
  config.output = "/nonexistent-kinetrace-dir/trace.json";
  Profiler profiler(config);
  profiler.start();
  EXPECT_NE(errorOf([&] { profiler.stop(); }).find("/nonexistent-kinetrace-dir/trace.json"),
            std::string::npos);
}

TEST(SessionTest, DistributedInfoIsAlwaysPresentForHta) {
  Config config;
  config.activities = ActivitySet::parse("host");
  Profiler profiler(config);
  profiler.start();
  Trace trace = profiler.stop();
  bool found = false;
  for (const auto& [key, value] : trace.data().metadataJson) {
    if (key == "distributedInfo") found = value.find("\"rank\"") != std::string::npos;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace kinetrace::detail
