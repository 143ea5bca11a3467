#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/gpu_metrics.h"
#include "support/result.h"

// The GPU metrics a user asks for by short name, and how any metric named as CUPTI spells
// it is shown. Knows no GPU: whether the chip can sample a metric is CUPTI's to say, when
// sampling starts.

namespace kinetrace::detail {

struct NamedGpuMetric {
  const char* shortName;  // "dram"
  GpuMetric metric;
  const char* meaning;  // for `kinetrace help metrics`
};

// Every short name, in the order `kinetrace help metrics` lists them.
const std::vector<NamedGpuMetric>& gpuMetricShortNames();

// What "default" samples: whether the GPU is busy at all (graphics engine active), and
// whether the SMs, DRAM or tensor cores are the limit.
inline constexpr std::string_view kDefaultGpuMetrics = "sm,dram,tensor,gr";

// The sampling interval used unless one is asked for. 1 ms resolves phases of a training
// step and the kernels longer than a millisecond that dominate one, keeps CUPTI's decoding
// (the costly part, on a thread of kinetrace's) to a small share of one core, and gives
// 600,000 samples a device for a ten-minute window.
inline constexpr int64_t kDefaultGpuMetricIntervalNs = 1'000'000;
// Shorter intervals are allowed down to this; below it the hardware's own sampling jitter
// is a large share of each sample.
inline constexpr int64_t kMinGpuMetricIntervalNs = 1'000;
inline constexpr int64_t kMaxGpuMetricIntervalNs = 1'000'000'000;

// A comma list of short names ("default" among them) and CUPTI metric names, each once:
// the metrics in that order, or why the list is not one ("unknown GPU metric \"drm\"...").
// "" and "none" mean no metrics.
Result<std::vector<GpuMetric>> parseGpuMetricList(std::string_view list);

// A metric named as CUPTI spells it: its display name (the short name's when it has one,
// else CUPTI's name) and its unit, told from the name.
GpuMetric gpuMetricNamed(std::string_view cuptiName);

}  // namespace kinetrace::detail
