#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/trace_analysis.h"

// What bounded a busy GPU (gpu_bound.h), said in the reports: sentences for the findings,
// lines for the terminal, and the JSON's "gpu_metrics" and "gpu_bound" objects. Nothing is
// said for a trace without GPU metrics (GpuMetricsReport::any() false).
//
// JSON (stable keys):
//   ranks[i].gpu_metrics   {"limiter_percent": 60,
//                           "metrics": [{"name": "SM throughput", "unit": "%",
//                                        "key": "SM throughput (%)"}, ...],
//                           "kernels", "kernels_with_metrics",
//                           "gpu_bound": <mix of every kernel>,
//                           "sampling": {"interval_ns", "samples", "lost", "corrupted",
//                                        "setup_dropped", "kernels_without_their_samples"}
//                                       (only when the trace has kinetrace_gpu_metrics)}
//                           "fit": {"samples", "names", "r2": {"<key>": share of the samples'
//                                   variance explained}, "idle": {"<key>": idle's value},
//                                   "misaligned_ns": 0, or how far the samples' windows
//                                   had to move to fit better (then no name resolved),
//                                   "short_names", "short_resolved": names shorter than a
//                                   sample, and of them those resolved}
//                                  (only when samples were fitted: metric_fit.h)
//   ranks[i].kernels[k].gpu_bound, ranks[i].steps[k].gpu_bound   a mix, when the trace has
//                           metrics (not on copies and memsets)
//   ranks[i].kernels[k].metric_fit   {"shorter_than_sample", "resolved",
//                           "values": {"<key>": fitted value}, "standard_error": {"<key>":
//                           points, null where the name cannot be told apart},
//                           "own_variation": samples' worth of occupancy varying apart from
//                           the other names'} (fitted names)
//   a mix:                 {"bound": "memory" | "compute" | "tensor" | "neither" | "unknown"
//                                     (a kernel's: the class of its averages; a step's or
//                                     the trace's: the class with the most kernel time),
//                           "described": "memory (DRAM 82%, SM 6%)" (a kernel's), "memory
//                                        60% of kernel time (SM 32%, DRAM 57%, tensor 37%)"
//                                        (a step's, the trace's),
//                           "averages": {"<key>": time-weighted average, ...} (metrics the
//                                       kernels carried),
//                           "ns_by_bound": {"memory", "compute", "tensor", "neither",
//                                           "unknown"} (kernel time of each class; a step's:
//                                           its overlap with the step)}

namespace kinetrace::detail {

// "memory 45% + compute 5% + tensor 30% + neither 15% + unknown 5%" of the mix's kernel
// time; "-" when it has none.
std::string boundShares(const BoundMix& mix);
// The findings: what bounded the kernels, the longest kernel of the leading class, and what
// sampling lost. None for a trace without metrics.
// Their rank is the caller's to set.
std::vector<Finding> gpuBoundFindings(const RankReport& r, const std::string& prefix);
// A kernel name's bound as the tables show it: its mix described, "... (fitted)" where its
// kernels are shorter than a sample and the fit told its values, "unresolved: ..." where it
// could not; "-" without metrics.
std::string kernelBoundText(const KernelRow& k, const std::vector<MetricName>& metrics);
// What the fit of short kernels' metrics explained, a sentence (metric_fit.h).
std::string fitSentence(const GpuMetricsReport& m);
// A kernel row's "metric_fit" (null when its name was not fitted).
nlohmann::ordered_json metricFitJson(const MetricFitRow& fit,
                                     const std::vector<MetricName>& metrics);
// The terminal report's lines about the trace's metrics and sampling ("" without metrics).
std::string gpuMetricsText(const RankReport& r);

nlohmann::ordered_json boundMixJson(const BoundMix& mix, const std::vector<MetricName>& metrics);
nlohmann::ordered_json gpuMetricsJson(const GpuMetricsReport& m);

}  // namespace kinetrace::detail
