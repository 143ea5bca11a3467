#include "summary_command.h"

#include <string>
#include <vector>

#include "analysis/read_budget.h"
#include "analysis/summary.h"
#include "analyze_command.h"
#include "error_text.h"
#include "files.h"
#include "kinetrace/error.h"
#include "runfiles/trace_naming.h"

namespace kinetrace::cli {

int summaryCommand(const SummaryOptions& options, std::FILE* out, std::FILE* err) {
  // One budget for every summary read and every trace analysed instead.
  detail::ReadBudget budget(options.memoryBytes);
  std::vector<std::string> files;
  std::vector<std::string> tracesWithoutSummary;  // analysed instead
  bool missing = false;
  for (const std::string& path : options.paths) {
    if (isDirectory(path)) {
      std::size_t before = files.size();
      for (const std::string& name : listDirectory(path)) {
        if (runfiles::isSummaryOfRun(name, "")) files.push_back(path + "/" + name);
      }
      if (files.size() == before) {
        std::fprintf(err, "kinetrace summary: no kinetrace summaries in %s\n", path.c_str());
        missing = true;
      }
    } else if (endsWith(path, ".summary.json")) {
      files.push_back(path);
    } else if (isRegularFile(runfiles::summaryPathFor(path)) || !isRegularFile(path)) {
      files.push_back(runfiles::summaryPathFor(path));
    } else {
      // A trace saved through the API or by torch.profiler has no summary file: the trace
      // itself is the input.
      tracesWithoutSummary.push_back(path);
    }
  }
  bool first = true;
  for (const std::string& file : files) {
    try {
      // A summary is read only if it is a regular file, and within the budget: a directory
      // of traces may hold a "summary" that is a link to /dev/zero.
      detail::Summary summary = detail::readSummaryFile(file, budget);
      std::fprintf(out, "%s%s", first ? "" : "\n",
                   detail::formatSummary(summary, options.topKernels).c_str());
      first = false;
    } catch (const Error& error) {
      std::fprintf(err, "kinetrace summary: %s\n", withoutKinetracePrefix(error.what()).c_str());
      missing = true;
    }
  }
  for (const std::string& trace : tracesWithoutSummary) {
    AnalyzeOptions analyze;
    analyze.paths = {trace};
    analyze.top = options.topKernels;
    std::fprintf(out, "%s", first ? "" : "\n");
    try {
      analyzeWithin(analyze, budget, out, err);
      first = false;
    } catch (const Error& error) {
      std::fprintf(err, "kinetrace summary: %s\n", withoutKinetracePrefix(error.what()).c_str());
      missing = true;
    }
  }
  return missing || first ? 1 : 0;
}

}  // namespace kinetrace::cli
