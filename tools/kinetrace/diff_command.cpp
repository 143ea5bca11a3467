#include "diff_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/diff/trace_diff.h"
#include "analysis/read_budget.h"
#include "analyze_command.h"
#include "files.h"
#include "kinetrace/error.h"
#include "output/atomic_file.h"
#include "rank_reading.h"
#include "report_outputs.h"
#include "session/seam.h"
#include "standard_output.h"
#include "support/text.h"

namespace kinetrace::cli {
namespace {

// One run: a name for messages (BASE, NEW), its path, and its ranks' profiles.
struct Run {
  const char* label;
  std::string path;
  std::vector<std::string> files;
  std::vector<bool> fromDirectory;  // a file a directory held: skipped, said, if not a trace
  // The reading threads' budgets, which the ranks' profiles draw on: before the ranks, so
  // destroyed after them.
  std::vector<std::unique_ptr<detail::ReadBudget>> threadBudgets;
  std::vector<detail::RunProfile> ranks;
  std::vector<std::string> unread;
};

Run filesOf(const char* label, const std::string& path, std::FILE* messages, bool quiet) {
  Run run{label, path, {}, {}, {}, {}, {}};
  std::vector<std::string> duplicates;
  const bool directory = isDirectory(path);
  run.files = traceFilesIn(path, &duplicates);
  run.fromDirectory.assign(run.files.size(), directory);
  if (!quiet) {
    for (const std::string& line : duplicates)
      std::fprintf(messages, "kinetrace: skipped %s\n", line.c_str());
  }
  return run;
}

// Reads and profiles each trace of the run, several at a time (rank_reading.h): what a rank
// keeps (its report, its names per step) stays taken from the budget; its records are let go
// once it is profiled.
void readRun(Run& run, const DiffOptions& options, const detail::AnalysisOptions& analysis,
             detail::ReadBudget& budget, std::FILE* messages) {
  RankReading how;
  how.rank = options.rank;
  how.jobs = options.jobs;
  how.quiet = options.quiet;
  how.progressFromBytes = options.progressFromBytes;
  ReadRanks<detail::RunProfile> read =
      readRanks<detail::RunProfile>(run.files, run.fromDirectory, how, budget, messages,
                                    [&](detail::CollectedTrace&& trace, const std::string&) {
                                      return detail::profileRank(std::move(trace), analysis);
                                    });
  run.threadBudgets = std::move(read.threadBudgets);
  run.ranks = std::move(read.ranks);
  run.unread = std::move(read.unread);
  if (run.ranks.empty() && run.unread.size() == run.files.size()) {
    std::string why;
    for (const std::string& line : run.unread) why += "\n  " + line;
    throw Error(fmt::format("{} ({}): no trace could be read among the {} files given:{}",
                            run.label, run.path, run.files.size(), why));
  }
  if (run.ranks.empty()) {
    throw Error(fmt::format("{} ({}): no trace of rank {}", run.label, run.path, options.rank));
  }
}

std::string rankList(const std::vector<detail::RunProfile>& ranks) {
  std::string list;
  for (const detail::RunProfile& r : ranks) {
    list += (list.empty() ? "" : ", ") + (r.rank >= 0 ? std::to_string(r.rank) : "none");
  }
  return list;
}

// The runs' ranks one to one, in rank order. One trace on each side is one run each, whatever
// rank it says; a job's traces are matched by rank number, which each must say once.
void pairRanks(Run& base, Run& after, std::FILE* messages) {
  if (base.ranks.size() == 1 && after.ranks.size() == 1) {
    const int64_t b = base.ranks[0].rank, a = after.ranks[0].rank;
    if (b >= 0 && a >= 0 && b != a) {
      std::fprintf(messages,
                   "kinetrace: BASE says rank %lld and NEW rank %lld: compared as one run each\n",
                   static_cast<long long>(b), static_cast<long long>(a));
    }
    return;
  }
  for (Run* run : {&base, &after}) {
    std::stable_sort(run->ranks.begin(), run->ranks.end(),
                     [](const auto& x, const auto& y) { return x.rank < y.rank; });
    for (std::size_t i = 0; i < run->ranks.size(); ++i) {
      const detail::RunProfile& r = run->ranks[i];
      if (r.rank < 0) {
        throw Error(fmt::format(
            "{} ({}) holds {} traces, and {} says no rank: diff matches a job's traces by their "
            "rank (distributedInfo.rank); give one trace for each run, or --rank N",
            run->label, run->path, run->ranks.size(), r.path));
      }
      if (i > 0 && run->ranks[i - 1].rank == r.rank) {
        throw Error(fmt::format(
            "{}: {} and {} both say they are rank {}: diff matches a job's traces by rank; give "
            "one trace per rank",
            run->label, run->ranks[i - 1].path, r.path, r.rank));
      }
    }
  }
  const bool same = base.ranks.size() == after.ranks.size() &&
                    std::equal(base.ranks.begin(), base.ranks.end(), after.ranks.begin(),
                               [](const auto& x, const auto& y) { return x.rank == y.rank; });
  if (!same) {
    throw Error(fmt::format(
        "the runs' ranks differ: BASE ({}) has rank {} and NEW ({}) rank {}; diff compares a "
        "job's ranks one to one: give --rank N to compare one rank of each",
        base.path, rankList(base.ranks), after.path, rankList(after.ranks)));
  }
}

}  // namespace

int diffCommand(const DiffOptions& options, std::FILE* out, std::FILE* messages) {
  detail::ReadBudget budget(options.memoryBytes);
  Run base = filesOf("BASE", options.base, messages, options.quiet);
  Run after = filesOf("NEW", options.after, messages, options.quiet);
  std::vector<std::string> inputs = base.files;
  inputs.insert(inputs.end(), after.files.begin(), after.files.end());
  for (const std::string& output : {options.jsonOutput, options.htmlOutput}) {
    refuseOutputOverInput(output, inputs, "kinetrace diff");
  }
  ReportOutputs outputs(options.jsonOutput, options.htmlOutput);  // made before the reading
  detail::DiffOptions diff;
  diff.top = options.top;
  diff.analysis.top = options.top;
  diff.analysis.consecutiveKernelNs = options.kernelWaitNs;
  readRun(base, options, diff.analysis, budget, messages);
  readRun(after, options, diff.analysis, budget, messages);
  pairRanks(base, after, messages);

  detail::DiffReport report = detail::diffRuns(base.ranks, after.ranks, diff);
  report.basePath = base.path;
  report.afterPath = after.path;
  outputs.write([&] { return detail::diffJson(report); },
                [&] { return detail::diffHtml(report, diff); },
                [&] { return detail::formatDiff(report, diff); }, out);
  for (const Run* run : {&base, &after}) {
    if (run->unread.empty()) continue;
    std::fprintf(messages,
                 "kinetrace: %s leaves out %zu of the %zu files of %s, which could not be read "
                 "as traces:\n",
                 run->label, run->unread.size(), run->files.size(), run->path.c_str());
    for (const std::string& line : run->unread) std::fprintf(messages, "  %s\n", line.c_str());
  }
  return 0;
}

}  // namespace kinetrace::cli
