#include "output/summary_builder.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "output/kind_names.h"
#include "output/trace_vocabulary.h"

namespace kinetrace::detail {
namespace {

double ratio(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

const Value* findIn(const Metadata& metadata, std::string_view key) {
  for (const Value::Member& member : metadata) {
    if (member.key == key) return &member.value;
  }
  return nullptr;
}

// The footer's value when both have the key: it is the later word.
const Value* metadataValue(const Metadata& header, const Metadata& footer, std::string_view key) {
  const Value* value = findIn(footer, key);
  return value != nullptr ? value : findIn(header, key);
}

int64_t integerOf(const Value* value, int64_t fallback) {
  if (value == nullptr) return fallback;
  if (value->kind() == Value::Kind::Int) return value->asInt();
  if (value->kind() == Value::Kind::Uint) return static_cast<int64_t>(value->asUint());
  return fallback;
}

// Folding keeps at most this many disjoint intervals per device.
constexpr std::size_t kMaxMergedIntervals = 4096;

}  // namespace

void SummaryBuilder::BusyTime::add(int64_t startNs, int64_t endNs) {
  startNs = std::max(startNs, foldedUntilNs_);
  if (endNs <= startNs) return;
  // Merge with every interval it touches.
  auto it = merged_.upper_bound(startNs);
  if (it != merged_.begin() && std::prev(it)->second >= startNs) --it;
  while (it != merged_.end() && it->first <= endNs) {
    startNs = std::min(startNs, it->first);
    endNs = std::max(endNs, it->second);
    it = merged_.erase(it);
  }
  merged_.emplace(startNs, endNs);
  while (merged_.size() > kMaxMergedIntervals) {
    auto oldest = merged_.begin();
    foldedNs_ += oldest->second - oldest->first;
    foldedUntilNs_ = std::max(foldedUntilNs_, oldest->second);
    merged_.erase(oldest);
  }
}

int64_t SummaryBuilder::BusyTime::total(int64_t untilNs) const {
  // Folded intervals are the oldest, long before the stop.
  int64_t total = foldedNs_;
  for (const auto& [start, end] : merged_) {
    total += std::max<int64_t>(0, std::min(end, untilNs) - start);
  }
  return total;
}

void SummaryBuilder::add(const TraceRecords& r) {
  auto span = [this](const GpuPlacement& at) {
    return std::pair{std::max(at.startNs, windowStartNs_), at.endNs};
  };
  for (const KernelRecord& k : r.kernels) {
    auto [from, to] = span(k.at);
    busy_[k.at.deviceId].add(from, to);
    kernelBusy_[k.at.deviceId].add(from, to);
    const int64_t ns = std::max<int64_t>(0, k.at.endNs - k.at.startNs);
    KernelTally& tally = kernels_[k.name];
    ++tally.count;
    tally.totalNs += ns;
    tally.maxNs = std::max(tally.maxNs, ns);
    s_.kernelTotalNs += ns;
  }
  s_.kernelCount += r.kernels.size();
  for (const MemcpyRecord& m : r.memcpys) {
    auto [from, to] = span(m.at);
    busy_[m.at.deviceId].add(from, to);
    CopyTotal& total = copies_[m.copyKind];
    ++total.count;
    total.bytes += m.bytes;
    total.totalNs += std::max<int64_t>(0, m.at.endNs - m.at.startNs);
    s_.memcpyBytes += m.bytes;
  }
  s_.memcpyCount += r.memcpys.size();
  for (const MemsetRecord& m : r.memsets) {
    auto [from, to] = span(m.at);
    busy_[m.at.deviceId].add(from, to);
    s_.memsetBytes += m.bytes;
  }
  s_.memsetCount += r.memsets.size();
  // A graph traced whole keeps the device busy from its first node to its last; its nodes
  // are not in the trace to say more.
  for (const GraphRecord& g : r.graphs) {
    auto [from, to] = span(g.at);
    busy_[g.at.deviceId].add(from, to);
  }
  s_.graphCount += r.graphs.size();
  s_.syncCount += r.syncs.size();
  s_.hostRangeCount += r.ranges.size();
}

Summary SummaryBuilder::finish(const TraceTables& tables, int64_t windowStopNs,
                               const LossCounters& l, const Metadata& header,
                               const Metadata& footer, std::size_t topKernels) {
  Summary s = s_;
  s.pid = tables.pid;
  s.processName = tables.processName;
  s.windowNs = std::max<int64_t>(0, windowStopNs - windowStartNs_);
  // Work queued before the stop may finish after it: only the window counts.
  for (auto& [device, busy] : busy_) {
    (void)busy;
    DeviceBusy d;
    d.deviceId = device;
    d.busyNs = std::min(busy.total(windowStopNs), s.windowNs);
    auto kernels = kernelBusy_.find(device);
    if (kernels != kernelBusy_.end()) {
      d.kernelBusyNs = std::min(kernels->second.total(windowStopNs), s.windowNs);
    }
    s.busyNs += d.busyNs;
    s.kernelBusyNs += d.kernelBusyNs;
    s.devices.push_back(d);
  }
  const int64_t capacity = s.windowNs * static_cast<int64_t>(s.devices.size());
  s.utilisation = ratio(s.busyNs, capacity);
  s.kernelUtilisation = ratio(s.kernelBusyNs, capacity);

  for (const auto& [name, tally] : kernels_) {
    s.topKernels.push_back(KernelTotal{std::string(tables.strings.get(name)), tally.count,
                                       tally.totalNs, tally.maxNs});
  }
  // Ties broken by name, so the order does not depend on hashing.
  std::sort(s.topKernels.begin(), s.topKernels.end(),
            [](const KernelTotal& a, const KernelTotal& b) {
              return a.totalNs != b.totalNs ? a.totalNs > b.totalNs : a.name < b.name;
            });
  if (s.topKernels.size() > topKernels) s.topKernels.resize(topKernels);

  for (const auto& [kind, total] : copies_) {
    CopyTotal named = total;
    named.kind = kind == CopyKind::Unknown ? std::string("other") : std::string(copyKindName(kind));
    s.memcpyByKind.push_back(named);
  }
  std::sort(s.memcpyByKind.begin(), s.memcpyByKind.end(),
            [](const CopyTotal& a, const CopyTotal& b) {
              return a.bytes != b.bytes ? a.bytes > b.bytes : a.kind < b.kind;
            });

  s.droppedGpuRecords = l.cuptiDroppedRecords + l.cuptiBuffersRefused;
  s.droppedHostEvents = l.droppedHostEvents + l.droppedAssembledRecords;
  s.outOfWindowEvents = l.outOfWindowEvents;
  s.gpuOpsWithoutLaunch = l.gpuOpsWithoutLaunch;

  if (const Value* distributed = metadataValue(header, footer, chrome::kDistributedInfo)) {
    s.rank = integerOf(distributed->find(chrome::kRank), -1);
    s.worldSize = integerOf(distributed->find(chrome::kWorldSize), 0);
  }
  const Value* status = metadataValue(header, footer, chrome::kGpuStatus);
  if (status != nullptr && status->kind() == Value::Kind::String) s.gpuStatus = status->asString();
  return s;
}

}  // namespace kinetrace::detail
