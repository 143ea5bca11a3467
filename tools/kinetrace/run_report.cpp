#include "run_report.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "analysis/read_budget.h"
#include "error_text.h"
#include "files.h"
#include "kinetrace/error.h"
#include "runfiles/trace_naming.h"

namespace kinetrace::cli {
namespace {

using runfiles::ManifestEntry;
using runfiles::ManifestEvent;

bool isIn(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() + 1 && path.compare(0, dir.size() + 1, dir + "/") == 0 &&
         path.find('/', dir.size() + 1) == std::string::npos;
}

std::string oneLine(const RunTrace& trace, const std::string& dir) {
  // Traces elsewhere (a trigger's --output) with their whole path.
  std::string line = "  " + (isIn(trace.path, dir) ? baseName(trace.path) : trace.path);
  if (!trace.hasSummary) return line + "   (no summary)";
  const detail::Summary& s = trace.summary;
  char text[160];
  std::snprintf(
      text, sizeof text, "   %s GPU busy %.1f%%, %llu kernels",
      s.worldSize > 1 && s.rank >= 0 ? ("rank " + std::to_string(s.rank) + ",").c_str() : "",
      s.utilisation * 100.0, static_cast<unsigned long long>(s.kernelCount));
  return line + text;
}

std::string traceList(const std::vector<RunTrace>& traces, const std::string& dir,
                      const RunOptions& options) {
  const bool allInDir = std::all_of(traces.begin(), traces.end(),
                                    [&](const RunTrace& trace) { return isIn(trace.path, dir); });
  std::string text = "kinetrace: " + std::to_string(traces.size()) + " trace" +
                     (traces.size() == 1 ? "" : "s") + (allInDir ? " in " + dir + "/" : "") + "\n";
  for (const RunTrace& trace : traces) text += oneLine(trace, dir) + "\n";
  if (!options.printSummary) return text;
  // One screen: every summary for one or two traces, the first one's for a bigger job.
  std::size_t shown = traces.size() <= 2 ? traces.size() : 1;
  for (std::size_t i = 0; i < shown; ++i) {
    if (traces[i].hasSummary)
      text += "\n" + detail::formatSummary(traces[i].summary, options.topKernels);
  }
  if (shown < traces.size()) {
    text += "\n(kinetrace summary " + dir + "/ prints all " + std::to_string(traces.size()) +
            " summaries)\n";
  }
  return text;
}

std::string whichTrace(const ManifestEntry& entry) {
  return entry.window > 1 ? "the trace of its window " + std::to_string(entry.window)
                          : std::string("its trace");
}

// One line per process that wrote no trace where it meant to, or was not traced; the
// processes whose windows recorded nothing (a launcher, a tool that only counted devices)
// together on one line.
std::string problems(const std::vector<ManifestEntry>& outcomes, const RunRemains& remains) {
  std::string text;
  for (const LeftoverFile& leftover : remains.leftovers) {
    text += "kinetrace: pid " + std::to_string(leftover.pid) +
            " was killed while writing its trace; the part it wrote is left in " + leftover.path +
            "\n";
  }
  for (int64_t pid : remains.stillRunning) {
    text += "kinetrace: pid " + std::to_string(pid) +
            " is still running (started by the program, it outlives it); its trace is "
            "written when it ends, and not reported here\n";
  }
  std::vector<int64_t> empty;
  for (const ManifestEntry& entry : outcomes) {
    const std::string pid = "kinetrace: pid " + std::to_string(entry.pid);
    switch (entry.event) {
      case ManifestEvent::SaveFailed:
        text += pid + " could not save " + whichTrace(entry) + ": " +
                withoutKinetracePrefix(entry.message) + "\n";
        break;
      case ManifestEvent::TracingOff:
        text += pid + " was not traced: " + withoutKinetracePrefix(entry.message) + "\n";
        break;
      case ManifestEvent::NothingRecorded:
        if (std::find(empty.begin(), empty.end(), entry.pid) == empty.end())
          empty.push_back(entry.pid);
        break;
      case ManifestEvent::Saved:
        break;  // listed from the directory, with its summary
    }
  }
  if (!empty.empty()) {
    std::string pids;
    for (int64_t pid : empty) pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
    text += std::string("kinetrace: ") + (empty.size() == 1 ? "pid " : "pids ") + pids +
            " started CUDA but recorded no activity, so wrote no trace\n";
  }
  return text;
}

}  // namespace

namespace {

RunTrace withSummary(std::string path, detail::ReadBudget& budget) {
  RunTrace trace;
  trace.path = std::move(path);
  try {
    // Read as any summary is: a regular file only, within the budget.
    trace.summary = detail::readSummaryFile(runfiles::summaryPathFor(trace.path), budget);
    trace.summary.traceFile = trace.path;
    trace.hasSummary = true;
  } catch (const Error&) {
    // Listed without its summary.
  }
  return trace;
}

}  // namespace

std::vector<RunTrace> tracesOfRun(const std::string& dir, const std::string& runId,
                                  const std::vector<runfiles::ManifestEntry>& outcomes) {
  std::vector<RunTrace> traces;
  // The summaries are small; the default cap of the offline commands bounds them all.
  detail::ReadBudget budget;
  const std::string prefix = "kinetrace-" + runId + "-";
  for (const std::string& name : listDirectory(dir)) {
    const bool isTrace = endsWith(name, ".json") || endsWith(name, ".json.gz") ||
                         endsWith(name, ".pftrace");  // the formats of --format
    if (name.rfind(prefix, 0) != 0 || !isTrace || endsWith(name, ".summary.json")) continue;
    traces.push_back(withSummary(dir + "/" + name, budget));
  }
  for (const ManifestEntry& entry : outcomes) {
    if (entry.event != ManifestEvent::Saved || entry.path.empty()) continue;
    const bool listed = std::any_of(traces.begin(), traces.end(), [&](const RunTrace& trace) {
      return trace.path == entry.path;
    });
    if (!listed && isRegularFile(entry.path)) traces.push_back(withSummary(entry.path, budget));
  }
  return traces;
}

std::vector<LeftoverFile> leftoverFilesOfRun(const std::string& dir, const std::string& runId) {
  std::vector<LeftoverFile> found;
  const std::string prefix = "kinetrace-" + runId + "-";
  for (const std::string& name : listDirectory(dir)) {
    // "<trace>.tmp.<pid>.<hex>", as an atomic save names its temporary file.
    const std::size_t tmp = name.rfind(".tmp.");
    if (name.rfind(prefix, 0) != 0 || tmp == std::string::npos) continue;
    const std::string rest = name.substr(tmp + 5);
    const std::size_t dot = rest.find('.');
    const std::string pidText = rest.substr(0, dot);
    if (dot == std::string::npos || pidText.empty() || pidText.size() > 9 ||
        pidText.find_first_not_of("0123456789") != std::string::npos ||
        rest.find_first_not_of("0123456789abcdefABCDEF", dot + 1) != std::string::npos) {
      continue;
    }
    const int64_t pid = std::stoll(pidText);
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still writing
    found.push_back(LeftoverFile{pid, dir + "/" + name});
  }
  return found;
}

std::string runReport(const std::vector<RunTrace>& traces,
                      const std::vector<runfiles::ManifestEntry>& outcomes, const std::string& dir,
                      const RunOptions& options, const RunRemains& remains) {
  if (traces.empty() && outcomes.empty() && remains.stillRunning.empty() &&
      remains.leftovers.empty()) {
    if (remains.noDriver) {
      return "kinetrace: no trace was written: there is no NVIDIA driver here (see above), so "
             "the program's CUDA calls could not start the tracer. Record host activity "
             "through the C++ API, or run where a GPU and its driver are.\n";
    }
    return std::string(
               "kinetrace: no trace was written. A process is traced from its first CUDA call "
               "(cuInit): this program made none, recorded nothing after it, or was killed "
               "(SIGKILL, a crash) before it could save") +
           (options.setting("delay").empty() ? "" : ", or it ended before --delay passed") + ".\n";
  }
  if (traces.empty())
    return "kinetrace: no trace was written to " + dir + "/\n" + problems(outcomes, remains);
  std::string trouble = problems(outcomes, remains);
  // After the summaries, a blank line, so the problems do not read as part of the last one.
  if (!trouble.empty() && options.printSummary) trouble.insert(0, "\n");
  return traceList(traces, dir, options) + trouble;
}

}  // namespace kinetrace::cli
