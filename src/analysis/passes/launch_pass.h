#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "analysis/passes/analysis_common.h"
#include "analysis/passes/launch_queue.h"
#include "analysis/passes/pass_context.h"
#include "analysis/spill.h"

namespace kinetrace::detail::passes {

// How long the GPU operations took to start once launched: the launch latency's
// distribution and histogram, its worst options.top (outliers), the slowest launch call,
// and each stream's queue depth (operations launched and not yet started) over the window.
// Operations without a known launch call have none of these.
class LaunchPass {
 public:
  explicit LaunchPass(const PassContext& context);

  void add(const JoinedOp& op);

  // report.launchLatency, report.launchLatencyHistogram, report.launchOutliers,
  // report.slowestCallNs and report.slowestCallOf; each stream's maxQueueDepth and
  // report.queueDepthTimelines, on its device's timeline (report.devices must be final:
  // time_pass.h).
  void finish(RankReport& report);

 private:
  // Launch outliers, worst first: the longer latency, then the earlier start.
  struct WorseLatency {
    bool operator()(const LaunchOutlier& a, const LaunchOutlier& b) const {
      return a.latencyNs != b.latencyNs ? a.latencyNs > b.latencyNs : a.startNs < b.startNs;
    }
  };

  void queueDepths(RankReport& report);

  const PassContext& context_;
  ExternalSorter<int64_t, std::less<>> latencies_;
  LaunchQueueChanges queueChanges_;
  std::vector<uint64_t> histogram_;  // RankReport::launchLatencyHistogram
  TopN<LaunchOutlier, WorseLatency> outliers_;
  int64_t slowestCallNs_ = 0;
  std::string slowestCallOf_;
};

}  // namespace kinetrace::detail::passes
