#include "session/session.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "host/host_recorder.h"
#include "kinetrace/error.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "session/session_support.h"
#include "support/test_support.h"

// A session's life with a stand-in GPU source: what it asks of the source, what it does when
// the source refuses, and the errors of its state machine.

namespace kinetrace::detail {
namespace {

using kinetrace::testing::dataOf;
using kinetrace::testing::errorOf;
using kinetrace::testing::FakeGpuSource;
using kinetrace::testing::hostOnly;
using kinetrace::testing::metadataValue;
using kinetrace::testing::TempDir;

std::unique_ptr<Profiler> profilerWith(Config config, std::shared_ptr<FakeGpuSource::State> gpu) {
  SessionOptions options;
  options.gpuSourceFactory = [gpu] { return std::make_unique<FakeGpuSource>(gpu); };
  return makeProfiler(std::move(config), std::move(options));
}

TEST(SessionTest, RefusedGpuStillRecordsHostActivityAndSaysWhy) {
  auto gpu = std::make_shared<FakeGpuSource::State>();
  gpu->refusal = "CUPTI is already in use by another profiler";
  auto profiler = profilerWith(Config{}, gpu);
  profiler->start();
  { Range range("host work"); }
  Trace trace = profiler->stop();
  EXPECT_EQ(profiler->gpuStatus(), "CUPTI is already in use by another profiler");
  EXPECT_EQ(gpu->starts.load(), 0);
  EXPECT_EQ(gpu->polls.load(), 0) << "a refused source is never polled";
  EXPECT_EQ(dataOf(trace).records.ranges.size(), 1u);
  EXPECT_EQ(metadataValue(trace.metadata(), "kinetrace_gpu_status"),
            Value("CUPTI is already in use by another profiler"));
}

TEST(SessionTest, GpuOptionsFollowTheConfiguredActivitiesAndTheMemoryCap) {
  Config config;
  config.activities = ActivitySet::parse("kernel,launch");
  config.gpuBufferKb = 64;
  config.memoryMb = 2;
  auto gpu = std::make_shared<FakeGpuSource::State>();
  auto profiler = profilerWith(config, gpu);
  profiler->prepare();
  EXPECT_EQ(gpu->enables.load(), 1);
  // The GPU activities, without host recording (not the GPU source's).
  EXPECT_EQ(gpu->seenOptions.activities, ActivitySet().add(Activity::Kernel).add(Activity::Launch));
  EXPECT_EQ(gpu->seenOptions.bufferBytes, 64u * 1024);
  EXPECT_EQ(gpu->seenOptions.maxBufferBytes, 2u * 1024 * 1024);
  profiler->start();  // prepared already: not enabled twice
  profiler->stop();
  EXPECT_EQ(gpu->enables.load(), 1);
  EXPECT_EQ(gpu->starts.load(), 1);
  EXPECT_EQ(gpu->finishes.load(), 1);
  EXPECT_EQ(gpu->stops.load(), 1);
  EXPECT_GE(gpu->polls.load(), 1) << "the stop's final poll";
  profiler.reset();
  EXPECT_EQ(gpu->disables.load(), 1) << "the source is released with its Profiler";
}

TEST(SessionTest, HostOnlyConfigurationNeverTouchesTheGpuSource) {
  auto gpu = std::make_shared<FakeGpuSource::State>();
  auto profiler = profilerWith(hostOnly(), gpu);
  profiler->start();
  profiler->stop();
  EXPECT_EQ(gpu->enables.load(), 0);
  EXPECT_EQ(gpu->polls.load(), 0);
  EXPECT_EQ(profiler->gpuStatus(), "GPU activity not requested");
}

TEST(SessionTest, GpuRecordsAreCorrelatedWithTheLaunchingRange) {
  auto gpu = std::make_shared<FakeGpuSource::State>();
  auto profiler = profilerWith(Config{}, gpu);
  profiler->start();
  uint64_t rangeId = 0;
  int64_t callEndNs = 0;
  {
    Range step("step");
    rangeId = HostRecorder::innermostOpenRange();
    callEndNs = kinetrace::testing::recordApiCall(77, 211, CallEffect::Kernel).second;
  }
  gpu->queue([&](GpuBatch& batch, StringTable& strings) {
    KernelRecord kernel;
    kernel.at.correlationId = 77;
    kernel.at.startNs = callEndNs + 10;
    kernel.at.endNs = callEndNs + 20;
    kernel.at.streamId = 7;
    kernel.name = strings.intern("gemm");
    batch.records.kernels.push_back(kernel);
  });
  Trace trace = profiler->stop();
  const TraceRecords& records = dataOf(trace).records;
  ASSERT_EQ(records.kernels.size(), 1u);
  EXPECT_EQ(records.kernels[0].at.externalId, rangeId);
  EXPECT_TRUE(records.kernels[0].at.hasLaunchCall);
  ASSERT_EQ(records.gpuSpans.size(), 1u);
  EXPECT_EQ(records.gpuSpans[0].externalId, rangeId);
}

TEST(SessionTest, StartWhileRecordingIsAnError) {
  Profiler profiler(hostOnly());
  profiler.start();
  EXPECT_EQ(errorOf([&] { profiler.start(); }), "Profiler::start() called while already recording");
  profiler.stop();
}

TEST(SessionTest, SecondProfilerCannotRecordAtTheSameTime) {
  Profiler first(hostOnly());
  Profiler second(hostOnly());
  first.start();
  std::string message = errorOf([&] { second.start(); });
  EXPECT_NE(message.find("another kinetrace::Profiler is recording in this process"),
            std::string::npos)
      << message;
  EXPECT_FALSE(second.recording());
  EXPECT_TRUE(first.recording()) << "the failed start leaves the first alone";
  first.stop();
  second.start();  // free again
  second.stop();
}

TEST(SessionTest, StopWithoutStartIsAnError) {
  Profiler profiler(hostOnly());
  EXPECT_EQ(errorOf([&] { profiler.stop(); }), "Profiler::stop() called without start()");
}

TEST(SessionTest, OutputNamingADirectoryGetsOneFilePerSession) {
  TempDir dir;
  Config config = hostOnly();
  config.output = dir.path();
  Profiler profiler(config);
  profiler.start();
  Trace first = profiler.stop();
  profiler.start();
  Trace second = profiler.stop();
  std::vector<std::string> files = dir.entries();
  ASSERT_EQ(files.size(), 2u);
  for (const std::string& file : files) {
    EXPECT_EQ(file.rfind("kinetrace-pid", 0), 0u) << file;
    EXPECT_EQ(file.substr(file.size() - 5), ".json") << file;
  }
  EXPECT_NE(first.outputPath(), second.outputPath());
  EXPECT_EQ(first.outputPath().rfind(dir.path() + "/", 0), 0u) << first.outputPath();
}

TEST(SessionTest, AFileNamedInADirectoryOutputHasTheExtensionOfTheTraceFormat) {
  for (const std::string format : {"pftrace", "json.gz"}) {
    TempDir dir;
    Config config = hostOnly();
    config.output = dir.path();
    config.set("trace_format", format);
    Profiler profiler(config);
    profiler.start();
    Trace trace = profiler.stop();
    const std::string suffix = "." + format;
    ASSERT_GT(trace.outputPath().size(), suffix.size());
    EXPECT_EQ(trace.outputPath().substr(trace.outputPath().size() - suffix.size()), suffix)
        << trace.outputPath();
    EXPECT_EQ(dir.entries().size(), 1u);
  }
}

TEST(SessionTest, DistributedInfoIsAlwaysPresentForHta) {
  Profiler profiler(hostOnly());
  profiler.start();
  Trace trace = profiler.stop();
  const Value info = metadataValue(dataOf(trace).header, "distributedInfo");
  ASSERT_EQ(info.kind(), Value::Kind::Object) << "in the header, before the events";
  EXPECT_NE(info.find("rank"), nullptr);
  EXPECT_NE(info.find("world_size"), nullptr);
  EXPECT_EQ(info.find("backend"), nullptr) << "not claimed: kinetrace does not know it";
}

}  // namespace
}  // namespace kinetrace::detail
