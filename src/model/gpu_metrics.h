#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

// GPU hardware metrics sampled over time (CUPTI's PM sampling): what a session samples, and
// what it lost doing so. The samples themselves are records (GpuMetricSampleRecord in
// model/records.h), their values in TraceRecords::metricValues.

namespace kinetrace::detail {

// A metric's unit, as the trace shows it, told from CUPTI's name for the metric: a share of
// the unit's peak ("...pct_of_peak..."), a rate of bytes ("..bytes...per_second"), another
// rate ("...per_second"), or a plain value (a count, a ratio).
enum class MetricUnit : uint8_t { Percent, BytesPerSecond, PerSecond, Value };

struct GpuMetric {
  std::string name;  // as CUPTI spells it ("dram__throughput.avg.pct_of_peak_sustained_elapsed")
  std::string displayName;  // short, for tracks and arguments ("DRAM throughput")
  MetricUnit unit = MetricUnit::Percent;
};

// The most metrics one session samples: what the hardware gathers in one pass is far fewer.
inline constexpr std::size_t kMaxGpuMetrics = 32;

// What one session samples: the same metrics (at most kMaxGpuMetrics), in this order, on
// every device listed. Every sample carries one value per metric, in this order.
struct GpuMetricSet {
  std::vector<GpuMetric> metrics;
  int64_t intervalNs = 0;  // the sampling interval asked for
  // The devices sampled: only their kernels wait for samples to be averaged over.
  std::vector<uint32_t> devices;
  // Set when the GPU or the driver refused the metrics asked for (with no metrics then):
  // why, for the trace's metadata. Tracing went on without them.
  std::string refused;

  bool empty() const { return metrics.empty(); }
};

// What sampling lost, counted by the source between polls.
struct GpuMetricLosses {
  uint64_t lost = 0;          // samples the hardware or host buffers had no room for
  uint64_t corrupted = 0;     // samples decoded but invalid, not kept
  uint64_t setupDropped = 0;  // the first sample after each start, which spans the set-up
};

}  // namespace kinetrace::detail
