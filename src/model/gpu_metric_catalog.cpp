#include "model/gpu_metric_catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "support/text.h"

namespace kinetrace::detail {
namespace {

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// CUPTI's metric names are lower case letters, digits, '_' and '.', with "__" between the
// unit and the counter ("dram__throughput"), optionally prefixed by a collection
// ("TriageCompute.", "TPC.TriageCompute."): enough to tell a typo of a short name from a
// CUPTI name, which only CUPTI can then accept or refuse.
bool looksLikeCuptiName(std::string_view name) {
  if (!contains(name, "__")) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  });
}

std::string shortNameList() {
  return joinNames(gpuMetricShortNames(), [](const NamedGpuMetric& m) { return m.shortName; });
}

}  // namespace

const std::vector<NamedGpuMetric>& gpuMetricShortNames() {
  static const std::vector<NamedGpuMetric> kNames = {
      {"sm",
       {"TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput",
        MetricUnit::Percent},
       "the busiest SM unit (issue, pipes, shared memory, L1) against its peak: compute bound"},
      {"dram",
       {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput",
        MetricUnit::Percent},
       "device memory traffic against its peak bandwidth: memory bound"},
      {"tensor",
       {"sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
        "Tensor pipe active", MetricUnit::Percent},
       "cycles the tensor cores were busy: matrix math on tensor cores"},
      {"gr",
       {"gr__cycles_active.avg.pct_of_peak_sustained_elapsed", "GR active", MetricUnit::Percent},
       "cycles the graphics/compute engine had work: the GPU busy at all"},
      {"fma",
       {"TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.avg.pct_of_peak_sustained_elapsed",
        "FMA pipe active", MetricUnit::Percent},
       "fused multiply-add instructions against the FMA pipe's peak: FP32 math"},
      {"dram_read",
       {"dram__bytes_read.sum.per_second", "DRAM read", MetricUnit::BytesPerSecond},
       "bytes read from device memory per second"},
      {"dram_write",
       {"dram__bytes_write.sum.per_second", "DRAM write", MetricUnit::BytesPerSecond},
       "bytes written to device memory per second"},
  };
  return kNames;
}

GpuMetric gpuMetricNamed(std::string_view cuptiName) {
  for (const NamedGpuMetric& named : gpuMetricShortNames()) {
    if (named.metric.name == cuptiName) return named.metric;
  }
  GpuMetric metric;
  metric.name = std::string(cuptiName);
  metric.displayName = metric.name;
  if (contains(cuptiName, "pct_of_peak") || contains(cuptiName, ".pct")) {
    metric.unit = MetricUnit::Percent;
  } else if (contains(cuptiName, "bytes") && contains(cuptiName, "per_second")) {
    metric.unit = MetricUnit::BytesPerSecond;
  } else if (contains(cuptiName, "per_second")) {
    metric.unit = MetricUnit::PerSecond;
  } else {
    metric.unit = MetricUnit::Value;
  }
  return metric;
}

Result<std::vector<GpuMetric>> parseGpuMetricList(std::string_view list) {
  std::vector<GpuMetric> metrics;
  const std::string_view whole = trim(list);
  if (whole.empty() || whole == "none") return metrics;
  auto add = [&](const GpuMetric& metric) -> Status {
    for (const GpuMetric& kept : metrics) {
      if (kept.name == metric.name) {
        return Failure{fmt::format("GPU metric \"{}\" is asked for twice", metric.name)};
      }
    }
    metrics.push_back(metric);
    return {};
  };
  std::string_view rest = whole;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    if (item.empty()) {
      return Failure{fmt::format("GPU metric list \"{}\" has an empty item", whole)};
    }
    if (item == "default") {
      auto defaults = parseGpuMetricList(kDefaultGpuMetrics);
      for (const GpuMetric& metric : defaults.value()) {
        if (Status added = add(metric); !added.ok()) return Failure{added.why()};
      }
    } else {
      const NamedGpuMetric* named = nullptr;
      for (const NamedGpuMetric& candidate : gpuMetricShortNames()) {
        if (item == candidate.shortName) named = &candidate;
      }
      if (named == nullptr && !looksLikeCuptiName(item)) {
        return Failure{fmt::format(
            "unknown GPU metric \"{}\": use default, a short name ({}) or a metric as CUPTI "
            "names it (kinetrace help metrics lists the GPU's)",
            item, shortNameList())};
      }
      Status added = add(named != nullptr ? named->metric : gpuMetricNamed(item));
      if (!added.ok()) return Failure{added.why()};
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (metrics.size() > kMaxGpuMetrics) {
    return Failure{fmt::format("{} GPU metrics asked for; at most {} are sampled at once",
                               metrics.size(), kMaxGpuMetrics)};
  }
  return metrics;
}

}  // namespace kinetrace::detail
