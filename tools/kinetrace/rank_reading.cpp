#include "rank_reading.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "support/text.h"

namespace kinetrace::cli {
namespace reading {
namespace {

// An error met while reading or keeping `file` (a temporary file that could not be written,
// say) names the trace it was about.
Error namingFile(const std::string& file, const Error& error) {
  const std::string what = error.what();
  if (what.find(file) != std::string::npos) return error;
  return Error(fmt::format("{}: {}", file, what));
}

}  // namespace

void prepare(kinetrace::detail::RankedCollector& collector, const RankReading& how) {
  if (how.criticalPathEvents) collector.keepCriticalPathEvents();
}

void checkMerged(const std::string& file, std::size_t traces, const RankReading& how) {
  if (how.oneRankOnly.empty()) return;
  throw Error(fmt::format("{}, and {} is a merged trace of {} ranks: give one rank's trace",
                          how.oneRankOnly, file, traces));
}

uint64_t sizeOf(const std::string& file) {
  struct stat status {};
  return ::stat(file.c_str(), &status) == 0 && S_ISREG(status.st_mode)
             ? static_cast<uint64_t>(status.st_size)
             : 0;
}

bool sayOutcome(const std::string& file, bool fromDirectory, bool readFailed, bool refusedForMemory,
                const std::exception_ptr& error, const std::map<std::string, uint64_t>& leftOut,
                bool merged, std::size_t traces, bool quiet, std::vector<std::string>& unread,
                std::FILE* messages) {
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const Error& thrown) {
      const Error named = namingFile(file, thrown);
      // Something else that a directory of traces holds (a report, a JSON config) is said
      // and left out; a trace too large for the budget is an error wherever it is.
      if (!readFailed || !fromDirectory || refusedForMemory) throw named;
      std::fprintf(messages, "kinetrace: skipped %s\n", named.what());
      unread.push_back(named.what());
      return false;
    }
  }
  if (!quiet) {
    for (const auto& [why, count] : leftOut) {
      std::fprintf(messages, "kinetrace: %s: left out %s %s\n", file.c_str(),
                   kinetrace::detail::withThousands(count).c_str(), why.c_str());
    }
    if (merged) {
      std::fprintf(messages, "kinetrace: %s: a merged trace, read as its %zu ranks\n", file.c_str(),
                   traces);
    }
  }
  return true;
}

void runThreads(unsigned jobs, std::size_t files, uint64_t totalBytes,
                const std::atomic<uint64_t>& doneBytes, const RankReading& how, std::FILE* messages,
                const std::function<void(unsigned)>& work) {
  std::mutex mutex;
  std::condition_variable finished;
  unsigned running = jobs;
  std::vector<std::thread> threads;
  for (unsigned j = 0; j < jobs; ++j) {
    threads.emplace_back([&, j] {
      work(j);
      std::lock_guard<std::mutex> lock(mutex);
      --running;
      finished.notify_one();
    });
  }
  ProgressLine progress(messages, fmt::format("reading {} traces, {} at a time", files, jobs),
                        !how.quiet, how.progressFromBytes);
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (!finished.wait_for(lock, std::chrono::milliseconds(200), [&] { return running == 0; })) {
      progress.update(doneBytes.load(), totalBytes);
    }
  }
  progress.done();
  for (std::thread& thread : threads) thread.join();
}

}  // namespace reading

AnalysedRanks analyseFiles(const std::vector<std::string>& files,
                           const std::vector<bool>& fromDirectory, const AnalyzeOptions& options,
                           const kinetrace::detail::AnalysisOptions& analysis,
                           kinetrace::detail::ReadBudget& budget, std::FILE* messages) {
  RankReading how;
  how.rank = options.rank;
  how.jobs = options.jobs;
  how.quiet = options.quiet;
  how.progressFromBytes = options.progressFromBytes;
  how.criticalPathEvents = options.criticalPath;
  if (!options.criticalPathTrace.empty()) {
    how.oneRankOnly = "kinetrace analyze: --critical-path-trace marks one rank's own trace";
  }
  AnalysedRanks result = readRanks<AnalysedRank>(
      files, fromDirectory, how, budget, messages,
      [&](kinetrace::detail::CollectedTrace&& trace, const std::string& file) {
        kinetrace::detail::RankAnalysis rank =
            kinetrace::detail::analyzeRank(std::move(trace), analysis);
        return AnalysedRank{std::move(rank.report), std::move(rank.collectives), file};
      });
  std::stable_sort(
      result.ranks.begin(), result.ranks.end(),
      [](const AnalysedRank& a, const AnalysedRank& b) { return a.report.rank < b.report.rank; });
  return result;
}

}  // namespace kinetrace::cli
