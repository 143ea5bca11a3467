#include "session/session.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "correlate/correlator.h"
#include "host/host_recorder.h"
#include "kinetrace/error.h"
#include "model/clock.h"
#include "support/log.h"

namespace kinetrace::detail {

std::atomic<bool> gInsideCudaInjection{false};

namespace {

// The host recorder is process-wide, so only one session may record at a time.
std::atomic<const Session*> gRecordingSession{nullptr};

GpuOptions gpuOptionsFor(const Config& config) {
  const ActivitySet& a = config.activities;
  GpuOptions options;
  options.kernels = a.has(Activity::Kernel);
  options.memcpy = a.has(Activity::Memcpy);
  options.memset = a.has(Activity::Memset);
  options.sync = a.has(Activity::Sync);
  options.memory = a.has(Activity::Memory);
  options.overhead = a.has(Activity::Overhead);
  options.launchCalls = a.has(Activity::Launch);
  options.allRuntimeCalls = a.has(Activity::RuntimeAll);
  options.allDriverCalls = a.has(Activity::DriverAll);
  // Recording follows the program's cudaProfilerStart/Stop: CUPTI is subscribed at prepare()
  // but collects nothing until the first start.
  options.profilerControl = config.captureRange == CaptureRange::CudaProfilerApi;
  options.deferCollection = options.profilerControl;
  options.bufferBytes = config.gpuBufferKb * 1024;
  options.capBytes = config.gpuBufferMb * 1024 * 1024;
  options.flushPeriodMs = config.gpuFlushMs;
  return options;
}

int64_t envInteger(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  return (end != nullptr && *end == '\0') ? value : fallback;
}

}  // namespace

Session::Session(Config config) : config_(std::move(config)) {
  setLogLevel(config_.logLevel);
  if (config_.activities.anyGpu()) gpuStatus_ = "GPU collection not started yet (prepare() or start() starts it)";
  Clock::instance();  // calibrate now, not inside start()
}

Session::~Session() {
  if (recording_) {
    HostRecorder::instance().stopRecording();
    gRecordingSession.store(nullptr);
  }
  if (gpu_ && gpuEnabled_) gpu_->disable();
}

void Session::setGpuSourceForTesting(std::unique_ptr<GpuSource> source) {
  gpu_ = std::move(source);
  gpuTried_ = false;
}

void Session::enableGpu() {
  if (gpuTried_) return;
  gpuTried_ = true;
  if (!config_.activities.anyGpu()) return;
  if (!gpu_) {
    std::string whyNot;
    gpu_ = makeCuptiSource(whyNot);
    if (!gpu_) {
      gpuStatus_ = whyNot;
      log(LogLevel::Warning, "GPU activity will not be recorded: {}; host activity still is", whyNot);
      return;
    }
  }
  std::string refusal = gpu_->enable(gpuOptionsFor(config_));
  if (!refusal.empty()) {
    gpuStatus_ = refusal;
    log(LogLevel::Warning, "GPU activity will not be recorded: {}; host activity still is", refusal);
    return;
  }
  gpuEnabled_ = true;
  gpuStatus_ = gpu_->describe();
  log(LogLevel::Info, "{}", gpuStatus_);
}

void Session::prepare() { enableGpu(); }

void Session::start() {
  if (recording_) throw Error("kinetrace: Profiler::start() called while already recording");
  const Session* expected = nullptr;
  if (!gRecordingSession.compare_exchange_strong(expected, this)) {
    throw Error(
        "kinetrace: another kinetrace::Profiler is recording in this process; stop it first");
  }
  enableGpu();
  // The tick rate is refitted over everything since the last calibration, then frozen for
  // the session: host events and GPU timestamps are converted with the same line.
  int64_t drift = Clock::instance().recalibrate();
  log(LogLevel::Debug, "clock recalibrated; drift since the last calibration {} ns", drift);
  startNs_ = Clock::instance().nowNs();
  if (gpuEnabled_) gpu_->start(startNs_);
  HostRecorder::instance().startRecording(config_.hostBufferMb * 1024 * 1024);
  recording_ = true;
}

Trace Session::stop() {
  if (!recording_) throw Error("kinetrace: Profiler::stop() called without start()");
  auto trace = std::make_shared<TraceData>();
  trace->startNs = startNs_;
  trace->stopNs = Clock::instance().nowNs();
  trace->pid = static_cast<int64_t>(::getpid());
  HostRecorder::instance().stopRecording();
  recording_ = false;
  gRecordingSession.store(nullptr);

  // Host first: the GPU source names the launch calls the host recorder collected.
  HostRecorder::instance().collect(*trace, Clock::instance());
  if (gpuEnabled_) gpu_->stop(*trace);
  correlate(*trace, gpuEnabled_ && config_.activities.has(Activity::Launch));

  // How far the frozen tick->epoch line has wandered from CLOCK_REALTIME over the session.
  int64_t drift = Clock::instance().toEpochNs(Clock::ticks()) - Clock::realtimeNs();
  addSessionMetadata(*trace, drift);
  reportLosses(*trace);

  Trace result(trace);
  if (!config_.output.empty()) {
    std::string path = outputPathFor(*trace);
    result.save(path);
    log(LogLevel::Info, "trace written to {}", path);
  }
  return result;
}

// `output` may name a directory (as it does under `kinetrace run`): each session then gets
// its own file in it, named by process and start time, so repeated sessions never collide.
std::string Session::outputPathFor(const TraceData& trace) const {
  std::error_code error;
  if (!std::filesystem::is_directory(config_.output, error)) return config_.output;
  return (std::filesystem::path(config_.output) /
          fmt::format("kinetrace-pid{}-{}.json", trace.pid, trace.startNs))
      .string();
}

void Session::addSessionMetadata(TraceData& trace, int64_t clockDriftNs) const {
  using nlohmann::json;
  // HTA refuses a trace without a rank; launchers such as torchrun set these variables.
  json distributed = {{"rank", envInteger("RANK", 0)},
                      {"world_size", envInteger("WORLD_SIZE", 1)},
                      {"local_rank", envInteger("LOCAL_RANK", 0)},
                      {"backend", "nccl"}};
  trace.setMetadataJson("distributedInfo", distributed.dump());
  trace.setMetadataJson("kinetrace_version", json(KINETRACE_VERSION_STRING).dump());
  trace.setMetadataJson("kinetrace_activities", json(config_.activities.toString()).dump());
  trace.setMetadataJson("kinetrace_gpu_status", json(gpuStatus_).dump());
  trace.setMetadataJson("kinetrace_host_clock",
                        json(Clock::instance().usesTsc() ? "tsc" : "clock_monotonic").dump());
  trace.setMetadataJson("kinetrace_host_clock_drift_ns", json(clockDriftNs).dump());
  ClockOffsetBounds bounds = measureClockOffsetBounds(trace);
  if (bounds.hasHigh || bounds.hasLow) {
    json offset = json::object();
    if (bounds.hasLow) offset["low"] = bounds.lowNs;
    if (bounds.hasHigh) offset["high"] = bounds.highNs;
    offset["meaning"] =
        "GPU timestamp minus host time lies in [low, high]: GPU work starts after its launch "
        "call begins, and ends before a synchronisation that waited for it returns";
    trace.setMetadataJson("kinetrace_gpu_clock_offset_bound_ns", offset.dump());
  }
}

void Session::reportLosses(const TraceData& trace) const {
  const LossCounters& l = trace.losses;
  if (l.droppedHostEvents > 0) {
    log(LogLevel::Warning, "{} host events dropped: the host buffer cap ({} MB) was reached; raise host_buffer_mb",
        l.droppedHostEvents, config_.hostBufferMb);
  }
  if (l.cuptiDroppedRecords > 0 || l.cuptiBuffersRefused > 0) {
    log(LogLevel::Warning,
        "{} GPU records dropped by CUPTI and {} buffer requests refused: the GPU buffer cap ({} MB) "
        "was reached; raise gpu_buffer_mb",
        l.cuptiDroppedRecords, l.cuptiBuffersRefused, config_.gpuBufferMb);
  }
  if (l.gpuOpsBeforeLaunch > 0) {
    log(LogLevel::Warning, "{} GPU operations start before their launch call: host and GPU clocks disagree",
        l.gpuOpsBeforeLaunch);
  }
  if (l.outOfWindowEvents > 0) {
    log(LogLevel::Info, "{} events fell outside the recording window and were left out", l.outOfWindowEvents);
  }
}

}  // namespace kinetrace::detail
