#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/trace_analysis.h"

// `kinetrace analyze --critical-path`'s figures (critical_path_report.h) as the text report,
// the JSON and the HTML page show them: each step's length, HTA's, and its parts; the top
// contributors over the steps with what they would save; the path over each step's time
// (HTML); what was left out. Each is empty when the path was not asked for.

namespace kinetrace::detail {

std::string criticalPathText(const CriticalPathReport& path, const AnalysisOptions& options);
// {"per_step": [...], "left_out": {...}, "failed": ...}; null when not asked for.
nlohmann::ordered_json criticalPathJson(const CriticalPathReport& path);
std::string criticalPathHtml(const CriticalPathReport& path, const AnalysisOptions& options);

}  // namespace kinetrace::detail
