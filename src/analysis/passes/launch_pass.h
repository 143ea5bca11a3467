#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "analysis/passes/analysis_common.h"
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
  // A stream's queue: +1 at a launch call's start, -1 at its operation's start.
  struct QueueChange {
    int64_t device = 0;
    int64_t stream = 0;
    int64_t timeNs = 0;
    int32_t delta = 0;
  };
  struct ByStreamThenTime {
    bool operator()(const QueueChange& a, const QueueChange& b) const;
  };
  // Launch outliers, worst first: the longer latency, then the earlier start.
  struct WorseLatency {
    bool operator()(const LaunchOutlier& a, const LaunchOutlier& b) const {
      return a.latencyNs != b.latencyNs ? a.latencyNs > b.latencyNs : a.startNs < b.startNs;
    }
  };

  void queueDepths(RankReport& report);

  const PassContext& context_;
  ExternalSorter<int64_t, std::less<>> latencies_;
  ExternalSorter<QueueChange, ByStreamThenTime> queueChanges_;
  std::vector<uint64_t> histogram_;  // RankReport::launchLatencyHistogram
  TopN<LaunchOutlier, WorseLatency> outliers_;
  int64_t slowestCallNs_ = 0;
  std::string slowestCallOf_;
};

}  // namespace kinetrace::detail::passes
