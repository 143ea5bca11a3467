#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/summary.h"
#include "cli_options.h"
#include "runfiles/run_manifest.h"

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

// The traces of run `runId` in `dir`, in name order, then those the manifest says were saved
// elsewhere (a trigger's --output, a nested run's directory) that are there.
std::vector<RunTrace> tracesOfRun(const std::string& dir, const std::string& runId,
                                  const std::vector<runfiles::ManifestEntry>& outcomes = {});

// A temporary file a process of the run was writing its trace to when it was killed.
struct LeftoverFile {
  int64_t pid = 0;
  std::string path;
};
// Those of run `runId` in `dir` whose process is gone (none with a live pid).
std::vector<LeftoverFile> leftoverFilesOfRun(const std::string& dir, const std::string& runId);

// What the run left besides the traces and the manifest's outcomes.
struct RunRemains {
  std::vector<int64_t> stillRunning;  // traced processes that outlive the program
  std::vector<LeftoverFile> leftovers;
  bool noDriver = false;  // the NVIDIA driver could not be loaded (said before the run)
};

// The report, from the traces found and the outcomes the processes entered in the run
// manifest (in the order they were entered). "The program made no CUDA call" is said only
// when there is neither a trace nor an outcome nor a process still running or killed.
std::string runReport(const std::vector<RunTrace>& traces,
                      const std::vector<runfiles::ManifestEntry>& outcomes, const std::string& dir,
                      const RunOptions& options, const RunRemains& remains = {});

}  // namespace kinetrace::cli
