#include "analysis/trace_analysis.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

namespace kinetrace::detail {
namespace {

using Interval = std::pair<int64_t, int64_t>;  // [start, end)
using Intervals = std::vector<Interval>;

// Sorted, non-overlapping, non-empty.
Intervals unionOf(Intervals items) {
  std::sort(items.begin(), items.end());
  Intervals merged;
  for (const Interval& item : items) {
    if (item.second <= item.first) continue;
    if (!merged.empty() && item.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, item.second);
    } else {
      merged.push_back(item);
    }
  }
  return merged;
}

int64_t lengthOf(const Intervals& items) {
  int64_t total = 0;
  for (const Interval& item : items) total += item.second - item.first;
  return total;
}

// The (sorted, merged) items within [from, to): found by binary search, so clipping to one
// step of thousands costs that step's intervals only.
Intervals clip(const Intervals& items, int64_t from, int64_t to) {
  Intervals clipped;
  auto first = std::lower_bound(items.begin(), items.end(), from,
                                [](const Interval& item, int64_t t) { return item.second <= t; });
  for (auto it = first; it != items.end() && it->first < to; ++it) {
    const int64_t start = std::max(it->first, from);
    const int64_t end = std::min(it->second, to);
    if (end > start) clipped.emplace_back(start, end);
  }
  return clipped;
}

// Both sorted and merged.
Intervals intersect(const Intervals& a, const Intervals& b) {
  Intervals out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t start = std::max(a[i].first, b[j].first);
    const int64_t end = std::min(a[i].second, b[j].second);
    if (end > start) out.emplace_back(start, end);
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

// [from, to) minus the (sorted, merged) items.
Intervals gapsIn(const Intervals& items, int64_t from, int64_t to) {
  Intervals gaps;
  int64_t at = from;
  for (const Interval& item : items) {
    if (item.first > at) gaps.emplace_back(at, std::min(item.first, to));
    at = std::max(at, item.second);
    if (at >= to) break;
  }
  if (at < to) gaps.emplace_back(at, to);
  return gaps;
}

Distribution distributionOf(std::vector<int64_t> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = values.size();
  for (int64_t v : values) d.totalNs += v;
  d.meanNs = d.totalNs / static_cast<int64_t>(d.count);
  auto at = [&values](double q) {
    const auto index = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
    return values[std::min(index, values.size() - 1)];
  };
  d.p50Ns = at(0.5);
  d.p90Ns = at(0.9);
  d.p99Ns = at(0.99);
  d.maxNs = values.back();
  return d;
}

const char* kindName(GpuOpKind kind) {
  switch (kind) {
    case GpuOpKind::Compute:
      return "compute";
    case GpuOpKind::Communication:
      return "communication";
    case GpuOpKind::Memory:
      return "memory";
  }
  return "compute";
}

void add(TimeBreakdown& to, const TimeBreakdown& from) {
  to.windowNs += from.windowNs;
  to.busyNs += from.busyNs;
  to.computeNs += from.computeNs;
  to.communicationNs += from.communicationNs;
  to.memoryNs += from.memoryNs;
  to.idleNs += from.idleNs;
  to.hostWaitNs += from.hostWaitNs;
  to.launchNs += from.launchNs;
  to.kernelWaitNs += from.kernelWaitNs;
  to.otherWorkWaitNs += from.otherWorkWaitNs;
  to.otherIdleNs += from.otherIdleNs;
  to.dataLoadingIdleNs += from.dataLoadingIdleNs;
}

// One device's operations, with what every breakdown of it needs.
struct Device {
  uint32_t id = 0;
  std::vector<const CollectedGpuOp*> ops;  // by start
  Intervals busy, compute, communication, memory;
};

// A gap in a device's busy time, and why.
struct Gap {
  int64_t start = 0;
  int64_t end = 0;
  enum class Cause { HostWait, KernelWait, OtherWork, Other } cause = Cause::Other;
  int64_t launchStartNs = 0;  // the launch call of the operation that ended it
  const CollectedGpuOp* endedBy = nullptr;
};

class Analyzer {
 public:
  Analyzer(const CollectedTrace& trace, const AnalysisOptions& options)
      : trace_(trace), options_(options) {
    std::map<uint32_t, Device> devices;
    for (const CollectedGpuOp& op : trace.gpuOps) {
      Device& d = devices[op.device];
      d.id = op.device;
      d.ops.push_back(&op);
    }
    for (auto& [id, d] : devices) {
      std::sort(d.ops.begin(), d.ops.end(), [](const CollectedGpuOp* a, const CollectedGpuOp* b) {
        return a->startNs < b->startNs;
      });
      Intervals all, compute, communication, memory;
      for (const CollectedGpuOp* op : d.ops) {
        all.emplace_back(op->startNs, op->endNs);
        Intervals& kind = op->kind == GpuOpKind::Compute         ? compute
                          : op->kind == GpuOpKind::Communication ? communication
                                                                 : memory;
        kind.emplace_back(op->startNs, op->endNs);
      }
      d.busy = unionOf(std::move(all));
      d.compute = unionOf(std::move(compute));
      d.communication = unionOf(std::move(communication));
      d.memory = unionOf(std::move(memory));
      devices_.push_back(std::move(d));
    }
    Intervals loading;
    for (const CollectedRange& r : trace.dataLoading) loading.emplace_back(r.startNs, r.endNs);
    dataLoading_ = unionOf(std::move(loading));
  }

  RankReport run() {
    RankReport report;
    report.path = trace_.path;
    report.rank = trace_.rank;
    report.events = trace_.events;
    for (const Device& d : devices_) {
      DeviceReport device;
      device.device = d.id;
      std::vector<Gap> gaps;  // the longest, at most options_.top
      device.time = breakdown(d, trace_.firstNs, trace_.lastNs, &gaps);
      device.communicationOverlapNs = lengthOf(intersect(d.communication, d.compute));
      device.streams = streams(d);
      timeline(d, device);
      add(report.time, device.time);
      for (const Gap& gap : gaps) allGaps_.emplace_back(d.id, gap);
      report.devices.push_back(std::move(device));
    }
    report.steps = steps();
    kernels(report);
    tinyKernels(report);
    launchLatency(report);
    report.gaps = longestGaps();
    report.memory = memory(report.steps, &report.memoryCurve);
    report.ncclCalls = ncclCalls();
    return report;
  }

 private:
  // Busy, split and idle time of a device within [from, to); inner gaps go to `gaps`.
  TimeBreakdown breakdown(const Device& d, int64_t from, int64_t to, std::vector<Gap>* gaps) const {
    TimeBreakdown t;
    if (to <= from) return t;
    t.windowNs = to - from;
    // The whole trace needs no clipping, and its intervals are the large ones: no copies.
    const bool whole = from <= trace_.firstNs && to >= trace_.lastNs;
    Intervals clippedBusy, clippedCompute, clippedCommunication;
    if (!whole) {
      clippedBusy = clip(d.busy, from, to);
      clippedCompute = clip(d.compute, from, to);
      clippedCommunication = clip(d.communication, from, to);
    }
    const Intervals& busy = whole ? d.busy : clippedBusy;
    const Intervals& compute = whole ? d.compute : clippedCompute;
    const Intervals& communication = whole ? d.communication : clippedCommunication;
    t.busyNs = lengthOf(busy);
    t.computeNs = lengthOf(compute);
    t.communicationNs = lengthOf(communication) - lengthOf(intersect(communication, compute));
    t.memoryNs = t.busyNs - t.computeNs - t.communicationNs;
    t.idleNs = t.windowNs - t.busyNs;

    const Intervals idle = gapsIn(busy, from, to);
    t.dataLoadingIdleNs = lengthOf(intersect(idle, clip(dataLoading_, from, to)));
    for (const Interval& stretch : idle) {
      Gap gap = classify(d, stretch);
      const int64_t length = stretch.second - stretch.first;
      switch (gap.cause) {
        case Gap::Cause::HostWait: {
          const int64_t hostWait = std::min(gap.launchStartNs, stretch.second) - stretch.first;
          t.hostWaitNs += hostWait;
          t.launchNs += length - hostWait;
          break;
        }
        case Gap::Cause::KernelWait:
          t.kernelWaitNs += length;
          break;
        case Gap::Cause::OtherWork:
          t.otherWorkWaitNs += length;
          break;
        case Gap::Cause::Other:
          t.otherIdleNs += length;
          break;
      }
      if (gaps != nullptr && gap.endedBy != nullptr) keepLongest(*gaps, gap);
    }
    return t;
  }

  // Keeps the options_.top longest gaps in a min-heap: a trace has as many gaps as
  // operations, and only the longest are reported.
  void keepLongest(std::vector<Gap>& gaps, const Gap& gap) const {
    auto shorter = [](const Gap& a, const Gap& b) { return a.end - a.start > b.end - b.start; };
    if (gaps.size() < options_.top) {
      gaps.push_back(gap);
      std::push_heap(gaps.begin(), gaps.end(), shorter);
    } else if (!gaps.empty() && gap.end - gap.start > gaps.front().end - gaps.front().start) {
      std::pop_heap(gaps.begin(), gaps.end(), shorter);
      gaps.back() = gap;
      std::push_heap(gaps.begin(), gaps.end(), shorter);
    }
  }

  // Why the device was idle over `stretch`: by the operation that ended it. The stretch
  // after the last operation (none ends it) is "other".
  Gap classify(const Device& d, const Interval& stretch) const {
    Gap gap;
    gap.start = stretch.first;
    gap.end = stretch.second;
    auto next =
        std::lower_bound(d.ops.begin(), d.ops.end(), stretch.second,
                         [](const CollectedGpuOp* op, int64_t t) { return op->startNs < t; });
    if (next == d.ops.end() || (*next)->startNs != stretch.second) return gap;  // the window's end
    gap.endedBy = *next;
    const CollectedCall* call =
        (*next)->correlation != 0 ? trace_.calls.find((*next)->correlation) : nullptr;
    if (call == nullptr) return gap;
    gap.launchStartNs = call->startNs;
    if (call->startNs >= stretch.first) {
      gap.cause = Gap::Cause::HostWait;
    } else if (stretch.second - stretch.first < options_.consecutiveKernelNs) {
      gap.cause = Gap::Cause::KernelWait;
    } else {
      gap.cause = Gap::Cause::OtherWork;
    }
    return gap;
  }

  void timeline(const Device& d, DeviceReport& device) const {
    const int64_t window = trace_.lastNs - trace_.firstNs;
    if (window <= 0) return;
    const int bins = DeviceReport::kTimelineBins;
    device.timelineStartNs = trace_.firstNs;
    device.timelineBinNs = std::max<int64_t>(1, (window + bins - 1) / bins);
    device.busyTimeline.assign(bins, 0.0);
    const double binNs = static_cast<double>(device.timelineBinNs);
    for (const Interval& busy : d.busy) {
      for (int64_t at = busy.first; at < busy.second;) {
        const int64_t bin = (at - trace_.firstNs) / device.timelineBinNs;
        if (bin >= bins) break;
        const int64_t binEnd = trace_.firstNs + (bin + 1) * device.timelineBinNs;
        const int64_t until = std::min(busy.second, binEnd);
        device.busyTimeline[static_cast<std::size_t>(bin)] +=
            static_cast<double>(until - at) / binNs;
        at = until;
      }
    }
  }

  std::vector<StreamBreakdown> streams(const Device& d) const {
    std::map<uint32_t, std::vector<const CollectedGpuOp*>> byStream;
    for (const CollectedGpuOp* op : d.ops) byStream[op->stream].push_back(op);
    std::vector<StreamBreakdown> out;
    for (const auto& [stream, ops] : byStream) {
      StreamBreakdown s;
      s.device = d.id;
      s.stream = stream;
      s.operations = ops.size();
      Intervals busy;
      // Queue depth: +1 at a launch call's start, -1 at its operation's start.
      std::vector<std::pair<int64_t, int>> changes;
      for (const CollectedGpuOp* op : ops) {
        busy.emplace_back(op->startNs, op->endNs);
        const CollectedCall* call =
            op->correlation != 0 ? trace_.calls.find(op->correlation) : nullptr;
        if (call == nullptr) continue;
        changes.emplace_back(call->startNs, +1);
        changes.emplace_back(op->startNs, -1);
      }
      s.busyNs = lengthOf(unionOf(std::move(busy)));
      std::sort(changes.begin(), changes.end());  // at equal times, starts (-1) first
      int depth = 0;
      for (const auto& change : changes) {
        depth += change.second;
        s.maxQueueDepth = std::max(s.maxQueueDepth, depth);
      }
      out.push_back(s);
    }
    return out;
  }

  // Steps in time order, each name once (the longest range of that name: a step marked on
  // several threads counts once).
  std::vector<StepReport> steps() const {
    std::vector<StepReport> out;
    std::map<uint32_t, CollectedRange> byName;
    for (const CollectedRange& step : trace_.steps) {
      auto [it, inserted] = byName.emplace(step.name, step);
      if (!inserted && step.endNs - step.startNs > it->second.endNs - it->second.startNs)
        it->second = step;
    }
    std::vector<CollectedRange> sorted;
    for (const auto& [name, step] : byName) sorted.push_back(step);
    std::sort(sorted.begin(), sorted.end(), [](const CollectedRange& a, const CollectedRange& b) {
      return a.startNs < b.startNs;
    });
    for (const CollectedRange& step : sorted) {
      StepReport s;
      s.name = trace_.name(step.name);
      s.startNs = step.startNs;
      s.endNs = step.endNs;
      for (const Device& d : devices_) add(s.time, breakdown(d, step.startNs, step.endNs, nullptr));
      out.push_back(s);
    }
    return out;
  }

  std::vector<NcclCallRow> ncclCalls() const {
    std::vector<NcclCallRow> rows;
    for (const auto& [call, totals] : trace_.ncclCalls) {
      NcclCallRow row;
      row.call = call;
      row.operations = totals.operations;
      row.bytes = totals.bytes;
      row.gpuNs = totals.gpuNs;
      // Bytes per nanosecond are gigabytes per second.
      row.gigabytesPerSecond =
          totals.gpuNs > 0 ? static_cast<double>(totals.bytes) / static_cast<double>(totals.gpuNs)
                           : 0.0;
      rows.push_back(std::move(row));
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const NcclCallRow& a, const NcclCallRow& b) { return a.gpuNs > b.gpuNs; });
    return rows;
  }

  void kernels(RankReport& report) const {
    std::unordered_map<uint32_t, std::vector<int64_t>> byName;
    std::map<GpuOpKind, std::vector<int64_t>> byKind;
    std::unordered_map<uint32_t, GpuOpKind> kindOf;
    int64_t total = 0;
    for (const CollectedGpuOp& op : trace_.gpuOps) {
      const int64_t duration = op.endNs - op.startNs;
      byName[op.name].push_back(duration);
      byKind[op.kind].push_back(duration);
      kindOf[op.name] = op.kind;
      total += duration;
      if (op.kind != GpuOpKind::Memory) {
        ++report.kernelCount;
        report.kernelNs += duration;
      }
      if (op.kind == GpuOpKind::Communication) ++report.communicationKernels;
    }
    auto share = [total](int64_t ns) { return total > 0 ? static_cast<double>(ns) / total : 0.0; };
    for (auto& [name, durations] : byName) {
      KernelRow row;
      row.name = trace_.name(name);
      row.kind = kindName(kindOf[name]);
      row.duration = distributionOf(std::move(durations));
      row.share = share(row.duration.totalNs);
      report.kernels.push_back(std::move(row));
    }
    std::sort(
        report.kernels.begin(), report.kernels.end(), [](const KernelRow& a, const KernelRow& b) {
          return a.duration.totalNs != b.duration.totalNs ? a.duration.totalNs > b.duration.totalNs
                                                          : a.name < b.name;
        });
    if (report.kernels.size() > options_.top) report.kernels.resize(options_.top);
    for (auto& [kind, durations] : byKind) {
      KernelRow row;
      row.name = kindName(kind);
      row.kind = row.name;
      row.duration = distributionOf(std::move(durations));
      row.share = share(row.duration.totalNs);
      report.kinds.push_back(std::move(row));
    }
  }

  void tinyKernels(RankReport& report) const {
    TinyKernelReport& tiny = report.tiny;
    tiny.thresholdNs = options_.tinyKernelNs;
    std::unordered_map<uint32_t, uint64_t> issuers;  // range name (or none) -> count
    constexpr uint32_t kNoRange = ~uint32_t{0};
    for (const CollectedGpuOp& op : trace_.gpuOps) {
      const int64_t duration = op.endNs - op.startNs;
      if (op.kind == GpuOpKind::Memory || duration >= options_.tinyKernelNs) continue;
      ++tiny.count;
      tiny.kernelNs += duration;
      const CollectedCall* call = op.correlation != 0 ? trace_.calls.find(op.correlation) : nullptr;
      if (call != nullptr) {
        const int64_t launch = call->endNs - call->startNs;
        tiny.launchNs += launch;
        if (launch > duration) ++tiny.launchLongerCount;
      }
      const uint32_t* range =
          op.externalId != 0 ? trace_.rangeOfExternalId.find(op.externalId) : nullptr;
      ++issuers[range != nullptr ? *range : kNoRange];
    }
    tiny.shareOfKernels =
        report.kernelCount > 0 ? static_cast<double>(tiny.count) / report.kernelCount : 0;
    for (const auto& [name, count] : issuers) {
      tiny.issuers.emplace_back(name == kNoRange ? "(no host range)" : trace_.name(name), count);
    }
    std::sort(tiny.issuers.begin(), tiny.issuers.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (tiny.issuers.size() > options_.top) tiny.issuers.resize(options_.top);
  }

  void launchLatency(RankReport& report) const {
    std::vector<int64_t> latencies;
    std::vector<std::pair<int64_t, const CollectedGpuOp*>> outliers;  // latency, op
    for (const CollectedGpuOp& op : trace_.gpuOps) {
      const CollectedCall* call = op.correlation != 0 ? trace_.calls.find(op.correlation) : nullptr;
      if (call == nullptr) continue;
      const int64_t latency = op.startNs - call->startNs;
      latencies.push_back(latency);
      outliers.emplace_back(latency, &op);
    }
    report.launchLatencyHistogram.assign(RankReport::kLatencyBuckets, 0);
    for (int64_t latency : latencies) {
      int bucket = 0;
      for (int64_t us = latency / 1000; us > 0 && bucket < RankReport::kLatencyBuckets - 1;
           us >>= 1)
        ++bucket;
      ++report.launchLatencyHistogram[static_cast<std::size_t>(bucket)];
    }
    report.launchLatency = distributionOf(std::move(latencies));
    const std::size_t keep = std::min(options_.top, outliers.size());
    std::partial_sort(outliers.begin(), outliers.begin() + static_cast<std::ptrdiff_t>(keep),
                      outliers.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t k = 0; k < keep; ++k) {
      report.launchOutliers.push_back(
          {trace_.name(outliers[k].second->name), outliers[k].second->startNs, outliers[k].first});
    }
  }

  // The innermost host range open at `time` on thread `tid`.
  std::string hostRangeAt(int64_t tid, int64_t time) const {
    const CollectedRange* best = nullptr;
    for (const CollectedRange& r : trace_.hostRanges) {
      if (r.tid != tid || r.startNs > time || r.endNs < time) continue;
      if (best == nullptr || r.endNs - r.startNs < best->endNs - best->startNs) best = &r;
    }
    return best == nullptr ? "" : trace_.name(best->name);
  }

  std::vector<GapReport> longestGaps() {
    const std::size_t keep = std::min(options_.top, allGaps_.size());
    std::partial_sort(allGaps_.begin(), allGaps_.begin() + static_cast<std::ptrdiff_t>(keep),
                      allGaps_.end(), [](const auto& a, const auto& b) {
                        return a.second.end - a.second.start > b.second.end - b.second.start;
                      });
    std::vector<GapReport> out;
    for (std::size_t i = 0; i < keep; ++i) {
      const auto& [device, gap] = allGaps_[i];
      GapReport g;
      g.device = device;
      g.startNs = gap.start;
      g.durationNs = gap.end - gap.start;
      g.cause = gap.cause == Gap::Cause::HostWait     ? "host wait"
                : gap.cause == Gap::Cause::KernelWait ? "kernel wait"
                : gap.cause == Gap::Cause::OtherWork  ? "waiting on other work"
                                                      : "other";
      g.endedBy = trace_.name(gap.endedBy->name);
      const CollectedCall* call =
          gap.endedBy->correlation != 0 ? trace_.calls.find(gap.endedBy->correlation) : nullptr;
      if (call != nullptr) {
        g.hostWas = hostRangeAt(call->tid, (gap.start + gap.end) / 2);
      }
      out.push_back(std::move(g));
    }
    return out;
  }

  MemoryReport memory(std::vector<StepReport>& steps, std::vector<MemorySample>* curve) const {
    MemoryReport m;
    std::vector<MemorySample> samples = trace_.memory;
    std::stable_sort(
        samples.begin(), samples.end(),
        [](const MemorySample& a, const MemorySample& b) { return a.timeNs < b.timeNs; });
    m.samples = samples.size();
    if (samples.empty()) return m;
    m.firstBytes = samples.front().allocatedBytes;
    m.lastBytes = samples.back().allocatedBytes;
    for (const MemorySample& s : samples) {
      if (s.allocatedBytes > m.peakBytes) {
        m.peakBytes = s.allocatedBytes;
        m.peakAtNs = s.timeNs;
      }
    }
    // The curve: the highest sample of each of kMemoryCurvePoints stretches.
    const std::size_t stride =
        (samples.size() + RankReport::kMemoryCurvePoints - 1) / RankReport::kMemoryCurvePoints;
    for (std::size_t i = 0; i < samples.size(); i += stride) {
      MemorySample highest = samples[i];
      for (std::size_t j = i; j < std::min(samples.size(), i + stride); ++j) {
        if (samples[j].allocatedBytes > highest.allocatedBytes) highest = samples[j];
      }
      curve->push_back(highest);
    }
    std::vector<int64_t> atStepEnd;
    for (StepReport& step : steps) {
      auto after = std::upper_bound(samples.begin(), samples.end(), step.endNs,
                                    [](int64_t t, const MemorySample& s) { return t < s.timeNs; });
      if (after == samples.begin()) continue;
      step.allocatedAtEndBytes = std::prev(after)->allocatedBytes;
      atStepEnd.push_back(step.allocatedAtEndBytes);
    }
    if (atStepEnd.size() >= 3) {
      m.growsEveryStep = true;
      for (std::size_t i = 1; i < atStepEnd.size(); ++i) {
        if (atStepEnd[i] <= atStepEnd[i - 1]) m.growsEveryStep = false;
      }
      m.growthPerStepBytes =
          (atStepEnd.back() - atStepEnd.front()) / static_cast<int64_t>(atStepEnd.size() - 1);
    }
    return m;
  }

  const CollectedTrace& trace_;
  const AnalysisOptions& options_;
  std::vector<Device> devices_;
  Intervals dataLoading_;
  std::vector<std::pair<uint32_t, Gap>> allGaps_;
};

// The Nth collective of each name across ranks: the rank that started it last kept the
// others waiting (on one host, ranks share a clock; across hosts the skew adds).
std::vector<StragglerReport> stragglers(const std::vector<RankCollectives>& ranks,
                                        const AnalysisOptions& options) {
  std::vector<StragglerReport> out;
  if (ranks.size() < 2) return out;
  for (const auto& [name, first] : ranks[0].starts) {
    for (std::size_t k = 0; k < first.size(); ++k) {
      int64_t earliest = first[k], latest = first[k];
      std::size_t slow = 0;
      bool everywhere = true;
      for (std::size_t r = 1; r < ranks.size(); ++r) {
        auto found = ranks[r].starts.find(name);
        if (found == ranks[r].starts.end() || found->second.size() <= k) {
          everywhere = false;
          break;
        }
        const int64_t start = found->second[k];
        earliest = std::min(earliest, start);
        if (start > latest) {
          latest = start;
          slow = r;
        }
      }
      if (!everywhere || latest - earliest <= 0) continue;
      StragglerReport s;
      s.collective = name;
      s.occurrence = k + 1;
      s.slowRank = ranks[slow].rank >= 0 ? ranks[slow].rank : static_cast<int64_t>(slow);
      s.lateByNs = latest - earliest;
      out.push_back(std::move(s));
    }
  }
  std::sort(out.begin(), out.end(), [](const StragglerReport& a, const StragglerReport& b) {
    return a.lateByNs > b.lateByNs;
  });
  if (out.size() > options.top) out.resize(options.top);
  return out;
}

}  // namespace

RankReport analyzeTrace(const CollectedTrace& trace, const AnalysisOptions& options) {
  return Analyzer(trace, options).run();
}

RankCollectives collectivesOf(const CollectedTrace& trace) {
  std::vector<const CollectedGpuOp*> ops;
  for (const CollectedGpuOp& op : trace.gpuOps) {
    if (op.kind == GpuOpKind::Communication) ops.push_back(&op);
  }
  std::sort(ops.begin(), ops.end(), [](const CollectedGpuOp* a, const CollectedGpuOp* b) {
    return a->startNs < b->startNs;
  });
  RankCollectives out;
  out.rank = trace.rank;
  for (const CollectedGpuOp* op : ops) out.starts[trace.name(op->name)].push_back(op->startNs);
  return out;
}

AnalysisReport combineRanks(std::vector<RankReport> ranks,
                            const std::vector<RankCollectives>& collectives,
                            const AnalysisOptions& options) {
  AnalysisReport report;
  report.ranks = std::move(ranks);
  report.stragglers = stragglers(collectives, options);
  report.findings = findingsOf(report, options);
  return report;
}

AnalysisReport analyzeTraces(const std::vector<CollectedTrace>& traces,
                             const AnalysisOptions& options) {
  std::vector<RankReport> ranks;
  std::vector<RankCollectives> collectives;
  for (const CollectedTrace& trace : traces) {
    ranks.push_back(analyzeTrace(trace, options));
    collectives.push_back(collectivesOf(trace));
  }
  return combineRanks(std::move(ranks), collectives, options);
}

}  // namespace kinetrace::detail
