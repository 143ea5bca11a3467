#include "correlate/kernel_metrics.h"

#include <algorithm>

namespace kinetrace::detail {

void KernelMetrics::configure(const GpuMetricSet& metrics) {
  metricCount_ = metrics.metrics.size();
  sums_.assign(metricCount_, 0.0);
  for (uint32_t device : metrics.devices) devices_.try_emplace(device);
}

void KernelMetrics::addSamples(const TraceRecords& batch,
                               const std::vector<std::pair<uint32_t, int64_t>>& completeUntil,
                               int64_t startNs, int64_t stopNs, TraceRecords& out) {
  for (const GpuMetricSampleRecord& sample : batch.metricSamples) {
    if (metricCount_ == 0 || sample.values + metricCount_ > batch.metricValues.size() ||
        sample.endNs < sample.startNs) {
      ++losses_.gpuMetricSamplesCorrupted;  // values the source did not hand over whole
      continue;
    }
    const double* values = batch.metricValues.data() + sample.values;
    auto device = devices_.find(sample.deviceId);
    if (device != devices_.end()) {
      // Complete past its end even when it is not kept: the source hands samples over in order.
      device->second.completeUntilNs = std::max(device->second.completeUntilNs, sample.endNs);
    }
    // As for GPU operations: a sample that began before the start is outside the window.
    if (sample.startNs < startNs || sample.startNs > stopNs) {
      ++losses_.outOfWindowEvents;
      continue;
    }
    GpuMetricSampleRecord written = sample;
    written.values = static_cast<uint32_t>(out.metricValues.size());
    out.metricValues.insert(out.metricValues.end(), values, values + metricCount_);
    out.metricSamples.push_back(written);
    if (device == devices_.end()) continue;
    Device& d = device->second;
    // Kept in time order, so a kernel's samples are found by a binary search; one that
    // overlaps those kept (against the source's contract) is written but averages nothing.
    if (!d.samples.empty() && sample.startNs < d.samples.back().endNs) continue;
    d.samples.push_back(Kept{sample.startNs, sample.endNs});
    d.values.insert(d.values.end(), values, values + metricCount_);
  }
  for (const auto& [deviceId, untilNs] : completeUntil) {
    auto device = devices_.find(deviceId);
    if (device != devices_.end()) {
      device->second.completeUntilNs = std::max(device->second.completeUntilNs, untilNs);
    }
  }
}

void KernelMetrics::addKernel(const KernelRecord& kernel, TraceRecords& out) {
  auto device = devices_.find(kernel.at.deviceId);
  if (device == devices_.end()) {
    out.kernels.push_back(kernel);
  } else if (kernel.at.endNs <= device->second.completeUntilNs) {
    write(kernel, out, Samples::Complete);
  } else {
    waiting_.push_back(kernel);
  }
}

void KernelMetrics::write(KernelRecord kernel, TraceRecords& out, Samples state) {
  Device& device = devices_[kernel.at.deviceId];
  const int64_t start = kernel.at.startNs;
  const int64_t end = kernel.at.endNs;
  const bool letGo = state == Samples::Complete && start < device.releasedUntilNs;
  if (state != Samples::Complete || letGo) {
    ++losses_.kernelsWithoutTheirSamples;
    if (letGo) ++losses_.kernelsWhoseSamplesWereLetGo;
    if (state == Samples::Late) ++losses_.kernelsWhoseSamplesCameLate;
    out.kernels.push_back(kernel);
    return;
  }
  // The first sample ending after the kernel's start, then each one starting before its end.
  const auto& samples = device.samples;
  auto first = std::partition_point(samples.begin(), samples.end(),
                                    [start](const Kept& s) { return s.endNs <= start; });
  std::fill(sums_.begin(), sums_.end(), 0.0);
  int64_t covered = 0;
  for (auto it = first; it != samples.end() && it->startNs < end; ++it) {
    const int64_t overlap = std::min(end, it->endNs) - std::max(start, it->startNs);
    if (overlap <= 0) continue;
    covered += overlap;
    const auto at = static_cast<std::size_t>(it - samples.begin()) * metricCount_;
    for (std::size_t m = 0; m < metricCount_; ++m) {
      sums_[m] += static_cast<double>(overlap) * device.values[at + m];
    }
  }
  if (covered > 0) {
    kernel.metricAverages = static_cast<uint32_t>(out.metricValues.size()) + 1;
    for (double sum : sums_) out.metricValues.push_back(sum / static_cast<double>(covered));
  }
  out.kernels.push_back(kernel);
}

void KernelMetrics::letGo(Device& device, int64_t beforeNs) {
  while (!device.samples.empty() && device.samples.front().endNs <= beforeNs) {
    device.releasedUntilNs = std::max(device.releasedUntilNs, device.samples.front().endNs);
    device.samples.pop_front();
    device.values.erase(device.values.begin(),
                        device.values.begin() + static_cast<std::ptrdiff_t>(metricCount_));
  }
}

void KernelMetrics::release(int64_t completeNs, int64_t horizonNs, TraceRecords& out) {
  if (!active()) return;
  auto keep = waiting_.begin();
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    const Device& device = devices_[it->at.deviceId];
    if (it->at.endNs <= device.completeUntilNs) {
      write(*it, out, Samples::Complete);
    } else if (horizonNs > it->at.endNs + kSampleGraceNs) {
      write(*it, out, Samples::Late);
    } else {
      *keep++ = *it;
    }
  }
  waiting_.erase(keep, waiting_.end());
  for (auto& [id, device] : devices_) {
    int64_t before = completeNs;
    for (const KernelRecord& k : waiting_) {
      if (k.at.deviceId == id) before = std::min(before, k.at.startNs);
    }
    letGo(device, before);
  }
}

void KernelMetrics::finish(TraceRecords& out) {
  for (const KernelRecord& k : waiting_) write(k, out, Samples::Complete);
  waiting_.clear();
  for (auto& [id, device] : devices_) letGo(device, INT64_MAX);
}

void KernelMetrics::shed(TraceRecords& out) {
  for (const KernelRecord& k : waiting_) write(k, out, Samples::Shed);
  waiting_ = {};
  for (auto& [id, device] : devices_) {
    letGo(device, INT64_MAX);
    device.samples.shrink_to_fit();
    device.values.shrink_to_fit();
  }
}

std::size_t KernelMetrics::samplesHeld() const {
  std::size_t held = 0;
  for (const auto& [id, device] : devices_) held += device.samples.size();
  return held;
}

std::size_t KernelMetrics::heldBytes() const {
  return samplesHeld() * (sizeof(Kept) + metricCount_ * sizeof(double)) +
         waiting_.capacity() * sizeof(KernelRecord) + sums_.capacity() * sizeof(double);
}

}  // namespace kinetrace::detail
