#include "session/session.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "cupti/make_cupti_source.h"
#include "host/host_recorder.h"
#include "kinetrace/error.h"
#include "model/clock.h"
#include "model/gpu_metric_catalog.h"
#include "model/trace_file_name.h"
#include "output/open_sink.h"
#include "session/core.h"
#include "session/metadata.h"
#include "session/pipeline.h"
#include "support/log.h"

namespace kinetrace::detail {
namespace {

GpuOptions gpuOptionsFor(const Config& config, const SessionOptions& options) {
  const ActivitySet& a = config.activities;
  GpuOptions gpu;
  gpu.activities = a;
  gpu.activities.remove(Activity::Host);
  // Graph-level tracing replaces the records of a graph's work: without any, nothing to replace.
  gpu.graphLevel = config.cudaGraphTrace == GraphTrace::Graph && a.anyGraphWork();
  // Recording follows the program's cudaProfilerStart/Stop: CUPTI is subscribed at prepare()
  // but collects nothing until the first start.
  gpu.profilerControl = options.profilerControl;
  gpu.deferCollection = options.profilerControl != nullptr;
  gpu.insideDriverInit = options.insideDriverInit;
  gpu.bufferBytes = config.gpuBufferKb * 1024;
  gpu.maxBufferBytes = config.memoryCapBytes();
  gpu.flushPeriodMs = config.gpuFlushMs;
  if (!config.gpuMetrics.empty()) {
    for (const std::string& name : config.gpuMetrics) gpu.metrics.push_back(gpuMetricNamed(name));
    gpu.metricIntervalNs = config.gpuMetricsIntervalNs;
    gpu.metricHardwareBufferBytes = config.gpuMetricsBufferMb << 20;
  }
  return gpu;
}

AssemblerOptions assemblerOptionsFor(const Config& config, bool gpuEnabled, int64_t startNs,
                                     GpuSource* gpu) {
  const ActivitySet& a = config.activities;
  AssemblerOptions options;
  options.startNs = startNs;
  options.launchCallsRecorded =
      gpuEnabled && (a.has(Activity::Launch) || a.has(Activity::RuntimeAll));
  if (gpuEnabled) {
    options.gpuActivities = a;
    options.gpuActivities.remove(Activity::Host);
  }
  options.graphs =
      config.cudaGraphTrace == GraphTrace::Graph && options.gpuActivities.anyGraphWork();
  if (gpu != nullptr) {
    options.apiName = [gpu](ApiDomain domain, uint32_t callbackId) {
      return gpu->apiName(domain, callbackId);
    };
  }
  return options;
}

// Roughly what a value holds on the heap and in place.
std::size_t bytesOf(const Value& value) {
  std::size_t bytes = sizeof(Value);
  switch (value.kind()) {
    case Value::Kind::String:
      bytes += value.asString().size();
      break;
    case Value::Kind::Array:
      for (const Value& item : value.asArray()) bytes += bytesOf(item);
      break;
    case Value::Kind::Object:
      for (const Value::Member& member : value.asObject())
        bytes += member.key.size() + bytesOf(member.value);
      break;
    default:
      break;
  }
  return bytes;
}

std::size_t entryBytes(std::string_view key, const Value& value) {
  return sizeof(Value::Member) + key.size() + bytesOf(value);
}

// What the entry of `key` in `metadata` holds; 0 when there is none.
std::size_t entryBytesOf(const Metadata& metadata, std::string_view key) {
  for (const Value::Member& member : metadata) {
    if (member.key == key) return entryBytes(member.key, member.value);
  }
  return 0;
}

std::size_t metadataBytesOf(const Metadata& metadata) {
  std::size_t bytes = 0;
  for (const Value::Member& member : metadata) bytes += entryBytes(member.key, member.value);
  return bytes;
}

void eraseMetadata(Metadata& metadata, std::string_view key) {
  metadata.erase(std::remove_if(metadata.begin(), metadata.end(),
                                [key](const Value::Member& member) { return member.key == key; }),
                 metadata.end());
}

}  // namespace

Session::Session(Config config, SessionOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      pid_(static_cast<int64_t>(::getpid())) {
  setLogLevel(config_.logLevel);
  if (config_.activities.anyGpu())
    gpuStatus_ = "GPU collection not started yet (prepare() or start() starts it)";
  Clock::instance();  // calibrate now, not inside start()
  Core::instance();
}

Session::~Session() {
  if (static_cast<int64_t>(::getpid()) != pid_) {
    // A copy made by fork(): the pipeline thread and CUPTI belong to the parent. Nothing
    // here may be joined, disabled or freed through them.
    if (pipeline_) pipeline_->abandonInForkedChild();
    (void)pipeline_.release();
    (void)gpu_.release();
    return;
  }
  if (recording()) {
    try {
      stop();
    } catch (...) {
      // A destructor must not throw; the losses, if any, were logged by stop().
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (gpu_ && gpuEnabled_) gpu_->disable();
}

bool Session::recording() const {
  return recording_.load(std::memory_order_acquire) && Core::instance().pid() == pid_;
}

void Session::requireOwnProcess(const char* call) const {
  if (static_cast<int64_t>(::getpid()) == pid_) return;
  throw Error(fmt::format(
      "Profiler::{}(): this Profiler was created by process {}; after fork() the child records "
      "with a Profiler of its own",
      call, pid_));
}

std::string Session::gpuStatus() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return gpuStatus_;
}

void Session::enableGpu() {
  if (gpuTried_) return;
  gpuTried_ = true;
  if (!config_.activities.anyGpu()) return;
  // While recording, the cap holds CUPTI's buffers and the room to decode one of them.
  if (2 * config_.gpuBufferKb * 1024 > config_.memoryCapBytes()) {
    gpuStatus_ = fmt::format(
        "memory_mb={} leaves no room for a {} KiB activity buffer and the room to decode one: "
        "raise memory_mb or lower gpu_buffer_kb",
        config_.memoryMb, config_.gpuBufferKb);
    log(LogLevel::Warning, "GPU activity will not be recorded: {}; host activity still is",
        gpuStatus_);
    return;
  }
  if (!gpu_) {
    std::string whyNot = "no GPU backend";
    if (options_.gpuSourceFactory) {
      gpu_ = options_.gpuSourceFactory();
    } else if (Result<std::unique_ptr<GpuSource>> cupti = makeCuptiSource(); cupti.ok()) {
      gpu_ = std::move(cupti).value();
    } else {
      whyNot = cupti.why();
    }
    if (!gpu_) {
      gpuStatus_ = whyNot;
      log(LogLevel::Warning, "GPU activity will not be recorded: {}; host activity still is",
          gpuStatus_);
      return;
    }
  }
  Status enabled = gpu_->enable(gpuOptionsFor(config_, options_), Core::instance().budget());
  if (!enabled.ok()) {
    gpuStatus_ = enabled.why();
    log(LogLevel::Warning, "GPU activity will not be recorded: {}; host activity still is",
        gpuStatus_);
    return;
  }
  gpuEnabled_ = true;
  gpuStatus_ = gpu_->describe();
  log(LogLevel::Info, "{}", gpuStatus_);
}

void Session::prepare() {
  std::lock_guard<std::mutex> lock(mutex_);
  requireOwnProcess("prepare");
  enableGpu();
}

void Session::addMetadata(std::string key, Value value) {
  std::lock_guard<std::mutex> lock(mutex_);
  // While recording an entry replaces the key's entry after the events (the one before
  // them is written already), otherwise both.
  const std::size_t replaced =
      entryBytesOf(footerUser_, key) + (recording() ? 0 : entryBytesOf(headerUser_, key));
  const std::size_t after = metadataBytes_ - replaced + entryBytes(key, value);
  const std::size_t share = config_.memoryCapBytes() / 8;
  bool fits = after <= share;
  // While recording, growth is taken from the budget that records share.
  if (fits && recording() && after > metadataBytes_) {
    fits = Core::instance().budget().tryAcquire(after - metadataBytes_);
    if (fits) metadataAccounted_ += after - metadataBytes_;
  }
  if (!fits) {
    ++metadataRefused_;
    if (!metadataWarned_) {
      metadataWarned_ = true;
      log(LogLevel::Warning,
          "addMetadata(\"{}\"): refused, user metadata would pass its share of the memory cap "
          "({} KiB of memory_mb={}); refusals are counted in the trace "
          "(kinetrace_dropped_metadata)",
          key.size() > 64 ? key.substr(0, 64) + "..." : key, share >> 10, config_.memoryMb);
    }
    return;
  }
  metadataBytes_ = after;
  if (recording()) {
    setMetadata(footerUser_, std::move(key), std::move(value));
    return;
  }
  eraseMetadata(footerUser_, key);  // replaced: before the events from now on
  setMetadata(headerUser_, std::move(key), std::move(value));
}

// `output` may name a directory (as it does under `kinetrace run`): each session then gets
// its own file in it, named by process and start time, so repeated sessions never collide,
// with the extension of the configured format.
std::string Session::outputPathFor(const std::string& output, int64_t startNs) const {
  std::error_code error;
  if (!std::filesystem::is_directory(output, error)) return output;
  const std::string name =
      traceFileName({"pid" + std::to_string(pid_), std::to_string(startNs)}, config_.traceFormat);
  return (std::filesystem::path(output) / name).string();
}

void Session::start(const std::string& output, const PathRule& rule) {
  std::lock_guard<std::mutex> lock(mutex_);
  requireOwnProcess("start");
  if (recording()) throw Error("Profiler::start() called while already recording");
  Core& core = Core::instance();
  if (!core.claimRecording(this)) {
    throw Error(
        "another kinetrace::Profiler is recording in this process (under `kinetrace run`, the "
        "run's own session); stop it first");
  }
  HostRecorder& recorder = core.recorder();
  bool recorderStarted = false;
  try {
    setLogLevel(config_.logLevel);
    enableGpu();
    // The tick rate is refitted over everything since the last calibration, then used for
    // the whole session: host events and GPU timestamps are converted with the same line.
    int64_t drift = Clock::instance().recalibrate();
    log(LogLevel::Debug, "clock recalibrated; drift since the last calibration {} ns", drift);

    PipelineSetup setup;
    setup.startNs = Clock::instance().nowNs();
    setup.budget = &core.budget();
    setup.gpu = gpuEnabled_ ? gpu_.get() : nullptr;
    setup.assembler = assemblerOptionsFor(config_, gpuEnabled_, setup.startNs, setup.gpu);
    setup.pid = pid_;
    setup.processName = options_.processName;
    setup.header.baseTimeNs = setup.startNs;
    setup.header.metadata = headerMetadata(config_, Clock::instance().usesTsc(), headerUser_);
    if (!output.empty()) {
      // The output's write buffer counts against the cap: a cap that cannot hold it would
      // be exceeded from the first moment, whatever is dropped.
      if (config_.memoryCapBytes() < Pipeline::kLeastCapWithSinkBytes) {
        throw Error(fmt::format(
            "cannot record to \"{}\" with memory_mb={}: writing a trace holds a {} KiB buffer "
            "within that cap, and records need room besides; set memory_mb to {} or more, or "
            "record in memory (start() without an output)",
            output, config_.memoryMb, Pipeline::kSinkBytes >> 10,
            (Pipeline::kLeastCapWithSinkBytes + (std::size_t{1} << 20) - 1) >> 20));
      }
      setup.outputPath = outputPathFor(output, setup.startNs);
      setup.header.traceName = setup.outputPath;
      setup.sink = openSinkUnder(setup.outputPath, rule);  // unwritable: nothing is recorded
    }
    core.budget().setCap(config_.memoryCapBytes());
    core.budget().resetPeak();
    // User metadata, the session's and the trace's copy of it, within the cap (addMetadata
    // keeps it to an eighth).
    metadataAccounted_ = metadataBytes_ + metadataBytesOf(headerUser_);
    core.budget().forceAcquire(metadataAccounted_);
    pipeline_ = std::make_unique<Pipeline>(std::move(setup));  // an unwritable output throws here
    if (gpuEnabled_) gpu_->start(pipeline_->startNs());
    const uint64_t generation = recorder.startRecording(core.budget());
    recorderStarted = true;
    pipeline_->run(generation);
  } catch (...) {
    if (recorderStarted) {
      recorder.stopRecording();
      recorder.trimPool();
    }
    pipeline_.reset();
    if (gpuEnabled_) gpu_->stopCollecting();
    core.budget().release(metadataAccounted_);
    metadataAccounted_ = 0;
    core.releaseRecording(this);
    throw;
  }
  recording_.store(true, std::memory_order_release);
}

Trace Session::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  requireOwnProcess("stop");
  if (!recording()) throw Error("Profiler::stop() called without start()");
  Core& core = Core::instance();
  // The window ends when stop() is called, and recording right after: what threads record
  // while the pipeline winds down is neither kept nor drained, so the stop's cost is the
  // window's events, however many threads keep recording. The pipeline thread's cycle under
  // way takes nothing stamped after the stop (a late writer's event, or one recorded
  // between here and stopRecording()); finish() drains that, knowing the window's end, and
  // counts it out of the window.
  const int64_t stopNs = pipeline_->beginStop();
  if (options_.onStopping) options_.onStopping();
  core.recorder().stopRecording();
  recording_.store(false, std::memory_order_release);
  pipeline_->stopThread();

  const int64_t syncReturnNs = gpuEnabled_ ? gpu_->finishWindow() : 0;
  // How far the session's tick->epoch line has wandered from CLOCK_REALTIME.
  FooterFacts facts;
  facts.hostClockDriftNs = Clock::instance().toEpochNs(Clock::ticks()) - Clock::realtimeNs();
  facts.gpuStatus = gpuStatus_;
  facts.droppedMetadata = metadataRefused_;
  if (gpuEnabled_) facts.gpuMetadata = gpu_->metadata();
  std::shared_ptr<TraceData> data = pipeline_->finish(
      stopNs, syncReturnNs,
      [&](const TraceData& trace) { return footerMetadata(trace, facts, footerUser_); });
  data->losses.droppedMetadata = metadataRefused_;
  metadataRefused_ = 0;
  if (gpuEnabled_) gpu_->stopCollecting();
  pipeline_.reset();
  core.budget().release(metadataAccounted_);
  metadataAccounted_ = 0;
  core.recorder().trimPool();
  core.releaseRecording(this);
  // Metadata given while recording stays for later traces, like that given before, and
  // after their events: dropped from the header, so that a later trace does not write the
  // key twice, first with this trace's old value.
  for (const Value::Member& member : footerUser_) eraseMetadata(headerUser_, member.key);
  metadataBytes_ = metadataBytesOf(headerUser_) + metadataBytesOf(footerUser_);

  Trace trace(std::move(data));
  reportLosses(trace);
  // A failed write was logged by the pipeline when it happened; once is enough.
  if (trace.saveError().empty() && !trace.outputPath().empty()) {
    log(LogLevel::Info, "trace written to {}", trace.outputPath());
  }
  return trace;
}

void Session::reportLosses(const Trace& trace) const {
  const TraceStats s = trace.stats();
  if (s.droppedHostEvents > 0 || s.droppedAssembledRecords > 0) {
    log(LogLevel::Warning,
        "{} host events and {} assembled records dropped: the memory cap ({} MB) was reached; "
        "raise memory_mb",
        s.droppedHostEvents, s.droppedAssembledRecords, config_.memoryMb);
  }
  if (s.droppedGpuRecords > 0 || s.gpuBufferRequestsRefused > 0) {
    log(LogLevel::Warning,
        "{} GPU records dropped by CUPTI and {} buffer requests refused: the memory cap ({} MB) "
        "was reached; raise memory_mb",
        s.droppedGpuRecords, s.gpuBufferRequestsRefused, config_.memoryMb);
  }
  if (dataOf(trace).losses.gpuOpsBeforeLaunch > 0) {
    log(LogLevel::Warning,
        "{} GPU operations start before their launch call: host and GPU clocks disagree",
        dataOf(trace).losses.gpuOpsBeforeLaunch);
  }
  if (s.outOfWindowEvents > 0) {
    log(LogLevel::Info, "{} events fell outside the recording window and were left out",
        s.outOfWindowEvents);
  }
}

}  // namespace kinetrace::detail
