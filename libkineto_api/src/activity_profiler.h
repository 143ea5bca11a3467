#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ActivityProfilerInterface.h"
#include "activity_trace.h"
#include "kinetrace/config.h"
#include "kinetrace/profiler.h"
#include "libkineto.h"
#include "on_demand.h"
#include "ondemand/dynolog_client.h"
#include "ondemand/trigger_window.h"

namespace kinetrace::kineto {

// Makes the kinetrace Profiler a trace records with.
using ProfilerFactory = std::function<std::unique_ptr<Profiler>(const Config&)>;

// The libkineto profiler PyTorch drives, on kinetrace's core: one Profiler per process,
// recording to memory between startTrace() and stopTrace(); the trace is written when
// PyTorch saves it.
//
// Threads: every member may be called from any thread; all but the correlation pushes and
// pops (PyTorch's hot path: no lock, no allocation) are serialised.
class ActivityProfiler final : public libkineto::ActivityProfilerInterface {
 public:
  // `cpuOnly`: record no GPU activity (PyTorch found no GPU). `base`: the configuration to
  // start from (KINETRACE_* variables), whose activities are replaced by what each
  // prepareTrace() asks for unless KINETRACE_ACTIVITIES chose them.
  ActivityProfiler(bool cpuOnly, Config base, bool activitiesFromEnvironment,
                   ProfilerFactory factory);
  ~ActivityProfiler() override;

  void init() override;
  bool isInitialized() override;
  bool isActive() override;
  void scheduleTrace(const std::string& configStr) override;
  void prepareTrace(const std::set<libkineto::ActivityType>& activityTypes,
                    const std::string& configStr) override;
  void toggleCollectionDynamic(bool enable) override;
  void startTrace() override;
  std::unique_ptr<libkineto::ActivityTraceInterface> stopTrace() override;
  void step() override;
  void pushCorrelationId(uint64_t id) override;
  void popCorrelationId() override;
  void transferCpuTrace(std::unique_ptr<libkineto::CpuTraceBuffer> traceBuffer) override;
  void pushUserCorrelationId(uint64_t id) override;
  void popUserCorrelationId() override;
  void recordThreadInfo() override;
  void addMetadata(const std::string& key, const std::string& value) override;
  void addChildActivityProfiler(std::unique_ptr<libkineto::IActivityProfiler> profiler) override;
  void logInvariantViolation(const std::string& profileId, const std::string& assertion,
                             const std::string& error, const std::string& groupProfileId) override;

  // At process exit: ends a recording still running, so that nothing of it runs while the
  // process tears down (libkineto crashes there). The trace is discarded.
  void stopAtExit() noexcept;

  // On-demand traces through the dynolog daemon (on_demand.h): from now on the process polls
  // the daemon (`dynolog`; nothing: configs are offered by hand, in tests) and counts the
  // framework's steps. `onDemandDir`: $KINETO_ONDEMAND_TRACE_DIR.
  void enableOnDemand(std::optional<ondemand::DynologClientOptions> dynolog,
                      std::string onDemandDir);
  OnDemand* onDemand() { return onDemand_.load(std::memory_order_acquire); }
  // Records a window the framework did not ask for; the reason when it cannot (the
  // framework's own trace records). While it records, the framework's start and stop calls
  // are refused with a message.
  std::optional<std::string> startOnDemand(const ondemand::TriggerWindow& window);
  // Ends it; `metadata` is added to the trace.
  std::unique_ptr<ActivityTrace> stopOnDemand(std::vector<std::pair<std::string, Value>> metadata);

 private:
  void prepareLocked(const std::set<libkineto::ActivityType>& activityTypes);
  // Whether it started (else said why).
  bool startLocked();
  std::unique_ptr<ActivityTrace> stopLocked(std::vector<std::pair<std::string, Value>> metadata);
  void say(const std::string& message);

  const bool cpuOnly_;
  const Config base_;
  const bool activitiesFromEnvironment_;
  const ProfilerFactory factory_;

  std::mutex mutex_;
  bool initialized_ = false;
  Config prepared_;  // the configuration of profiler_
  std::unique_ptr<Profiler> profiler_;
  std::atomic<bool> active_{false};
  std::vector<std::unique_ptr<libkineto::CpuTraceBuffer>> cpuTraces_;
  // Metadata of the trace being recorded (or the next); after stopTrace(), the stopped
  // trace's, until the next startTrace().
  std::shared_ptr<SharedMetadata> metadata_ = std::make_shared<SharedMetadata>();
  bool metadataBelongsToStoppedTrace_ = false;
  std::vector<std::pair<int32_t, std::string>> threadNames_;
  std::vector<std::unique_ptr<libkineto::IActivityProfiler>> children_;
  std::set<std::string> said_;    // messages already written (each once per process)
  bool onDemandRecords_ = false;  // the recording is an on-demand window, not the framework's
  std::unique_ptr<OnDemand> onDemandOwner_;
  std::atomic<OnDemand*> onDemand_{nullptr};  // read by step() without the lock
};

// kinetrace's clock against the framework's (get_time_converter()), measured now: what to
// add to kinetrace's times to get the framework's. 0 when the framework set no converter.
int64_t measureClockOffsetNs();

}  // namespace kinetrace::kineto
