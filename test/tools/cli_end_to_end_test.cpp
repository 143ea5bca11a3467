// `kinetrace run` end to end, without a GPU: the built command runs a program that uses no
// CUDA, and a stand-in for a CUDA program that loads the injection library the way the
// driver does and makes real NVTX calls, built once on its own and once linking
// libkinetrace.so and recording through its public API.

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/temp_dir.h"

namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

struct Result {
  int exitCode = -1;  // the status a shell would show: 128+N for a signal
  int signal = 0;     // the signal that ended it; 0 when it exited
  bool timedOut = false;
  std::string out;
  std::string err;
};

std::string readFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// A directory of one test's own; `kinetrace run` writes the run's traces to traces/ in it.
class RunDir {
 public:
  const std::string& path() const { return dir_.path(); }
  // The traces in traces/ (not their summaries), sorted.
  std::vector<std::string> traces(const std::string& suffix = ".json") const {
    std::vector<std::string> found;
    for (const std::string& name : namesInTraces()) {
      if (endsWith(name, suffix) && !endsWith(name, ".summary.json")) {
        found.push_back(path() + "/traces/" + name);
      }
    }
    return found;
  }
  // Whether a run manifest is left in traces/ (the command deletes it after its report).
  bool hasManifest() const {
    for (const std::string& name : namesInTraces()) {
      if (endsWith(name, ".manifest")) return true;
    }
    return false;
  }

 private:
  static bool endsWith(const std::string& text, const std::string& end) {
    return text.size() >= end.size() &&
           text.compare(text.size() - end.size(), end.size(), end) == 0;
  }
  std::vector<std::string> namesInTraces() const {
    std::error_code missing;
    if (!std::filesystem::is_directory(path() + "/traces", missing)) return {};
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path() + "/traces")) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  kinetrace::testing::TempDir dir_{"kinetrace_e2e"};
};

// A command started in the background with extra environment, `input` on stdin, stdout and
// stderr collected in files. `inChild` runs in the child just before exec.
class Started {
 public:
  Started(const std::vector<std::string>& argv, const Env& env = {}, const std::string& input = "",
          const std::function<void()>& inChild = {}) {
    std::ofstream(in()) << input;
    pid_ = ::fork();
    if (pid_ == 0) {
      int inFd = ::open(in().c_str(), O_RDONLY);
      int outFd = ::open(out().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int errFd = ::open(err().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(inFd, 0);
      ::dup2(outFd, 1);
      ::dup2(errFd, 2);
      // The tests' own environment must not leak kinetrace settings into the runs.
      for (const char* name :
           {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "RANK", "LOCAL_RANK", "WORLD_SIZE"}) {
        ::unsetenv(name);
      }
      for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
      // As from a terminal: a shell starts background jobs with SIGINT ignored, and an
      // ignored SIGINT is (rightly) left ignored by the traced program.
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGQUIT, SIG_DFL);
      if (inChild) inChild();
      std::vector<char*> args;
      for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(111);
    }
  }
  ~Started() {
    if (pid_ > 0) wait(std::chrono::seconds(0));
  }
  Started(const Started&) = delete;
  Started& operator=(const Started&) = delete;

  pid_t pid() const { return pid_; }

  // Waits for the command to end. One still running after `limit` is killed (SIGKILL) and
  // its Result says timedOut.
  Result wait(std::chrono::seconds limit = std::chrono::seconds(600)) {
    Result result;
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        result.timedOut = true;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval
    }
    pid_ = -1;
    result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = readFile(out());
    result.err = readFile(err());
    return result;
  }

 private:
  std::string in() const { return io_.path() + "/in"; }
  std::string out() const { return io_.path() + "/out"; }
  std::string err() const { return io_.path() + "/err"; }

  RunDir io_;
  pid_t pid_ = -1;
};

// Runs argv to its end with extra environment, `input` on stdin; collects stdout and stderr.
Result run(const std::vector<std::string>& argv, const Env& env = {},
           const std::string& input = "") {
  return Started(argv, env, input).wait();
}

std::vector<std::string> kinetraceRun(const RunDir& dir, std::vector<std::string> options,
                                      std::vector<std::string> program) {
  std::vector<std::string> argv = {KINETRACE_CLI, "run", "--output", dir.path() + "/traces"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// Names of the trace's events with category `category` ("" = any).
std::vector<std::string> eventNames(const nlohmann::json& trace, const std::string& category = "") {
  std::vector<std::string> names;
  for (const auto& event : trace["traceEvents"]) {
    if (event.value("ph", "") == "M") continue;
    if (category.empty() || event.value("cat", "") == category)
      names.push_back(event.value("name", ""));
  }
  return names;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// ---- a program without CUDA -------------------------------------------------------

TEST(KinetraceRunTest, ExitCodePassesThroughAndNoTraceIsReportedWithoutCuda) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {HOST_ONLY_PROGRAM, "exit", "7"}));
  EXPECT_EQ(r.exitCode, 7);
  EXPECT_CONTAINS(r.err, "exited with status 7");
  EXPECT_CONTAINS(r.err, "no trace was written");
  EXPECT_TRUE(dir.traces().empty());
}

// A machine without the NVIDIA driver is said before the program runs, and again as the
// reason no trace was written; with the driver, neither.
TEST(KinetraceRunTest, NoDriverIsSaidBeforeTheProgramRuns) {
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  const bool haveDriver = driver != nullptr;
  if (driver != nullptr) ::dlclose(driver);
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {HOST_ONLY_PROGRAM, "exit", "0"}));
  const std::size_t said = r.err.find("kinetrace run: no NVIDIA driver here (");
  if (haveDriver) {
    EXPECT_EQ(said, std::string::npos) << r.err;
    return;
  }
  ASSERT_NE(said, std::string::npos) << r.err;
  EXPECT_LT(said, r.err.find("exited with status 0")) << "said before the program ran:\n" << r.err;
  EXPECT_CONTAINS(r.err, "no trace was written: there is no NVIDIA driver here");
}

TEST(KinetraceRunTest, StdinAndStdoutStayTheProgramsOwn) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {HOST_ONLY_PROGRAM, "echo"}), {}, "line one\nline two\n");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.out, "line one\nline two\n") << "kinetrace writes nothing to stdout";
}

TEST(KinetraceRunTest, ADeathBySignalIsReportedAs128PlusTheSignal) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {HOST_ONLY_PROGRAM, "signal", "15"}));
  EXPECT_EQ(r.exitCode, 128 + 15);
  EXPECT_CONTAINS(r.err, "ended by signal 15");
}

TEST(KinetraceRunTest, TheProgramGetsTheInjectionEnvironment) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {HOST_ONLY_PROGRAM, "env", "CUDA_INJECTION64_PATH"}));
  EXPECT_CONTAINS(r.out, "/libkinetrace_injection.so");
  r = run(kinetraceRun(dir, {}, {HOST_ONLY_PROGRAM, "env", "NVTX_INJECTION64_PATH"}));
  EXPECT_CONTAINS(r.out, "/libkinetrace_injection.so");
  r = run(kinetraceRun(dir, {"--no-nvtx"}, {HOST_ONLY_PROGRAM, "env", "NVTX_INJECTION64_PATH"}));
  EXPECT_EQ(r.out, "(unset)\n");
  r = run(kinetraceRun(dir, {"--delay", "1.5s"}, {HOST_ONLY_PROGRAM, "env", "KINETRACE_DELAY"}));
  EXPECT_EQ(r.out, "1.5s\n");
  r = run(kinetraceRun(dir, {}, {HOST_ONLY_PROGRAM, "env", "KINETRACE_OUTPUT"}));
  EXPECT_EQ(r.out, dir.path() + "/traces\n");
}

TEST(KinetraceRunTest, TorchPreloadsTheKinetoApiAndInjectsNoSecondCuptiSubscriber) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a TSan-instrumented library preloaded ahead of TSan's runtime cannot start";
#endif
  RunDir dir;
  // Even when kinetrace's injection is already in the environment (a nested run), the
  // program gets libkineto_api.so preloaded and no injection beside it.
  Result injection =
      run(kinetraceRun(dir, {}, {HOST_ONLY_PROGRAM, "env", "CUDA_INJECTION64_PATH"}));
  std::string ours = injection.out.substr(0, injection.out.find('\n'));
  Env nested = {{"CUDA_INJECTION64_PATH", ours}, {"LD_PRELOAD", ""}};
#if defined(__SANITIZE_ADDRESS__)
  // The preloaded (instrumented) library comes before ASan's runtime in the load order.
  const char* asan = std::getenv("ASAN_OPTIONS");
  nested.push_back(
      {"ASAN_OPTIONS", std::string(asan != nullptr ? asan : "") + ":verify_asan_link_order=0"});
#endif
  Result r = run(kinetraceRun(dir, {"--torch"}, {HOST_ONLY_PROGRAM, "env", "LD_PRELOAD"}), nested);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_CONTAINS(r.out, "/libkineto_api.so");
  EXPECT_CONTAINS(r.err, "torch.profiler recorded with kinetrace");
  r = run(kinetraceRun(dir, {"--torch"}, {HOST_ONLY_PROGRAM, "env", "CUDA_INJECTION64_PATH"}),
          nested);
  EXPECT_EQ(r.out, "(unset)\n");
  r = run(kinetraceRun(dir, {"--torch"}, {HOST_ONLY_PROGRAM, "env", "NVTX_INJECTION64_PATH"}),
          nested);
  EXPECT_EQ(r.out, "(unset)\n");
  EXPECT_TRUE(dir.traces().empty()) << "the program's own profiler writes its traces";
}

TEST(KinetraceRunTest, MemoryMbReachesTheProgramAsKinetraceMemoryMb) {
  RunDir dir;
  Result r = run(
      kinetraceRun(dir, {"--memory-mb", "64"}, {HOST_ONLY_PROGRAM, "env", "KINETRACE_MEMORY_MB"}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "64\n");
}

TEST(KinetraceRunTest, AMissingProgramIsAnErrorWithStatus127) {
  Result r = run({KINETRACE_CLI, "run", "--", "/nonexistent"});
  EXPECT_EQ(r.exitCode, 127);
  EXPECT_CONTAINS(r.err, "kinetrace run: cannot run '/nonexistent'");
  r = run({KINETRACE_CLI, "run", "--", "kinetrace-no-such-program"});
  EXPECT_EQ(r.exitCode, 127);
  EXPECT_CONTAINS(r.err, "not found in PATH");
}

TEST(KinetraceRunTest, CommandLineMistakesAreReportedWithStatus2) {
  Result r = run({KINETRACE_CLI, "run", "--outptu", "x", "--", HOST_ONLY_PROGRAM});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_CONTAINS(r.err, "unknown option '--outptu'");
  r = run({KINETRACE_CLI, "run", "--output", "/proc/kinetrace/traces", "--", HOST_ONLY_PROGRAM});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_CONTAINS(r.err, "cannot write traces to /proc/kinetrace/traces");
  r = run({KINETRACE_CLI, "run", "--", HOST_ONLY_PROGRAM}, {{"KINETRACE_LOG_LEVEL", "loud"}});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_CONTAINS(r.err, "KINETRACE_LOG_LEVEL");
}

// A typo, or a setting of a newer kinetrace, is worth a word but not a failed run.
TEST(KinetraceRunTest, AnUnknownKinetraceVariableIsNamedAndTheProgramStillRuns) {
  RunDir dir;
  Result r =
      run(kinetraceRun(dir, {}, {HOST_ONLY_PROGRAM, "exit", "0"}), {{"KINETRACE_BOGUS", "1"}});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_CONTAINS(r.err,
                  "environment variable KINETRACE_BOGUS is not a kinetrace setting and is "
                  "ignored");
}

// The trigger channel's directory is read by the injection, not by Config: setting it is
// not a typo.
TEST(KinetraceRunTest, TheControlDirectoryVariableIsNotCalledUnknown) {
  RunDir dir;
  const std::string control = dir.path() + "/control";
  Result r = run(kinetraceRun(dir, {}, {HOST_ONLY_PROGRAM, "exit", "0"}),
                 {{"KINETRACE_CONTROL_DIR", control}});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err.find("KINETRACE_CONTROL_DIR is not a kinetrace setting"), std::string::npos)
      << r.err;
}

// Library messages carry no prefix of their own (or lose it on the way out): the command
// adds exactly one.
TEST(KinetraceRunTest, ErrorsFromTheLibraryArePrintedWithOnePrefix) {
  Result r =
      run({KINETRACE_CLI, "run", "--", HOST_ONLY_PROGRAM}, {{"KINETRACE_LOG_LEVEL", "loud"}});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.err.rfind("kinetrace run: environment variable KINETRACE_LOG_LEVEL: log_level must "
                        "be error, warning, info or debug, got \"loud\"\n",
                        0),
            0u)
      << r.err;
  r = run({KINETRACE_CLI, "run", "--delay", "soon", "--", HOST_ONLY_PROGRAM});
  EXPECT_EQ(r.err.rfind("kinetrace run: --delay soon: delay must be a duration", 0), 0u) << r.err;

  RunDir dir;
  const std::string notASummary = dir.path() + "/x.summary.json";
  std::ofstream(notASummary) << "{}";
  r = run({KINETRACE_CLI, "summary", notASummary});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err.rfind("kinetrace summary: " + notASummary + ": not a kinetrace summary", 0), 0u)
      << r.err;
}

TEST(KinetraceRunTest, HelpIsPrintedForEveryCommand) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"run", "--help"}, {"summary", "--help"}, {"trigger", "--help"}}) {
    std::vector<std::string> argv = {KINETRACE_CLI};
    argv.insert(argv.end(), args.begin(), args.end());
    Result r = run(argv);
    EXPECT_EQ(r.exitCode, 0);
    EXPECT_CONTAINS(r.out, "usage:");
  }
}

// ---- a stand-in for a CUDA program --------------------------------------------------

TEST(KinetraceRunTest, TracesTheProgramWithItsNvtxRangesAndRankAndPrintsTheSummary) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {FAKE_CUDA_APP, "nvtx"}),
                 {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> traces = dir.traces();
  ASSERT_EQ(traces.size(), 1u) << r.err;
  EXPECT_CONTAINS(traces[0], "-rank1-local1-");
  EXPECT_CONTAINS(r.err, "1 trace in " + dir.path() + "/traces/");
  EXPECT_CONTAINS(r.err, "trace   " + traces[0]);
  EXPECT_CONTAINS(r.err, "rank 1 of 2");

  nlohmann::json trace = nlohmann::json::parse(readFile(traces[0]));
  EXPECT_EQ(trace["distributedInfo"]["rank"], 1);
  EXPECT_EQ(trace["distributedInfo"]["world_size"], 2);
  std::vector<std::string> ranges = eventNames(trace, "user_annotation");
  for (const char* name :
       {"train_step", "layer 3", "load batch", "ended elsewhere", "NCCL: AllReduce"}) {
    EXPECT_TRUE(has(ranges, name)) << name << " missing; err:\n" << r.err;
  }
  EXPECT_FALSE(has(ranges, "overwritten")) << "NVTX names are copied when the call is made";
  EXPECT_EQ(
      trace["kinetrace_nvtx"],
      nlohmann::json::parse(R"({"instances": 1, "calls": 6, "recorded": 6, "payload_schemas": 0,
                                       "payload_registrations_refused": 0, "payloads_undecoded": 0})"))
      << "two pushes, a mark, two starts and a domain push, all while recording";
  EXPECT_TRUE(has(eventNames(trace), "checkpoint"));
  for (const auto& event : trace["traceEvents"]) {
    if (event.value("name", "") == "load batch") {
      EXPECT_GE(event["tid"].get<int64_t>(), int64_t{1} << 30)
          << "an async range: on its own track";
    }
  }
}

// The socket of the one traced process in `control`, once it is there ("" after 30 s).
std::string traceSocketIn(const std::string& control) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ignored;
    for (const auto& entry : std::filesystem::directory_iterator(control, ignored)) {
      if (entry.path().extension() == ".sock") return entry.path().string();
    }
    std::this_thread::yield();
  }
  return "";
}

TEST(KinetraceRunTest, AnOnDemandProcessRecordsWhatTriggerAsksAndNothingElse) {
  RunDir dir;
  const std::string control = dir.path() + "/control";
  const Env env = {{"KINETRACE_CONTROL_DIR", control}};
  Started traced(
      kinetraceRun(dir, {"--capture-range", "onDemand"}, {FAKE_CUDA_APP, "sleep", "1500", "nvtx"}),
      env);
  const std::string socket = traceSocketIn(control);
  ASSERT_FALSE(socket.empty()) << "the traced process opened no trigger socket";
  // "<run id>.<pid>.sock"
  const std::string name = std::filesystem::path(socket).stem().string();
  const std::string pid = name.substr(name.rfind('.') + 1);

  const std::string asked = dir.path() + "/asked.json";
  Result trigger =
      run({KINETRACE_CLI, "trigger", "--pid", pid, "--duration", "30s", "--output", asked}, env);
  EXPECT_EQ(trigger.exitCode, 0) << trigger.out << trigger.err;
  EXPECT_CONTAINS(trigger.out, "recording to " + asked);
  // A second request while the first records is refused, saying why.
  Result again = run({KINETRACE_CLI, "trigger", "--pid", pid, "--duration", "1s"}, env);
  EXPECT_EQ(again.exitCode, 1);
  EXPECT_CONTAINS(again.out, "refused: a trace is already recording");

  Result r = traced.wait();
  EXPECT_EQ(r.exitCode, 0) << r.err;
  // The window was still open at exit: saved then, with the NVTX ranges made after the
  // trigger.
  const nlohmann::json trace = nlohmann::json::parse(readFile(asked));
  EXPECT_TRUE(has(eventNames(trace, "user_annotation"), "train_step"));
  EXPECT_EQ(trace["kinetrace_capture"], "on demand");
  EXPECT_TRUE(dir.traces().empty()) << "on demand, nothing is written unasked";
  // The report lists the trace where the trigger sent it.
  EXPECT_CONTAINS(r.err, "kinetrace: 1 trace\n  " + asked);
  EXPECT_EQ(r.err.find("no trace was written"), std::string::npos) << r.err;

  Result nobody = run({KINETRACE_CLI, "trigger", "--pid", pid, "--duration", "1s"}, env);
  EXPECT_EQ(nobody.exitCode, 1);
  EXPECT_CONTAINS(nobody.out, "no traced process with pid " + pid);
}

// `kinetrace run kinetrace run prog`: the inner run's traces are the outer run's too.
TEST(KinetraceRunTest, ANestedRunReportsTheTracesOfTheRunInside) {
  RunDir dir;
  const std::string inner = dir.path() + "/inner";
  Result r =
      run({KINETRACE_CLI, "run", "--no-summary", "--output", dir.path() + "/outer", "--",
           KINETRACE_CLI, "run", "--no-summary", "--output", inner, "--", FAKE_CUDA_APP, "nvtx"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  const std::size_t outerReport = r.err.rfind("exited with status");
  ASSERT_NE(outerReport, std::string::npos) << r.err;
  const std::string report = r.err.substr(outerReport);
  EXPECT_CONTAINS(report, "kinetrace: 1 trace\n  " + inner + "/kinetrace-");
  EXPECT_EQ(report.find("no trace was written"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() + "/outer")) << "no manifest left behind";
}

// The numbers K of a trace's ranges named "<prefix>K", in order.
std::vector<int> stepsIn(const nlohmann::json& trace, const std::string& prefix = "step ") {
  std::vector<int> steps;
  for (const auto& e : trace["traceEvents"]) {
    const std::string name = e.value("name", "");
    if (e.value("ph", "") == "X" && name.rfind(prefix, 0) == 0) {
      steps.push_back(std::stoi(name.substr(prefix.size())));
    }
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::vector<int> consecutive(int first, int count) {
  std::vector<int> steps(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) steps[static_cast<std::size_t>(i)] = first + i;
  return steps;
}

TEST(KinetraceRunTest, TriggeredStepsAreExactlyTheStepsAskedForInEveryProcessOfAJob) {
  RunDir dir;
  const std::string control = dir.path() + "/control";
  const Env env = {{"KINETRACE_CONTROL_DIR", control}};
  // Two processes of one run, each a loop of 5 ms steps marked by NVTX ranges.
  const std::string loop = std::string(FAKE_CUDA_APP) + " steps 700 5";
  Started traced(kinetraceRun(dir, {"--capture-range", "onDemand"},
                              {"/bin/sh", "-c", loop + " & " + loop + "; wait"}),
                 env);
  std::vector<std::string> sockets;
  for (int tries = 0; tries < 100000 && sockets.size() < 2; ++tries) {
    sockets.clear();
    if (std::filesystem::exists(control)) {
      for (const auto& entry : std::filesystem::directory_iterator(control)) {
        if (entry.path().extension() == ".sock") sockets.push_back(entry.path().string());
      }
    }
    std::this_thread::yield();
  }
  ASSERT_EQ(sockets.size(), 2u) << "both processes listen";
  const std::string name = std::filesystem::path(sockets[0]).stem().string();
  const std::string job = name.substr(0, name.rfind('.'));

  const std::string out = dir.path() + "/steps/";
  Result trigger =
      run({KINETRACE_CLI, "trigger", "--job", job, "--steps", "20", "--output", out}, env);
  EXPECT_EQ(trigger.exitCode, 0) << trigger.out << trigger.err;
  EXPECT_CONTAINS(trigger.out, "2 processes start at step ");
  const int start = std::stoi(trigger.out.substr(trigger.out.find("start at step ") + 14));

  Result r = traced.wait();
  EXPECT_EQ(r.exitCode, 0) << r.err;
  int traces = 0;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    if (entry.path().extension() != ".json" ||
        entry.path().string().find(".summary.") != std::string::npos) {
      continue;
    }
    ++traces;
    const nlohmann::json trace = nlohmann::json::parse(readFile(entry.path().string()));
    EXPECT_EQ(stepsIn(trace), consecutive(start, 20)) << entry.path();
    EXPECT_EQ(trace["kinetrace_steps"]["first"], start);
    EXPECT_EQ(trace["kinetrace_steps"]["count"], 20);
  }
  EXPECT_EQ(traces, 2);
}

TEST(KinetraceRunTest, AProgramLinkingKinetraceIsTriggeredByTheStepsItMarksInCode) {
  RunDir dir;
  const std::string control = dir.path() + "/control";
  const Env env = {{"KINETRACE_CONTROL_DIR", control}};
  Started traced(
      kinetraceRun(dir, {"--capture-range", "onDemand"}, {LINKED_CUDA_APP, "ksteps", "400", "5"}),
      env);
  const std::string socket = traceSocketIn(control);
  ASSERT_FALSE(socket.empty());
  const std::string name = std::filesystem::path(socket).stem().string();
  const std::string pid = name.substr(name.rfind('.') + 1);
  const std::string asked = dir.path() + "/ksteps.json";
  Result trigger =
      run({KINETRACE_CLI, "trigger", "--pid", pid, "--steps", "15", "--output", asked}, env);
  EXPECT_EQ(trigger.exitCode, 0) << trigger.out << trigger.err;
  ASSERT_EQ(traced.wait().exitCode, 0);

  const nlohmann::json trace = nlohmann::json::parse(readFile(asked));
  const std::vector<int> steps = stepsIn(trace, "kstep ");
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps, consecutive(steps.front(), 15)) << "each kinetrace::step() starts a step";
  EXPECT_EQ(trace["kinetrace_steps"]["count"], 15);
}

TEST(KinetraceRunTest, AScheduleWritesOneTracePerCycleHoldingItsActiveSteps) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {"--schedule", "skip_first=2,wait=1,warmup=1,active=3,repeat=2"},
                              {FAKE_CUDA_APP, "steps", "20", "1"}));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::vector<std::string> traces = dir.traces();
  ASSERT_EQ(traces.size(), 2u) << r.err;
  std::vector<std::vector<int>> cycles;
  for (const std::string& path : traces) {
    const nlohmann::json trace = nlohmann::json::parse(readFile(path));
    EXPECT_EQ(trace["kinetrace_capture"], "step schedule");
    cycles.push_back(stepsIn(trace));
  }
  std::sort(cycles.begin(), cycles.end());
  EXPECT_EQ(cycles[0], consecutive(4, 3));
  EXPECT_EQ(cycles[1], consecutive(9, 3));
}

TEST(KinetraceRunTest, FormatPftraceWritesPerfettoTracesThatConvertBackToTheSameEvents) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {"--format", "pftrace"}, {FAKE_CUDA_APP, "nvtx"}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> traces = dir.traces(".pftrace");
  ASSERT_EQ(traces.size(), 1u) << r.err;
  EXPECT_TRUE(dir.traces(".json").empty());
  EXPECT_CONTAINS(r.err, "trace   " + traces[0]);
  EXPECT_EQ(readFile(traces[0]).substr(0, 1), "\x0a") << "a Trace message's first packet";

  const std::string json = dir.path() + "/back.json";
  Result converted = run({KINETRACE_CLI, "convert", traces[0], json});
  EXPECT_EQ(converted.exitCode, 0) << converted.err;
  EXPECT_CONTAINS(converted.err, "kinetrace: wrote " + json);
  nlohmann::json trace = nlohmann::json::parse(readFile(json));
  std::vector<std::string> ranges = eventNames(trace, "user_annotation");
  for (const char* name : {"train_step", "layer 3", "load batch"}) {
    EXPECT_TRUE(has(ranges, name)) << name << " missing; err:\n" << r.err;
  }
  EXPECT_TRUE(trace.contains("kinetrace_nvtx"));
}

TEST(KinetraceRunTest, ABadFormatIsACommandLineMistake) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {"--format", "xml"}, {HOST_ONLY_PROGRAM, "exit", "0"}));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_CONTAINS(r.err,
                  "kinetrace run: --format xml: trace_format must be json, json.gz or pftrace");
}

// The lines of `text` that start with `prefix`.
std::vector<std::string> linesStartingWith(const std::string& text, const std::string& prefix) {
  std::vector<std::string> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0) found.push_back(line);
  }
  return found;
}

TEST(KinetraceRunTest, AFailedSaveIsReportedWithItsReasonNotAsNoCudaCall) {
  RunDir dir;
  // The traced process may write no file past 2000 bytes: its trace's save fails as on a
  // full disk (EFBIG), for root too; the manifest's short lines still fit.
  Result r = run(kinetraceRun(dir, {}, {FAKE_CUDA_APP, "fsize", "2000", "nvtx"}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(dir.traces().empty());
  EXPECT_CONTAINS(r.err, "kinetrace: no trace was written to " + dir.path() + "/traces/\n");
  std::vector<std::string> failures = linesStartingWith(r.err, "kinetrace: pid ");
  ASSERT_EQ(failures.size(), 1u) << r.err;
  EXPECT_CONTAINS(failures[0], " could not save its trace: cannot write trace to " + dir.path() +
                                   "/traces/kinetrace-");
  EXPECT_CONTAINS(failures[0], ".json: File too large");
  EXPECT_EQ(r.err.find("made none"), std::string::npos) << "it did make CUDA calls:\n" << r.err;
  EXPECT_FALSE(dir.hasManifest()) << "the manifest is the run's scratch";
}

TEST(KinetraceRunTest, AProcessThatRecordedNothingIsReportedAsSuch) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {FAKE_CUDA_APP}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> lines = linesStartingWith(r.err, "kinetrace: pid ");
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_CONTAINS(lines[0], " started CUDA but recorded no activity, so wrote no trace");
  EXPECT_EQ(r.err.find("made none"), std::string::npos) << r.err;
  EXPECT_FALSE(dir.hasManifest());
}

TEST(KinetraceRunTest, AProcessWhoseTracingIsOffIsReportedWithTheReason) {
  RunDir dir;
  // Checked by the command before the program starts, a variable the program sets itself
  // is seen only by the injection, which then does not trace the process.
  Result r =
      run(kinetraceRun(dir, {}, {FAKE_CUDA_APP, "setenv", "KINETRACE_LOG_LEVEL", "loud", "nvtx"}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(dir.traces().empty());
  std::vector<std::string> lines = linesStartingWith(r.err, "kinetrace: pid ");
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_CONTAINS(lines[0],
                  " was not traced: environment variable KINETRACE_LOG_LEVEL: log_level "
                  "must be error, warning, info or debug, got \"loud\"");
  EXPECT_EQ(r.err.find("made none"), std::string::npos) << r.err;
}

TEST(KinetraceRunTest, ASuccessfulRunLeavesNoManifestBehind) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {FAKE_CUDA_APP, "nvtx"}));
  ASSERT_EQ(dir.traces().size(), 1u) << r.err;
  EXPECT_TRUE(linesStartingWith(r.err, "kinetrace: pid ").empty()) << r.err;
  EXPECT_FALSE(dir.hasManifest());
}

TEST(KinetraceRunTest, SigtermSavesACompleteTraceAndEndsTheProgramWithTheSignal) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {FAKE_CUDA_APP, "nvtx", "sigterm"}));
  EXPECT_EQ(r.exitCode, 128 + 15) << r.err;
  ASSERT_EQ(dir.traces().size(), 1u) << r.err;
  nlohmann::json trace = nlohmann::json::parse(readFile(dir.traces()[0]));  // complete JSON
  EXPECT_TRUE(has(eventNames(trace), "train_step"));
}

TEST(KinetraceRunTest, SigintSavesTheTraceToo) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {FAKE_CUDA_APP, "nvtx", "sigint"}));
  EXPECT_EQ(r.exitCode, 128 + 2) << r.err;
  EXPECT_EQ(dir.traces().size(), 1u) << r.err;
}

TEST(KinetraceRunTest, ExitFromAnotherThreadSavesTheTrace) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {FAKE_CUDA_APP, "nvtx", "exit", "5"}));
  EXPECT_EQ(r.exitCode, 5) << r.err;
  ASSERT_EQ(dir.traces().size(), 1u) << r.err;
  EXPECT_TRUE(has(eventNames(nlohmann::json::parse(readFile(dir.traces()[0]))), "train_step"));
}

TEST(KinetraceRunTest, AForkedChildWritesNoTraceOfItsOwnOrIntoTheParents) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {FAKE_CUDA_APP, "fork", "nvtx"}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  ASSERT_EQ(dir.traces().size(), 1u) << r.err;
  std::vector<std::string> names = eventNames(nlohmann::json::parse(readFile(dir.traces()[0])));
  EXPECT_TRUE(has(names, "train_step"));
  EXPECT_FALSE(has(names, "in the child"));
}

TEST(KinetraceRunTest, DelayLeavesOutWhatCameBeforeIt) {
  RunDir dir;
  Result r = run(
      kinetraceRun(dir, {"--delay", "600ms"}, {FAKE_CUDA_APP, "nvtx", "sleep", "1200", "nvtx"}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  ASSERT_EQ(dir.traces().size(), 1u) << r.err;
  nlohmann::json trace = nlohmann::json::parse(readFile(dir.traces()[0]));
  std::vector<std::string> names = eventNames(trace, "user_annotation");
  EXPECT_EQ(std::count(names.begin(), names.end(), "train_step"), 1);
  EXPECT_EQ(trace["kinetrace_nvtx"]["calls"], 12) << "both rounds of NVTX calls arrived";
  EXPECT_EQ(trace["kinetrace_nvtx"]["recorded"], 6) << "only the second came while recording";
}

TEST(KinetraceRunTest, DurationEndsTheRecording) {
  RunDir dir;
  Result r = run(
      kinetraceRun(dir, {"--duration", "400ms"}, {FAKE_CUDA_APP, "nvtx", "sleep", "1200", "nvtx"}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  ASSERT_EQ(dir.traces().size(), 1u) << r.err;
  std::vector<std::string> names =
      eventNames(nlohmann::json::parse(readFile(dir.traces()[0])), "user_annotation");
  EXPECT_EQ(std::count(names.begin(), names.end(), "train_step"), 1);
}

TEST(KinetraceRunTest, SummaryCommandReprintsTheSummaries) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {FAKE_CUDA_APP, "nvtx"}));
  ASSERT_EQ(dir.traces().size(), 1u) << r.err;
  Result s = run({KINETRACE_CLI, "summary", dir.path() + "/traces"});
  EXPECT_EQ(s.exitCode, 0) << s.err;
  EXPECT_CONTAINS(s.out, "trace   " + dir.traces()[0]);
  Result byTrace = run({KINETRACE_CLI, "summary", dir.traces()[0]});
  EXPECT_EQ(byTrace.out, s.out);
  Result none = run({KINETRACE_CLI, "summary", dir.path()});
  EXPECT_EQ(none.exitCode, 1);
}

// ---- a program that links kinetrace itself --------------------------------------------

// One core per process: the injection is a front-end of the libkinetrace.so the program
// loaded itself, so the program's own kinetrace::Ranges land in the run's one trace, and
// the run's session is the one recorder a Profiler of the program's own would compete with.
TEST(KinetraceRunTest, AProgramLinkingKinetraceRecordsIntoTheRunsOneTrace) {
  RunDir dir;
  Result r = run(kinetraceRun(dir, {}, {LINKED_CUDA_APP, "own", "nvtx", "profiler", "maps"}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> pids = linesStartingWith(r.out, "pid ");
  ASSERT_EQ(pids.size(), 1u) << r.out;
  const std::string pid = pids[0].substr(4);

  std::vector<std::string> traces = dir.traces();
  ASSERT_EQ(traces.size(), 1u) << "one trace for the one process:\n" << r.err;
  EXPECT_CONTAINS(traces[0], "-pid" + pid + ".json");
  nlohmann::json trace = nlohmann::json::parse(readFile(traces[0]));
  std::vector<std::string> ranges = eventNames(trace, "user_annotation");
  EXPECT_TRUE(has(ranges, "app's own range")) << "recorded through the program's own library";
  EXPECT_TRUE(has(eventNames(trace), "app's own instant"));
  EXPECT_TRUE(has(ranges, "train_step")) << "and its NVTX ranges, through the injection";

  EXPECT_CONTAINS(r.out,
                  "profiler: another kinetrace::Profiler is recording in this process "
                  "(under `kinetrace run`, the run's own session); stop it first\n");
  std::vector<std::string> mapped = linesStartingWith(r.out, "mapped ");
  std::vector<std::string> cores;
  for (const std::string& line : mapped) {
    if (line.find("/libkinetrace.so") != std::string::npos) cores.push_back(line);
  }
  EXPECT_EQ(cores.size(), 1u) << "one libkinetrace.so in the process:\n" << r.out;
  EXPECT_EQ(mapped.size(), 2u) << "it and the injection library:\n" << r.out;
}

TEST(KinetraceRunTest, TheProgramsOwnRangesFollowTheRunsRecordingWindow) {
  RunDir dir;
  Result r = run(
      kinetraceRun(dir, {"--delay", "600ms"}, {LINKED_CUDA_APP, "own", "sleep", "1200", "own"}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  ASSERT_EQ(dir.traces().size(), 1u) << r.err;
  std::vector<std::string> names =
      eventNames(nlohmann::json::parse(readFile(dir.traces()[0])), "user_annotation");
  EXPECT_EQ(std::count(names.begin(), names.end(), "app's own range"), 1)
      << "the second only: the first came before the delay passed";
}

// ---- signals sent to kinetrace --------------------------------------------------------

// `kinetrace run -- host_only_program wait DIR` in the background: the program notes each
// signal it gets in DIR and dies of it.
class WaitingProgram {
 public:
  explicit WaitingProgram(const std::function<void()>& inChild = {})
      : kinetrace_(kinetraceRun(dir_, {}, {HOST_ONLY_PROGRAM, "wait", dir_.path()}), {}, "",
                   inChild) {}
  // Never leaves the program behind, whatever kinetrace did with the signal.
  ~WaitingProgram() {
    kinetrace_.wait(std::chrono::seconds(0));
    if (programPid_ > 0 && isStillTheProgram()) ::kill(programPid_, SIGKILL);
  }

  pid_t kinetracePid() const { return kinetrace_.pid(); }

  // Polls (10 s at most) until the program's handlers are in place; its pid, or 0.
  pid_t awaitReady() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream ready(dir_.path() + "/ready");
      if (ready >> programPid_) return programPid_;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval
    }
    return 0;
  }

  Result finish() { return kinetrace_.wait(std::chrono::seconds(10)); }

  bool programGot(int signal) const {
    return std::ifstream(dir_.path() + "/got-" + std::to_string(signal)).good();
  }

 private:
  // Whether the pid still names our program (pids are reused once it is reaped).
  bool isStillTheProgram() const {
    std::string cmdline = readFile("/proc/" + std::to_string(programPid_) + "/cmdline");
    return cmdline.find(dir_.path()) != std::string::npos;
  }

  RunDir dir_;
  Started kinetrace_;
  pid_t programPid_ = 0;
};

// Sends `signal` to kinetrace alone: the program must get it and die of it, and kinetrace
// report and exit with 128 + signal, not die of the signal itself.
void expectPassedOnToTheProgram(int signal) {
  WaitingProgram program;
  const pid_t pid = program.awaitReady();
  ASSERT_GT(pid, 0) << "the program never got ready";
  ASSERT_EQ(::kill(program.kinetracePid(), signal), 0);
  Result r = program.finish();
  ASSERT_FALSE(r.timedOut) << "kinetrace still waits for the program:\n" << r.err;
  EXPECT_TRUE(program.programGot(signal)) << "the program never got signal " << signal;
  EXPECT_EQ(r.signal, 0) << "kinetrace died of the signal instead of reporting:\n" << r.err;
  EXPECT_EQ(r.exitCode, 128 + signal) << r.err;
  EXPECT_CONTAINS(r.err, "kinetrace: signal " + std::to_string(signal) + " (" + strsignal(signal) +
                             ") received: passed on to the program (pid " + std::to_string(pid) +
                             ")\n");
  EXPECT_CONTAINS(r.err, "host_only_program was ended by signal " + std::to_string(signal));
}

TEST(KinetraceRunTest, SigtermSentToKinetraceIsPassedOnToTheProgram) {
  expectPassedOnToTheProgram(SIGTERM);
}

TEST(KinetraceRunTest, SighupSentToKinetraceIsPassedOnToTheProgram) {
  expectPassedOnToTheProgram(SIGHUP);
}

TEST(KinetraceRunTest, SigintSentToKinetraceAloneIsPassedOnToTheProgram) {
  expectPassedOnToTheProgram(SIGINT);
}

TEST(KinetraceRunTest, SigquitSentToKinetraceAloneIsPassedOnToTheProgram) {
  expectPassedOnToTheProgram(SIGQUIT);
}

// Ctrl-C typed at a terminal: the terminal signals the whole foreground process group, so
// the program gets it directly and kinetrace, which gets its own copy, passes nothing on.
TEST(KinetraceRunTest, CtrlCAtTheTerminalReachesTheProgramOnceAndKinetraceReports) {
  const int terminal = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(terminal, 0) << std::strerror(errno);
  ASSERT_EQ(::grantpt(terminal), 0);
  ASSERT_EQ(::unlockpt(terminal), 0);
  const std::string side = ::ptsname(terminal);
  // kinetrace in a session of its own whose controlling terminal is the pty: its process
  // group, with the program in it, is the terminal's foreground group.
  WaitingProgram program([&side] {
    ::setsid();
    int fd = ::open(side.c_str(), O_RDWR);
    ::ioctl(fd, TIOCSCTTY, 0);
    ::dup2(fd, 0);
    ::close(fd);
  });
  ASSERT_GT(program.awaitReady(), 0) << "the program never got ready";
  ASSERT_EQ(::write(terminal, "\x03", 1), 1);  // Ctrl-C
  Result r = program.finish();
  ::close(terminal);
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_TRUE(program.programGot(SIGINT));
  EXPECT_EQ(r.signal, 0) << "kinetrace lives to report";
  EXPECT_EQ(r.exitCode, 128 + SIGINT) << r.err;
  EXPECT_CONTAINS(r.err, "host_only_program was ended by signal 2");
  EXPECT_EQ(r.err.find("passed on"), std::string::npos) << "the program had its own copy:\n"
                                                        << r.err;
}

TEST(KinetraceCommandsTest, AnalyzeAndConvertReadATraceFromStandardInputAsDash) {
  const RunDir dir;
  const std::string trace =
      R"({"traceEvents": [)"
      R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 40,)"
      R"( "args": {"device": 0, "stream": 7}}]})";
  Result analyzed = run({KINETRACE_CLI, "analyze", "-"}, {}, trace);
  EXPECT_EQ(analyzed.exitCode, 0) << analyzed.err;
  EXPECT_CONTAINS(analyzed.out, "gemm");
  const std::string json = dir.path() + "/from_stdin.json";
  Result converted = run({KINETRACE_CLI, "convert", "-", json}, {}, trace);
  EXPECT_EQ(converted.exitCode, 0) << converted.err;
  EXPECT_EQ(eventNames(nlohmann::json::parse(readFile(json)), "kernel"),
            std::vector<std::string>{"gemm"});
}

}  // namespace
