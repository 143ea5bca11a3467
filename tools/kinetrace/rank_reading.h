#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analysis/read_budget.h"
#include "analysis/trace_analysis.h"
#include "cli_options.h"

namespace kinetrace::cli {

// One rank's analysis, and the file it came from (to name it when two files claim a rank).
struct AnalysedRank {
  kinetrace::detail::RankReport report;
  kinetrace::detail::RankCollectives collectives;
  std::string file;
};

struct AnalysedRanks {
  // The reading threads' budgets, which the ranks read by them still draw on: declared
  // before the ranks, so destroyed after them.
  std::vector<std::unique_ptr<kinetrace::detail::ReadBudget>> threadBudgets;
  // By rank, files' order among equals. Their memory stays taken from the budget.
  std::vector<AnalysedRank> ranks;
  std::vector<std::string> unread;  // why each file of a directory left out was not a trace
  std::size_t read = 0;             // files read, whatever their ranks
};

// Reads and analyses each file (a merged trace as the ranks it holds), keeping the ranks
// options.rank selects (-1: all). Files are read options.jobs at a time (0: one per core),
// each thread with a budget of its own drawing on `budget`'s counters: --memory-mb caps them
// together. A file refused for memory while others were read beside it is read again alone
// at the end, so what fits in the budget read alone is analysed whatever ran beside it.
// Messages (what each file left out, a merged trace) are said on `messages` in the files'
// order, as a reading one file at a time would say them.
//
// A file that cannot be read throws kinetrace::Error naming it, unless a directory held it
// (fromDirectory) and it is no trace: then it is said, counted in `unread`, and left out. A
// trace that needs more than the budget throws wherever it is.
AnalysedRanks analyseFiles(const std::vector<std::string>& files,
                           const std::vector<bool>& fromDirectory, const AnalyzeOptions& options,
                           const kinetrace::detail::AnalysisOptions& analysis,
                           kinetrace::detail::ReadBudget& budget, std::FILE* messages);

}  // namespace kinetrace::cli
