#include "run_report.h"

#include <algorithm>
#include <cstdio>

#include "error_text.h"
#include "files.h"
#include "inject/trace_naming.h"
#include "kinetrace/error.h"

namespace kinetrace::cli {
namespace {

using inject::ManifestEntry;
using inject::ManifestEvent;

std::string oneLine(const RunTrace& trace) {
  std::string line = "  " + baseName(trace.path);
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
  std::string text = "kinetrace: " + std::to_string(traces.size()) + " trace" +
                     (traces.size() == 1 ? "" : "s") + " in " + dir + "/\n";
  for (const RunTrace& trace : traces) text += oneLine(trace) + "\n";
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
std::string problems(const std::vector<ManifestEntry>& outcomes) {
  std::string text;
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

std::vector<RunTrace> tracesOfRun(const std::string& dir, const std::string& runId) {
  std::vector<RunTrace> traces;
  const std::string prefix = "kinetrace-" + runId + "-";
  for (const std::string& name : listDirectory(dir)) {
    const bool isTrace = endsWith(name, ".json") || endsWith(name, ".json.gz") ||
                         endsWith(name, ".pftrace");  // the formats of --format
    if (name.rfind(prefix, 0) != 0 || !isTrace || endsWith(name, ".summary.json")) continue;
    RunTrace trace;
    trace.path = dir + "/" + name;
    std::string text = readFile(inject::summaryPathFor(trace.path));
    if (!text.empty()) {
      try {
        trace.summary = detail::summaryFromJson(text);
        trace.summary.traceFile = trace.path;
        trace.hasSummary = true;
      } catch (const Error&) {
        // Listed without its summary.
      }
    }
    traces.push_back(std::move(trace));
  }
  return traces;
}

std::string runReport(const std::vector<RunTrace>& traces,
                      const std::vector<inject::ManifestEntry>& outcomes, const std::string& dir,
                      const RunOptions& options) {
  if (traces.empty() && outcomes.empty()) {
    return std::string(
               "kinetrace: no trace was written. A process is traced from its first CUDA call "
               "(cuInit): this program made none, recorded nothing after it, or was killed "
               "(SIGKILL, a crash) before it could save") +
           (options.delay.empty() ? "" : ", or it ended before --delay passed") + ".\n";
  }
  if (traces.empty())
    return "kinetrace: no trace was written to " + dir + "/\n" + problems(outcomes);
  std::string trouble = problems(outcomes);
  // After the summaries, a blank line, so the problems do not read as part of the last one.
  if (!trouble.empty() && options.printSummary) trouble.insert(0, "\n");
  return traceList(traces, dir, options) + trouble;
}

}  // namespace kinetrace::cli
