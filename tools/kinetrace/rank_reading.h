#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "analysis/ranked_collector.h"
#include "analysis/read_budget.h"
#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"
#include "analysis/trace_reader.h"
#include "cli_options.h"
#include "kinetrace/error.h"
#include "progress.h"

// Reading a job's traces, several at a time, for the commands that analyse them (analyze,
// diff): each file's ranks made into what the command keeps of a rank (an analysis, a
// profile), in the files' order whatever order the threads finish in.

namespace kinetrace::cli {

// How the files are read.
struct RankReading {
  int64_t rank = -1;  // keep only that rank's traces; -1: all
  unsigned jobs = 0;  // files read at once; 0: one per core
  bool quiet = false;
  uint64_t progressFromBytes = uint64_t{32} << 20;
  bool criticalPathEvents = false;  // the collector keeps the critical path's events
  // Non-empty: a merged trace is refused, this saying what needs one rank's own trace
  // ("kinetrace analyze: --critical-path-trace marks one rank's own trace").
  std::string oneRankOnly;
};

template <typename Kept>
struct ReadRanks {
  // The reading threads' budgets, which the ranks read by them still draw on: declared
  // before the ranks, so destroyed after them.
  std::vector<std::unique_ptr<kinetrace::detail::ReadBudget>> threadBudgets;
  std::vector<Kept> ranks;          // in the files' order, a merged trace's ranks in its order
  std::vector<std::string> unread;  // why each file of a directory left out was not a trace
  std::size_t read = 0;             // files read, whatever their ranks
};

namespace reading {

// What reading one file came to, kept until it is said in the files' order.
template <typename Kept>
struct FileOutcome {
  std::vector<Kept> ranks;
  std::map<std::string, uint64_t> leftOut;  // the reader's and the collector's, by reason
  std::size_t traces = 0;                   // ranks the file held
  bool merged = false;
  bool readFailed = false;  // the file could not be read as a trace (else: keeping failed)
  bool refusedForMemory = false;
  std::exception_ptr error;
};

// The collector of one file, set up as `how` asks.
void prepare(kinetrace::detail::RankedCollector& collector, const RankReading& how);
// Refuses a merged trace where one rank's own is needed.
void checkMerged(const std::string& file, std::size_t traces, const RankReading& how);
uint64_t sizeOf(const std::string& file);
// Says a file's outcome (what it left out, a merged trace) and takes the error it met: a
// file of a directory that is no trace is said and counted in `unread` (returns false);
// any other error is thrown, naming the file. Returns whether the file was read.
bool sayOutcome(const std::string& file, bool fromDirectory, bool readFailed, bool refusedForMemory,
                const std::exception_ptr& error, const std::map<std::string, uint64_t>& leftOut,
                bool merged, std::size_t traces, bool quiet, std::vector<std::string>& unread,
                std::FILE* messages);
// Runs work(j) on `jobs` threads and shows one progress line, of `files`' bytes done
// (doneBytes), until all return.
void runThreads(unsigned jobs, std::size_t files, uint64_t totalBytes,
                const std::atomic<uint64_t>& doneBytes, const RankReading& how, std::FILE* messages,
                const std::function<void(unsigned)>& work);

// Reads `file` within `budget` and keeps each selected rank as keep(trace, file) makes it.
template <typename Kept, typename Keep>
FileOutcome<Kept> readFile(const std::string& file, const RankReading& how,
                           kinetrace::detail::ReadBudget& budget, ProgressLine* progress,
                           Keep& keep) {
  namespace kt = kinetrace::detail;
  FileOutcome<Kept> outcome;
  try {
    kt::RankedCollector collector(file, budget);
    prepare(collector, how);
    const auto read = [&](const kt::ReadProgress& onProgress) {
      return kt::readTraceFile(file, collector, file, budget, onProgress);
    };
    kt::ReadReport report;
    try {
      report = progress != nullptr ? progress->follow(read) : read({});
    } catch (...) {
      outcome.readFailed = true;
      throw;
    }
    outcome.leftOut = report.skipped;
    outcome.merged = collector.merged();
    std::vector<kt::CollectedTrace> traces = collector.take();
    outcome.traces = traces.size();
    if (outcome.merged) checkMerged(file, traces.size(), how);
    for (const kt::CollectedTrace& trace : traces) {
      for (const auto& [why, count] : trace.leftOut) outcome.leftOut[why] += count;
    }
    for (kt::CollectedTrace& trace : traces) {
      if (how.rank >= 0 && trace.rank != how.rank) continue;
      const kt::ReadBudget::Reading reading(budget, file);
      outcome.ranks.push_back(keep(std::move(trace), file));
    }
  } catch (const kt::BudgetRefusal&) {
    outcome.refusedForMemory = true;
    outcome.ranks.clear();
    outcome.error = std::current_exception();
  } catch (const Error&) {
    outcome.ranks.clear();
    outcome.error = std::current_exception();
  }
  return outcome;
}

}  // namespace reading

// Reads each file (a merged trace as the ranks it holds) and keeps each rank `how` selects
// as keep(CollectedTrace&&, file) makes it (which may throw kinetrace::Error). Files are read
// how.jobs at a time (0: one per core), each thread with a budget of its own drawing on
// `budget`'s counters: --memory-mb caps them together. A file refused for memory while
// others were read beside it is read again alone at the end, so what fits in the budget read
// alone is kept whatever ran beside it. Messages (what each file left out, a merged trace)
// are said on `messages` in the files' order, as a reading one file at a time says them.
//
// A file that cannot be read throws kinetrace::Error naming it, unless a directory held it
// (fromDirectory) and it is no trace: then it is said, counted in `unread`, and left out. A
// trace that needs more than the budget throws wherever it is.
template <typename Kept, typename Keep>
ReadRanks<Kept> readRanks(const std::vector<std::string>& files,
                          const std::vector<bool>& fromDirectory, const RankReading& how,
                          kinetrace::detail::ReadBudget& budget, std::FILE* messages, Keep keep) {
  ReadRanks<Kept> result;
  unsigned jobs = how.jobs != 0 ? how.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = static_cast<unsigned>(std::min<std::size_t>(jobs, files.size()));
  std::vector<reading::FileOutcome<Kept>> outcomes(files.size());
  if (jobs > 1) {
    uint64_t totalBytes = 0;
    for (const std::string& file : files) totalBytes += reading::sizeOf(file);
    std::atomic<std::size_t> next{0};
    std::atomic<uint64_t> doneBytes{0};
    for (unsigned j = 0; j < jobs; ++j) {
      result.threadBudgets.push_back(
          std::make_unique<kinetrace::detail::ReadBudget>(budget.memory()));
    }
    reading::runThreads(jobs, files.size(), totalBytes, doneBytes, how, messages, [&](unsigned j) {
      for (std::size_t f = next++; f < files.size(); f = next++) {
        outcomes[f] =
            reading::readFile<Kept>(files[f], how, *result.threadBudgets[j], nullptr, keep);
        doneBytes += reading::sizeOf(files[f]);
      }
    });
  }
  for (std::size_t f = 0; f < files.size(); ++f) {
    reading::FileOutcome<Kept>& outcome = outcomes[f];
    // Read alone: one at a time, or again after a refusal for memory met beside others.
    if (jobs <= 1 || outcome.refusedForMemory) {
      ProgressLine progress(messages, "reading " + files[f], !how.quiet, how.progressFromBytes);
      outcome = reading::readFile<Kept>(files[f], how, budget, &progress, keep);
    }
    if (!reading::sayOutcome(files[f], fromDirectory[f], outcome.readFailed,
                             outcome.refusedForMemory, outcome.error, outcome.leftOut,
                             outcome.merged, outcome.traces, how.quiet, result.unread, messages)) {
      continue;
    }
    ++result.read;
    for (Kept& rank : outcome.ranks) result.ranks.push_back(std::move(rank));
  }
  return result;
}

// analyze's reading: each rank analysed (analyzeRank).
struct AnalysedRank {
  kinetrace::detail::RankReport report;
  kinetrace::detail::RankCollectives collectives;
  std::string file;  // where the rank came from, to name it when two files claim it
};
using AnalysedRanks = ReadRanks<AnalysedRank>;

// readRanks of analyze's options, each rank analysed; the ranks sorted by rank number,
// files' order among equals.
AnalysedRanks analyseFiles(const std::vector<std::string>& files,
                           const std::vector<bool>& fromDirectory, const AnalyzeOptions& options,
                           const kinetrace::detail::AnalysisOptions& analysis,
                           kinetrace::detail::ReadBudget& budget, std::FILE* messages);

}  // namespace kinetrace::cli
