#include "analysis/gpu_bound_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analysis/report_text.h"
#include "support/text.h"

namespace kinetrace::detail {
namespace {

std::string interval(int64_t ns) {
  if (ns >= 1'000'000 && ns % 1'000 == 0)
    return fmt::format("{:g} ms", static_cast<double>(ns) / 1e6);
  if (ns >= 1'000) return fmt::format("{:g} us", static_cast<double>(ns) / 1e3);
  return fmt::format("{} ns", ns);
}

double shareOf(const BoundMix& mix, GpuBound bound) {
  const int64_t total = mix.totalNs();
  return total > 0 ? static_cast<double>(mix.ns[static_cast<std::size_t>(bound)]) /
                         static_cast<double>(total)
                   : 0.0;
}

}  // namespace

std::string boundShares(const BoundMix& mix) {
  if (mix.totalNs() <= 0) return "-";
  std::string out;
  for (GpuBound b : kGpuBounds) {
    out += fmt::format("{}{} {:.0f}%", out.empty() ? "" : " + ", gpuBoundName(b),
                       100 * shareOf(mix, b));
  }
  return out;
}

std::vector<Finding> gpuBoundFindings(const RankReport& r, const std::string& prefix) {
  std::vector<Finding> out;
  const GpuMetricsReport& m = r.gpuMetrics;
  if (!m.any()) return out;
  if (!m.metrics.empty() && m.all.totalNs() > 0) {
    const GpuBound lead = m.all.bound;  // the class with the most kernel time
    std::string shares;
    std::vector<GpuBound> order(kGpuBounds.begin(), kGpuBounds.end());
    std::stable_sort(order.begin(), order.end(), [&m](GpuBound a, GpuBound b) {
      return m.all.ns[static_cast<std::size_t>(a)] > m.all.ns[static_cast<std::size_t>(b)];
    });
    for (GpuBound b : order) {
      if (m.all.ns[static_cast<std::size_t>(b)] <= 0) continue;
      shares += fmt::format("{}{} {:.0f}%", shares.empty() ? "" : ", ", gpuBoundName(b),
                            100 * shareOf(m.all, b));
    }
    std::string sentence = fmt::format(
        "{}by the GPU's hardware metrics, the kernel time was bound by {} (a unit at {:.0f}% "
        "of its peak or more limits a kernel, as Nsight Compute reads it).",
        prefix, shares, kLimiterPercent);
    const auto top = std::find_if(r.kernels.begin(), r.kernels.end(), [lead](const KernelRow& k) {
      return !k.bound.empty() && k.bound.bound == lead;
    });
    if (lead == GpuBound::Unknown) {
      sentence +=
          " No kernel carries both SM and DRAM throughput: record them with `kinetrace run "
          "--gpu-metrics default`.";
    } else if (top != r.kernels.end()) {
      sentence += fmt::format(
          " The longest {}-bound kernel, {}, took {:.1f}% of GPU operation "
          "time at {}: {}.",
          gpuBoundName(lead), top->name.size() > 60 ? top->name.substr(0, 57) + "..." : top->name,
          100 * top->share, describeMix(top->bound, m.metrics), infoOf(lead).advice);
    }
    std::vector<std::pair<std::string, double>> evidence;
    for (GpuBound b : kGpuBounds) {
      evidence.emplace_back(std::string(gpuBoundName(b)) + "_share", shareOf(m.all, b));
    }
    evidence.emplace_back("kernel_ns", static_cast<double>(m.all.totalNs()));
    out.push_back(Finding{"gpu-bound", std::nullopt, std::move(sentence), std::move(evidence)});
  }
  if (m.hasMetadata && (m.lost > 0 || m.corrupted > 0)) {
    out.push_back(Finding{
        "gpu-metric-samples-lost",
        std::nullopt,
        fmt::format(
            "{}GPU metric sampling lost {} samples and {} were corrupted (against {} kept): the "
            "averages are over the samples kept{}; a longer --gpu-metrics-interval loses fewer.",
            prefix, withThousands(m.lost), withThousands(m.corrupted), withThousands(m.samples),
            m.kernelsWithoutTheirSamples > 0
                ? fmt::format(", and {} kernels ran without their samples",
                              withThousands(m.kernelsWithoutTheirSamples))
                : ""),
        {{"lost", static_cast<double>(m.lost)},
         {"corrupted", static_cast<double>(m.corrupted)},
         {"kept", static_cast<double>(m.samples)},
         {"kernels_without_their_samples", static_cast<double>(m.kernelsWithoutTheirSamples)}}});
  } else if (m.hasMetadata && m.metrics.empty()) {
    out.push_back(Finding{"gpu-metrics-without-kernels",
                          std::nullopt,
                          fmt::format("{}GPU metrics were sampled ({} samples) but no kernel "
                                      "carries their averages: no kernel ran while samples were "
                                      "taken.",
                                      prefix, withThousands(m.samples)),
                          {{"samples", static_cast<double>(m.samples)}}});
  }
  return out;
}

// "kernels shorter than a sample: their names' metrics solved from 4,000 samples (12 names,
// idle its own term); the fit explains SM throughput 97%, DRAM throughput 95% of the
// samples' variance".
std::string fitSentence(const GpuMetricsReport& m) {
  std::string explained;
  for (std::size_t i = 0; i < m.metrics.size() && i < m.fit.r2.size(); ++i) {
    if (std::isnan(m.fit.r2[i])) continue;
    explained += fmt::format("{}{} {:.0f}%", explained.empty() ? "" : ", ", m.metrics[i].name,
                             100 * m.fit.r2[i]);
  }
  std::string sentence = fmt::format(
      "kernels shorter than a sample: their names' metrics solved from {} samples ({} names, "
      "idle its own term); the fit explains {} of the samples' variance",
      withThousands(m.fit.samples), m.fit.names, explained.empty() ? "none" : explained);
  if (m.fit.misalignedNs == 0 && m.fit.shortResolved < m.fit.shortNames) {
    sentence += fmt::format(
        "; {} of the {} names shorter than a sample resolved: the others' share of the windows "
        "varies too little apart from the kernels beside them to tell their values (a value "
        "needs 4 samples' worth of variation of its own; tracing more steps gives more)",
        m.fit.shortResolved, m.fit.shortNames);
  }
  if (m.fit.misalignedNs != 0) {
    sentence += fmt::format(
        "; but the samples' windows moved {} {} explain them better: the samples' clock is "
        "not the kernels', and no name's values are shown as its own",
        report_text::duration(std::abs(m.fit.misalignedNs)),
        m.fit.misalignedNs > 0 ? "later" : "earlier");
  }
  return sentence;
}

std::string kernelBoundText(const KernelRow& k, const std::vector<MetricName>& metrics) {
  if (k.bound.empty()) return "-";
  if (!k.fit.fitted || !k.fit.shorterThanSample) return describeMix(k.bound, metrics);
  if (!k.fit.resolved) return "unresolved: shorter than a sample, not told apart from others";
  return describeMix(k.bound, metrics) + " (fitted)";
}

nlohmann::ordered_json metricFitJson(const MetricFitRow& fit,
                                     const std::vector<MetricName>& metrics) {
  if (!fit.fitted) return nullptr;
  nlohmann::ordered_json values = nlohmann::ordered_json::object();
  nlohmann::ordered_json errors = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < metrics.size() && i < fit.values.size(); ++i) {
    if (std::isnan(fit.values[i])) continue;
    values[metrics[i].key()] = fit.values[i];
    errors[metrics[i].key()] = std::isfinite(fit.standardError[i])
                                   ? nlohmann::ordered_json(fit.standardError[i])
                                   : nlohmann::ordered_json(nullptr);
  }
  return {{"shorter_than_sample", fit.shorterThanSample},
          {"resolved", fit.resolved},
          {"values", values},
          {"standard_error", errors},
          {"own_variation", fit.ownVariation}};
}

std::string gpuMetricsText(const RankReport& r) {
  const GpuMetricsReport& m = r.gpuMetrics;
  if (!m.any()) return "";
  std::string names;
  for (const MetricName& metric : m.metrics) names += (names.empty() ? "" : ", ") + metric.key();
  std::string out = fmt::format("GPU metrics: {} of {} kernels carry averages{}{}\n",
                                withThousands(m.kernelsWithMetrics), withThousands(m.kernels),
                                names.empty() ? "" : " of ", names);
  if (!m.metrics.empty()) {
    out += fmt::format("  kernel time bound by {} (limiter: {:.0f}% of peak)\n", boundShares(m.all),
                       kLimiterPercent);
    out += fmt::format("  all kernels: {}\n", describeMix(m.all, m.metrics));
  }
  if (m.hasMetadata) {
    out += fmt::format(
        "  sampled every {}: {} samples kept, {} lost, {} corrupted, {} set-up "
        "samples dropped{}\n",
        interval(m.intervalNs), withThousands(m.samples), withThousands(m.lost),
        withThousands(m.corrupted), withThousands(m.setupDropped),
        m.kernelsWithoutTheirSamples > 0 ? fmt::format("; {} kernels without their samples",
                                                       withThousands(m.kernelsWithoutTheirSamples))
                                         : "");
  }
  if (m.fit.done) out += "  " + fitSentence(m) + "\n";
  return out;
}

nlohmann::ordered_json boundMixJson(const BoundMix& mix, const std::vector<MetricName>& metrics) {
  nlohmann::ordered_json averages = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < metrics.size() && i < mix.averages.size(); ++i) {
    if (!std::isnan(mix.averages[i])) averages[metrics[i].key()] = mix.averages[i];
  }
  nlohmann::ordered_json ns = nlohmann::ordered_json::object();
  for (GpuBound b : kGpuBounds) ns[gpuBoundName(b)] = mix.ns[static_cast<std::size_t>(b)];
  return {{"bound", gpuBoundName(mix.bound)},
          {"described", describeMix(mix, metrics)},
          {"averages", averages},
          {"ns_by_bound", ns}};
}

nlohmann::ordered_json gpuMetricsJson(const GpuMetricsReport& m) {
  nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
  for (const MetricName& metric : m.metrics) {
    metrics.push_back({{"name", metric.name}, {"unit", metric.unit}, {"key", metric.key()}});
  }
  nlohmann::ordered_json out = {{"limiter_percent", kLimiterPercent},
                                {"metrics", metrics},
                                {"kernels", m.kernels},
                                {"kernels_with_metrics", m.kernelsWithMetrics},
                                {"gpu_bound", boundMixJson(m.all, m.metrics)}};
  if (m.fit.done) {
    nlohmann::ordered_json r2 = nlohmann::ordered_json::object();
    nlohmann::ordered_json idle = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < m.metrics.size() && i < m.fit.r2.size(); ++i) {
      if (std::isnan(m.fit.r2[i])) continue;
      r2[m.metrics[i].key()] = m.fit.r2[i];
      idle[m.metrics[i].key()] = m.fit.idle[i];
    }
    out["fit"] = {{"samples", m.fit.samples},
                  {"names", m.fit.names},
                  {"r2", r2},
                  {"idle", idle},
                  {"misaligned_ns", m.fit.misalignedNs},
                  {"short_names", m.fit.shortNames},
                  {"short_resolved", m.fit.shortResolved}};
  }
  if (m.hasMetadata) {
    out["sampling"] = {{"interval_ns", m.intervalNs},
                       {"samples", m.samples},
                       {"lost", m.lost},
                       {"corrupted", m.corrupted},
                       {"setup_dropped", m.setupDropped},
                       {"kernels_without_their_samples", m.kernelsWithoutTheirSamples}};
  }
  return out;
}

}  // namespace kinetrace::detail
