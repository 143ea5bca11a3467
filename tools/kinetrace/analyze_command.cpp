#include "analyze_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "analysis/passes/critical_path_marks.h"
#include "analysis/read_budget.h"
#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"
#include "analysis/trace_reader.h"
#include "files.h"
#include "kinetrace/error.h"
#include "kinetrace/trace.h"
#include "left_out.h"
#include "output/atomic_file.h"
#include "output/sink_losses.h"
#include "output/sink_memory.h"
#include "progress.h"
#include "rank_reading.h"
#include "report_outputs.h"
#include "session/seam.h"
#include "standard_output.h"
#include "support/text.h"

namespace kinetrace::cli {
namespace {

// A trace's suffixes, in the order one is preferred when a directory holds one trace in
// several formats (kinetrace run --format both, a converted copy): JSON first, as the
// format every tool reads and the one a trace is recorded in by default.
constexpr const char* kTraceSuffixes[] = {".json", ".json.gz", ".pftrace", ".pftrace.gz",
                                          ".perfetto-trace"};

// The suffix's rank in kTraceSuffixes, or -1 when the name is not a trace's.
int traceSuffixOf(const std::string& name) {
  if (endsWith(name, ".summary.json")) return -1;
  int best = -1;
  for (int i = 0; i < static_cast<int>(std::size(kTraceSuffixes)); ++i) {
    // The longest suffix that fits: ".json.gz" is not ".gz" of something else.
    if (endsWith(name, kTraceSuffixes[i]) &&
        (best < 0 || std::string_view(kTraceSuffixes[i]).size() >
                         std::string_view(kTraceSuffixes[best]).size())) {
      best = i;
    }
  }
  return best;
}

// The trace read again, its critical paths' events and arrows laid over it (--critical-path-
// trace), into `out`.
void writePathTrace(const std::string& file, const AnalyzeOptions& options,
                    detail::CriticalPathMarks& marks, Sink& out, detail::ReadBudget& budget,
                    std::FILE* messages) {
  detail::CriticalPathTraceSink marker(out, marks);
  ProgressLine progress(messages, "marking the critical path on " + file, !options.quiet,
                        options.progressFromBytes);
  const detail::ReadReport report = progress.follow([&](auto onProgress) {
    return detail::readTraceFile(file, marker, options.criticalPathTrace, budget, onProgress);
  });
  const detail::SinkLosses losses = detail::lossesOf(out);
  if (!options.quiet) {
    std::fprintf(messages,
                 "kinetrace: wrote %s: %s of %s events, %s of them on a step's critical path "
                 "marked, and %s arrows\n",
                 outputName(options.criticalPathTrace).c_str(),
                 detail::withThousands(eventsWritten(report.events, losses)).c_str(),
                 detail::withThousands(eventsRead(report.events, report.skipped)).c_str(),
                 detail::withThousands(marker.markedEvents()).c_str(),
                 detail::withThousands(marker.arrows()).c_str());
  }
  // As `kinetrace convert` says them: every event of the input not written, with why.
  sayWhatWasLeftOut(messages, report.skipped, losses);
}

}  // namespace

std::vector<std::string> traceFilesIn(const std::string& path, std::vector<std::string>* skipped) {
  if (isReadableStream(path)) return {path};  // a file, or a pipe: <(zcat t.json.gz)
  if (!isDirectory(path)) throw Error("cannot read " + path + ": no such file or directory");
  // One file per trace: the same trace in two formats would count twice.
  std::map<std::string, std::pair<int, std::string>> byStem;  // stem -> (suffix, name)
  for (const std::string& name : listDirectory(path)) {
    const int suffix = traceSuffixOf(name);
    if (suffix < 0 || !isRegularFile(path + "/" + name)) continue;
    const std::string stem =
        name.substr(0, name.size() - std::string_view(kTraceSuffixes[suffix]).size());
    auto [at, added] = byStem.try_emplace(stem, suffix, name);
    if (added) continue;
    std::string other = name;
    if (suffix < at->second.first) {
      std::swap(other, at->second.second);
      at->second.first = suffix;
    }
    if (skipped != nullptr) {
      skipped->push_back(fmt::format("{}/{}: the same trace as {}/{}, read in its place", path,
                                     other, path, at->second.second));
    }
  }
  std::vector<std::string> files;
  for (const auto& [stem, found] : byStem) files.push_back(path + "/" + found.second);
  if (files.empty()) {
    throw Error(path + " holds no traces (.json, .json.gz, .pftrace)");
  }
  return files;
}

int analyzeCommand(const AnalyzeOptions& options, std::FILE* out, std::FILE* messages) {
  detail::ReadBudget budget(options.memoryBytes);
  return analyzeWithin(options, budget, out, messages);
}

int analyzeWithin(const AnalyzeOptions& options, detail::ReadBudget& budget, std::FILE* out,
                  std::FILE* messages) {
  std::vector<std::string> files;
  std::vector<bool> fromDirectory;  // a file a directory held, not one named: skipped if no trace
  std::vector<std::string> duplicates;
  for (const std::string& path : options.paths) {
    const bool directory = isDirectory(path);
    for (const std::string& file : traceFilesIn(path, &duplicates)) {
      files.push_back(file);
      fromDirectory.push_back(directory);
    }
  }
  for (const std::string& output :
       {options.jsonOutput, options.htmlOutput, options.criticalPathTrace}) {
    refuseOutputOverInput(output, files, "kinetrace analyze");
  }
  if (!options.criticalPathTrace.empty() && (files.size() != 1 || !isRegularFile(files[0]))) {
    throw Error(
        "kinetrace analyze: --critical-path-trace marks the path on the trace it came from: give "
        "one trace file (read twice, so not a pipe)");
  }
  ReportOutputs outputs(options.jsonOutput, options.htmlOutput);  // made before the reading
  std::unique_ptr<Sink> pathTrace;
  if (!options.criticalPathTrace.empty()) {
    pathTrace = openTraceOutput(options.criticalPathTrace);
    detail::drawSinkMemoryFrom(*pathTrace, budget.memory());  // a .pftrace's tracks, within the cap
  }
  if (!options.quiet) {
    for (const std::string& line : duplicates) {
      std::fprintf(messages, "kinetrace: skipped %s\n", line.c_str());
    }
  }
  detail::AnalysisOptions analysis;
  analysis.top = options.top;
  analysis.tinyKernelNs = options.tinyKernelNs;
  analysis.consecutiveKernelNs = options.kernelWaitNs;
  analysis.sequenceLength = options.sequenceLength;
  analysis.sequenceOperator = options.sequenceOperator;
  analysis.maxQueueLength = options.maxQueueLength;
  analysis.criticalPath = options.criticalPath;
  analysis.criticalPathMarks = pathTrace != nullptr;

  // Each file is analysed and let go once its report is made: memory holds the records of
  // the files being read (within the budget, the rest in temporary files), whatever the
  // number of files and the length of their traces; what the ranks' reports keep stays
  // taken from the budget until the end. A merged trace is read as the ranks it holds.
  AnalysedRanks analysed = analyseFiles(files, fromDirectory, options, analysis, budget, messages);
  std::vector<AnalysedRank>& ranks = analysed.ranks;
  const std::vector<std::string>& unread = analysed.unread;
  if (ranks.empty() && analysed.read == 0) {
    std::string why;
    for (const std::string& line : unread) why += "\n  " + line;
    throw Error(
        fmt::format("no trace could be read among the {} files given:{}", files.size(), why));
  }
  if (ranks.empty()) {
    throw Error(
        fmt::format("no trace of rank {} among the {} traces read", options.rank, analysed.read));
  }
  // Two traces that claim one rank are said, as merge says it: a job's analysis (its
  // stragglers, its ranks side by side) wants one trace per rank. Both are still read: the
  // traces of separate runs, or of one process's several windows, all say rank 0 without a
  // launcher's RANK.
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    const AnalysedRank& before = ranks[r - 1];
    if (ranks[r].report.rank >= 0 && ranks[r].report.rank == before.report.rank) {
      std::fprintf(messages,
                   "kinetrace: %s and %s both say they are rank %lld: read as two traces; for "
                   "one job's ranks, give one trace per rank\n",
                   before.file.c_str(), ranks[r].file.c_str(),
                   static_cast<long long>(before.report.rank));
    }
  }
  std::vector<detail::RankReport> reports;
  std::vector<detail::RankCollectives> collectives;
  for (AnalysedRank& rank : ranks) {
    reports.push_back(std::move(rank.report));
    collectives.push_back(std::move(rank.collectives));
  }
  const detail::AnalysisReport report =
      detail::combineRanks(std::move(reports), collectives, analysis);
  if (pathTrace && !report.ranks.empty() && report.ranks.front().criticalPath.marks) {
    writePathTrace(files.front(), options, *report.ranks.front().criticalPath.marks, *pathTrace,
                   budget, messages);
  }
  outputs.write([&] { return detail::reportJson(report); },
                [&] { return detail::reportHtml(report, analysis); },
                [&] { return detail::formatReport(report, analysis); }, out);
  // Said again after the report, where it is read: its figures leave these files out.
  if (!unread.empty()) {
    std::fprintf(messages,
                 "kinetrace: the report leaves out %zu of the %zu files given, which "
                 "could not be read as traces:\n",
                 unread.size(), files.size());
    for (const std::string& line : unread) std::fprintf(messages, "  %s\n", line.c_str());
  }
  return 0;
}

}  // namespace kinetrace::cli
