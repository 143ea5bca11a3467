#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kinetrace/error.h"
#include "kinetrace/profiler.h"
#include "session/session_support.h"
#include "support/log.h"
#include "support/test_support.h"

// A Profiler built with the default argument reads the KINETRACE_* variables: a stray one is
// worth a warning, never an exception in a training job; a bad value of a real one is an
// error that names the variable.

namespace kinetrace {
namespace {

using testing::errorOf;
using testing::ScopedEnv;
using testing::StderrCapture;

TEST(EnvironmentTest, AStrayKinetraceVariableIsAWarningNamingItNotAnError) {
  detail::setLogLevel(LogLevel::Warning);  // an earlier test's Profiler may have lowered it
  ScopedEnv stray("KINETRACE_FOO", "1");
  StderrCapture log;
  std::unique_ptr<Profiler> profiler;
  const std::string thrown = errorOf([&] { profiler = std::make_unique<Profiler>(); });
  const std::string said = log.text();
  EXPECT_EQ(thrown, "");
  ASSERT_NE(profiler, nullptr);
  EXPECT_NE(said.find("warning"), std::string::npos) << said;
  EXPECT_NE(said.find("KINETRACE_FOO"), std::string::npos) << said;
  EXPECT_NE(said.find("memory_mb"), std::string::npos) << "the known keys are listed:\n" << said;
}

TEST(EnvironmentTest, ABadValueIsAnErrorNamingTheVariable) {
  struct Case {
    const char* variable;
    const char* value;
    const char* says;
  };
  const Case cases[] = {
      {"KINETRACE_CLOCK", "garbage", "clock must be auto, tsc or monotonic, got \"garbage\""},
      {"KINETRACE_CAPTURE_RANGE", "", "capture_range must be none, cudaProfilerApi or onDemand, got \"\""},
      {"KINETRACE_DURATION", "0.0000000001s", "duration must be at least 1ns or exactly 0"},
      {"KINETRACE_MEMORY_MB", "17592186044416",
       "memory_mb must be a whole number from 1 to 1048576"},
  };
  for (const Case& c : cases) {
    ScopedEnv bad(c.variable, c.value);
    const std::string message = errorOf([] { Profiler profiler; });
    EXPECT_EQ(message.rfind(std::string("environment variable ") + c.variable + ": ", 0), 0u)
        << message;
    EXPECT_NE(message.find(c.says), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace kinetrace
