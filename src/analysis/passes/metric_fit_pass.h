#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "analysis/gpu_bound.h"
#include "analysis/passes/pass_context.h"
#include "analysis/spill.h"

namespace kinetrace::detail::passes {

// Each top kernel name's GPU metrics solved from all the samples (analysis/metric_fit.h),
// for kernels shorter than a sample, whose averages are mostly their neighbours' and idle
// time's. Per device, each sample window's value is fitted to the shares of it that each of
// the names making kFittedShare of kernel time occupied (at most kMostFittedNames, the
// other kernels one column, idle time its own), for every metric in % of a peak. The other
// kernels' column is one value for many kinds of kernel: kept small, so that what it cannot
// say is not laid on the names that run beside them. Reads the GPU operations and the
// trace's metric samples (consumed).
class MetricFitPass {
 public:
  static constexpr double kFittedShare = 0.95;
  static constexpr std::size_t kMostFittedNames = 48;

  explicit MetricFitPass(const PassContext& context);

  void add(const JoinedOp& op);

  // report.kernels' fit, report.gpuMetrics.fit (report.kernels must be final); the fits by
  // name for the GPU-bound pass.
  NameFits finish(RankReport& report);

 private:
  struct Kernel {
    int64_t device = 0;
    int64_t startNs = 0;
    int64_t endNs = 0;
    uint32_t name = 0;
  };
  struct ByDeviceThenStart {
    bool operator()(const Kernel& a, const Kernel& b) const {
      return a.device != b.device ? a.device < b.device : a.startNs < b.startNs;
    }
  };
  struct Tally {
    uint64_t count = 0;
    int64_t ns = 0;
  };

  const PassContext& context_;
  ExternalSorter<Kernel, ByDeviceThenStart> kernels_;
  BudgetUnorderedMap<uint32_t, Tally> names_;
  int64_t kernelNs_ = 0;
};

}  // namespace kinetrace::detail::passes
