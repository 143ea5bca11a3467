// libkineto's on-demand config, as `dyno gputrace` writes it and the dynolog daemon hands it
// over, turned into the request kinetrace's front-ends record.

#include "ondemand/kineto_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kinetrace::ondemand {
namespace {

constexpr int64_t kPid = 4242;

KinetoConfigRequest parsed(const std::string& text, const std::string& dir = "") {
  detail::Result<KinetoConfigRequest> result = requestFromKinetoConfig(text, kPid, dir);
  EXPECT_TRUE(result.ok()) << result.why();
  return result.ok() ? result.value() : KinetoConfigRequest{};
}

std::string refusal(const std::string& text, const std::string& dir = "") {
  detail::Result<KinetoConfigRequest> result = requestFromKinetoConfig(text, kPid, dir);
  return result.ok() ? "accepted" : result.why();
}

TEST(KinetoConfigTest, DynosDurationConfigIsAWindowOfThatLongFromNow) {
  // dyno gputrace --log-file /tmp/trace.json --duration-ms 750, with the daemon's trace id.
  const KinetoConfigRequest config = parsed(
      "ACTIVITIES_LOG_FILE=/tmp/trace.json\nPROFILE_START_TIME=0\n"
      "ACTIVITIES_DURATION_MSECS=750\nREQUEST_TRACE_ID=1234567\n");
  EXPECT_EQ(config.request.durationNs, 750'000'000);
  EXPECT_EQ(config.request.steps, 0);
  EXPECT_EQ(config.request.startAtNs, 0) << "0 is now";
  EXPECT_EQ(config.request.output, "/tmp/trace_4242.json") << "the path dyno prints";
  EXPECT_EQ(config.request.requestTraceId, "1234567");
  EXPECT_EQ(config.request.origin, "dynolog");
  EXPECT_TRUE(config.ignored.empty());
}

TEST(KinetoConfigTest, AStartTimeIsMillisecondsSinceTheEpoch) {
  const KinetoConfigRequest config =
      parsed("ACTIVITIES_LOG_FILE=/tmp/t.json\nPROFILE_START_TIME=1764000000123\n");
  EXPECT_EQ(config.request.startAtNs, int64_t{1764000000123} * 1000000);
  EXPECT_EQ(config.request.durationNs, 500'000'000) << "libkineto's default window";
}

TEST(KinetoConfigTest, DynosIterationConfigIsAWindowOfStepsRoundedUp) {
  // dyno gputrace --iterations 3 --profile-start-iteration-roundup 100, with every PyTorch flag.
  const KinetoConfigRequest config = parsed(
      "ACTIVITIES_LOG_FILE=/tmp/run/x.pt.trace.json\nPROFILE_START_ITERATION=0\n"
      "PROFILE_START_ITERATION_ROUNDUP=100\nACTIVITIES_ITERATIONS=3\n"
      "PROFILE_REPORT_INPUT_SHAPES=true\nPROFILE_PROFILE_MEMORY=true\nPROFILE_WITH_STACK=true\n"
      "PROFILE_WITH_FLOPS=True\nPROFILE_WITH_MODULES=1\n");
  EXPECT_EQ(config.request.steps, 3);
  EXPECT_EQ(config.request.durationNs, 0);
  EXPECT_EQ(config.request.startStep, 0);
  EXPECT_EQ(config.request.roundUpSteps, 100);
  EXPECT_EQ(config.request.output, "/tmp/run/x.pt.trace_4242.json")
      << "dyno's naming: every .json becomes _PID.json";
  const FrameworkOptions& framework = config.request.framework;
  EXPECT_TRUE(framework.inputShapes && framework.profileMemory && framework.withStack &&
              framework.withFlops && framework.withModules);
}

TEST(KinetoConfigTest, FlagsDefaultToOffAndARoundUpOfZeroIsNone) {
  const KinetoConfigRequest config = parsed(
      "ACTIVITIES_LOG_FILE=/tmp/t.json\nPROFILE_START_ITERATION=0\n"
      "PROFILE_START_ITERATION_ROUNDUP=0\nPROFILE_WITH_STACK=false\n");
  EXPECT_EQ(config.request.roundUpSteps, 1);
  EXPECT_EQ(config.request.steps, 1) << "one step by default";
  const FrameworkOptions& framework = config.request.framework;
  EXPECT_FALSE(framework.inputShapes || framework.profileMemory || framework.withStack ||
               framework.withFlops || framework.withModules);
}

TEST(KinetoConfigTest, CommentsBlankLinesAndSpacesAreAllowedAndOtherKeysListed) {
  const KinetoConfigRequest config = parsed(
      "# from a file\n\n  ACTIVITIES_LOG_FILE = /tmp/t.json   # where\n"
      "ACTIVITIES_WARMUP_PERIOD_SECS=5\nACTIVITY_TYPES=kernel\nACTIVITIES_DURATION_SECS=2\n");
  EXPECT_EQ(config.request.output, "/tmp/t_4242.json");
  EXPECT_EQ(config.request.durationNs, 2'000'000'000);
  EXPECT_EQ(config.ignored,
            (std::vector<std::string>{"ACTIVITIES_WARMUP_PERIOD_SECS", "ACTIVITY_TYPES"}));
}

TEST(KinetoConfigTest, WithoutALogFileTheTraceGoesWhereLibkinetoPutsIt) {
  EXPECT_EQ(parsed("ACTIVITIES_DURATION_MSECS=10\n").request.output,
            "/tmp/libkineto_activities_4242.json");
}

TEST(KinetoConfigTest, BadValuesAreRefusedNamingTheKey) {
  EXPECT_EQ(refusal("ACTIVITIES_DURATION_MSECS=soon\n"),
            "ACTIVITIES_DURATION_MSECS needs a whole number, got \"soon\"");
  EXPECT_EQ(refusal("ACTIVITIES_DURATION_MSECS=-5\n"),
            "ACTIVITIES_DURATION_MSECS needs a whole number, got \"-5\"");
  EXPECT_EQ(refusal("ACTIVITIES_DURATION_MSECS=0\n"),
            "ACTIVITIES_DURATION_MSECS must be more than 0");
  EXPECT_EQ(refusal("ACTIVITIES_DURATION_SECS=31622401\n"),
            "ACTIVITIES_DURATION_SECS=31622401 is longer than the longest window (366 days)");
  EXPECT_EQ(refusal("PROFILE_WITH_STACK=maybe\n"),
            "PROFILE_WITH_STACK needs true or false, got \"maybe\"");
  EXPECT_EQ(refusal("PROFILE_START_ITERATION=0\nACTIVITIES_ITERATIONS=0\n"),
            "ACTIVITIES_ITERATIONS must be more than 0");
  EXPECT_EQ(refusal("just words\n"), "\"just words\" is not KEY=VALUE");
  EXPECT_EQ(refusal("PROFILE_START_TIME=99999999999999999\n"),
            "PROFILE_START_TIME=99999999999999999 is past the year 2262");
}

TEST(KinetoConfigTest, TracesAreConfinedToTmpOrTheOnDemandDirectory) {
  // The daemon's RPC has no authentication: no trace may overwrite a file elsewhere. Where it
  // really lands is checked by the request's rule (ondemand::prepareOutput, and again when
  // the files are written), on the resolved path.
  const KinetoConfigRequest config = parsed("ACTIVITIES_LOG_FILE=/home/me/.bashrc.json\n");
  EXPECT_EQ(config.request.outputRule.allowedDirectories, std::vector<std::string>{"/tmp"});
  EXPECT_TRUE(config.request.outputRule.createDirectories);
  EXPECT_NE(config.request.outputRule.confinedBecause.find("KINETO_ONDEMAND_TRACE_DIR"),
            std::string::npos);
  EXPECT_EQ(parsed("ACTIVITIES_LOG_FILE=/data/traces/t.json\n", "/data/traces/")
                .request.outputRule.allowedDirectories,
            (std::vector<std::string>{"/tmp", "/data/traces/"}));
  EXPECT_EQ(parsed("ACTIVITIES_LOG_FILE=/tmp/t.json\n", "relative/dir")
                .request.outputRule.allowedDirectories,
            std::vector<std::string>{"/tmp"})
      << "only an absolute directory names a fixed place";
  EXPECT_EQ(refusal("ACTIVITIES_LOG_FILE=trace.json\n"),
            "ACTIVITIES_LOG_FILE must be an absolute path, got \"trace_4242.json\"");
  EXPECT_EQ(refusal("ACTIVITIES_LOG_FILE=/tmp/a\rb.json\n"),
            "ACTIVITIES_LOG_FILE: the path holds a control character (0x0D)");
}

TEST(KinetoConfigTest, ThePidGoesWhereDynoPrintsIt) {
  EXPECT_EQ(withPid("/tmp/t.json", 7), "/tmp/t_7.json");
  EXPECT_EQ(withPid("/tmp/t.json.gz", 7), "/tmp/t_7.json.gz");
  EXPECT_EQ(withPid("/tmp/t.pt.trace.json", 7), "/tmp/t.pt.trace_7.json");
  EXPECT_EQ(withPid("/tmp/a.json/t.json", 7), "/tmp/a.json/t_7.json") << "the file's name only";
  EXPECT_EQ(withPid("/tmp/a.pftrace/t", 7), "/tmp/a.pftrace/t_7");
  EXPECT_EQ(withPid("t.json", 7), "t_7.json");
  EXPECT_EQ(withPid("/tmp/t.pftrace", 7), "/tmp/t_7.pftrace");
  EXPECT_EQ(withPid("/tmp/trace", 7), "/tmp/trace_7");
}

TEST(KinetoConfigTest, TheSameKeysReadForKinetraceTrigger) {
  detail::Result<KinetoConfig> config = parseKinetoConfig(
      "ACTIVITIES_LOG_FILE=/home/me/t.json\nACTIVITIES_ITERATIONS=4\n"
      "PROFILE_START_ITERATION=-1\n");
  ASSERT_TRUE(config.ok()) << config.why();
  EXPECT_EQ(config.value().logFile, "/home/me/t.json") << "no directory rule for the local user";
  EXPECT_EQ(config.value().iterations, 4);
  EXPECT_FALSE(config.value().startIteration.has_value()) << "negative: unset, as libkineto";
  EXPECT_FALSE(config.value().durationNs.has_value());
}

TEST(KinetoConfigTest, TheDaemonVariableIsReadAsLibkinetoReadsIt) {
  for (const char* on : {"1", "true", "TRUE", "yes", "on"}) {
    ::setenv("KINETO_USE_DAEMON", on, 1);
    EXPECT_TRUE(daemonRequested()) << on;
  }
  for (const char* off : {"0", "false", "", "no", "off"}) {
    ::setenv("KINETO_USE_DAEMON", off, 1);
    EXPECT_FALSE(daemonRequested()) << off;
  }
  ::unsetenv("KINETO_USE_DAEMON");
  EXPECT_FALSE(daemonRequested());
}

}  // namespace
}  // namespace kinetrace::ondemand
