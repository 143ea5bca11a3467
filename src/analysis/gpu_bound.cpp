#include "analysis/gpu_bound.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"

namespace kinetrace::detail {

GpuBound classifyGpuBound(const BoundInputs& in) {
  // Both throughputs are needed to tell memory from compute from neither; the tensor pipe
  // only refines compute, so a trace without it still classes the rest.
  if (!in.sm || !in.dram) return GpuBound::Unknown;
  const double sm = *in.sm, dram = *in.dram;
  if (in.tensor && *in.tensor >= kLimiterPercent && *in.tensor >= dram) return GpuBound::Tensor;
  if (dram >= kLimiterPercent && dram > sm) return GpuBound::Memory;
  if (sm >= kLimiterPercent) return GpuBound::Compute;
  return GpuBound::Neither;
}

const char* gpuBoundName(GpuBound bound) {
  return infoOf(bound).name;
}

std::string describeGpuBound(GpuBound bound, const BoundInputs& in) {
  if (bound == GpuBound::Unknown && (!in.sm || !in.dram)) {
    return fmt::format("unknown (no {} throughput)", !in.sm && !in.dram ? "SM or DRAM"
                                                     : !in.sm           ? "SM"
                                                                        : "DRAM");
  }
  std::vector<std::pair<const char*, std::optional<double>>> shown;
  switch (bound) {
    case GpuBound::Memory:
      shown = {{"DRAM", in.dram}, {"SM", in.sm}};
      break;
    case GpuBound::Tensor:
      shown = {{"tensor", in.tensor}, {"SM", in.sm}, {"DRAM", in.dram}};
      break;
    default:
      shown = {{"SM", in.sm}, {"DRAM", in.dram}};
      // Where the tensor pipe was measured, its (low) number says why it is not "tensor".
      if (in.tensor) shown.emplace_back("tensor", in.tensor);
      break;
  }
  std::string out = gpuBoundName(bound);
  out += " (";
  for (std::size_t i = 0; i < shown.size(); ++i) {
    out += fmt::format("{}{} {:.0f}%", i == 0 ? "" : ", ", shown[i].first, *shown[i].second);
  }
  return out + ")";
}

int64_t BoundMix::totalNs() const {
  int64_t total = 0;
  for (int64_t n : ns) total += n;
  return total;
}

BoundInputs boundInputsOf(const std::vector<MetricName>& metrics,
                          const std::vector<double>& averages) {
  BoundInputs in;
  for (std::size_t m = 0; m < metrics.size() && m < averages.size(); ++m) {
    if (std::isnan(averages[m]) || metrics[m].unit != kMetricUnitPercent) continue;
    if (metrics[m].name == kMetricSmThroughput) in.sm = averages[m];
    if (metrics[m].name == kMetricDramThroughput) in.dram = averages[m];
    if (metrics[m].name == kMetricTensorActive) in.tensor = averages[m];
  }
  return in;
}

std::string averagesOf(const BoundMix& mix, const std::vector<MetricName>& metrics) {
  const BoundInputs in = boundInputsOf(metrics, mix.averages);
  std::string out;
  for (const auto& [label, value] :
       {std::pair{"SM", in.sm}, std::pair{"DRAM", in.dram}, std::pair{"tensor", in.tensor}}) {
    if (value) out += fmt::format("{}{} {:.0f}%", out.empty() ? "" : ", ", label, *value);
  }
  return out;
}

std::string describeMix(const BoundMix& mix, const std::vector<MetricName>& metrics) {
  if (!mix.byTime) return describeGpuBound(mix.bound, boundInputsOf(metrics, mix.averages));
  const int64_t total = mix.totalNs();
  if (total <= 0) return "-";
  const std::string averages = averagesOf(mix, metrics);
  return fmt::format("{} {:.0f}% of kernel time{}", gpuBoundName(mix.bound),
                     100.0 * static_cast<double>(mix.ns[static_cast<std::size_t>(mix.bound)]) /
                         static_cast<double>(total),
                     averages.empty() ? "" : " (" + averages + ")");
}

namespace {

// Time-weighted sums of each metric, and kernel time by class: a BoundMix being built.
class MixBuilder {
 public:
  explicit MixBuilder(std::size_t metrics) : sums_(metrics, 0.0), weights_(metrics, 0.0) {}

  // A kernel's values (NaN: not carried) over `weightNs` of its time, of class `bound`.
  void add(const std::vector<double>& values, GpuBound bound, int64_t weightNs) {
    mix_.ns[static_cast<std::size_t>(bound)] += weightNs;
    const auto w = static_cast<double>(weightNs);
    for (std::size_t m = 0; m < values.size(); ++m) {
      if (std::isnan(values[m])) continue;
      sums_[m] += values[m] * w;
      weights_[m] += w;
    }
  }

  // byTime: a step's or trace's mix, classed by its kernel time (BoundMix::byTime).
  BoundMix finish(const std::vector<MetricName>& metrics, bool byTime) {
    mix_.averages.assign(sums_.size(), std::numeric_limits<double>::quiet_NaN());
    for (std::size_t m = 0; m < sums_.size(); ++m) {
      if (weights_[m] > 0) mix_.averages[m] = sums_[m] / weights_[m];
    }
    mix_.byTime = byTime;
    if (!byTime) {
      mix_.bound = classifyGpuBound(boundInputsOf(metrics, mix_.averages));
      return mix_;
    }
    // The class with the most time; "unknown" only when no other has any.
    mix_.bound = GpuBound::Unknown;
    int64_t most = 0;
    for (GpuBound b : kGpuBounds) {
      const int64_t ns = mix_.ns[static_cast<std::size_t>(b)];
      if (b != GpuBound::Unknown && ns > most) {
        most = ns;
        mix_.bound = b;
      }
    }
    return mix_;
  }

 private:
  std::vector<double> sums_;
  std::vector<double> weights_;
  BoundMix mix_;
};

}  // namespace

void analyzeGpuBounds(CollectedTrace& trace, RankReport& report, const NameFits& fits) {
  GpuMetricsReport& out = report.gpuMetrics;
  // The metrics' names, copied into the report, are as long as the trace made them.
  if (report.held) report.held->take(trace.metricsHeld.bytes(), "GPU metric names");
  MetricFitSummary fitted = std::move(out.fit);  // the fit pass's, before this one
  out = trace.gpuMetrics;
  out.fit = std::move(fitted);
  if (out.metrics.empty()) {
    // Nothing to class: the records (each kernel's "none") and their file go.
    trace.kernelMetrics.drain([](const KernelMetricValue&) {});
    return;
  }
  const std::vector<MetricName>& metrics = out.metrics;
  const std::size_t n = metrics.size();

  // The top kernels' rows, by the trace's name id (-1: not a top kernel).
  std::unordered_map<std::string_view, std::size_t> rowOfName;
  for (std::size_t i = 0; i < report.kernels.size(); ++i) rowOfName[report.kernels[i].name] = i;
  ReadBudget& budget = *trace.budget;
  BudgetUnorderedMap<uint32_t, std::ptrdiff_t> rowOfId(
      0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
      BudgetAllocator<char>(budget, "distinct names"));
  auto rowOf = [&](uint32_t id) {
    auto [it, inserted] = rowOfId.emplace(id, -1);
    if (inserted) {
      auto found = rowOfName.find(trace.name(id));
      if (found != rowOfName.end()) it->second = static_cast<std::ptrdiff_t>(found->second);
    }
    return it->second;
  };

  // Each step's mix being built, and the averages its report keeps.
  const std::size_t stepBytes =
      3 * (n * sizeof(double) + kAllocationOverheadBytes) + sizeof(MixBuilder);
  BudgetHold building(budget);
  building.take(report.steps.size() * stepBytes, "step ranges");
  if (report.held) report.held->take(report.steps.size() * n * sizeof(double), "step ranges");

  MixBuilder all(n);
  std::vector<MixBuilder> rows(report.kernels.size(), MixBuilder(n));
  std::vector<MixBuilder> steps(report.steps.size(), MixBuilder(n));
  // The steps a kernel may meet, swept by the kernels' starts (steps are by start): those
  // begun before the latest kernel end seen and not ended before the current start.
  std::size_t nextStep = 0;
  std::vector<std::size_t> openSteps;

  std::vector<double> values(n, std::numeric_limits<double>::quiet_NaN());
  KernelMetricValue kernel;
  bool have = false;
  auto finishKernel = [&]() {
    if (!have) return;
    // A kernel shorter than a sample: its name's fitted values in place of its averages,
    // none where the fit could not tell them.
    if (auto fit = fits.find(kernel.name); fit != fits.end() && fit->second.shorterThanSample) {
      for (std::size_t m = 0; m < n && m < fit->second.values.size(); ++m) {
        if (std::isnan(fit->second.values[m])) continue;
        values[m] =
            fit->second.resolved ? fit->second.values[m] : std::numeric_limits<double>::quiet_NaN();
      }
    }
    const GpuBound bound = classifyGpuBound(boundInputsOf(metrics, values));
    const int64_t ns = kernel.endNs - kernel.startNs;
    all.add(values, bound, ns);
    if (const std::ptrdiff_t row = rowOf(kernel.name); row >= 0) {
      rows[static_cast<std::size_t>(row)].add(values, bound, ns);
    }
    while (nextStep < report.steps.size() && report.steps[nextStep].startNs < kernel.endNs) {
      openSteps.push_back(nextStep++);
    }
    openSteps.erase(
        std::remove_if(openSteps.begin(), openSteps.end(),
                       [&](std::size_t s) { return report.steps[s].endNs <= kernel.startNs; }),
        openSteps.end());
    for (std::size_t s : openSteps) {
      const StepReport& step = report.steps[s];
      const int64_t overlap =
          std::min(step.endNs, kernel.endNs) - std::max(step.startNs, kernel.startNs);
      if (overlap > 0) steps[s].add(values, bound, overlap);
    }
    std::fill(values.begin(), values.end(), std::numeric_limits<double>::quiet_NaN());
  };
  trace.kernelMetrics.drain([&](const KernelMetricValue& v) {
    if (!have || v.sequence != kernel.sequence) {
      finishKernel();
      kernel = v;
      have = true;
    }
    if (v.metric != KernelMetricValue::kNoMetric && v.metric < n) values[v.metric] = v.value;
  });
  finishKernel();

  out.all = all.finish(metrics, true);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    // Copies and memsets carry no metrics: their rows stay without a class.
    BoundMix mix = rows[i].finish(metrics, false);
    if (report.kernels[i].kind != "memory") report.kernels[i].bound = std::move(mix);
  }
  for (std::size_t s = 0; s < steps.size(); ++s)
    report.steps[s].bound = steps[s].finish(metrics, true);
}

}  // namespace kinetrace::detail
