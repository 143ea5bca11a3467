#include "activity_profiler.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>

#include "ApproximateClock.h"
#include "ThreadUtil.h"
#include "kinetrace/error.h"
#include "session/seam.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace kinetrace::kineto {

using libkineto::ActivityType;

namespace {

// The on-demand driver a forked child abandons (enableOnDemand sets it; one per process).
OnDemand* gOnDemandForFork = nullptr;

bool isGpuType(ActivityType type) {
  switch (type) {
    case ActivityType::GPU_MEMCPY:
    case ActivityType::GPU_MEMSET:
    case ActivityType::CONCURRENT_KERNEL:
    case ActivityType::CUDA_RUNTIME:
    case ActivityType::CUDA_DRIVER:
    case ActivityType::CUDA_SYNC:
    case ActivityType::GPU_USER_ANNOTATION:
    case ActivityType::OVERHEAD:
      return true;
    default:
      return false;
  }
}

// What kinetrace records for a set of libkineto types. Launch calls stand for CUDA_RUNTIME
// and CUDA_DRIVER: the calls that start GPU work, with their flows (libkineto records every
// runtime and driver call, which costs ~1.25x step time; kinetrace's launch callbacks cost
// no more than CUPTI's kernel records). OVERHEAD records are left out for their cost (4%);
// KINETRACE_ACTIVITIES=...,overhead asks for them.
ActivitySet activitiesFor(const std::set<ActivityType>& types, bool cpuOnly) {
  ActivitySet set(static_cast<uint32_t>(Activity::Host));
  if (cpuOnly) return set;
  const bool anyGpu = std::any_of(types.begin(), types.end(), isGpuType);
  if (!anyGpu) return set;
  set.add(Activity::Kernel).add(Activity::Memcpy).add(Activity::Memset).add(Activity::Launch);
  if (types.count(ActivityType::CUDA_SYNC) != 0) set.add(Activity::Sync);
  return set;
}

}  // namespace

int64_t measureClockOffsetNs() {
#if defined(__x86_64__)
  auto& converter = libkineto::get_time_converter();
  if (!converter) return 0;
  // Three readings, each bracketed by kinetrace's clock; the middle one by offset wins.
  int64_t offsets[3];
  for (int64_t& offset : offsets) {
    const int64_t before = internal::clockNowNs();
    const uint64_t tsc = __rdtsc();
    const int64_t after = internal::clockNowNs();
    offset = converter(tsc) - (before + (after - before) / 2);
  }
  std::sort(std::begin(offsets), std::end(offsets));
  // The identity converter (none set) gives the raw TSC: no offset to apply then.
  const int64_t offset = offsets[1];
  const int64_t oneDayNs = int64_t{86400} * 1000000000;
  return offset > oneDayNs || offset < -oneDayNs ? 0 : offset;
#else
  return 0;
#endif
}

ActivityProfiler::ActivityProfiler(bool cpuOnly, Config base, bool activitiesFromEnvironment,
                                   ProfilerFactory factory)
    : cpuOnly_(cpuOnly),
      base_(std::move(base)),
      activitiesFromEnvironment_(activitiesFromEnvironment),
      factory_(std::move(factory)) {}

ActivityProfiler::~ActivityProfiler() {
  stopAtExit();
  if (gOnDemandForFork == onDemandOwner_.get()) gOnDemandForFork = nullptr;
}

void ActivityProfiler::say(const std::string& message) {
  if (!said_.insert(message).second) return;
  std::fprintf(stderr, "kinetrace (PyTorch profiler backend): %s\n", message.c_str());
}

void ActivityProfiler::init() {
  std::lock_guard<std::mutex> lock(mutex_);
  initialized_ = true;
}

bool ActivityProfiler::isInitialized() {
  std::lock_guard<std::mutex> lock(mutex_);
  return initialized_;
}

bool ActivityProfiler::isActive() {
  return active_.load(std::memory_order_acquire);
}

void ActivityProfiler::scheduleTrace(const std::string& /*configStr*/) {
  std::lock_guard<std::mutex> lock(mutex_);
  say("scheduled (on-demand) traces are not supported by this backend; nothing is recorded "
      "for this request. Use torch.profiler's schedule, or `kinetrace run`.");
}

void ActivityProfiler::prepareLocked(const std::set<ActivityType>& activityTypes) {
  Config config = base_;
  if (!activitiesFromEnvironment_) config.activities = activitiesFor(activityTypes, cpuOnly_);
  // The trace is written when the framework saves it: recording goes to memory.
  config.output.clear();
  const bool same = profiler_ != nullptr && prepared_.activities == config.activities;
  if (same) return;
  profiler_.reset();  // one recorder per process: the old one goes first
  prepared_ = config;
  profiler_ = factory_(config);
  if (config.activities.anyGpu()) {
    try {
      profiler_->prepare();
    } catch (const std::exception& e) {
      say(std::string("could not prepare GPU recording: ") + e.what());
    }
  }
}

void ActivityProfiler::prepareTrace(const std::set<ActivityType>& activityTypes,
                                    const std::string& /*configStr*/) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (active_.load(std::memory_order_relaxed)) {
    say("prepareTrace() while a trace is recording: ignored (stop the trace first)");
    return;
  }
  prepareLocked(activityTypes);
}

void ActivityProfiler::toggleCollectionDynamic(bool enable) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enable) {
    say("toggleCollectionDynamic(false) is not supported: GPU activity keeps being recorded");
  }
}

void ActivityProfiler::startTrace() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (onDemandRecords_) {
    say("startTrace() while an on-demand trace (dynolog) records: ignored; the program's "
        "profile holds nothing");
    return;
  }
  if (active_.load(std::memory_order_relaxed)) {
    say("startTrace() while a trace is recording: ignored");
    return;
  }
  if (profiler_ == nullptr) prepareLocked({ActivityType::CPU_OP, ActivityType::CONCURRENT_KERNEL});
  startLocked();
}

bool ActivityProfiler::startLocked() {
  if (metadataBelongsToStoppedTrace_) {
    metadata_ = std::make_shared<SharedMetadata>();
    metadataBelongsToStoppedTrace_ = false;
  }
  cpuTraces_.clear();
  threadNames_.clear();
  try {
    profiler_->start("");
  } catch (const std::exception& e) {
    say(std::string("could not start recording: ") + e.what() +
        "; this trace holds the framework's CPU activity only");
    return false;
  }
  active_.store(true, std::memory_order_release);
  if (prepared_.activities.anyGpu()) {
    const std::string status = profiler_->gpuStatus();
    // "CUPTI 130001 active; ..." when recording; otherwise the reason it is not.
    const bool cuptiActive =
        status.rfind("CUPTI ", 0) == 0 && status.find(" active") != std::string::npos;
    if (!cuptiActive) {
      say("GPU activity is not recorded (" + status +
          "); traces hold CPU activity only. Another tool holding CUPTI (Nsight Systems, "
          "a second profiler) is the usual cause.");
    }
  }
  return true;
}

std::unique_ptr<libkineto::ActivityTraceInterface> ActivityProfiler::stopTrace() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (onDemandRecords_) {
    say("stopTrace() while an on-demand trace (dynolog) records: the program's profile is "
        "empty; the on-demand trace goes on");
    StoppedRecording empty;
    empty.metadata = std::make_shared<SharedMetadata>();
    return std::make_unique<ActivityTrace>(std::move(empty));
  }
  return stopLocked({});
}

std::unique_ptr<ActivityTrace> ActivityProfiler::stopLocked(
    std::vector<std::pair<std::string, Value>> metadata) {
  StoppedRecording stopped;
  if (active_.load(std::memory_order_relaxed)) {
    try {
      stopped.trace = profiler_->stop();
      for (auto& [key, value] : metadata) stopped.trace.addMetadata(key, std::move(value));
      stopped.recorded = true;
    } catch (const std::exception& e) {
      say(std::string("stopping the recording failed: ") + e.what());
    }
    active_.store(false, std::memory_order_release);
    stopped.clockOffsetNs = measureClockOffsetNs();
  }
  stopped.cpuTraces = std::move(cpuTraces_);
  cpuTraces_.clear();
  stopped.metadata = metadata_;
  metadataBelongsToStoppedTrace_ = true;
  stopped.threadNames = threadNames_;
  try {
    return std::make_unique<ActivityTrace>(std::move(stopped));
  } catch (const std::exception& e) {
    // Never throw into the framework's stop path: an empty trace says what happened.
    say(std::string("could not assemble the trace: ") + e.what());
    StoppedRecording empty;
    empty.metadata = std::make_shared<SharedMetadata>();
    return std::make_unique<ActivityTrace>(std::move(empty));
  }
}

void ActivityProfiler::enableOnDemand(std::optional<ondemand::DynologClientOptions> dynolog,
                                      std::string onDemandDir) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (onDemandOwner_ != nullptr) return;
  onDemandOwner_ = std::make_unique<OnDemand>(
      *this, [] { return libkineto::api().client(); }, std::move(dynolog), std::move(onDemandDir),
      libkineto::processId());
  onDemand_.store(onDemandOwner_.get(), std::memory_order_release);
  // PyTorch's DataLoader workers are forked: their copy must not poll, record or join.
  static std::once_flag registered;
  std::call_once(registered, [] {
    pthread_atfork(nullptr, nullptr, [] {
      if (gOnDemandForFork != nullptr) gOnDemandForFork->abandonInForkedChild();
    });
  });
  gOnDemandForFork = onDemandOwner_.get();
}

std::optional<std::string> ActivityProfiler::startOnDemand(
    const ondemand::TriggerWindow& /*window*/) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (active_.load(std::memory_order_relaxed)) {
    return std::string("the program's own torch.profiler is recording");
  }
  // What libkineto records on demand: every kind PyTorch's CUDA profiling asks for.
  prepareLocked({ActivityType::CPU_OP, ActivityType::USER_ANNOTATION,
                 ActivityType::EXTERNAL_CORRELATION, ActivityType::GPU_MEMCPY,
                 ActivityType::GPU_MEMSET, ActivityType::CONCURRENT_KERNEL,
                 ActivityType::CUDA_RUNTIME, ActivityType::CUDA_DRIVER});
  if (!startLocked()) return std::string("recording could not start (said above)");
  onDemandRecords_ = true;
  return std::nullopt;
}

std::unique_ptr<ActivityTrace> ActivityProfiler::stopOnDemand(
    std::vector<std::pair<std::string, Value>> metadata) {
  std::lock_guard<std::mutex> lock(mutex_);
  onDemandRecords_ = false;
  return stopLocked(std::move(metadata));
}

// PyTorch calls it every step (with KINETO_USE_DAEMON set), traced or not: without on-demand
// tracing it costs a load; with it, a relaxed add (on_demand.h).
void ActivityProfiler::step() {
  if (OnDemand* onDemand = onDemand_.load(std::memory_order_acquire)) onDemand->onStep();
}

void ActivityProfiler::pushCorrelationId(uint64_t id) {
  internal::pushCorrelationId(id);
}

void ActivityProfiler::popCorrelationId() {
  internal::popCorrelationId();
}

void ActivityProfiler::transferCpuTrace(std::unique_ptr<libkineto::CpuTraceBuffer> traceBuffer) {
  if (traceBuffer == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  cpuTraces_.push_back(std::move(traceBuffer));
}

// User ranges (record_function) reach the trace as the framework's own USER_ANNOTATION
// activities; GPU work inside them links to the innermost op through pushCorrelationId.
void ActivityProfiler::pushUserCorrelationId(uint64_t /*id*/) {}
void ActivityProfiler::popUserCorrelationId() {}

void ActivityProfiler::recordThreadInfo() {
  const int32_t tid = libkineto::systemThreadId();
  std::string name = libkineto::getThreadName();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [known, knownName] : threadNames_) {
    if (known == tid) {
      knownName = std::move(name);
      return;
    }
  }
  threadNames_.emplace_back(tid, std::move(name));
}

void ActivityProfiler::addMetadata(const std::string& key, const std::string& value) {
  std::shared_ptr<SharedMetadata> metadata;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    metadata = metadata_;
  }
  metadata->add(key, value);
}

void ActivityProfiler::addChildActivityProfiler(
    std::unique_ptr<libkineto::IActivityProfiler> profiler) {
  std::lock_guard<std::mutex> lock(mutex_);
  say("child activity profilers are not run by this backend; their events are not recorded");
  children_.push_back(std::move(profiler));
}

void ActivityProfiler::logInvariantViolation(const std::string& profileId,
                                             const std::string& assertion, const std::string& error,
                                             const std::string& /*groupProfileId*/) {
  std::lock_guard<std::mutex> lock(mutex_);
  say("invariant violation reported by the framework (profile " + profileId + "): " + assertion +
      ": " + error);
}

void ActivityProfiler::stopAtExit() noexcept {
  // The on-demand driver first: it may be ending a window, which takes the lock below.
  if (OnDemand* onDemand = onDemand_.load(std::memory_order_acquire)) onDemand->shutDown();
  // exit() may come from a thread while another is inside stopTrace(): that one ends the
  // recording; waiting for it here could wait forever.
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  if (!active_.load(std::memory_order_relaxed) || profiler_ == nullptr) return;
  try {
    (void)profiler_->stop();
  } catch (...) {
  }
  active_.store(false, std::memory_order_release);
  std::fprintf(stderr,
               "kinetrace (PyTorch profiler backend): the process exited while a trace was "
               "recording; that trace was not saved\n");
}

}  // namespace kinetrace::kineto
