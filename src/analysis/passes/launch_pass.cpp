#include "analysis/passes/launch_pass.h"

#include <algorithm>
#include <utility>

namespace kinetrace::detail::passes {

LaunchPass::LaunchPass(const PassContext& context)
    : context_(context),
      latencies_(context.budget(), kAnalysisLists, context.trace.listBytes),
      queueChanges_(context),
      histogram_(RankReport::kLatencyBuckets, 0),
      outliers_(context.options.top, WorseLatency{}) {}

void LaunchPass::add(const JoinedOp& op) {
  if (!op.hasCall) return;
  if (op.callEndNs - op.callStartNs > slowestCallNs_) {
    slowestCallNs_ = op.callEndNs - op.callStartNs;
    slowestCallOf_ = context_.keptName(op.name);
  }
  const int64_t latency = op.startNs - op.callStartNs;
  latencies_.add(latency);
  int bucket = 0;
  for (int64_t us = latency / 1000; us > 0 && bucket < RankReport::kLatencyBuckets - 1; us >>= 1)
    ++bucket;
  ++histogram_[static_cast<std::size_t>(bucket)];
  LaunchOutlier outlier{{}, op.startNs, latency};
  if (outliers_.admits(outlier)) {
    outlier.name = context_.keptName(op.name);
    outliers_.add(std::move(outlier));
  }
  queueChanges_.add(op);
}

void LaunchPass::finish(RankReport& report) {
  report.slowestCallNs = slowestCallNs_;
  report.slowestCallOf = std::move(slowestCallOf_);
  report.launchLatencyHistogram = std::move(histogram_);
  DistributionBuilder latency(latencies_.size());
  latencies_.drain([&latency](int64_t ns) { latency.add(ns); });
  report.launchLatency = latency.finish();
  std::vector<LaunchOutlier> outliers = outliers_.take();
  std::sort(outliers.begin(), outliers.end(), [](const LaunchOutlier& a, const LaunchOutlier& b) {
    return a.latencyNs > b.latencyNs;
  });
  report.launchOutliers = std::move(outliers);
  queueDepths(report);
}

// The most operations launched and not yet started, per stream, and per bin of the device's
// timeline: a depth counts in every bin it held in, from its change to the next.
void LaunchPass::queueDepths(RankReport& report) {
  BudgetMap<std::pair<int64_t, int64_t>, int> deepest(
      std::less<std::pair<int64_t, int64_t>>(), BudgetAllocator<char>(context_.budget(), kStreams));
  std::pair<int64_t, int64_t> stream;
  int depth = 0;
  int64_t since = 0;
  int* most = nullptr;
  QueueDepthTimeline* timeline = nullptr;
  const DeviceReport* streamDevice = nullptr;
  auto binOf = [&streamDevice](int64_t ns) {
    const int64_t bin = (ns - streamDevice->timelineStartNs) / streamDevice->timelineBinNs;
    return std::clamp<int64_t>(bin, 0, DeviceReport::kTimelineBins - 1);
  };
  auto held = [&](int64_t until) {  // `depth` held from `since` to `until`
    if (timeline == nullptr || depth <= 0) return;
    for (int64_t b = binOf(since), last = binOf(std::max(since, until - 1)); b <= last; ++b) {
      int& slot = timeline->maxDepth[static_cast<std::size_t>(b)];
      slot = std::max(slot, depth);
    }
  };
  queueChanges_.drain([&](const QueueChange& change) {
    if (most == nullptr || stream != std::make_pair(change.device, change.stream)) {
      stream = {change.device, change.stream};
      most = &deepest[stream];
      depth = 0;
      timeline = nullptr;
      streamDevice = nullptr;
      for (const DeviceReport& d : report.devices) {
        if (d.device == change.device && !d.busyTimeline.empty()) streamDevice = &d;
      }
      if (streamDevice != nullptr) {
        context_.reportHold->take(sizeof(QueueDepthTimeline) +
                                      DeviceReport::kTimelineBins * sizeof(int) +
                                      2 * kAllocationOverheadBytes,
                                  kStreams);
        timeline = &report.queueDepthTimelines.emplace_back();
        timeline->device = change.device;
        timeline->stream = change.stream;
        timeline->maxDepth.assign(DeviceReport::kTimelineBins, 0);
      }
    }
    held(change.timeNs);
    depth += change.delta;
    since = change.timeNs;
    *most = std::max(*most, depth);
    held(change.timeNs + 1);  // a depth reached for an instant counts in its bin
  });
  for (DeviceReport& device : report.devices) {
    for (StreamBreakdown& s : device.streams) {
      auto found = deepest.find({s.device, s.stream});
      if (found != deepest.end()) s.maxQueueDepth = found->second;
    }
  }
}

}  // namespace kinetrace::detail::passes
