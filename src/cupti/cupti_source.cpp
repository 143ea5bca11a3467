#include "cupti/cupti_source.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>

#include "cupti/make_cupti_source.h"
#include "model/clock.h"
#include "support/log.h"

namespace kinetrace::detail {
namespace {

// The CUPTI activity kinds that record each GPU activity (Launch, RuntimeAll and DriverAll
// are callbacks, not activity kinds), one row each.
struct ActivityRecords {
  Activity activity;
  std::array<CUpti_ActivityKind, 2> kinds;  // CUPTI_ACTIVITY_KIND_INVALID: none
};
constexpr ActivityRecords kActivityRecords[] = {
    {Activity::Kernel, {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}},
    {Activity::Memcpy, {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2}},  // MEMCPY2: peer
    {Activity::Memset, {CUPTI_ACTIVITY_KIND_MEMSET}},
    // Sync records name a context, not a device: the context records say whose it is.
    {Activity::Sync, {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_CONTEXT}},
    // Allocations and frees, and what the memory pools they come from hold.
    {Activity::Memory, {CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY_POOL}},
    {Activity::Overhead, {CUPTI_ACTIVITY_KIND_OVERHEAD}},
};

// CUPTI's buffer callbacks are plain C functions with no user pointer: they find the one
// live source here. Set in enable(), cleared in disable().
std::atomic<CuptiSource*> gLiveSource{nullptr};
// Tells each subscription's callback table apart (see CallbackTable::epoch).
std::atomic<uint32_t> gSubscriptions{0};

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxNumRecords) {
  if (CuptiSource* source = gLiveSource.load()) {
    source->onBufferRequested(buffer, size, maxNumRecords);
  } else {
    *buffer = nullptr;
    *size = 0;
    *maxNumRecords = 0;
  }
}

void CUPTIAPI bufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer, size_t size,
                              size_t validSize) {
  if (CuptiSource* source = gLiveSource.load()) {
    source->onBufferCompleted(context, streamId, buffer, size, validSize);
  }
}

void contextSeen(void* target, CUcontext context) {
  static_cast<CuptiSource*>(target)->onContextSeen(context);
}

// CUPTI stamps its records with this clock, so GPU operations land on the host timeline
// without a conversion. For GPU timestamps CUPTI calls it while converting, not per record.
uint64_t CUPTIAPI kinetraceTimestamp() {
  return static_cast<uint64_t>(Clock::instance().nowNs());
}

int cudaRuntimeVersion() {
  // The application's CUDA runtime, if it has a dynamic one loaded; kinetrace links none.
  using Fn = int (*)(int*);
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion"));
  int version = 0;
  if (fn != nullptr) fn(&version);
  return version;
}

const char* kindName(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return "MEMCPY2";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "MEMSET";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return "SYNCHRONIZATION";
    case CUPTI_ACTIVITY_KIND_CONTEXT:
      return "CONTEXT";
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return "MEMORY2";
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return "OVERHEAD";
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
      return "GRAPH_TRACE";
    default:
      return "?";
  }
}

}  // namespace

CuptiSource::CuptiSource(Environment environment) : env_(environment) {
  if (env_.cupti == nullptr) env_.cupti = &realCuptiApi();
}

CuptiSource::~CuptiSource() {
  disable();
}

Status CuptiSource::enable(const GpuOptions& options, MemoryBudget& budget) {
  if (enabled_) return {};
  CuptiSource* expected = nullptr;
  if (!gLiveSource.compare_exchange_strong(expected, this)) {
    return Failure{"another kinetrace session already holds CUPTI in this process"};
  }
  options_ = options;
  auto refuse = [&](std::string why) -> Status {
    gLiveSource.store(nullptr);
    return Failure{std::move(why)};
  };
  if (env_.useDriver) {
    // Inside the driver's own initialisation (CUDA injection) the driver must not be
    // re-entered to start it.
    if (Status opened = driver_.open(!options.insideDriverInit); !opened.ok()) {
      return refuse(opened.why());
    }
  }
  CuptiApi& cupti = *env_.cupti;
  if (Status queried = cuptiStatus(cupti.getVersion(&cuptiVersion_), "cuptiGetVersion");
      !queried.ok()) {
    return refuse("CUPTI could not be queried (libcupti unusable): " + queried.why());
  }

  // The table is built before subscribing and never changes while subscribed: CUPTI reads
  // it on the program's threads (the profiler-control callbacks stay on while collection
  // is off).
  callbacks_ = CallbackTable();
  callbacks_.contextSeen = &contextSeen;
  callbacks_.contextSeenTarget = this;
  callbacks_.profilerControl = options.profilerControl;
  callbacks_.epoch = gSubscriptions.fetch_add(1) + 1;
  callbacks_.collection = &collection_;
  // Where graph nodes came from only matters when launches are linked to their calls.
  const ActivitySet& a = options_.activities;
  if (a.has(Activity::Launch) || a.has(Activity::RuntimeAll) || a.has(Activity::DriverAll)) {
    callbacks_.graphNodeIds = &cupti;
    callbacks_.launchTargets = &cupti;
  }
  if (a.has(Activity::Launch)) callbacks_.selectLaunchEntryPoints(cupti);
  if (a.has(Activity::RuntimeAll)) callbacks_.selectAll(CUPTI_CB_DOMAIN_RUNTIME_API, cupti);
  if (a.has(Activity::DriverAll)) callbacks_.selectAll(CUPTI_CB_DOMAIN_DRIVER_API, cupti);
  if (options_.profilerControl != nullptr) callbacks_.selectProfilerControl();

  pool_ = std::make_unique<BufferPool>(
      options.bufferBytes, options.maxBufferBytes / std::max<std::size_t>(options.bufferBytes, 1),
      budget);
  queue_.reserve(pool_->maxBuffers() + 1);
  batch_.reserve(pool_->maxBuffers() + 1);

  CUptiResult subscribed = cupti.subscribe(&subscriber_, &onCuptiCallback, &callbacks_);
  if (subscribed == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    return refuse(
        "CUPTI is already in use by another profiler in this process (Nsight Systems, "
        "torch.profiler or another CUPTI tool); only one can trace GPU activity at a time");
  }
  if (Status started = cuptiStatus(subscribed, "cuptiSubscribe"); !started.ok()) {
    return refuse("CUPTI refused to start: " + started.why());
  }
  // Must precede every activity kind's enabling, or early records keep CUPTI's own clock.
  // Refused, records keep CUPTI's clock and are shifted by a measured offset (said once).
  ownClock_ =
      cuptiSucceeded(cupti.activityRegisterTimestampCallback(&kinetraceTimestamp),
                     "cuptiActivityRegisterTimestampCallback (GPU times will be shifted by a "
                     "measured offset instead)");
  if (Status registered =
          cuptiStatus(cupti.activityRegisterCallbacks(&bufferRequested, &bufferCompleted),
                      "cuptiActivityRegisterCallbacks");
      !registered.ok()) {
    cuptiSucceeded(cupti.unsubscribe(subscriber_), "cuptiUnsubscribe");
    return refuse("CUPTI refused activity buffers: " + registered.why());
  }
  if (options.flushPeriodMs > 0) {
    cuptiSucceeded(cupti.activityFlushPeriod(options.flushPeriodMs),
                   fmt::format("cuptiActivityFlushPeriod({})", options.flushPeriodMs));
  }
  enabled_ = true;
  if (options.flushPeriodMs > 0) {
    flusher_ = std::make_unique<PeriodicFlusher>([this] { flushCompleteBuffers(); },
                                                 std::chrono::milliseconds(options.flushPeriodMs));
  }

  for (uint32_t cbid : callbacks_.control(CUPTI_CB_DOMAIN_DRIVER_API)) {
    Status enabled =
        cuptiStatus(cupti.enableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid),
                    fmt::format("cuptiEnableCallback(driver, {})", cbid));
    if (!enabled.ok()) {
      disable();
      return Failure{"CUPTI refused the cudaProfilerStart/Stop callbacks: " + enabled.why()};
    }
  }
  if (!options_.metrics.empty()) makeMetricSampler(budget);
  if (options_.deferCollection) return {};

  Status collecting = enableCallbacks();
  if (collecting.ok()) collecting = enableActivities();
  if (!collecting.ok()) {
    disable();
    return collecting;
  }
  collecting_ = true;
  return {};
}

Status CuptiSource::enableCallbacks() {
  CuptiApi& cupti = *env_.cupti;
  collection_.fetch_add(1, std::memory_order_relaxed);
  for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    for (uint32_t cbid : callbacks_.recorded(domain)) {
      Status enabled = cuptiStatus(
          cupti.enableCallback(1, subscriber_, domain, cbid),
          fmt::format("cuptiEnableCallback({}, {})",
                      domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver" : "runtime", cbid));
      if (!enabled.ok()) return Failure{"CUPTI refused a launch callback: " + enabled.why()};
    }
  }
  if (callbacks_.graphNodeIds != nullptr) {
    // Without them replayed work only lacks where its node was created: said, not fatal.
    for (CUpti_CallbackId cbid : kGraphNodeCallbacks) {
      cuptiSucceeded(cupti.enableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid),
                     fmt::format("cuptiEnableCallback(resource, {})", cbid));
    }
  }
  return {};
}

Status CuptiSource::enableActivities() {
  std::vector<CUpti_ActivityKind> kinds;
  for (const ActivityRecords& row : kActivityRecords) {
    if (!options_.activities.has(row.activity)) continue;
    for (CUpti_ActivityKind kind : row.kinds) {
      if (kind != CUPTI_ACTIVITY_KIND_INVALID) kinds.push_back(kind);
    }
  }
  // With the node kinds on (measured on the H200, CUDA 13): a graph launch then gives one
  // graph record and none for its nodes, while work launched outside graphs keeps its own.
  if (options_.graphLevel) kinds.push_back(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  enabledKinds_.clear();
  for (CUpti_ActivityKind kind : kinds) {
    CUptiResult result = env_.cupti->activityEnable(kind);
    if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      return Failure{"CUPTI is already in use by another profiler in this process"};
    }
    Status enabled = cuptiStatus(result, fmt::format("cuptiActivityEnable({})", kindName(kind)));
    if (!enabled.ok()) return Failure{"CUPTI refused an activity kind: " + enabled.why()};
    enabledKinds_.push_back(kind);
  }
  return {};
}

void CuptiSource::stopCollecting() noexcept {
  for (CUpti_ActivityKind kind : enabledKinds_) {
    cuptiSucceeded(env_.cupti->activityDisable(kind), "cuptiActivityDisable");
  }
  enabledKinds_.clear();
  for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    for (uint32_t cbid : callbacks_.recorded(domain)) {
      // Profiler-control callbacks stay on: they are what turns collection back on.
      if (callbacks_.flags(domain, cbid) & CallbackTable::kControl) continue;
      cuptiSucceeded(env_.cupti->enableCallback(0, subscriber_, domain, cbid),
                     "cuptiEnableCallback(0)");
    }
  }
  if (callbacks_.graphNodeIds != nullptr) {
    for (CUpti_CallbackId cbid : kGraphNodeCallbacks) {
      cuptiSucceeded(env_.cupti->enableCallback(0, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid),
                     "cuptiEnableCallback(0)");
    }
  }
  collecting_ = false;
}

void CuptiSource::start(int64_t) {
  if (!enabled_) return;
  if (!collecting_) {
    Status restarted = enableCallbacks();
    if (restarted.ok()) restarted = enableActivities();
    if (!restarted.ok()) {
      log(LogLevel::Warning, "GPU collection could not restart: {}", restarted.why());
      stopCollecting();
    }
    collecting_ = restarted.ok();
  }
  if (!ownClock_) {
    // CUPTI keeps its own clock (CLOCK_REALTIME on Linux): measure the offset to ours.
    uint64_t cuptiNow = 0;
    int64_t before = Clock::instance().nowNs();
    bool measured = cuptiSucceeded(env_.cupti->getTimestamp(&cuptiNow), "cuptiGetTimestamp");
    int64_t after = Clock::instance().nowNs();
    if (measured) decoder_.setGpuClockOffset((before + after) / 2 - static_cast<int64_t>(cuptiNow));
  }
  measureSampleClock();
  if (metrics_ && collecting_) metrics_->start();
  // Counters are reset when read: start from zero for this window.
  size_t ignored = 0;
  cuptiSucceeded(env_.cupti->activityGetNumDroppedRecords(nullptr, 0, &ignored),
                 "cuptiActivityGetNumDroppedRecords");
  if (pool_) {
    pool_->takeRefused();
    pool_->resetHandOvers();
  }
  windowEnding_.store(false, std::memory_order_relaxed);
  // The window's trace has a string table of its own, which may sit where the last
  // window's did once that trace was dropped: the first poll starts a new name cache
  // whatever the address. (The pipeline thread that polls starts after this returns.)
  decoderStrings_ = nullptr;
  std::lock_guard<std::mutex> lock(queueMutex_);
  droppedRecords_ = 0;
}

bool CuptiSource::poll(GpuBatch& out, StringTable& strings) {
  if (!enabled_) return false;
  if (decoderStrings_ != &strings) {
    decoder_.useStrings(strings);
    decoderStrings_ = &strings;
    describedDevices_.clear();
  }
  if (batchNext_ == batch_.size()) {
    batch_.clear();
    batchNext_ = 0;
    std::lock_guard<std::mutex> lock(queueMutex_);
    std::swap(queue_, batch_);
  }
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    out.droppedRecords += droppedRecords_;
    droppedRecords_ = 0;
  }
  // One buffer per call: its records fit in the room the pipeline set aside (decodeRoomBytes).
  if (batchNext_ < batch_.size()) {
    const Completed& completed = batch_[batchNext_++];
    decoder_.decodeBuffer(completed.buffer, completed.validSize, out);
    pool_->release(completed.buffer);
  }
  out.buffersRefused += pool_->takeRefused();
  // After the release above: the buffer just decoded no longer holds it back.
  const int64_t now = Clock::instance().nowNs();
  out.allRecordsBeforeNs = pool_->everythingBackBeforeNs(now);
  reportBuffers(now, out.allRecordsBeforeNs);
  if (metrics_) metrics_->drain(out);
  noteNewDevices(out, strings);
  return batchNext_ < batch_.size();
}

void CuptiSource::reportBuffers(int64_t nowNs, int64_t allRecordsBeforeNs) {
  // At debug level, every 10 s: whether records wait in CUPTI's hands (and launches for them).
  constexpr int64_t kReportNs = 10'000'000'000;
  if (nowNs - buffersReportedNs_ < kReportNs) return;
  buffersReportedNs_ = nowNs;
  const BufferPool::HandOvers h = pool_->handOvers();
  log(LogLevel::Debug,
      "activity buffers: {} out, the oldest lent {:.1f} s ago; this window {} handed back, {} "
      "before they were full, the longest held {:.1f} s",
      pool_->lentOut(), static_cast<double>(nowNs - allRecordsBeforeNs) / 1e9, h.count,
      h.beforeFull, static_cast<double>(h.longestHeldNs) / 1e9);
}

void CuptiSource::flushCompleteBuffers() noexcept {
  // Not before the program has launched work in a context: under CUDA injection the source
  // is enabled inside the driver's initialisation, which a flush must not run into.
  if (knownContexts() == 0) return;
  const CUptiResult result = env_.cupti->activityFlushAll(0);
  // Said once: a refusal every period would fill the log.
  if (result != CUPTI_SUCCESS && !flushRefusalSaid_.exchange(true)) {
    cuptiSucceeded(result, "cuptiActivityFlushAll(0), asked every gpu_flush_ms");
  }
}

// Occupancy needs each device's limits: asked of the driver when a device's first
// operation arrives (by then the program has initialised CUDA).
void CuptiSource::noteNewDevices(GpuBatch& out, StringTable& strings) {
  auto note = [&](uint32_t device) {
    if (!describedDevices_.insert(device).second) return;
    DeviceInfo info;
    if (driver_.deviceInfo(device, strings, info)) out.newDevices.push_back(info);
  };
  for (const KernelRecord& k : out.records.kernels) note(k.at.deviceId);
  for (const MemcpyRecord& m : out.records.memcpys) note(m.at.deviceId);
  for (const MemsetRecord& m : out.records.memsets) note(m.at.deviceId);
  for (const GraphRecord& g : out.records.graphs) note(g.at.deviceId);
}

int64_t CuptiSource::finishWindow() {
  if (!enabled_) return 0;
  // GPU work still running would otherwise be missing: wait for every context first.
  std::vector<CUcontext> contexts;
  {
    std::lock_guard<std::mutex> lock(contextsMutex_);
    contexts.assign(contexts_.begin(), contexts_.end());
  }
  bool synchronized = false;
  for (CUcontext context : contexts) synchronized |= driver_.synchronize(context);
  // Only a synchronisation that happened bounds the clock offset.
  const int64_t syncReturnNs = synchronized ? Clock::instance().nowNs() : 0;
  // The samples that cover the window's last work, decoded before the final poll.
  if (metrics_) metrics_->finish();

  windowEnding_.store(true, std::memory_order_relaxed);
  cuptiSucceeded(env_.cupti->activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED),
                 "cuptiActivityFlushAll(FORCED)");
  size_t dropped = 0;
  if (cuptiSucceeded(env_.cupti->activityGetNumDroppedRecords(nullptr, 0, &dropped),
                     "cuptiActivityGetNumDroppedRecords")) {
    std::lock_guard<std::mutex> lock(queueMutex_);
    droppedRecords_ += dropped;
  }
  return syncReturnNs;
}

void CuptiSource::disable() noexcept {
  if (!enabled_) return;
  flusher_.reset();  // no flush request from here on
  cuptiSucceeded(env_.cupti->activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED),
                 "cuptiActivityFlushAll(FORCED)");
  stopCollecting();
  if (options_.flushPeriodMs > 0) {
    cuptiSucceeded(env_.cupti->activityFlushPeriod(0), "cuptiActivityFlushPeriod(0)");
  }
  metrics_.reset();  // its thread stops sampling and lets go of the devices
  cuptiSucceeded(env_.cupti->unsubscribe(subscriber_), "cuptiUnsubscribe");
  subscriber_ = nullptr;
  // Buffers completed but not polled go back unread: nobody is recording any more.
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    for (const Completed& completed : queue_) pool_->release(completed.buffer);
    queue_.clear();
  }
  for (; batchNext_ < batch_.size(); ++batchNext_) pool_->release(batch_[batchNext_].buffer);
  batch_.clear();
  batchNext_ = 0;
  enabled_ = false;
  gLiveSource.store(nullptr);
}

std::size_t CuptiSource::decodeRoomBytes() const {
  // Decoded records are smaller than CUPTI's (a kernel: 128 bytes against 216).
  return pool_ ? pool_->bufferBytes() : 0;
}

std::string CuptiSource::describe() const {
  return fmt::format("CUPTI {} active; GPU timestamps on {}", cuptiVersion_,
                     ownClock_ ? "kinetrace's clock (timestamp callback)"
                               : "CUPTI's clock plus a measured offset");
}

Metadata CuptiSource::metadata() const {
  Metadata metadata{
      {"cupti_version", Value(cuptiVersion_)},
      {"cuda_driver_version", Value(driver_.driverVersion())},
      {"cuda_runtime_version", Value(cudaRuntimeVersion())},
      {"kinetrace_gpu_clock", Value(ownClock_ ? "cupti_timestamp_callback" : "measured_offset")},
  };
  if (pool_) {
    // How long records waited in CUPTI's hands; a launch whose record waited past the
    // assembler's limits is written without its link (kinetrace_gpu_ops_without_launch).
    const BufferPool::HandOvers h = pool_->handOvers();
    metadata.push_back({"kinetrace_gpu_buffers",
                        Value::object({{"handed_over", h.count},
                                       {"before_full", h.beforeFull},
                                       {"at_window_end", h.atWindowEnd},
                                       {"longest_held_ms", h.longestHeldNs / 1'000'000}})});
  }
  return metadata;
}

std::vector<DeviceInfo> CuptiSource::devices(StringTable& strings) const {
  return driver_.devices(strings);
}

std::string CuptiSource::apiName(ApiDomain domain, uint32_t callbackId) const {
  const char* name = nullptr;
  CUpti_CallbackDomain cuptiDomain =
      domain == ApiDomain::Driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  if (env_.cupti->getCallbackName(cuptiDomain, callbackId, &name) == CUPTI_SUCCESS &&
      name != nullptr) {
    return apiDisplayName(name);
  }
  return fmt::format("CUDA API {}", callbackId);
}

void CuptiSource::onBufferRequested(uint8_t** buffer, size_t* size,
                                    size_t* maxNumRecords) noexcept {
  *maxNumRecords = 0;  // as many as fit
  *buffer = pool_ ? pool_->acquire(Clock::instance().nowNs()) : nullptr;
  *size = *buffer != nullptr ? pool_->bufferBytes() : 0;
}

void CuptiSource::onBufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer, size_t,
                                    size_t validSize) noexcept {
  size_t dropped = 0;
  cuptiSucceeded(env_.cupti->activityGetNumDroppedRecords(context, streamId, &dropped),
                 "cuptiActivityGetNumDroppedRecords");
  if (pool_) {
    pool_->noteHandedBack(buffer, validSize, Clock::instance().nowNs(),
                          windowEnding_.load(std::memory_order_relaxed));
  }
  std::lock_guard<std::mutex> lock(queueMutex_);
  droppedRecords_ += dropped;
  // Capacity was reserved for every buffer the pool can lend: this never allocates.
  if (buffer != nullptr) queue_.push_back(Completed{buffer, validSize});
}

void CuptiSource::onContextSeen(CUcontext context) noexcept {
  std::lock_guard<std::mutex> lock(contextsMutex_);
  try {
    contexts_.insert(context);
  } catch (...) {
    // Out of memory: this context is then not synchronised at stop; its last work may be
    // missing, which the out-of-window and drop counters do not hide.
  }
}

std::size_t CuptiSource::knownContexts() {
  std::lock_guard<std::mutex> lock(contextsMutex_);
  return contexts_.size();
}

void CuptiSource::makeMetricSampler(MemoryBudget& budget) {
  PmSampler::Environment environment;
  environment.makeDevice = env_.makePmDevice ? env_.makePmDevice : &makeCuptiPmDevice;
  environment.devicesInUse = [this] { return devicesInUse(); };
  environment.toTraceClock = [this](uint64_t cuptiNs) { return sampleTimeToTrace(cuptiNs); };
  metrics_ = std::make_unique<PmSampler>(std::move(environment), options_.metrics,
                                         options_.metricIntervalNs,
                                         options_.metricHardwareBufferBytes, budget);
}

std::vector<uint32_t> CuptiSource::devicesInUse() {
  std::vector<CUcontext> contexts;
  {
    std::lock_guard<std::mutex> lock(contextsMutex_);
    contexts.assign(contexts_.begin(), contexts_.end());
  }
  std::vector<uint32_t> devices;
  for (CUcontext context : contexts) {
    auto known = contextDevices_.find(context);
    if (known == contextDevices_.end()) {
      known = contextDevices_.emplace(context, driver_.deviceOf(context)).first;
    }
    if (known->second >= 0) devices.push_back(static_cast<uint32_t>(known->second));
  }
  // A program may have started on a device before kinetrace sees its launches (collection
  // armed for a later window): its primary context says so, and sampling is then set up
  // before the window opens.
  for (uint32_t device : driver_.devicesWithActivePrimaryContext()) devices.push_back(device);
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  return devices;
}

// PM samples are stamped in CUPTI's own clock whatever timestamp callback activity records
// use: the offset to the trace's clock is measured when each window starts.
void CuptiSource::measureSampleClock() {
  if (!metrics_) return;
  uint64_t cuptiNow = 0;
  const int64_t before = Clock::instance().nowNs();
  if (!cuptiSucceeded(env_.cupti->getTimestamp(&cuptiNow), "cuptiGetTimestamp")) return;
  const int64_t after = Clock::instance().nowNs();
  sampleClockOffsetNs_.store((before + after) / 2 - static_cast<int64_t>(cuptiNow));
}

int64_t CuptiSource::sampleTimeToTrace(uint64_t cuptiNs) const {
  return static_cast<int64_t>(cuptiNs) + sampleClockOffsetNs_.load();
}

Result<std::unique_ptr<GpuSource>> makeCuptiSource() {
  return std::unique_ptr<GpuSource>(std::make_unique<CuptiSource>(CuptiSource::Environment{}));
}

}  // namespace kinetrace::detail
