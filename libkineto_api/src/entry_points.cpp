// The functions PyTorch reaches through the dynamic linker (libkineto::api(),
// libkineto_init, the clock converter, ...): loaded ahead of libtorch_cpu.so, these
// definitions are the ones an installed PyTorch calls, and kinetrace becomes its profiler
// backend.

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "ApproximateClock.h"
#include "activity_profiler.h"
#include "kinetrace/config.h"
#include "kinetrace/error.h"
#include "libkineto.h"
#include "ondemand/kineto_config.h"
#include "session/seam.h"
#include "support/log.h"

namespace {

// LibkinetoApi holds a reference to libkineto's on-demand configuration loader, which
// kinetrace does not have: the reference points here and is never used.
libkineto::ConfigLoader& configLoaderStandIn() {
  alignas(64) static unsigned char storage[256];
  return *reinterpret_cast<libkineto::ConfigLoader*>(storage);
}

kinetrace::kineto::ActivityProfiler* gProfiler = nullptr;  // owned by api(), never destroyed

void stopAtExit() {
  if (gProfiler != nullptr) gProfiler->stopAtExit();
}

}  // namespace

namespace libkineto {

// Never destroyed: PyTorch may still call in from static destructors and exit handlers.
LibkinetoApi& api() {
  static LibkinetoApi* instance = new LibkinetoApi(configLoaderStandIn());
  return *instance;
}

void LibkinetoApi::registerClient(ClientInterface* client) {
  client_ = client;
  clientRegisterThread_ = threadId();
  initClientIfRegistered();
}

void LibkinetoApi::initClientIfRegistered() {
  if (activityProfiler_ == nullptr || client_ == nullptr) return;
  static std::once_flag once;
  std::call_once(once, [this] { client_->init(); });
}

void GenericTraceActivity::log(ActivityLogger& /*logger*/) const {}

std::function<time_t(approx_time_t)>& get_time_converter() {
  static auto* converter = new std::function<time_t(approx_time_t)>(
      [](approx_time_t t) { return static_cast<time_t>(t); });
  return *converter;
}

}  // namespace libkineto

extern "C" {

void suppressLibkinetoLogMessages() {}

bool hasTestEnvVar() {
  return std::getenv("GTEST_OUTPUT") != nullptr || std::getenv("FB_TEST") != nullptr ||
         std::getenv("PYTORCH_TEST") != nullptr || std::getenv("TEST_PILOT") != nullptr;
}

void libkineto_init(bool cpuOnly, bool /*logOnError*/) {
  libkineto::LibkinetoApi& api = libkineto::api();
  if (api.isProfilerRegistered()) return;
  kinetrace::Config base;
  try {
    base = kinetrace::Config::fromEnvironment();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kinetrace (PyTorch profiler backend): %s; using the defaults\n",
                 e.what());
  }
  kinetrace::detail::setLogLevel(base.logLevel);
  const bool activitiesChosen = std::getenv("KINETRACE_ACTIVITIES") != nullptr;
  auto profiler = std::make_unique<kinetrace::kineto::ActivityProfiler>(
      cpuOnly, base, activitiesChosen, [](const kinetrace::Config& config) {
        kinetrace::internal::ProfilerOptions options;
        options.processName = libkineto::processName(libkineto::processId());
        return kinetrace::internal::makeProfiler(config, options);
      });
  gProfiler = profiler.get();
  std::atexit(stopAtExit);
  // libkineto's on-demand traces: PyTorch calls libkineto_init at import when the variable is
  // set, and counts steps through step() from then on.
  if (kinetrace::ondemand::daemonRequested()) {
    kinetrace::ondemand::DynologClientOptions dynolog =
        kinetrace::ondemand::DynologClientOptions::fromEnvironment();
    // Every process that imports torch gets here, a job's launcher too: it answers the
    // daemon only once it uses a GPU, so that it takes none of a request's process slots. A
    // CPU-only build records CPU activity and answers at once, as does any process with
    // KINETRACE_DYNOLOG_ANSWER=start.
    if (!cpuOnly && !base.dynologAnswersAtStart) {
      dynolog.answers = kinetrace::internal::processUsesGpu;
    }
    profiler->enableOnDemand(std::move(dynolog), kinetrace::ondemand::onDemandTraceDir());
  }
  api.registerProfiler(std::move(profiler));
}

}  // extern "C"
