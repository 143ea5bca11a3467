#include "cli_options.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "run_command.h"
#include "trigger_command.h"

namespace kinetrace::cli {
namespace {

// The UsageError a command line raises ("" when it parses).
UsageError errorOf(const std::vector<std::string>& args) {
  try {
    parseCommandLine(args);
  } catch (const UsageError& error) {
    return error;
  }
  return UsageError("", 0);
}

std::string messageOf(const std::vector<std::string>& args) {
  return errorOf(args).what();
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

TEST(CliOptionsTest, RunTakesTheProgramAfterDoubleDash) {
  Command c = parseCommandLine({"run", "--", "python", "train.py", "--epochs", "1"});
  ASSERT_EQ(c.kind, Command::Kind::Run);
  EXPECT_EQ(c.run.program, (std::vector<std::string>{"python", "train.py", "--epochs", "1"}));
  EXPECT_EQ(c.run.outputDir, "kinetrace-traces");
  EXPECT_TRUE(c.run.nvtx);
}

TEST(CliOptionsTest, RunStopsReadingOptionsAtTheFirstProgramWord) {
  Command c = parseCommandLine({"run", "-o", "out", "./engine", "--delay", "5s"});
  EXPECT_EQ(c.run.outputDir, "out");
  EXPECT_EQ(c.run.program, (std::vector<std::string>{"./engine", "--delay", "5s"}));
  EXPECT_TRUE(c.run.setting("delay").empty()) << "--delay after the program is the program's";
}

TEST(CliOptionsTest, RunReadsEveryOptionInBothSpellings) {
  Command c = parseCommandLine({"run", "--output=traces/", "--activities",
                                "kernel,memcpy,memset,sync,memory", "--delay", "5s",
                                "--duration=2s", "--log-level", "info", "--memory-mb=64",
                                "--format=pftrace", "--no-nvtx", "--no-summary", "--top", "3",
                                "--injection-library", "/x/lib.so", "--", "./engine"});
  const RunOptions& r = c.run;
  EXPECT_EQ(r.outputDir, "traces/");
  EXPECT_EQ(r.settings,
            (std::map<std::string, std::string>{{"activities", "kernel,memcpy,memset,sync,memory"},
                                                {"delay", "5s"},
                                                {"duration", "2s"},
                                                {"log_level", "info"},
                                                {"memory_mb", "64"},
                                                {"trace_format", "pftrace"}}));
  EXPECT_FALSE(r.nvtx);
  EXPECT_FALSE(r.printSummary);
  EXPECT_EQ(r.topKernels, 3u);
  EXPECT_EQ(r.injectionLibrary, "/x/lib.so");
}

TEST(CliOptionsTest, TorchIsOffUnlessAsked) {
  EXPECT_FALSE(parseCommandLine({"run", "python", "train.py"}).run.torch);
  EXPECT_TRUE(parseCommandLine({"run", "--torch", "--", "python", "train.py"}).run.torch);
}

TEST(CliOptionsTest, TheLastOfNvtxAndNoNvtxWins) {
  EXPECT_TRUE(parseCommandLine({"run", "--no-nvtx", "--nvtx", "x"}).run.nvtx);
  EXPECT_FALSE(parseCommandLine({"run", "--nvtx", "--no-nvtx", "x"}).run.nvtx);
}

TEST(CliOptionsTest, CaptureRangeCudaProfilerApiIsAccepted) {
  Command c = parseCommandLine({"run", "--capture-range=cudaProfilerApi", "./engine"});
  EXPECT_EQ(c.run.setting("capture_range"), "cudaProfilerApi");
}

TEST(CliOptionsTest, UnknownOptionIsAUsageErrorNamingIt) {
  UsageError error = errorOf({"run", "--outptu", "x", "--", "./engine"});
  EXPECT_EQ(error.exitCode(), 2);
  EXPECT_CONTAINS(error.what(), "unknown option '--outptu'");
  EXPECT_CONTAINS(error.what(), "kinetrace run --help");
}

TEST(CliOptionsTest, MissingProgramIsAUsageError) {
  UsageError error = errorOf({"run", "-o", "x"});
  EXPECT_EQ(error.exitCode(), 2);
  EXPECT_CONTAINS(error.what(), "no program to run");
  EXPECT_CONTAINS(messageOf({"run", "--"}), "no program to run");
}

TEST(CliOptionsTest, OptionWithoutItsValueIsAUsageError) {
  EXPECT_CONTAINS(messageOf({"run", "--delay"}), "'--delay' needs a value");
  EXPECT_CONTAINS(messageOf({"run", "--no-nvtx=yes", "x"}), "'--no-nvtx' takes no value");
}

TEST(CliOptionsTest, BadValuesAreReportedByOptionBeforeAnythingRuns) {
  EXPECT_CONTAINS(messageOf({"run", "--delay", "5 parsecs", "x"}),
                  "--delay 5 parsecs: delay must be a duration");
  EXPECT_CONTAINS(messageOf({"run", "--duration", "-1s", "x"}), "--duration -1s");
  EXPECT_CONTAINS(messageOf({"run", "--activities", "kernels", "x"}),
                  "unknown activity \"kernels\"");
  EXPECT_CONTAINS(messageOf({"run", "--capture-range", "nvtx", "x"}),
                  "capture_range must be none, cudaProfilerApi or onDemand");
  EXPECT_CONTAINS(messageOf({"run", "--log-level", "chatty", "x"}), "--log-level chatty");
  EXPECT_CONTAINS(messageOf({"run", "--top", "many", "x"}), "--top needs a whole number");
  EXPECT_CONTAINS(messageOf({"run", "--output=", "x"}), "--output needs a directory");
}

TEST(CliOptionsTest, MemoryMbIsOneCapOnTheTracersWholeMemory) {
  EXPECT_EQ(parseCommandLine({"run", "--memory-mb", "1", "x"}).run.setting("memory_mb"), "1");
  EXPECT_EQ(parseCommandLine({"run", "--memory-mb=1048576", "x"}).run.setting("memory_mb"),
            "1048576");
  EXPECT_TRUE(parseCommandLine({"run", "x"}).run.settings.empty()) << "the library's defaults";
}

TEST(CliOptionsTest, MemoryMbMustBeAWholeNumberFrom1To1048576) {
  // What the traced processes accept (KINETRACE_MEMORY_MB), checked once, by the same row.
  for (const char* bad : {"0", "1048577", "-1", "1.5", "64MB", "many", ""}) {
    UsageError error = errorOf({"run", "--memory-mb", bad, "x"});
    EXPECT_EQ(error.exitCode(), 2) << bad;
    EXPECT_EQ(std::string(error.what()),
              std::string("kinetrace run: --memory-mb ") + bad +
                  ": memory_mb must be a whole number from 1 to 1048576, got \"" + bad + "\"");
  }
}

TEST(CliOptionsTest, ThePerBufferCapsAreNoLongerOptions) {
  EXPECT_CONTAINS(messageOf({"run", "--host-buffer-mb", "64", "x"}),
                  "unknown option '--host-buffer-mb'");
  EXPECT_CONTAINS(messageOf({"run", "--gpu-buffer-mb=64", "x"}),
                  "unknown option '--gpu-buffer-mb=64'");
}

TEST(CliOptionsTest, ProfilerApiCaptureCannotBeCombinedWithATimeWindow) {
  EXPECT_CONTAINS(messageOf({"run", "--capture-range=cudaProfilerApi", "--delay=1s", "x"}),
                  "cannot be combined with --delay or --duration");
}

TEST(CliOptionsTest, AScheduleAndStepMarksReachTheProgramChecked) {
  Command c = parseCommandLine({"run", "--schedule", "wait=1,warmup=1,active=3,repeat=2",
                                "--step-marks", "iteration", "./train"});
  EXPECT_EQ(c.run.setting("schedule"), "wait=1,warmup=1,active=3,repeat=2");
  EXPECT_EQ(c.run.setting("step_marks"), "iteration");
  EXPECT_CONTAINS(messageOf({"run", "--schedule", "active=0", "x"}),
                  "active must be at least 1 step");
  EXPECT_CONTAINS(messageOf({"run", "--schedule", "wiat=1", "x"}), "unknown key \"wiat\"");
  EXPECT_CONTAINS(messageOf({"run", "--schedule", "active=2", "--duration", "1s", "x"}),
                  "cannot be combined with --delay, --duration or --capture-range");
  EXPECT_CONTAINS(messageOf({"run", "--schedule", "active=2", "--no-nvtx", "x"}), "--no-nvtx");
  EXPECT_CONTAINS(messageOf({"run", "--step-marks", " , ", "x"}), "at least one NVTX range");
}

TEST(CliOptionsTest, EverySubcommandHasHelp) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--help"},
                                                                {"-h"},
                                                                {"help"},
                                                                {"run", "--help"},
                                                                {"run", "-h"},
                                                                {"summary", "--help"},
                                                                {"help", "run"},
                                                                {"help", "summary"}}) {
    Command c = parseCommandLine(args);
    EXPECT_EQ(c.kind, Command::Kind::Help) << args[0];
  }
  EXPECT_EQ(parseCommandLine({"run", "-o", "x", "--help", "--bogus"}).helpTopic, "run");
  EXPECT_EQ(parseCommandLine({"summary", "-h"}).helpTopic, "summary");
}

TEST(CliOptionsTest, HelpTextsDescribeTheirCommand) {
  EXPECT_CONTAINS(mainHelp(), "kinetrace run [options] [--] PROGRAM");
  EXPECT_CONTAINS(mainHelp(), "kinetrace summary");
  for (const char* option : {"--output", "--activities", "--delay", "--duration", "--capture-range",
                             "--no-nvtx", "--log-level", "--memory-mb N", "exit status"}) {
    EXPECT_CONTAINS(helpFor("run"), option);
  }
  EXPECT_EQ(helpFor("run").find("buffer-mb"), std::string::npos) << "the per-buffer caps are gone";
  EXPECT_CONTAINS(helpFor("run"), "SIGTERM or SIGHUP sent to kinetrace");
  EXPECT_CONTAINS(helpFor("summary"), "--top N");
  EXPECT_EQ(helpFor("run").rfind("usage: kinetrace run", 0), 0u);
  EXPECT_EQ(helpFor(""), mainHelp());
}

TEST(CliOptionsTest, UnknownCommandsAndTopLevelOptionsAreErrors) {
  EXPECT_CONTAINS(messageOf({}), "no command given");
  EXPECT_CONTAINS(messageOf({"trace", "x"}), "unknown command 'trace'");
  EXPECT_CONTAINS(messageOf({"--verbose"}), "unknown option '--verbose'");
  EXPECT_CONTAINS(messageOf({"help", "profile"}), "no command 'profile'");
  EXPECT_EQ(parseCommandLine({"--version"}).kind, Command::Kind::Version);
}

TEST(CliOptionsTest, SummaryTakesPathsAndTop) {
  Command c = parseCommandLine({"summary", "--top", "2", "a.json", "dir"});
  ASSERT_EQ(c.kind, Command::Kind::Summary);
  EXPECT_EQ(c.summary.topKernels, 2u);
  EXPECT_EQ(c.summary.paths, (std::vector<std::string>{"a.json", "dir"}));
  EXPECT_CONTAINS(messageOf({"summary"}), "no trace given");
  EXPECT_CONTAINS(messageOf({"summary", "--all", "x"}), "unknown option '--all'");
}

// ---- run's checks on the file system ------------------------------------------------

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/kinetrace-cli-test-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(RunChecksTest, OutputDirectoryIsCreatedWithItsParents) {
  TempDir temp;
  std::string made = prepareOutputDirectory(temp.path() + "/a/b/");
  EXPECT_EQ(made, temp.path() + "/a/b");
  struct stat info {};
  EXPECT_EQ(::stat(made.c_str(), &info), 0);
}

TEST(RunChecksTest, UnwritableOutputDirectoryIsAnErrorNamingIt) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root writes anywhere; checked below with a file in the way instead";
  TempDir temp;
  std::string locked = temp.path() + "/locked";
  ::mkdir(locked.c_str(), 0555);
  try {
    prepareOutputDirectory(locked);
    ADD_FAILURE() << "accepted an unwritable directory";
  } catch (const UsageError& error) {
    EXPECT_CONTAINS(error.what(), "cannot write traces to " + locked);
    EXPECT_CONTAINS(error.what(), "Permission denied");
  }
}

TEST(RunChecksTest, DirectoryThatCannotBeCreatedIsAnErrorEvenForRoot) {
  try {
    prepareOutputDirectory("/proc/kinetrace-test/traces");
    ADD_FAILURE() << "created a directory in /proc";
  } catch (const UsageError& error) {
    EXPECT_CONTAINS(
        error.what(),
        "cannot write traces to /proc/kinetrace-test/traces: cannot make /proc/kinetrace-test:");
  }
}

TEST(RunChecksTest, OutputPathThatIsAFileIsAnError) {
  TempDir temp;
  std::string file = temp.path() + "/file";
  ::close(::creat(file.c_str(), 0644));
  try {
    prepareOutputDirectory(file + "/sub");
    ADD_FAILURE() << "accepted a path under a file";
  } catch (const UsageError& error) {
    EXPECT_CONTAINS(error.what(), "cannot write traces to " + file + "/sub");
  }
  try {
    prepareOutputDirectory(file);
    ADD_FAILURE() << "accepted a file as the directory";
  } catch (const UsageError& error) {
    EXPECT_CONTAINS(error.what(), "not a directory");
  }
}

TEST(RunChecksTest, ProgramIsFoundInPathOrReportedMissing) {
  EXPECT_EQ(resolveProgram("/bin/sh"), "/bin/sh");
  EXPECT_NE(resolveProgram("sh").find("/sh"), std::string::npos);
  try {
    resolveProgram("kinetrace-no-such-program");
    ADD_FAILURE();
  } catch (const UsageError& error) {
    EXPECT_EQ(error.exitCode(), 127);
    EXPECT_CONTAINS(error.what(), "'kinetrace-no-such-program': not found in PATH");
  }
  try {
    resolveProgram("/nonexistent");
    ADD_FAILURE();
  } catch (const UsageError& error) {
    EXPECT_EQ(error.exitCode(), 127);
    EXPECT_CONTAINS(error.what(), "'/nonexistent': no such file");
  }
  TempDir temp;
  std::string notExecutable = temp.path() + "/data.txt";
  ::close(::creat(notExecutable.c_str(), 0644));
  try {
    resolveProgram(notExecutable);
    ADD_FAILURE();
  } catch (const UsageError& error) {
    EXPECT_EQ(error.exitCode(), 126);
    EXPECT_CONTAINS(error.what(), "not an executable file");
  }
}

TEST(RunChecksTest, InjectionLibraryOptionWinsOverTheDefaultPlaces) {
  RunOptions options;
  options.injectionLibrary = "/opt/x/libkinetrace_injection.so";
  EXPECT_EQ(injectionLibraryCandidates(options),
            (std::vector<std::string>{"/opt/x/libkinetrace_injection.so"}));
  options.injectionLibrary.clear();
  auto defaults = injectionLibraryCandidates(options);
  ASSERT_FALSE(defaults.empty());
  EXPECT_NE(defaults[0].find("libkinetrace_injection.so"), std::string::npos);
}

}  // namespace
}  // namespace kinetrace::cli

namespace kinetrace::cli {
namespace {

TEST(TriggerOptionsTest, ReadsAProcessOrAJobADurationAndWhereTheTraceGoes) {
  Command c = parseCommandLine({"trigger", "--pid", "4242", "--duration", "5s", "-o", "/t/x.json"});
  ASSERT_EQ(c.kind, Command::Kind::Trigger);
  EXPECT_EQ(c.trigger.pid, 4242);
  EXPECT_EQ(c.trigger.durationNs, 5'000'000'000);
  EXPECT_EQ(c.trigger.output, "/t/x.json");
  c = parseCommandLine(
      {"trigger", "--job", "20261201-1200-77", "--duration=500ms", "--start-in", "2s"});
  EXPECT_EQ(c.trigger.job, "20261201-1200-77");
  EXPECT_EQ(c.trigger.durationNs, 500'000'000);
  EXPECT_EQ(c.trigger.startInNs, 2'000'000'000);
}

TEST(TriggerOptionsTest, MistakesAreNamed) {
  auto messageOf = [](std::vector<std::string> args) {
    try {
      parseCommandLine(args);
    } catch (const UsageError& e) {
      EXPECT_EQ(e.exitCode(), 2);
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(messageOf({"trigger", "--duration", "5s"}).find("--pid PID"), std::string::npos);
  EXPECT_NE(messageOf({"trigger", "--pid", "1", "--job", "j", "--duration", "5s"}).find("one"),
            std::string::npos);
  EXPECT_NE(messageOf({"trigger", "--pid", "1"}).find("how long"), std::string::npos);
  EXPECT_NE(messageOf({"trigger", "--pid", "-3", "--duration", "1s"}).find("process id"),
            std::string::npos);
  EXPECT_NE(messageOf({"trigger", "--pid", "1", "--duration", "soon"}).find("--duration"),
            std::string::npos);
  EXPECT_NE(
      messageOf({"trigger", "--pid", "1", "--steps", "3", "--duration", "1s"}).find("not both"),
      std::string::npos);
  EXPECT_NE(messageOf({"trigger", "--pid", "1", "--steps", "0"}).find("at least 1"),
            std::string::npos);
  EXPECT_NE(messageOf({"trigger", "--pid", "1", "--duration", "1s", "--start-step", "9"})
                .find("--start-step goes with --steps"),
            std::string::npos);
}

TEST(TriggerOptionsTest, StepsAndAStartStepMayBeAskedFor) {
  Command c =
      parseCommandLine({"trigger", "--job", "run7", "--steps", "20", "--start-step", "40000"});
  EXPECT_EQ(c.trigger.steps, 20);
  EXPECT_EQ(c.trigger.startStep, 40000);
  EXPECT_EQ(c.trigger.durationNs, 0);
}

TEST(TriggerOptionsTest, LibkinetosOnDemandKeysFillWhatTheCommandLineLeft) {
  TriggerOptions options;
  options.pid = 1;
  int64_t startAt = 0;
  std::string ignored;
  applyLibkinetoConfig(
      "# libkineto on-demand\nACTIVITIES_DURATION_SECS=3\nACTIVITIES_LOG_FILE=/tmp/k.json\n"
      "PROFILE_START_TIME=1700000000000\nACTIVITIES_WARMUP_PERIOD_SECS=1\n",
      &options, &startAt, &ignored);
  EXPECT_EQ(options.durationNs, 3'000'000'000);
  EXPECT_EQ(options.output, "/tmp/k.json");
  EXPECT_EQ(startAt, int64_t{1700000000000} * 1000000);
  EXPECT_EQ(ignored, "ACTIVITIES_WARMUP_PERIOD_SECS");

  options.durationNs = 1'000'000;  // the command line wins
  applyLibkinetoConfig("ACTIVITIES_DURATION_MSECS=250\n", &options, &startAt, &ignored);
  EXPECT_EQ(options.durationNs, 1'000'000);
  EXPECT_THROW(
      applyLibkinetoConfig("ACTIVITIES_DURATION_SECS=soon\n", &options, &startAt, &ignored),
      UsageError);

  TriggerOptions byIterations;
  byIterations.pid = 1;
  ignored.clear();
  applyLibkinetoConfig(
      "ACTIVITIES_ITERATIONS=5\nPROFILE_START_ITERATION=1000\n"
      "ACTIVITIES_DURATION_SECS=3\n",
      &byIterations, &startAt, &ignored);
  EXPECT_EQ(byIterations.steps, 5);
  EXPECT_EQ(byIterations.startStep, 1000);
  EXPECT_EQ(byIterations.durationNs, 0) << "iterations were asked for first";
  EXPECT_EQ(ignored, "");
}

}  // namespace
}  // namespace kinetrace::cli
