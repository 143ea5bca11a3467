// The configuration keys the CUDA injection reads (delay, duration, capture_range, run_id).

#include <gtest/gtest.h>
#include <stdlib.h>

#include <functional>
#include <string>

#include "kinetrace/config.h"
#include "kinetrace/error.h"
#include "support/test_support.h"

namespace kinetrace {
namespace {

using kinetrace::testing::errorOf;

constexpr int64_t kSecond = 1000000000;

int64_t durationOf(const char* text) {
  Config config;
  config.set("delay", text);
  return config.delayNs;
}

TEST(InjectionConfigTest, DurationsTakeUnits) {
  EXPECT_EQ(durationOf("5s"), 5 * kSecond);
  EXPECT_EQ(durationOf("200ms"), 200 * kSecond / 1000);
  EXPECT_EQ(durationOf("1m"), 60 * kSecond);
  EXPECT_EQ(durationOf("1min"), 60 * kSecond);
  EXPECT_EQ(durationOf("2h"), 7200 * kSecond);
  EXPECT_EQ(durationOf("750us"), 750000);
  EXPECT_EQ(durationOf("10ns"), 10);
  EXPECT_EQ(durationOf(" 3 S "), 3 * kSecond) << "spaces and case do not matter";
}

TEST(InjectionConfigTest, BareNumbersAreSecondsAndFractionsAreExact) {
  EXPECT_EQ(durationOf("90"), 90 * kSecond);
  EXPECT_EQ(durationOf("1.5s"), 1500000000);
  EXPECT_EQ(durationOf("0.1s"), 100000000);
  EXPECT_EQ(durationOf("0.25m"), 15 * kSecond);
  EXPECT_EQ(durationOf("0"), 0);
}

TEST(InjectionConfigTest, BadDurationsNameTheKeyAndTheValue) {
  for (const char* bad :
       {"", "s", "-1s", "5 parsecs", "1.2.3s", "1e3s", "5sec", ".", "99999999999h"}) {
    Config config;
    std::string message = errorOf([&] { config.set("duration", bad); });
    EXPECT_NE(message.find("duration must be a duration"), std::string::npos)
        << bad << ": " << message;
    EXPECT_NE(message.find(std::string("\"") + bad + "\""), std::string::npos) << message;
  }
}

TEST(InjectionConfigTest, CaptureRangeIsNoneOrCudaProfilerApi) {
  Config config;
  EXPECT_EQ(config.captureRange, CaptureRange::Whole);
  config.set("capture_range", "cudaProfilerApi");
  EXPECT_EQ(config.captureRange, CaptureRange::CudaProfilerApi);
  config.set("capture_range", "none");
  EXPECT_EQ(config.captureRange, CaptureRange::Whole);
  EXPECT_NE(errorOf([&] { config.set("capture_range", "nvtx"); }).find("capture_range must be"),
            std::string::npos);
}

TEST(InjectionConfigTest, RunIdIsAPlainFileNamePart) {
  Config config;
  config.set("run_id", "20250301-141503-77");
  EXPECT_EQ(config.runId, "20250301-141503-77");
  EXPECT_NE(errorOf([&] { config.set("run_id", "../x"); }).find("run_id must be"),
            std::string::npos);
}

TEST(InjectionConfigTest, TheNewKeysComeFromTheEnvironmentToo) {
  setenv("KINETRACE_DELAY", "2s", 1);
  setenv("KINETRACE_DURATION", "500ms", 1);
  setenv("KINETRACE_CAPTURE_RANGE", "cudaprofilerapi", 1);
  setenv("KINETRACE_RUN_ID", "r1", 1);
  Config config = Config::fromEnvironment();
  unsetenv("KINETRACE_DELAY");
  unsetenv("KINETRACE_DURATION");
  unsetenv("KINETRACE_CAPTURE_RANGE");
  unsetenv("KINETRACE_RUN_ID");
  EXPECT_EQ(config.delayNs, 2 * kSecond);
  EXPECT_EQ(config.durationNs, kSecond / 2);
  EXPECT_EQ(config.captureRange, CaptureRange::CudaProfilerApi);
  EXPECT_EQ(config.runId, "r1");
}

TEST(InjectionConfigTest, UnknownKeyMessageListsTheNewKeys) {
  Config config;
  std::string message = errorOf([&] { config.set("dealy", "1s"); });
  for (const char* key : {"delay", "duration", "capture_range", "run_id"}) {
    EXPECT_NE(message.find(key), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace kinetrace
