#include "run_command.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "error_text.h"
#include "files.h"
#include "kinetrace/config.h"
#include "kinetrace/error.h"
#include "program_runner.h"
#include "run_report.h"
#include "runfiles/run_manifest.h"
#include "runfiles/trace_naming.h"
#include "runfiles/trigger_channel.h"
#include "session/settings.h"
#include "support/path_rule.h"

extern char** environ;

namespace kinetrace::cli {
namespace {

constexpr const char* kLibraryName = "libkinetrace_injection.so";
constexpr const char* kKinetoApiName = "libkineto_api.so";

std::string currentDirectory() {
  char buffer[4096];
  return ::getcwd(buffer, sizeof buffer) != nullptr ? std::string(buffer) : std::string(".");
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return currentDirectory() + "/" + path;
}

std::string executableDirectory() {
  char buffer[4096];
  ssize_t length = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (length <= 0) return "";
  std::string path(buffer, static_cast<std::size_t>(length));
  return path.substr(0, path.rfind('/'));
}

// "20250301-141503-4242": sorts by time, unique per machine at any moment.
std::string newRunId() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  return std::string(stamp) + "-" + std::to_string(::getpid());
}

void warn(std::FILE* err, const std::string& message) {
  std::fprintf(err, "kinetrace run: %s\n", message.c_str());
}

void setVariable(const char* name, const std::string& value) {
  ::setenv(name, value.c_str(), 1);
}

// Sets the variables the injected processes read. Options given on the command line win
// over KINETRACE_* variables already set; the others are passed on.
void exportConfiguration(const RunOptions& options, const std::string& outputDir,
                         const std::string& runId, const std::string& library, std::FILE* err) {
  setVariable("KINETRACE_OUTPUT", outputDir);
  setVariable("KINETRACE_RUN_ID", runId);
  for (const auto& [key, value] : options.settings) {
    setVariable(
        kinetrace::detail::environmentVariableOf(*kinetrace::detail::findSetting(key)).c_str(),
        value);
  }
  // Every traced process reads these; a bad one would turn its tracing off, so say it now.
  try {
    Config::fromEnvironment();
  } catch (const Error& error) {
    throw UsageError("kinetrace run: " + withoutKinetracePrefix(error.what()));
  }

  // With --torch, PyTorch's libkineto (kinetrace's libkineto_api) polls the daemon, and counts
  // the optimizer's steps, when KINETO_USE_DAEMON is set. Under the injection that variable
  // would wake the program's own libkineto beside kinetrace: the injection reads
  // KINETRACE_DYNOLOG instead, and records only when the daemon asks unless a capture mode
  // is chosen.
  if (options.dynolog) setVariable(options.torch ? "KINETO_USE_DAEMON" : "KINETRACE_DYNOLOG", "1");
  if (options.torch) return;  // exportTorchBackend() instead
  for (const char* name : {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"}) {
    if (std::string(name) == "NVTX_INJECTION64_PATH" && !options.nvtx) continue;
    const char* existing = std::getenv(name);
    if (existing != nullptr && *existing != '\0' && library != existing) {
      warn(err, std::string("replacing ") + name + "=" + existing +
                    " (another tool's injection) with kinetrace's");
    }
    setVariable(name, library);
  }
}

// --torch: libkineto_api.so loaded ahead of PyTorch makes kinetrace its profiler backend.
// One CUPTI subscriber per process: kinetrace's own injection must not run beside it.
void exportTorchBackend(const std::string& library, std::FILE* err) {
  for (const char* name : {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"}) {
    const char* existing = std::getenv(name);
    if (existing == nullptr || *existing == '\0') continue;
    if (std::string(existing).find(kLibraryName) != std::string::npos) {
      ::unsetenv(name);
    } else if (std::string(name) == "CUDA_INJECTION64_PATH") {
      warn(err,
           std::string("CUDA_INJECTION64_PATH=") + existing +
               " (another tool's injection) stays set: that tool will hold CUPTI first, and the "
               "program's traces will hold CPU activity only");
    }
  }
  const char* preload = std::getenv("LD_PRELOAD");
  std::string value = library;
  if (preload != nullptr && *preload != '\0') value += std::string(":") + preload;
  setVariable("LD_PRELOAD", value);
}

// The traced processes of the run still alive once the program has exited: its children
// that outlive it (their sockets are still there).
std::vector<int64_t> stillRunning(const std::string& runId) {
  std::vector<int64_t> pids;
  try {
    runfiles::removeStaleSockets();
    for (const std::string& socket : runfiles::socketsOfJob(runId)) {
      const int64_t pid = runfiles::pidOfSocket(socket);
      if (pid > 0) pids.push_back(pid);
    }
  } catch (const std::exception&) {
    // No control directory: no process of the run could be reached, nor listed.
  }
  return pids;
}

// The run this `kinetrace run` runs inside (`kinetrace run kinetrace run prog`): its manifest
// gets what this run's processes did, so the outer report lists their traces too.
struct OuterRun {
  std::string dir;
  std::string runId;
};

OuterRun outerRun() {
  const char* dir = std::getenv("KINETRACE_OUTPUT");
  const char* runId = std::getenv("KINETRACE_RUN_ID");
  if (dir == nullptr || runId == nullptr || *runId == '\0') return {};
  return {dir, runId};
}

std::string firstRegularFile(const std::vector<std::string>& candidates) {
  for (const std::string& candidate : candidates) {
    if (isRegularFile(candidate)) return candidate;
  }
  return "";
}

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// A library of kinetrace's: next to the command (../lib/NAME, the install and build layout),
// then where the build put it ("" when unknown).
std::vector<std::string> besideOrBuilt(const char* name, const std::string& builtPath) {
  std::vector<std::string> candidates;
  const std::string here = executableDirectory();
  if (!here.empty()) candidates.push_back(here + "/" KINETRACE_BIN_TO_LIB "/" + name);
  if (!builtPath.empty()) candidates.push_back(builtPath);
  return candidates;
}

}  // namespace

std::vector<std::string> kinetoApiLibraryCandidates() {
#ifdef KINETRACE_KINETO_API_BUILD_PATH
  return besideOrBuilt(kKinetoApiName, KINETRACE_KINETO_API_BUILD_PATH);
#else
  return besideOrBuilt(kKinetoApiName, "");
#endif
}

std::vector<std::string> injectionLibraryCandidates(const RunOptions& options) {
  if (!options.injectionLibrary.empty()) return {absolute(options.injectionLibrary)};
#ifdef KINETRACE_INJECTION_BUILD_PATH
  return besideOrBuilt(kLibraryName, KINETRACE_INJECTION_BUILD_PATH);
#else
  return besideOrBuilt(kLibraryName, "");
#endif
}

std::string prepareOutputDirectory(const std::string& dir) {
  std::string path = absolute(dir);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  // mkdir -p by the one path rule, then a file made and removed there: said now, not after
  // the program has run.
  detail::PathRule making;
  making.createDirectories = true;
  const detail::Result<detail::OpenDirectory> opened = detail::openDirectory(path, making);
  if (!opened.ok()) {
    throw UsageError("kinetrace run: cannot write traces to " + path + ": " + opened.why());
  }
  if (const detail::Status probe = detail::probeWritable(opened.value(), "kinetrace-write-test");
      !probe.ok()) {
    throw UsageError("kinetrace run: cannot write traces to " + path + ": " + probe.why());
  }
  return path;
}

// Why the NVIDIA driver cannot be loaded here, "" when it can: without it the program's CUDA
// calls fail and nothing of its GPU activity can be recorded, which is said before it runs,
// not after.
std::string driverProblem() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) {
    const char* why = ::dlerror();
    return why != nullptr ? why : "libcuda.so.1 cannot be loaded";
  }
  ::dlclose(driver);
  return "";
}

std::string resolveProgram(const std::string& program) {
  auto check = [&](const std::string& path) {
    if (::access(path.c_str(), X_OK) == 0 && !isDirectory(path)) return true;
    return false;
  };
  if (program.find('/') != std::string::npos) {
    if (::access(program.c_str(), F_OK) != 0) {
      throw UsageError("kinetrace run: cannot run '" + program + "': no such file", 127);
    }
    if (!check(program)) {
      throw UsageError("kinetrace run: cannot run '" + program + "': not an executable file", 126);
    }
    return program;
  }
  const char* pathVariable = std::getenv("PATH");
  std::string searchPath = pathVariable != nullptr ? pathVariable : "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= searchPath.size()) {
    std::size_t end = searchPath.find(':', begin);
    if (end == std::string::npos) end = searchPath.size();
    std::string dir = searchPath.substr(begin, end - begin);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    if (check(candidate)) return candidate;
    begin = end + 1;
  }
  throw UsageError("kinetrace run: cannot run '" + program + "': not found in PATH", 127);
}

int runCommand(const RunOptions& options, std::FILE* /*out*/, std::FILE* err) {
  std::string library;
  if (options.torch) {
    const std::vector<std::string> candidates = kinetoApiLibraryCandidates();
    library = firstRegularFile(candidates);
    if (library.empty()) {
      throw UsageError("kinetrace run: --torch needs " + std::string(kKinetoApiName) +
                       ", which is missing (looked at " + joined(candidates) +
                       "); kinetrace was moved without its lib directory");
    }
  } else {
    const std::vector<std::string> candidates = injectionLibraryCandidates(options);
    library = firstRegularFile(candidates);
    if (library.empty()) {
      throw UsageError(
          "kinetrace run: the injection library " + std::string(kLibraryName) +
          " is missing (looked at " + joined(candidates) +
          "); kinetrace was built without CUDA, or moved without its lib directory: pass "
          "--injection-library PATH");
    }
  }
  std::string program = resolveProgram(options.program[0]);
  std::string outputDir = prepareOutputDirectory(options.outputDir);
  std::string runId = newRunId();
  const OuterRun outer = outerRun();
  exportConfiguration(options, outputDir, runId, library, err);
  if (options.torch) exportTorchBackend(library, err);
  if (options.dynolog) {
    std::fprintf(err,
                 "kinetrace run: dynolog: the program's processes poll the daemon (start it with "
                 "--enable_ipc_monitor); record with: dyno gputrace --log-file /tmp/trace.json "
                 "[--iterations N]\n");
  } else if (Config::fromEnvironment().captureRange == CaptureRange::OnDemand) {
    std::fprintf(err,
                 "kinetrace run: on demand: nothing is recorded until asked: kinetrace trigger "
                 "--job %s --duration 10s (or --steps 20)\n",
                 runId.c_str());
  }

  // Said once the run is set up (a setting it refuses is said first), before the program
  // starts.
  const std::string noDriver = driverProblem();
  if (!noDriver.empty()) {
    warn(err, "no NVIDIA driver here (" + noDriver +
                  "): the program's CUDA calls will fail and none of its GPU activity can be "
                  "recorded; running it anyway");
  }
  if (!options.torch && !runfiles::createManifest(outputDir, runId)) {
    warn(err, "cannot create " + runfiles::manifestPath(outputDir, runId) + ": " +
                  std::strerror(errno) + "; the report will list the traces, not what went wrong");
  }
  int status = runProgram(program, options.program);
  int exitCode = 0;
  std::string name = baseName(options.program[0]);
  if (WIFEXITED(status)) {
    exitCode = WEXITSTATUS(status);
    std::fprintf(err, "\nkinetrace: %s exited with status %d\n", name.c_str(), exitCode);
  } else if (WIFSIGNALED(status)) {
    exitCode = 128 + WTERMSIG(status);
    std::fprintf(err, "\nkinetrace: %s was ended by signal %s\n", name.c_str(),
                 signalName(WTERMSIG(status)).c_str());
  }
  if (options.torch) {
    std::fprintf(err,
                 "kinetrace: the program's torch.profiler recorded with kinetrace; its traces are "
                 "where the program saved them\n");
    return exitCode;
  }
  const std::vector<runfiles::ManifestEntry> outcomes = runfiles::readManifest(outputDir, runId);
  RunRemains remains;
  remains.stillRunning = stillRunning(runId);
  remains.leftovers = leftoverFilesOfRun(outputDir, runId);
  remains.noDriver = !noDriver.empty();
  std::fputs(
      runReport(tracesOfRun(outputDir, runId, outcomes), outcomes, outputDir, options, remains)
          .c_str(),
      err);
  // The manifest is the run's scratch: what it said is in the report now (and in the outer
  // run's, when there is one). Processes still running append nothing once it is gone.
  for (const runfiles::ManifestEntry& entry : outcomes) {
    if (!outer.runId.empty()) runfiles::appendManifest(outer.dir, outer.runId, entry);
  }
  ::unlink(runfiles::manifestPath(outputDir, runId).c_str());
  return exitCode;
}

}  // namespace kinetrace::cli
