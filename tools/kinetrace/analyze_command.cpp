#include "analyze_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"
#include "analysis/trace_reader.h"
#include "files.h"
#include "kinetrace/error.h"
#include "kinetrace/trace.h"
#include "progress.h"
#include "session/seam.h"

namespace kinetrace::cli {
namespace {

bool isTraceName(const std::string& name) {
  for (const char* suffix : {".json", ".json.gz", ".pftrace", ".pftrace.gz", ".perfetto-trace"}) {
    if (endsWith(name, suffix) && !endsWith(name, ".summary.json")) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> traceFilesIn(const std::string& path) {
  if (isRegularFile(path)) return {path};
  if (!isDirectory(path)) throw Error("cannot read " + path + ": no such file or directory");
  std::vector<std::string> files;
  for (const std::string& name : listDirectory(path)) {
    if (isTraceName(name) && isRegularFile(path + "/" + name)) files.push_back(path + "/" + name);
  }
  if (files.empty()) {
    throw Error(path + " holds no traces (.json, .json.gz, .pftrace)");
  }
  return files;
}

int analyzeCommand(const AnalyzeOptions& options, std::FILE* out, std::FILE* messages) {
  std::vector<std::string> files;
  std::vector<bool> fromDirectory;  // a file a directory held, not one named: skipped if no trace
  for (const std::string& path : options.paths) {
    const bool directory = isDirectory(path);
    for (const std::string& file : traceFilesIn(path)) {
      files.push_back(file);
      fromDirectory.push_back(directory);
    }
  }
  detail::AnalysisOptions analysis;
  analysis.top = options.top;
  analysis.tinyKernelNs = options.tinyKernelNs;
  analysis.consecutiveKernelNs = options.kernelWaitNs;

  // Each rank's trace is analysed and let go before the next is read: memory holds one
  // rank's records at a time (within options.memoryBytes, the rest in temporary files),
  // whatever the number of ranks and the length of their traces.
  struct Rank {
    detail::RankReport report;
    detail::RankCollectives collectives;
  };
  std::vector<Rank> ranks;
  for (std::size_t f = 0; f < files.size(); ++f) {
    const std::string& file = files[f];
    detail::TraceCollector collector(file, options.memoryBytes);
    ProgressLine progress(messages, "reading " + file, !options.quiet, options.progressFromBytes);
    detail::ReadReport read;
    try {
      read = detail::readTraceFile(
          file, collector, file,
          [&progress](uint64_t done, uint64_t total) { progress.update(done, total); });
    } catch (const Error& error) {
      progress.done();
      if (!fromDirectory[f]) throw;
      // Something else that a directory of traces holds (a report, a JSON config): said,
      // and left out.
      std::fprintf(messages, "kinetrace: skipped %s\n", error.what());
      continue;
    }
    progress.done();
    for (const auto& [why, count] : read.skipped) {
      if (!options.quiet) {
        std::fprintf(messages, "kinetrace: %s: left out %llu %s\n", file.c_str(),
                     static_cast<unsigned long long>(count), why.c_str());
      }
    }
    detail::CollectedTrace trace = collector.take();
    if (options.rank >= 0 && trace.rank != options.rank) continue;
    detail::RankAnalysis rank = detail::analyzeRank(std::move(trace), analysis);
    ranks.push_back({std::move(rank.report), std::move(rank.collectives)});
  }
  if (ranks.empty()) {
    throw Error(
        fmt::format("no trace of rank {} among the {} traces given", options.rank, files.size()));
  }
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const Rank& a, const Rank& b) { return a.report.rank < b.report.rank; });
  std::vector<detail::RankReport> reports;
  std::vector<detail::RankCollectives> collectives;
  for (Rank& rank : ranks) {
    reports.push_back(std::move(rank.report));
    collectives.push_back(std::move(rank.collectives));
  }
  const detail::AnalysisReport report =
      detail::combineRanks(std::move(reports), collectives, analysis);
  if (!options.jsonOutput.empty()) {
    internal::writeFileAtomically(options.jsonOutput, detail::reportJson(report));
  }
  if (!options.htmlOutput.empty()) {
    internal::writeFileAtomically(options.htmlOutput, detail::reportHtml(report, analysis));
  }
  std::fputs(detail::formatReport(report, analysis).c_str(), out);
  return 0;
}

}  // namespace kinetrace::cli
