#include "rank_reading.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "analysis/ranked_collector.h"
#include "analysis/trace_reader.h"
#include "kinetrace/error.h"
#include "progress.h"
#include "support/text.h"

namespace kinetrace::cli {
namespace {

namespace kt = kinetrace::detail;

// An error met while reading or analysing `file` (a temporary file that could not be
// written, say) names the trace it was about.
Error namingFile(const std::string& file, const Error& error) {
  const std::string what = error.what();
  if (what.find(file) != std::string::npos) return error;
  return Error(fmt::format("{}: {}", file, what));
}

// What reading and analysing one file came to, kept until it is said in the files' order.
struct FileOutcome {
  std::vector<AnalysedRank> ranks;
  std::map<std::string, uint64_t> leftOut;  // the reader's and the collector's, by reason
  std::size_t traces = 0;                   // ranks the file held
  bool merged = false;
  bool readFailed = false;  // the file could not be read as a trace (else: analysis failed)
  bool refusedForMemory = false;
  std::exception_ptr error;
};

// Reads and analyses `file` within `budget`; `progress` (may be null) follows its reading.
FileOutcome analyseFile(const std::string& file, const AnalyzeOptions& options,
                        const kt::AnalysisOptions& analysis, kt::ReadBudget& budget,
                        ProgressLine* progress) {
  FileOutcome outcome;
  try {
    kt::RankedCollector collector(file, budget);
    if (options.criticalPath) collector.keepCriticalPathEvents();
    const auto read = [&](const kt::ReadProgress& onProgress) {
      return kt::readTraceFile(file, collector, file, budget, onProgress);
    };
    kt::ReadReport readReport;
    try {
      readReport = progress != nullptr ? progress->follow(read) : read({});
    } catch (...) {
      outcome.readFailed = true;
      throw;
    }
    outcome.leftOut = readReport.skipped;
    outcome.merged = collector.merged();
    std::vector<kt::CollectedTrace> traces = collector.take();
    outcome.traces = traces.size();
    if (!options.criticalPathTrace.empty() && collector.merged()) {
      throw Error(fmt::format(
          "kinetrace analyze: --critical-path-trace marks one rank's own trace, and {} is a "
          "merged trace of {} ranks: give one rank's trace",
          file, traces.size()));
    }
    for (const kt::CollectedTrace& trace : traces) {
      for (const auto& [why, count] : trace.leftOut) outcome.leftOut[why] += count;
    }
    for (kt::CollectedTrace& trace : traces) {
      if (options.rank >= 0 && trace.rank != options.rank) continue;
      const kt::ReadBudget::Reading reading(budget, file);
      kt::RankAnalysis rank = kt::analyzeRank(std::move(trace), analysis);
      outcome.ranks.push_back({std::move(rank.report), std::move(rank.collectives), file});
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

uint64_t sizeOf(const std::string& file) {
  struct stat status {};
  return ::stat(file.c_str(), &status) == 0 && S_ISREG(status.st_mode)
             ? static_cast<uint64_t>(status.st_size)
             : 0;
}

// Reads files `jobs` at a time, each thread within a budget of its own on `budget`'s
// counters; shows one progress line for them all (bytes of the files done).
std::vector<FileOutcome> analyseTogether(const std::vector<std::string>& files, unsigned jobs,
                                         const AnalyzeOptions& options,
                                         const kt::AnalysisOptions& analysis,
                                         kt::ReadBudget& budget, AnalysedRanks& result,
                                         std::FILE* messages) {
  std::vector<FileOutcome> outcomes(files.size());
  uint64_t totalBytes = 0;
  for (const std::string& file : files) totalBytes += sizeOf(file);
  std::atomic<std::size_t> next{0};
  std::atomic<uint64_t> doneBytes{0};
  std::mutex mutex;
  std::condition_variable finished;
  unsigned running = jobs;
  for (unsigned j = 0; j < jobs; ++j) {
    result.threadBudgets.push_back(std::make_unique<kt::ReadBudget>(budget.memory()));
  }
  std::vector<std::thread> threads;
  for (unsigned j = 0; j < jobs; ++j) {
    kt::ReadBudget& own = *result.threadBudgets[j];
    threads.emplace_back([&, &own = own] {
      for (std::size_t f = next++; f < files.size(); f = next++) {
        outcomes[f] = analyseFile(files[f], options, analysis, own, nullptr);
        doneBytes += sizeOf(files[f]);
      }
      std::lock_guard<std::mutex> lock(mutex);
      --running;
      finished.notify_one();
    });
  }
  ProgressLine progress(messages,
                        fmt::format("reading {} traces, {} at a time", files.size(), jobs),
                        !options.quiet, options.progressFromBytes);
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (!finished.wait_for(lock, std::chrono::milliseconds(200), [&] { return running == 0; })) {
      progress.update(doneBytes.load(), totalBytes);
    }
  }
  progress.done();
  for (std::thread& thread : threads) thread.join();
  return outcomes;
}

}  // namespace

AnalysedRanks analyseFiles(const std::vector<std::string>& files,
                           const std::vector<bool>& fromDirectory, const AnalyzeOptions& options,
                           const kt::AnalysisOptions& analysis, kt::ReadBudget& budget,
                           std::FILE* messages) {
  AnalysedRanks result;
  unsigned jobs =
      options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = static_cast<unsigned>(std::min<std::size_t>(jobs, files.size()));
  std::vector<FileOutcome> outcomes;
  if (jobs > 1) {
    outcomes = analyseTogether(files, jobs, options, analysis, budget, result, messages);
  } else {
    outcomes.resize(files.size());
  }
  for (std::size_t f = 0; f < files.size(); ++f) {
    const std::string& file = files[f];
    FileOutcome& outcome = outcomes[f];
    // Read alone: one at a time, or again after a refusal for memory met beside others.
    if (jobs <= 1 || outcome.refusedForMemory) {
      ProgressLine progress(messages, "reading " + file, !options.quiet, options.progressFromBytes);
      outcome = analyseFile(file, options, analysis, budget, &progress);
    }
    if (outcome.error) {
      try {
        std::rethrow_exception(outcome.error);
      } catch (const Error& thrown) {
        const Error error = namingFile(file, thrown);
        // Something else that a directory of traces holds (a report, a JSON config) is
        // said and left out; a trace too large for the budget is an error wherever it is.
        if (!outcome.readFailed || !fromDirectory[f] || outcome.refusedForMemory) throw error;
        std::fprintf(messages, "kinetrace: skipped %s\n", error.what());
        result.unread.push_back(error.what());
        continue;
      }
    }
    ++result.read;
    if (!options.quiet) {
      for (const auto& [why, count] : outcome.leftOut) {
        std::fprintf(messages, "kinetrace: %s: left out %s %s\n", file.c_str(),
                     kt::withThousands(count).c_str(), why.c_str());
      }
      if (outcome.merged) {
        std::fprintf(messages, "kinetrace: %s: a merged trace, read as its %zu ranks\n",
                     file.c_str(), outcome.traces);
      }
    }
    for (AnalysedRank& rank : outcome.ranks) result.ranks.push_back(std::move(rank));
  }
  std::stable_sort(
      result.ranks.begin(), result.ranks.end(),
      [](const AnalysedRank& a, const AnalysedRank& b) { return a.report.rank < b.report.rank; });
  return result;
}

}  // namespace kinetrace::cli
