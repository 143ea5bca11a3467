#pragma once

#include <string>
#include <vector>

#include "analysis/summary.h"
#include "cli_options.h"
#include "inject/run_manifest.h"

// What `kinetrace run` prints once the program has exited: the traces its processes wrote,
// their summaries, and what went wrong where a process wrote none. Built as text, so each
// case is a unit test.

namespace kinetrace::cli {

// One trace of the run, with its summary when the summary could be read.
struct RunTrace {
  std::string path;
  bool hasSummary = false;
  detail::Summary summary;
};

// The traces of run `runId` in `dir`, in name order.
std::vector<RunTrace> tracesOfRun(const std::string& dir, const std::string& runId);

// The report, from the traces found and the outcomes the processes entered in the run
// manifest (in the order they were entered). "The program made no CUDA call" is said only
// when there is neither a trace nor an outcome.
std::string runReport(const std::vector<RunTrace>& traces,
                      const std::vector<inject::ManifestEntry>& outcomes, const std::string& dir,
                      const RunOptions& options);

}  // namespace kinetrace::cli
