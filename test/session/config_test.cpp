#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "kinetrace/config.h"
#include "kinetrace/error.h"
#include "support/test_support.h"

namespace kinetrace {
namespace {

using kinetrace::testing::ScopedEnv;
using kinetrace::testing::errorOf;

// Sets an environment variable for the test's duration.
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
  EXPECT_NE(message.find("\"kernals\""), std::string::npos) << message;
  EXPECT_NE(message.find("memcpy"), std::string::npos) << message;
}

TEST(ActivitySetTest, EmptyListIsAnError) {
  EXPECT_NE(errorOf([] { ActivitySet::parse(" , "); }).find("activities is empty"), std::string::npos);
}

TEST(ConfigTest, SetAcceptsEveryDocumentedKey) {
  Config config;
  config.set("output", "/tmp/x.json");
  config.set("activities", "host,kernel");
  config.set("log_level", "debug");
  config.set("host_buffer_mb", "64");
  config.set("gpu_buffer_mb", "32");
  config.set("gpu_buffer_kb", "512");
  config.set("gpu_flush_ms", "250");
  EXPECT_EQ(config.output, "/tmp/x.json");
  EXPECT_TRUE(config.activities.has(Activity::Kernel));
  EXPECT_EQ(config.logLevel, LogLevel::Debug);
  EXPECT_EQ(config.hostBufferMb, 64u);
  EXPECT_EQ(config.gpuBufferMb, 32u);
  EXPECT_EQ(config.gpuBufferKb, 512u);
  EXPECT_EQ(config.gpuFlushMs, 250u);
}

TEST(ConfigTest, FlushPeriodAcceptsZeroAndRejectsAbsurdValues) {
  Config config;
  config.set("gpu_flush_ms", "0");
  EXPECT_EQ(config.gpuFlushMs, 0u);
  for (const char* bad : {"-1", "1.5", "3600001", "99999999999"}) {
    std::string message = errorOf([&] { config.set("gpu_flush_ms", bad); });
    EXPECT_NE(message.find("gpu_flush_ms"), std::string::npos) << bad << ": " << message;
  }
  EXPECT_EQ(config.gpuFlushMs, 0u);
}

TEST(ConfigTest, UnknownKeyIsAnErrorNamingIt) {
  Config config;
  std::string message = errorOf([&] { config.set("ouptut", "x"); });
  EXPECT_NE(message.find("\"ouptut\""), std::string::npos) << message;
  EXPECT_NE(message.find("output"), std::string::npos) << message;
}

TEST(ConfigTest, BadNumberIsAnErrorNamingKeyAndValue) {
  Config config;
  for (const char* bad : {"", "12x", "-3", "0", "lots"}) {
    std::string message = errorOf([&] { config.set("host_buffer_mb", bad); });
    EXPECT_NE(message.find("host_buffer_mb"), std::string::npos) << bad << ": " << message;
    EXPECT_NE(message.find(std::string("\"") + bad + "\""), std::string::npos) << message;
  }
  EXPECT_EQ(config.hostBufferMb, Config().hostBufferMb) << "a failed set leaves the value alone";
}

TEST(ConfigTest, BadLogLevelIsAnError) {
  Config config;
  EXPECT_NE(errorOf([&] { config.set("log_level", "loud"); }).find("log_level"), std::string::npos);
}

TEST(ConfigTest, FromEnvironmentReadsKinetraceVariables) {
  ScopedEnv output("KINETRACE_OUTPUT", "/tmp/env.json");
  ScopedEnv activities("KINETRACE_ACTIVITIES", "kernel,memset");
  ScopedEnv level("KINETRACE_LOG_LEVEL", "info");
  Config config = Config::fromEnvironment();
  EXPECT_EQ(config.output, "/tmp/env.json");
  EXPECT_TRUE(config.activities.has(Activity::Memset));
  EXPECT_FALSE(config.activities.has(Activity::Memcpy));
  EXPECT_EQ(config.logLevel, LogLevel::Info);
}

TEST(ConfigTest, FromEnvironmentRejectsUnknownVariableByName) {
  ScopedEnv typo("KINETRACE_OUTPT", "x.json");
  std::string message = errorOf([] { Config::fromEnvironment(); });
  EXPECT_NE(message.find("KINETRACE_OUTPT"), std::string::npos) << message;
}

TEST(ConfigTest, FromEnvironmentNamesTheVariableWithABadValue) {
  ScopedEnv bad("KINETRACE_GPU_BUFFER_MB", "many");
  std::string message = errorOf([] { Config::fromEnvironment(); });
  EXPECT_NE(message.find("KINETRACE_GPU_BUFFER_MB"), std::string::npos) << message;
  EXPECT_NE(message.find("\"many\""), std::string::npos) << message;
}

}  // namespace
}  // namespace kinetrace
