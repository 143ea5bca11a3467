#include "kinetrace/config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kinetrace/error.h"
#include "model/gpu_metric_catalog.h"
#include "support/log.h"
#include "support/test_support.h"

namespace kinetrace {
namespace {

using kinetrace::testing::errorOf;
using kinetrace::testing::ScopedEnv;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ActivitySetTest, ParsesCommaSeparatedNamesIgnoringCaseAndSpaces) {
  ActivitySet set = ActivitySet::parse(" Kernel, memcpy ,SYNC");
  EXPECT_TRUE(set.has(Activity::Kernel));
  EXPECT_TRUE(set.has(Activity::Memcpy));
  EXPECT_TRUE(set.has(Activity::Sync));
  EXPECT_FALSE(set.has(Activity::Memset));
  EXPECT_FALSE(set.has(Activity::Host));
  EXPECT_EQ(set.toString(), "kernel,memcpy,sync");
}

TEST(ActivitySetTest, DefaultIncludesLaunchCorrelationButNotEveryApiCall) {
  ActivitySet set = ActivitySet::parse("default");
  EXPECT_EQ(set, ActivitySet::defaults());
  EXPECT_TRUE(set.has(Activity::Launch));
  EXPECT_FALSE(set.has(Activity::RuntimeAll));
  EXPECT_FALSE(set.has(Activity::DriverAll));
}

TEST(ActivitySetTest, UnknownNameIsAnErrorNamingItAndTheKnownNames) {
  std::string message = errorOf([] { ActivitySet::parse("kernel,kernals"); });
  EXPECT_EQ(message.rfind("config: ", 0), 0u) << message;
  EXPECT_TRUE(contains(message, "\"kernals\"")) << message;
  EXPECT_TRUE(contains(message, "memcpy")) << message;
}

TEST(ActivitySetTest, EmptyListIsAnError) {
  EXPECT_TRUE(contains(errorOf([] { ActivitySet::parse(" , "); }), "config: activities is empty"));
}

TEST(ConfigTest, SetAcceptsEveryDocumentedKey) {
  Config config;
  config.set("output", "/tmp/x.json");
  config.set("activities", "host,kernel");
  config.set("log_level", "debug");
  config.set("memory_mb", "64");
  config.set("gpu_buffer_kb", "512");
  config.set("gpu_flush_ms", "250");
  config.set("clock", "monotonic");
  config.set("cuda_graph_trace", "Graph");
  config.set("delay", "1.5s");
  config.set("duration", "200ms");
  config.set("capture_range", "cudaProfilerApi");
  config.set("run_id", "run-1.a_b");
  config.set("trace_format", "PFTRACE");
  config.set("schedule", " active=3, wait=1 ");
  config.set("step_marks", " iteration , batch");
  EXPECT_EQ(config.output, "/tmp/x.json");
  EXPECT_TRUE(config.activities.has(Activity::Kernel));
  EXPECT_EQ(config.logLevel, LogLevel::Debug);
  EXPECT_EQ(config.memoryMb, 64u);
  EXPECT_EQ(config.memoryCapBytes(), std::size_t{64} << 20);
  EXPECT_EQ(config.gpuBufferKb, 512u);
  EXPECT_EQ(config.gpuFlushMs, 250u);
  EXPECT_EQ(config.clock, HostClock::Monotonic);
  EXPECT_EQ(config.cudaGraphTrace, GraphTrace::Graph);
  EXPECT_THROW(config.set("cuda_graph_trace", "nodes"), Error);
  EXPECT_EQ(Config().cudaGraphTrace, GraphTrace::Node) << "every node by default";
  EXPECT_EQ(config.delayNs, 1'500'000'000);
  EXPECT_EQ(config.durationNs, 200'000'000);
  EXPECT_EQ(config.captureRange, CaptureRange::CudaProfilerApi);
  EXPECT_EQ(config.runId, "run-1.a_b");
  EXPECT_EQ(config.traceFormat, TraceFormat::Pftrace);
  EXPECT_THROW(config.set("trace_format", "xml"), Error);
  ASSERT_TRUE(config.schedule.has_value());
  EXPECT_EQ(config.schedule->skipFirst, 0) << "the defaults of unnamed keys";
  EXPECT_EQ(config.schedule->wait, 1);
  EXPECT_EQ(config.schedule->warmup, 1);
  EXPECT_EQ(config.schedule->active, 3);
  EXPECT_EQ(config.schedule->repeat, 1);
  EXPECT_EQ(config.stepMarks, (std::vector<std::string>{"iteration", "batch"}))
      << "each name trimmed";
  EXPECT_THROW(config.set("schedule", "active=-1"), Error);
  EXPECT_THROW(config.set("schedule", "active"), Error);
  EXPECT_THROW(config.set("step_marks", ""), Error);
  EXPECT_THROW(config.set("step_marks", " , "), Error);
  config.set("schedule", "");
  EXPECT_FALSE(config.schedule.has_value()) << "empty: not by steps";
}

TEST(ConfigTest, GpuMetricKeysTakeShortAndCuptiNamesAnIntervalAndABufferSize) {
  Config config;
  EXPECT_TRUE(config.gpuMetrics.empty()) << "no sampling unless asked";
  EXPECT_EQ(config.gpuMetricsIntervalNs, 1'000'000) << "1 ms by default";
  EXPECT_EQ(config.gpuMetricsBufferMb, 0u) << "sized from the interval by default";
  // Parsed once, into CUPTI's names: short names and "default" resolved.
  config.set("gpu_metrics", " default ");
  EXPECT_EQ(config.gpuMetrics.size(), 4u);
  config.set("gpu_metrics", "sm,lts__t_bytes.sum.per_second");
  ASSERT_EQ(config.gpuMetrics.size(), 2u);
  EXPECT_EQ(config.gpuMetrics[0], detail::gpuMetricShortNames()[0].metric.name)
      << "sm is the first short name";
  EXPECT_EQ(config.gpuMetrics[1], "lts__t_bytes.sum.per_second");
  config.set("gpu_metrics", "none");
  EXPECT_TRUE(config.gpuMetrics.empty());
  config.set("gpu_metrics_interval", "100us");
  EXPECT_EQ(config.gpuMetricsIntervalNs, 100'000);
  config.set("gpu_metrics_buffer_mb", "256");
  EXPECT_EQ(config.gpuMetricsBufferMb, 256u);
  for (const char* bad : {"0", "500ns", "2s"}) {
    std::string message = errorOf([&] { config.set("gpu_metrics_interval", bad); });
    EXPECT_TRUE(contains(message, "gpu_metrics_interval must be from 1us to 1s")) << message;
  }
  for (const char* bad : {"-1", "4097", "lots"}) {
    std::string message = errorOf([&] { config.set("gpu_metrics_buffer_mb", bad); });
    EXPECT_TRUE(contains(message, "gpu_metrics_buffer_mb")) << message;
  }
  EXPECT_EQ(config.gpuMetricsIntervalNs, 100'000) << "a failed set leaves the value alone";
  EXPECT_EQ(config.gpuMetricsBufferMb, 256u);
}

TEST(ConfigTest, TheOldBufferKeysAreGoneAndTheErrorNamesMemoryMb) {
  Config config;
  for (const char* old : {"host_buffer_mb", "gpu_buffer_mb"}) {
    std::string message = errorOf([&] { config.set(old, "64"); });
    EXPECT_TRUE(contains(message, std::string("\"") + old + "\"")) << message;
    EXPECT_TRUE(contains(message, "memory_mb")) << message;
  }
}

TEST(ConfigTest, FlushPeriodAcceptsZeroAndRejectsAbsurdValues) {
  Config config;
  config.set("gpu_flush_ms", "0");
  EXPECT_EQ(config.gpuFlushMs, 0u);
  for (const char* bad : {"-1", "1.5", "3600001", "99999999999"}) {
    std::string message = errorOf([&] { config.set("gpu_flush_ms", bad); });
    EXPECT_TRUE(contains(message, "gpu_flush_ms")) << bad << ": " << message;
  }
  EXPECT_EQ(config.gpuFlushMs, 0u);
}

TEST(ConfigTest, UnknownKeyIsAnErrorNamingIt) {
  Config config;
  std::string message = errorOf([&] { config.set("ouptut", "x"); });
  EXPECT_EQ(message.rfind("config: ", 0), 0u) << message;
  EXPECT_TRUE(contains(message, "\"ouptut\"")) << message;
  EXPECT_TRUE(contains(message, "output")) << message;
}

TEST(ConfigTest, BadMemorySizeIsAnErrorNamingKeyValueAndRange) {
  Config config;
  for (const char* bad : {"", "12x", "-3", "0", "lots", "1048577", "17592186044416"}) {
    std::string message = errorOf([&] { config.set("memory_mb", bad); });
    EXPECT_EQ(message.rfind("config: memory_mb", 0), 0u) << bad << ": " << message;
    EXPECT_TRUE(contains(message, std::string("\"") + bad + "\"")) << message;
    EXPECT_TRUE(contains(message, "1 to 1048576")) << message;
  }
  EXPECT_EQ(config.memoryMb, Config().memoryMb) << "a failed set leaves the value alone";
}

TEST(ConfigTest, BadLogLevelIsAnError) {
  Config config;
  std::string message = errorOf([&] { config.set("log_level", "loud"); });
  EXPECT_TRUE(contains(message, "config: log_level")) << message;
  EXPECT_TRUE(contains(message, "\"loud\"")) << message;
}

TEST(ConfigTest, ADurationThatRoundsToNothingIsAnErrorNotForever) {
  Config config;
  std::string message = errorOf([&] { config.set("duration", "0.0000000001s"); });
  EXPECT_TRUE(contains(message, "config: duration must be at least 1ns")) << message;
  EXPECT_EQ(config.durationNs, 0);
  config.set("duration", "0");
  EXPECT_EQ(config.durationNs, 0) << "exactly zero: until exit";
}

TEST(ConfigTest, FromEnvironmentReadsKinetraceVariables) {
  ScopedEnv output("KINETRACE_OUTPUT", "/tmp/env.json");
  ScopedEnv activities("KINETRACE_ACTIVITIES", "kernel,memset");
  ScopedEnv level("KINETRACE_LOG_LEVEL", "info");
  ScopedEnv memory("KINETRACE_MEMORY_MB", "3");
  Config config = Config::fromEnvironment();
  EXPECT_EQ(config.output, "/tmp/env.json");
  EXPECT_TRUE(config.activities.has(Activity::Memset));
  EXPECT_FALSE(config.activities.has(Activity::Memcpy));
  EXPECT_EQ(config.logLevel, LogLevel::Info);
  EXPECT_EQ(config.memoryMb, 3u);
}

TEST(ConfigTest, FromEnvironmentWarnsAboutAnUnknownVariableByNameAndGoesOn) {
  detail::setLogLevel(LogLevel::Warning);  // an earlier test's Profiler may have lowered it
  ScopedEnv typo("KINETRACE_OUTPT_CONFIG_TEST", "x.json");
  ::testing::internal::CaptureStderr();
  std::string message = errorOf([] { Config::fromEnvironment(); });
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(message, "") << "not an error";
  EXPECT_TRUE(contains(said, "KINETRACE_OUTPT_CONFIG_TEST")) << said;
}

TEST(ConfigTest, FromEnvironmentNamesTheVariableWithABadValue) {
  ScopedEnv bad("KINETRACE_MEMORY_MB", "many");
  std::string message = errorOf([] { Config::fromEnvironment(); });
  EXPECT_EQ(message.rfind("environment variable KINETRACE_MEMORY_MB: memory_mb", 0), 0u) << message;
  EXPECT_TRUE(contains(message, "\"many\"")) << message;
}

}  // namespace
}  // namespace kinetrace
