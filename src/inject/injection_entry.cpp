// The injection library's entry points, and the process-wide controller they create.
//
//   CUDA_INJECTION64_PATH=libkinetrace_injection.so   the CUDA driver loads the library in
//       cuInit() and calls InitializeInjection(): recording starts here (or is armed).
//   NVTX_INJECTION64_PATH=libkinetrace_injection.so   each NVTX instance loads it on its first
//       call and calls InitializeInjectionNvtx2(): NVTX calls are routed to kinetrace; and
//       InitializeInjectionNvtxExtension() for each extension module it uses (payloads).
//
// Both paths name the same file, so the process holds one copy of the library.

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>

#include "inject/controller.h"
#include "inject/nvtx_injection.h"
#include "inject/nvtx_payload.h"
#include "inject/process_hooks.h"
#include "kinetrace/config.h"
#include "kinetrace/error.h"
#include "ondemand/kineto_config.h"
#include "runfiles/run_manifest.h"
#include "session/seam.h"

#define KINETRACE_INJECTION_EXPORT extern "C" __attribute__((visibility("default")))

namespace kinetrace::inject {

using runfiles::appendManifest;
using runfiles::ManifestEvent;
using runfiles::namingFromEnvironment;
namespace {

// Never destroyed: the atexit handler, signal handling and CUPTI callbacks reach it until
// the process is gone.
std::atomic<Controller*> gController{nullptr};
std::atomic<int64_t> gControllerPid{0};
std::mutex gInitMutex;

void finishAtExit() {
  Controller* controller = gController.load();
  if (controller != nullptr && gControllerPid.load() == getpid()) controller->finish();
}

// pthread_atfork child handler: only async-signal-safe work. The child is not traced by the
// parent's controller; if it starts CUDA itself (it cannot after its parent did), the driver
// runs InitializeInjection in it and it gets a controller of its own.
void abandonInChild() {
  if (Controller* controller = gController.load()) controller->abandonInForkedChild();
  restoreTerminationHandlersInChild();
}

// argv from /proc/self/cmdline: "python3 train.py --epochs 1".
std::string commandLine() {
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::string out;
  std::size_t begin = 0;
  bool first = true;
  while (begin < raw.size()) {
    std::size_t end = raw.find('\0', begin);
    if (end == std::string::npos) end = raw.size();
    std::string argument = raw.substr(begin, end - begin);
    if (first)
      argument =
          argument.substr(argument.rfind('/') == std::string::npos ? 0 : argument.rfind('/') + 1);
    if (!out.empty()) out += ' ';
    out += argument;
    first = false;
    begin = end + 1;
  }
  return out;
}

std::string processName(const std::string& command) {
  constexpr std::size_t kMax = 60;
  return command.size() <= kMax ? command : command.substr(0, kMax - 3) + "...";
}

// Whether the environment chose when to record (KINETRACE_CAPTURE_RANGE, _SCHEDULE, _DELAY,
// _DURATION).
bool captureModeChosen() {
  for (const char* name : {"KINETRACE_CAPTURE_RANGE", "KINETRACE_SCHEDULE", "KINETRACE_DELAY",
                           "KINETRACE_DURATION"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return true;
  }
  return false;
}

int initializeCuda() noexcept {
  std::lock_guard<std::mutex> lock(gInitMutex);
  if (gController.load() != nullptr) {
    // Called again (a second driver instance), or in a forked child holding the parent's
    // abandoned controller: either way this process already has the tracing it can have.
    return 1;
  }
  try {
    ControllerOptions options;
    options.config = Config::fromEnvironment();
    options.naming = namingFromEnvironment(options.config.runId);
    options.commandLine = commandLine();
    options.processName = processName(options.commandLine);
    options.processStartBootNs = processStartBootTimeNs();
    if (ondemand::daemonRequested("KINETRACE_DYNOLOG") || ondemand::daemonRequested()) {
      options.dynolog = ondemand::DynologClientOptions::fromEnvironment();
      // The driver started is not yet GPU work: a launcher that counts devices answers the
      // daemon only if it goes on to use one (session/seam.h).
      if (!options.config.dynologAnswersAtStart) {
        options.dynolog->answers = internal::processUsesGpu;
      }
      options.onDemandDir = ondemand::onDemandTraceDir();
      // The daemon decides when to record: a process recording its whole run would answer
      // it "busy" until it ends. A capture mode chosen explicitly is kept.
      if (!captureModeChosen()) options.config.captureRange = CaptureRange::OnDemand;
    }
    auto* controller = new Controller(std::move(options));
    gController.store(controller);
    gControllerPid.store(getpid());
    controller->begin();
    installTerminationHandlers(controller->wakeFd());
    pthread_atfork(nullptr, nullptr, &abandonInChild);
    // Registered last: atexit handlers run in reverse order, so this one runs before the
    // destructors of anything the session created above -- and before the CUDA runtime's
    // own teardown, registered when the program first called it, before cuInit.
    std::atexit(&finishAtExit);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kinetrace: tracing is off for this process: %s\n", error.what());
    // For `kinetrace run`'s report; read from the environment, since reading it may be
    // what failed.
    const char* runId = std::getenv("KINETRACE_RUN_ID");
    const char* output = std::getenv("KINETRACE_OUTPUT");
    try {
      if (runId != nullptr && *runId != '\0') {
        appendManifest(output != nullptr && *output != '\0' ? output : ".", runId,
                       {ManifestEvent::TracingOff, getpid(), 0, "", error.what()});
      }
    } catch (...) {
      // Out of memory: the report lacks this process; its CUDA start must not fail.
    }
  }
  // Tracing problems never fail the program's CUDA initialisation.
  return 1;
}

}  // namespace
}  // namespace kinetrace::inject

KINETRACE_INJECTION_EXPORT int InitializeInjection(void) {
  // Runs inside the driver's own cuInit(): the controller's profiler is told so
  // (internal::ProfilerOptions::insideDriverInit) and does not call cuInit() itself.
  return kinetrace::inject::initializeCuda();
}

KINETRACE_INJECTION_EXPORT int InitializeInjectionNvtx2(const void* (*getExportTable)(uint32_t)) {
  return kinetrace::inject::initializeNvtxInjection(getExportTable);
}

// NVTX extension modules (the payload extension NCCL describes its calls with) load the
// same library again and call this once per module (inject/nvtx_payload.h).
KINETRACE_INJECTION_EXPORT int InitializeInjectionNvtxExtension(void* moduleInfo) {
  return kinetrace::inject::initializeNvtxExtension(moduleInfo);
}
