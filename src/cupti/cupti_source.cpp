#include "cupti/cupti_source.h"

#include <dlfcn.h>
#include <pthread.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "cupti/occupancy.h"
#include "model/clock.h"
#include "support/log.h"

namespace kinetrace::detail {
namespace {

// CUPTI's buffer callbacks are plain C functions with no user pointer: they find the one
// live source here. Set in enable(), cleared in disable().
std::atomic<CuptiSource*> gLiveSource{nullptr};

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

void contextSeen(CUcontext context) {
  if (CuptiSource* source = gLiveSource.load()) source->onContextSeen(context);
}

// CUPTI stamps its records with this clock, so GPU operations land on the host timeline
// without a conversion. For GPU timestamps CUPTI calls it while converting, not per record.
uint64_t CUPTIAPI kinetraceTimestamp() { return static_cast<uint64_t>(Clock::instance().nowNs()); }

int cudaRuntimeVersion() {
  // The application's CUDA runtime, if it has a dynamic one loaded; kinetrace links none.
  using Fn = int (*)(int*);
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion"));
  int version = 0;
  if (fn != nullptr) fn(&version);
  return version;
}

}  // namespace

CuptiSource::CuptiSource(Environment environment) : env_(environment) {
  if (env_.cupti == nullptr) env_.cupti = &realCuptiApi();
}

CuptiSource::~CuptiSource() { disable(); }

std::string CuptiSource::enable(const GpuOptions& options) {
  if (enabled_) return "";
  CuptiSource* expected = nullptr;
  if (!gLiveSource.compare_exchange_strong(expected, this)) {
    return "another kinetrace session already holds CUPTI in this process";
  }
  options_ = options;
  auto refuse = [&](std::string why) {
    gLiveSource.store(nullptr);
    return why;
  };
  if (env_.useDriver) {
    std::string why = driver_.open(env_.initializeDriver);
    if (!why.empty()) return refuse(why);
  }
  CuptiApi& cupti = *env_.cupti;
  if (cupti.getVersion(&cuptiVersion_) != CUPTI_SUCCESS) {
    return refuse("CUPTI could not be queried (libcupti unusable)");
  }

  CUptiResult subscribed = cupti.subscribe(&subscriber_, &onCuptiCallback, &callbacks_);
  if (subscribed == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    return refuse(
        "CUPTI is already in use by another profiler in this process (Nsight Systems, "
        "torch.profiler or another CUPTI tool); only one can trace GPU activity at a time");
  }
  if (subscribed != CUPTI_SUCCESS) {
    return refuse("CUPTI refused to start: cuptiSubscribe: " + describeCuptiResult(subscribed));
  }
  // Must precede every activity kind's enabling, or early records keep CUPTI's own clock.
  ownClock_ = cupti.activityRegisterTimestampCallback(&kinetraceTimestamp) == CUPTI_SUCCESS;
  CUptiResult registered = cupti.activityRegisterCallbacks(&bufferRequested, &bufferCompleted);
  if (registered != CUPTI_SUCCESS) {
    cupti.unsubscribe(subscriber_);
    return refuse("CUPTI refused activity buffers: cuptiActivityRegisterCallbacks: " +
                  describeCuptiResult(registered));
  }
  if (options.flushPeriodMs > 0) {
    CUptiResult result = cupti.activityFlushPeriod(options.flushPeriodMs);
    if (result != CUPTI_SUCCESS) {
      log(LogLevel::Warning, "CUPTI kept its own flush timing (gpu_flush_ms={}): {}",
          options.flushPeriodMs, describeCuptiResult(result));
    }
  }
  pool_ = std::make_unique<BufferPool>(options.bufferBytes, options.capBytes);
  queue_.reserve(pool_->maxBuffers() + 1);
  batch_.reserve(pool_->maxBuffers() + 1);
  quit_ = false;
  decoderThread_ = std::thread([this] {
    // Named so that `top -H` and per-thread CPU accounting show what it is.
    pthread_setname_np(pthread_self(), "kinetrace-cupti");
    decoderLoop();
  });
  setContextSeenHandler(&contextSeen);
  enabled_ = true;

  // The table is built once: CUPTI may be reading it on other threads (the profiler-control
  // callbacks stay enabled while collection is off), so it never changes while subscribed.
  callbacks_ = CallbackTable();
  if (options_.launchCalls) callbacks_.selectLaunchEntryPoints(cupti);
  if (options_.allRuntimeCalls) callbacks_.selectAll(CUPTI_CB_DOMAIN_RUNTIME_API, cupti);
  if (options_.allDriverCalls) callbacks_.selectAll(CUPTI_CB_DOMAIN_DRIVER_API, cupti);
  if (options_.profilerControl) {
    callbacks_.selectProfilerControl();
    for (uint32_t cbid : callbacks_.control(CUPTI_CB_DOMAIN_DRIVER_API)) {
      CUptiResult result = cupti.enableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
      if (result != CUPTI_SUCCESS) {
        disable();
        return "CUPTI refused the cudaProfilerStart/Stop callbacks: " + describeCuptiResult(result);
      }
    }
  }
  if (options_.deferCollection) return "";

  std::string why = enableCallbacks();
  if (why.empty()) why = enableActivities();
  if (!why.empty()) {
    disable();
    return why;
  }
  collecting_ = true;
  return "";
}

std::string CuptiSource::enableCallbacks() {
  CuptiApi& cupti = *env_.cupti;
  for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    for (uint32_t cbid : callbacks_.recorded(domain)) {
      CUptiResult result = cupti.enableCallback(1, subscriber_, domain, cbid);
      if (result != CUPTI_SUCCESS) {
        return fmt::format("CUPTI refused a launch callback (domain {}, id {}): {}",
                           static_cast<int>(domain), cbid, describeCuptiResult(result));
      }
    }
  }
  return "";
}

std::string CuptiSource::enableActivities() {
  std::vector<CUpti_ActivityKind> kinds;
  if (options_.kernels) kinds.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (options_.memcpy) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY2);  // peer-to-peer copies
  }
  if (options_.memset) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  if (options_.sync) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    kinds.push_back(CUPTI_ACTIVITY_KIND_CONTEXT);  // sync records name a context, not a device
  }
  if (options_.memory) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMORY2);
  if (options_.overhead) kinds.push_back(CUPTI_ACTIVITY_KIND_OVERHEAD);
  enabledKinds_.clear();
  for (CUpti_ActivityKind kind : kinds) {
    CUptiResult result = env_.cupti->activityEnable(kind);
    if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      return "CUPTI is already in use by another profiler in this process";
    }
    if (result != CUPTI_SUCCESS) {
      return fmt::format("CUPTI refused activity kind {}: {}", static_cast<int>(kind),
                         describeCuptiResult(result));
    }
    enabledKinds_.push_back(kind);
  }
  return "";
}

void CuptiSource::disableCollection() noexcept {
  for (CUpti_ActivityKind kind : enabledKinds_) env_.cupti->activityDisable(kind);
  enabledKinds_.clear();
  for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    for (uint32_t cbid : callbacks_.recorded(domain)) {
      // Profiler-control callbacks stay on: they are what turns collection back on.
      if (callbacks_.flags(domain, cbid) & CallbackTable::kControl) continue;
      env_.cupti->enableCallback(0, subscriber_, domain, cbid);
    }
  }
  collecting_ = false;
}

void CuptiSource::start(int64_t startNs) {
  windowStartNs_ = startNs;
  if (!collecting_) {
    std::string why = enableCallbacks();
    if (why.empty()) why = enableActivities();
    if (!why.empty()) log(LogLevel::Warning, "GPU collection could not restart: {}", why);
    collecting_ = why.empty();
  }
  if (!ownClock_) {
    // CUPTI keeps its own clock (CLOCK_REALTIME on Linux): measure the offset to ours.
    uint64_t cuptiNow = 0;
    int64_t before = Clock::instance().nowNs();
    env_.cupti->getTimestamp(&cuptiNow);
    int64_t after = Clock::instance().nowNs();
    std::lock_guard<std::mutex> lock(decodedMutex_);
    decoder_.setGpuClockOffset((before + after) / 2 - static_cast<int64_t>(cuptiNow));
  }
  // Counters are reset when read: start from zero for this window.
  size_t ignored = 0;
  env_.cupti->activityGetNumDroppedRecords(nullptr, 0, &ignored);
  std::lock_guard<std::mutex> lock(queueMutex_);
  droppedRecords_ = 0;
  if (pool_) pool_->resetRefused();
}

void CuptiSource::stop(TraceData& trace) {
  // GPU work still running would otherwise be missing: wait for every context first.
  std::vector<CUcontext> contexts;
  {
    std::lock_guard<std::mutex> lock(contextsMutex_);
    contexts.assign(contexts_.begin(), contexts_.end());
  }
  bool synchronized = false;
  for (CUcontext context : contexts) synchronized |= driver_.synchronize(context);
  // Only a synchronisation that happened bounds the clock offset.
  trace.gpuSyncReturnNs = synchronized ? Clock::instance().nowNs() : 0;

  env_.cupti->activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  drainDecoder();
  size_t dropped = 0;
  if (env_.cupti->activityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) {
    std::lock_guard<std::mutex> lock(queueMutex_);
    droppedRecords_ += dropped;
  }
  disableCollection();

  moveDecodedInto(trace);
  nameApiCalls(trace);
  addDeviceMetadata(trace);
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    trace.losses.cuptiDroppedRecords += droppedRecords_;
  }
  trace.losses.cuptiBuffersRefused += pool_ ? pool_->refused() : 0;
}

void CuptiSource::disable() noexcept {
  if (!enabled_) return;
  env_.cupti->activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  disableCollection();
  if (options_.flushPeriodMs > 0) env_.cupti->activityFlushPeriod(0);  // back to CUPTI's heuristics
  env_.cupti->unsubscribe(subscriber_);
  subscriber_ = nullptr;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    quit_ = true;
  }
  queueChanged_.notify_all();
  if (decoderThread_.joinable()) decoderThread_.join();
  setContextSeenHandler(nullptr);
  enabled_ = false;
  gLiveSource.store(nullptr);
}

std::string CuptiSource::describe() const {
  return fmt::format("CUPTI {} active; GPU timestamps on {}", cuptiVersion_,
                     ownClock_ ? "kinetrace's clock (timestamp callback)" : "CUPTI's clock plus a measured offset");
}

void CuptiSource::onBufferRequested(uint8_t** buffer, size_t* size, size_t* maxNumRecords) noexcept {
  *maxNumRecords = 0;  // as many as fit
  *buffer = pool_ ? pool_->acquire() : nullptr;
  *size = *buffer != nullptr ? pool_->bufferBytes() : 0;
}

void CuptiSource::onBufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer, size_t,
                                    size_t validSize) noexcept {
  size_t dropped = 0;
  env_.cupti->activityGetNumDroppedRecords(context, streamId, &dropped);
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    droppedRecords_ += dropped;
    // Capacity was reserved for every buffer the pool can lend: this never allocates.
    if (buffer != nullptr) queue_.push_back(Completed{buffer, validSize});
  }
  queueChanged_.notify_all();
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

void CuptiSource::decoderLoop() {
  std::unique_lock<std::mutex> lock(queueMutex_);
  while (true) {
    queueChanged_.wait(lock, [&] { return quit_ || !queue_.empty(); });
    if (queue_.empty()) break;  // quit_ and nothing left
    std::swap(queue_, batch_);
    decoding_ = true;
    lock.unlock();
    {
      std::lock_guard<std::mutex> decodedLock(decodedMutex_);
      for (const Completed& completed : batch_) decoder_.decodeBuffer(completed.buffer, completed.validSize);
    }
    for (const Completed& completed : batch_) pool_->release(completed.buffer);
    batch_.clear();
    lock.lock();
    decoding_ = false;
    queueChanged_.notify_all();
  }
}

void CuptiSource::drainDecoder() {
  std::unique_lock<std::mutex> lock(queueMutex_);
  queueChanged_.wait(lock, [&] { return (queue_.empty() && !decoding_) || !decoderThread_.joinable(); });
}

void CuptiSource::moveDecodedInto(TraceData& trace) {
  std::lock_guard<std::mutex> lock(decodedMutex_);
  std::vector<StringId> remapped(decoded_.strings.size(), ~StringId{0});
  auto name = [&](StringId id) {
    if (remapped[id] == ~StringId{0}) remapped[id] = trace.strings.intern(decoded_.strings.get(id));
    return remapped[id];
  };
  std::unordered_set<uint32_t> launchedInWindow;
  for (const ApiCallRecord& call : trace.apiCalls) launchedInWindow.insert(call.correlationId);
  const auto& externalIds = decoder_.externalIds();

  // GPU work that started before start() is out; work that started after stop() stays
  // when its launch call was inside the window (it was still queued at stop).
  auto keep = [&](GpuPlacement& at, uint32_t otherCorrelationId = 0) {
    bool launched = launchedInWindow.count(at.correlationId) > 0 ||
                    (otherCorrelationId != 0 && launchedInWindow.count(otherCorrelationId) > 0);
    if (at.startNs < trace.startNs || (at.startNs > trace.stopNs && !launched)) {
      ++trace.losses.outOfWindowEvents;
      return false;
    }
    if (at.externalId == 0) {
      auto external = externalIds.find(at.correlationId);
      if (external != externalIds.end()) at.externalId = external->second;
    }
    return true;
  };
  for (KernelRecord& k : decoded_.kernels) {
    if (!keep(k.at)) continue;
    k.name = name(k.name);
    trace.kernels.push_back(k);
  }
  for (MemcpyRecord& m : decoded_.memcpys) {
    if (!keep(m.at, m.runtimeCorrelationId)) continue;
    m.name = name(m.name);
    trace.memcpys.push_back(m);
  }
  for (MemsetRecord& m : decoded_.memsets) {
    if (!keep(m.at)) continue;
    m.name = name(m.name);
    trace.memsets.push_back(m);
  }
  for (SyncRecord& s : decoded_.syncs) {
    if (!keep(s.at)) continue;
    s.name = name(s.name);
    trace.syncs.push_back(s);
  }
  auto inWindow = [&](int64_t t) {
    bool in = t >= trace.startNs && t <= trace.stopNs;
    if (!in) ++trace.losses.outOfWindowEvents;
    return in;
  };
  for (MemoryRecord& m : decoded_.memory) {
    if (!inWindow(m.timeNs)) continue;
    m.memoryKind = name(m.memoryKind);
    trace.memory.push_back(m);
  }
  for (OverheadRecord& o : decoded_.overheads) {
    if (!inWindow(o.startNs)) continue;
    o.name = name(o.name);
    trace.overheads.push_back(o);
  }
  trace.losses.cuptiRecordsUndecoded += decoded_.losses.cuptiRecordsUndecoded;
  decoded_.losses = LossCounters{};
  // The string table stays (it holds only distinct names); the records go.
  decoded_.kernels.clear();
  decoded_.memcpys.clear();
  decoded_.memsets.clear();
  decoded_.syncs.clear();
  decoded_.memory.clear();
  decoded_.overheads.clear();
}

void CuptiSource::nameApiCalls(TraceData& trace) {
  std::unordered_map<uint32_t, StringId> names;  // (domain << 16 | cbid) -> name
  for (ApiCallRecord& call : trace.apiCalls) {
    if (call.name != 0) continue;
    CUpti_CallbackDomain domain =
        call.domain == ApiDomain::Driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    uint32_t key = static_cast<uint32_t>(domain) << 16 | call.callbackId;
    auto found = names.find(key);
    if (found == names.end()) {
      const char* cuptiName = nullptr;
      std::string display = env_.cupti->getCallbackName(domain, call.callbackId, &cuptiName) == CUPTI_SUCCESS && cuptiName
                                ? apiDisplayName(cuptiName)
                                : fmt::format("CUDA API {}", call.callbackId);
      found = names.emplace(key, trace.strings.intern(display)).first;
    }
    call.name = found->second;
  }
}

void CuptiSource::addDeviceMetadata(TraceData& trace) {
  trace.devices = driver_.devices(trace.strings);
  for (KernelRecord& kernel : trace.kernels) {
    for (const DeviceInfo& device : trace.devices) {
      if (device.id != kernel.at.deviceId) continue;
      OccupancyEstimate estimate = estimateOccupancy(device, kernel);
      kernel.blocksPerSm = estimate.blocksPerSm;
      kernel.warpsPerSm = estimate.warpsPerSm;
      kernel.occupancyPercent = estimate.occupancyPercent;
      break;
    }
  }
  trace.setMetadataJson("cupti_version", std::to_string(cuptiVersion_));
  trace.setMetadataJson("cuda_driver_version", std::to_string(driver_.driverVersion()));
  trace.setMetadataJson("cuda_runtime_version", std::to_string(cudaRuntimeVersion()));
  trace.setMetadataJson("kinetrace_gpu_clock",
                        nlohmann::json(ownClock_ ? "cupti_timestamp_callback" : "measured_offset").dump());
}

std::unique_ptr<GpuSource> makeCuptiSource(std::string& whyNot) {
  whyNot.clear();
  CuptiSource::Environment environment;
  // Under CUDA injection the session starts inside the driver's own initialisation.
  environment.initializeDriver = !gInsideCudaInjection.load();
  return std::make_unique<CuptiSource>(environment);
}

}  // namespace kinetrace::detail
