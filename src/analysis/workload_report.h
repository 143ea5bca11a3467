#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/trace_analysis.h"

// The figures of workload_figures.h (kernel sequences, GPU time per annotation, time at a
// full launch queue, copy bandwidth) said in the reports: lines for the terminal, the JSON's
// objects, the findings and the HTML's sections. Nothing is said of a figure the trace has
// nothing for.
//
// JSON (stable keys), in each rank's object:
//   kernel_sequences    {"mode": "windows" | "operator", "length", "operator", "chains",
//                        "counted", "none_because" (HTA's mode: why it finds none),
//                        "left_out": {reason: count},
//                        "rows": [{"kernels": [names], "length", "issuer" ("": none),
//                                  "across_ranges" (ranges open, none around every launch),
//                                  "count",
//                                  "gpu_ns", "launch_ns", "gap_ns", "saved_ns",
//                                  "operator_ns"}]}
//   annotations         {"attributed_by": "gpu_user_annotation" | "host ranges" | "",
//                        "annotations", "operations", "attributed_operations", "gpu_ns",
//                        "attributed_ns", "left_out",
//                        "rows": [{"name", "operations", "gpu_ns", "spans", "span_ns",
//                                  "span_min_ns", "span_max_ns"}],
//                        "module_count", "modules": [{"name", "operations", "gpu_ns"}]}
//   launch_queue_full   {"max_queue_length", "window_ns", "full_ns", "streams_full",
//                        "streams": [{"device", "stream", "max_depth", "full_ns",
//                                     "window_share"}]}
//   copy_bandwidth      {"timeline_start_ns", "timeline_bin_ns", "left_out",
//                        "kinds": [{"kind", "operations", "bytes", "gpu_ns", "samples",
//                                   "mean_gbps", "std_gbps", "min_gbps", "p25_gbps",
//                                   "p50_gbps", "p75_gbps", "max_gbps",
//                                   "timeline": [GB/s per slice]}]}

namespace kinetrace::detail {

// The terminal report's lines for one rank ("" when it has none of the figures).
std::string workloadText(const RankReport& r);
// Adds the four objects above to a rank's JSON object.
void addWorkloadJson(nlohmann::ordered_json& rank, const RankReport& r);
// The findings the figures warrant; their rank is the caller's to set.
std::vector<Finding> workloadFindings(const RankReport& r, const std::string& prefix);
// The HTML page's sections for one rank ("" when it has none of the figures).
std::string workloadHtml(const RankReport& r);

}  // namespace kinetrace::detail
