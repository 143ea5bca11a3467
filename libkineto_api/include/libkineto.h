// kinetrace's libkineto-compatible API: the entry point PyTorch uses (libkineto::api()).
//
// A program linked against these headers, or an installed PyTorch with libkineto_api.so
// loaded first (LD_PRELOAD, or `kinetrace run --torch`), gets kinetrace as its profiler
// backend. Inline members and every field layout here are ABI (see libkineto_api/abi).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ActivityProfilerInterface.h"
#include "ActivityTraceInterface.h"
#include "ActivityType.h"
#include "ClientInterface.h"
#include "GenericTraceActivity.h"
#include "IActivityProfiler.h"
#include "ThreadUtil.h"
#include "TraceSpan.h"

extern "C" {
// kinetrace's own messages are few and say what was lost; this keeps them.
void suppressLibkinetoLogMessages();
// Creates the profiler and registers it with api(); `cpuOnly` records no GPU activity.
void libkineto_init(bool cpuOnly, bool logOnError);
bool hasTestEnvVar();
}

namespace libkineto {

class Config;
class ConfigLoader;

// The framework's host activities of one trace, handed over with transferCpuTrace().
struct CpuTraceBuffer {
  template <class... Args>
  void emplace_activity(Args&&... args) {
    activities.emplace_back(std::make_unique<GenericTraceActivity>(std::forward<Args>(args)...));
  }
  static GenericTraceActivity& toRef(std::unique_ptr<GenericTraceActivity>& ref) { return *ref; }
  static const GenericTraceActivity& toRef(const std::unique_ptr<GenericTraceActivity>& ref) {
    return *ref;
  }

  TraceSpan span{0, 0, "none"};
  int gpuOpCount;
  std::deque<std::unique_ptr<GenericTraceActivity>> activities;
};

using ChildActivityProfilerFactory = std::function<std::unique_ptr<IActivityProfiler>()>;

class LibkinetoApi {
 public:
  explicit LibkinetoApi(ConfigLoader& configLoader) : configLoader_(configLoader) {}

  void registerClient(ClientInterface* client);

  void registerProfiler(std::unique_ptr<ActivityProfilerInterface> profiler) {
    activityProfiler_ = std::move(profiler);
    initClientIfRegistered();
  }

  ActivityProfilerInterface& activityProfiler() { return *activityProfiler_; }
  ClientInterface* client() { return client_; }

  void initProfilerIfRegistered() {
    static std::once_flag once;
    if (activityProfiler_) {
      std::call_once(once, [this] {
        if (!activityProfiler_->isInitialized()) {
          activityProfiler_->init();
          initChildActivityProfilers();
        }
      });
    }
  }

  [[nodiscard]] bool isProfilerInitialized() const {
    return activityProfiler_ && activityProfiler_->isInitialized();
  }
  [[nodiscard]] bool isProfilerRegistered() const { return activityProfiler_ != nullptr; }

  void suppressLogMessages() { suppressLibkinetoLogMessages(); }
  void resetKinetoTLS() { resetTLS(); }

  // libkineto's on-demand configuration loader. kinetrace has none: this is a stand-in
  // that must not be used.
  ConfigLoader& configLoader() { return configLoader_; }

  void registerProfilerFactory(const ChildActivityProfilerFactory& factory) {
    if (isProfilerInitialized()) {
      activityProfiler_->addChildActivityProfiler(factory());
    } else {
      childProfilerFactories_.push_back(factory);
    }
  }

 private:
  void initChildActivityProfilers() {
    if (!isProfilerInitialized()) return;
    for (const auto& factory : childProfilerFactories_) {
      activityProfiler_->addChildActivityProfiler(factory());
    }
    childProfilerFactories_.clear();
  }

  // Initialises the client once both it and the profiler are registered.
  void initClientIfRegistered();

  ConfigLoader& configLoader_;
  std::unique_ptr<ActivityProfilerInterface> activityProfiler_;
  ClientInterface* client_{};
  int32_t clientRegisterThread_{0};
  std::vector<ChildActivityProfilerFactory> childProfilerFactories_;
};

// The process's one instance.
LibkinetoApi& api();

}  // namespace libkineto
