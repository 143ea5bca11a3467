#include "cupti/pm_sampler.h"

#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "model/clock.h"
#include "support/log.h"

namespace kinetrace::detail {
namespace {

// Raw hardware records per sample of a busy GPU, with room to spare. CUPTI does not say; what
// a busy H100 wrote is in bench/HISTORY.md ("GPU metrics, first run on a GPU"), and an idle
// GPU writes far less. A buffer too small fails every later decode until sampling is made
// anew.
constexpr std::size_t kHardwareBytesPerSample = std::size_t{192} << 10;
constexpr std::size_t kMinHardwareBufferBytes = std::size_t{32} << 20;
constexpr std::size_t kMaxHardwareBufferBytes = std::size_t{512} << 20;
constexpr uint32_t kMinSamples = 256;
constexpr uint32_t kMaxSamples = 1u << 18;
// A share of peak can read a little above 100% (the peak is a sustained rate); far above,
// the sample was not decoded right.
constexpr double kMaxPlausiblePercent = 150.0;

// Samples in an interval-long gap, rounded: a gap of less than half an interval is jitter.
uint64_t samplesIn(int64_t gapNs, int64_t intervalNs) {
  if (gapNs * 2 < intervalNs) return 0;
  return static_cast<uint64_t>(std::llround(static_cast<double>(gapNs) / intervalNs));
}

// How many samples a buffer holding that span of them has room for, within bounds.
uint32_t bufferSamples(int64_t spanNs, int64_t intervalNs) {
  const int64_t samples = spanNs / std::max<int64_t>(intervalNs, 1);
  return static_cast<uint32_t>(std::clamp<int64_t>(samples, kMinSamples, kMaxSamples));
}

}  // namespace

std::size_t PmSampler::hardwareBufferBytes(int64_t intervalNs) {
  const auto samples =
      static_cast<std::size_t>(kHardwareBufferedNs / std::max<int64_t>(intervalNs, 1));
  return std::clamp<std::size_t>(samples * kHardwareBytesPerSample, kMinHardwareBufferBytes,
                                 kMaxHardwareBufferBytes);
}

uint32_t PmSampler::imageSamples(int64_t intervalNs) {
  return bufferSamples(kHardwareBufferedNs, intervalNs);
}

uint32_t PmSampler::queueSamples(int64_t intervalNs) {
  return bufferSamples(kQueuedNs, intervalNs);
}

PmSampler::PmSampler(Environment environment, std::vector<GpuMetric> metrics, int64_t intervalNs,
                     std::size_t hardwareBufferBytes, MemoryBudget& budget)
    : env_(std::move(environment)),
      metrics_(std::move(metrics)),
      intervalNs_(intervalNs),
      hardwareBufferBytes_(hardwareBufferBytes > 0 ? hardwareBufferBytes
                                                   : PmSampler::hardwareBufferBytes(intervalNs)),
      budget_(budget) {
  for (const GpuMetric& metric : metrics_) metricNames_.push_back(metric.name);
  queueCapacity_ = queueSamples(intervalNs_);
  if (env_.decodePeriodNs > 0) thread_ = std::thread([this] { threadMain(); });
}

PmSampler::~PmSampler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    exiting_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& [id, device] : devices_) {
    if (device.sampling) device.pm->stop();
  }
  devices_.clear();
  budget_.release(budgetHeld_);
}

void PmSampler::start() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    command_ = Command::Start;
  }
  if (!thread_.joinable()) {
    runOnce();
    return;
  }
  wake_.notify_all();
}

void PmSampler::finish() {
  if (!thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      command_ = Command::Finish;
    }
    runOnce();
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = finishedRounds_ + 1;
  command_ = Command::Finish;
  wake_.notify_all();
  done_.wait(lock, [&] { return finishedRounds_ >= target || exiting_; });
}

void PmSampler::drain(GpuBatch& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!refused_.empty() && !refusalSent_) {
    GpuMetricSet set;
    set.refused = refused_;
    set.intervalNs = intervalNs_;
    out.metricSet = std::move(set);
    refusalSent_ = true;
  }
  if (setChanged_ && !sampledDevices_.empty()) {
    GpuMetricSet set;
    set.metrics = metrics_;
    set.intervalNs = intervalNs_;
    set.devices = sampledDevices_;
    out.metricSet = std::move(set);
    setChanged_ = false;
  }
  out.metricLosses.lost += queued_.metricLosses.lost;
  out.metricLosses.corrupted += queued_.metricLosses.corrupted;
  out.metricLosses.setupDropped += queued_.metricLosses.setupDropped;
  queued_.metricLosses = GpuMetricLosses{};
  out.records.append(std::move(queued_.records));
  queued_.records.clear();
  out.metricsCompleteUntil.insert(out.metricsCompleteUntil.end(),
                                  queued_.metricsCompleteUntil.begin(),
                                  queued_.metricsCompleteUntil.end());
  queued_.metricsCompleteUntil.clear();
}

void PmSampler::threadMain() {
  pthread_setname_np(pthread_self(), "kinetrace-pms");
  std::unique_lock<std::mutex> lock(mutex_);
  while (!exiting_) {
    wake_.wait_for(lock, std::chrono::nanoseconds(env_.decodePeriodNs),
                   [&] { return exiting_ || command_ != Command::None; });
    if (exiting_) break;
    lock.unlock();
    runOnce();
    lock.lock();
  }
}

void PmSampler::runOnce() {
  Command command;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    command = command_;
    command_ = Command::None;
  }
  if (command == Command::Start) {
    windowOpen_ = true;
    for (auto& [id, device] : devices_) startDevice(id, device);
  }
  // Devices are set up as soon as the program uses them, window or not: the set-up takes
  // most of a second, and a window that finds them ready samples from its first
  // millisecond.
  addNewDevices();
  if (windowOpen_) {
    for (auto& [id, device] : devices_) {
      if (device.sampling) decodeDevice(id, device, false);
    }
  }
  if (command == Command::Finish) {
    std::vector<std::pair<uint32_t, int64_t>> complete;
    for (auto& [id, device] : devices_) {
      if (device.sampling) {
        device.pm->stop();
        decodeDevice(id, device, true);
        device.sampling = false;
      }
      complete.emplace_back(id, INT64_MAX);  // no more samples this window
    }
    windowOpen_ = false;
    std::lock_guard<std::mutex> lock(mutex_);
    queued_.metricsCompleteUntil.insert(queued_.metricsCompleteUntil.end(), complete.begin(),
                                        complete.end());
    ++finishedRounds_;
    done_.notify_all();
  }
}

void PmSampler::addNewDevices() {
  if (!refused_.empty()) return;  // read without the lock: only this thread writes it
  for (uint32_t id : env_.devicesInUse()) {
    if (devices_.count(id) != 0 ||
        std::find(refusedDevices_.begin(), refusedDevices_.end(), id) != refusedDevices_.end()) {
      continue;
    }
    const int64_t preparing = Clock::instance().nowNs();
    std::unique_ptr<PmDevice> pm = env_.makeDevice(id);
    Status prepared = pm != nullptr ? pm->prepare(metricNames_, static_cast<uint64_t>(intervalNs_),
                                                  hardwareBufferBytes_, imageSamples(intervalNs_))
                                    : Status(Failure{"this build has no CUPTI PM sampling"});
    if (prepared.ok()) {
      // The hardware buffer is host memory CUPTI takes for the device: counted with the
      // images and the hand-over queue.
      const std::size_t bytes =
          pm->hostBytes() + hardwareBufferBytes_ +
          queueCapacity_ * (sizeof(GpuMetricSampleRecord) + metrics_.size() * sizeof(double));
      if (!budget_.tryAcquire(bytes)) {
        prepared = Failure{fmt::format(
            "sampling needs {} MB more than memory_mb leaves (raise memory_mb, sample fewer "
            "metrics or less often)",
            (bytes + (1 << 20) - 1) >> 20)};
      } else {
        budgetHeld_ += bytes;
      }
    }
    if (!prepared.ok()) {
      refusedDevices_.push_back(id);
      if (devices_.empty()) {
        refuse(fmt::format("GPU {}: {}", id, prepared.why()));
        return;
      }
      log(LogLevel::Warning, "GPU metrics are not sampled on GPU {}: {}", id, prepared.why());
      continue;
    }
    log(LogLevel::Info, "GPU metrics on GPU {}: set up in {:.1f} ms", id,
        static_cast<double>(Clock::instance().nowNs() - preparing) / 1e6);
    Device& device = devices_[id];
    device.hostBytes = pm->hostBytes();
    device.pm = std::move(pm);
    device.hardwareBufferBytes = hardwareBufferBytes_;
    if (windowOpen_) startDevice(id, device);
  }
}

void PmSampler::startDevice(uint32_t id, Device& device) {
  if (device.sampling) return;
  const int64_t starting = Clock::instance().nowNs();
  Status started = device.pm->start();
  if (!started.ok()) {
    log(LogLevel::Warning, "GPU metrics: sampling did not start on GPU {}: {}", id, started.why());
    return;
  }
  log(LogLevel::Info, "GPU metrics on GPU {}: sampling started at {} ns in {:.1f} ms", id, starting,
      static_cast<double>(Clock::instance().nowNs() - starting) / 1e6);
  device.sampling = true;
  device.dropNext = true;
  device.restarted = false;
  device.lastEndNs = INT64_MIN;
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::find(sampledDevices_.begin(), sampledDevices_.end(), id) == sampledDevices_.end()) {
    sampledDevices_.push_back(id);
  }
  setChanged_ = true;
}

void PmSampler::decodeDevice(uint32_t id, Device& device, bool finishing) {
  // The host image may fill before the hardware buffer is empty: decode until it is.
  for (int rounds = 0; rounds < 1024; ++rounds) {
    spans_.clear();
    values_.clear();
    const int64_t decoding = Clock::instance().nowNs();
    PmDecodeResult result = device.pm->decode(spans_, values_);
    const std::size_t perSample = metrics_.size();
    for (std::size_t i = 0; i < spans_.size(); ++i) {
      if (values_.size() < (i + 1) * perSample) {
        std::lock_guard<std::mutex> lock(mutex_);
        queued_.metricLosses.corrupted += spans_.size() - i;
        break;
      }
      keep(id, device, spans_[i], values_.data() + i * perSample);
    }
    reportDecoding(id, device, decoding, spans_.size());
    if (result.outcome == PmDecodeResult::HardwareOverflow) {
      // CUPTI decodes nothing more until sampling is made anew. What the hardware recorded
      // meanwhile is lost: the gap before the next sample counts it.
      // A busy GPU's raw samples are larger than the buffer was sized for: twice as large
      // a buffer from now on, while the memory cap allows, up to 512 MiB (or the size asked
      // for with gpu_metrics_buffer_mb, where that is larger). The device's host images grow
      // with it (PmDevice::restart): their growth, in proportion, is asked for too.
      const std::size_t buffer = device.hardwareBufferBytes;
      const std::size_t grown = std::min(buffer * 2, std::max(kMaxHardwareBufferBytes, buffer));
      const std::size_t imagesGrowth = device.hostBytes * (grown - buffer) / buffer;
      if (!finishing && grown > buffer && budget_.tryAcquire(grown - buffer + imagesGrowth)) {
        budgetHeld_ += grown - buffer + imagesGrowth;
        device.hardwareBufferBytes = grown;
        device.hostBytes += imagesGrowth;
      }
      log(LogLevel::Warning,
          "GPU metrics: the hardware sample buffer of GPU {} filled (decoding fell behind); "
          "sampling restarts with {} MiB, the samples lost are counted",
          id, device.hardwareBufferBytes >> 20);
      if (finishing) return;
      Status restarted = device.pm->restart(device.hardwareBufferBytes);
      if (!restarted.ok()) {
        log(LogLevel::Warning, "GPU metrics: sampling on GPU {} could not restart: {}", id,
            restarted.why());
        device.sampling = false;
        std::lock_guard<std::mutex> lock(mutex_);
        queued_.metricsCompleteUntil.emplace_back(id, INT64_MAX);
        return;
      }
      // What the images took in fact, against what was asked for (it is taken already).
      if (const std::size_t host = device.pm->hostBytes(); host > device.hostBytes) {
        budget_.forceAcquire(host - device.hostBytes);
        budgetHeld_ += host - device.hostBytes;
        device.hostBytes = host;
      } else if (host < device.hostBytes) {
        budget_.release(device.hostBytes - host);
        budgetHeld_ -= device.hostBytes - host;
        device.hostBytes = host;
      }
      device.dropNext = true;
      device.restarted = true;
      return;
    }
    if (result.outcome == PmDecodeResult::Failed) {
      log(LogLevel::Warning, "GPU metrics: decoding failed on GPU {}: {}", id, result.why);
      return;
    }
    if (!result.moreWaiting) return;
  }
}

void PmSampler::reportDecoding(uint32_t id, Device& device, int64_t startedNs,
                               std::size_t samples) {
  constexpr int64_t kDecodeReportNs = 10'000'000'000;
  const int64_t now = Clock::instance().nowNs();
  device.decodingNs += now - startedNs;
  device.decodedSamples += samples;
  if (device.lastEndNs != INT64_MIN) {
    device.worstLagNs = std::max(device.worstLagNs, now - device.lastEndNs);
  }
  if (device.reportFromNs == 0) device.reportFromNs = startedNs;
  if (now - device.reportFromNs < kDecodeReportNs) return;
  log(LogLevel::Debug,
      "GPU metrics on GPU {}: {} samples decoded in {:.1f} ms of the last {:.1f} s; the newest "
      "sample trailed the clock by up to {:.1f} ms",
      id, device.decodedSamples, static_cast<double>(device.decodingNs) / 1e6,
      static_cast<double>(now - device.reportFromNs) / 1e9,
      static_cast<double>(device.worstLagNs) / 1e6);
  device.reportFromNs = now;
  device.decodingNs = 0;
  device.worstLagNs = 0;
  device.decodedSamples = 0;
}

bool PmSampler::plausible(const Device& device, int64_t startNs, int64_t endNs,
                          const double* values) const {
  if (endNs <= startNs) return false;
  if (device.lastEndNs != INT64_MIN && startNs < device.lastEndNs - intervalNs_ / 2) return false;
  for (std::size_t m = 0; m < metrics_.size(); ++m) {
    const double value = values[m];
    if (!std::isfinite(value) || value < 0) return false;
    if (metrics_[m].unit == MetricUnit::Percent && value > kMaxPlausiblePercent) return false;
  }
  return true;
}

void PmSampler::keep(uint32_t id, Device& device, const PmSampleSpan& span, const double* values) {
  const int64_t startNs = env_.toTraceClock(span.startNs);
  const int64_t endNs = env_.toTraceClock(span.endNs);
  std::lock_guard<std::mutex> lock(mutex_);
  GpuMetricLosses& losses = queued_.metricLosses;
  if (device.dropNext) {
    device.dropNext = false;
    ++losses.setupDropped;
    log(LogLevel::Info, "GPU metrics on GPU {}: set-up sample [{}, {}] ns dropped, now {} ns", id,
        startNs, endNs, Clock::instance().nowNs());
    if (device.restarted && device.lastEndNs != INT64_MIN && endNs > device.lastEndNs) {
      // Nothing is kept from the last sample before the restart to this one's end; its start
      // cannot be trusted (CUPTI stamps the first sample after a restart with the first
      // start's time). The missing intervals are this sample, counted as set-up, and the
      // rest, lost.
      const uint64_t missing = samplesIn(endNs - device.lastEndNs, intervalNs_);
      losses.lost += missing > 0 ? missing - 1 : 0;
    }
    device.restarted = false;
    device.lastEndNs = std::max(device.lastEndNs, endNs);
    return;
  }
  if (!plausible(device, startNs, endNs, values)) {
    ++losses.corrupted;
    return;
  }
  if (device.lastEndNs != INT64_MIN && startNs > device.lastEndNs) {
    losses.lost += samplesIn(startNs - device.lastEndNs, intervalNs_);
  }
  device.lastEndNs = endNs;
  TraceRecords& r = queued_.records;
  if (r.metricSamples.size() >= queueCapacity_) {
    ++losses.lost;  // the pipeline has not polled for longer than the queue holds
    return;
  }
  GpuMetricSampleRecord record;
  record.startNs = startNs;
  record.endNs = endNs;
  record.deviceId = id;
  record.values = static_cast<uint32_t>(r.metricValues.size());
  r.metricValues.insert(r.metricValues.end(), values, values + metrics_.size());
  r.metricSamples.push_back(record);
}

void PmSampler::refuse(const std::string& why) {
  log(LogLevel::Warning, "GPU metrics are not sampled: {}; tracing goes on without them", why);
  std::lock_guard<std::mutex> lock(mutex_);
  refused_ = why;
}

}  // namespace kinetrace::detail
