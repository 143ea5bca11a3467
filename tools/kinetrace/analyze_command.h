#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "cli_options.h"

namespace kinetrace::detail {
class ReadBudget;
}  // namespace kinetrace::detail

namespace kinetrace::cli {

// The trace files a path names: the path itself (a file, or a pipe), or a directory's
// traces (.json, .json.gz, .pftrace, .pftrace.gz; not summaries or manifests), one per
// trace, sorted: of one trace in several formats (t.json, t.json.gz, t.pftrace) the first
// in that order is read and the others are said in `skipped`. Throws kinetrace::Error when
// the path does not exist or the directory holds none.
std::vector<std::string> traceFilesIn(const std::string& path,
                                      std::vector<std::string>* skipped = nullptr);

// `kinetrace analyze`: reads the traces (any format kinetrace reads), prints the findings
// and the tables on `out`, progress on `messages`, and writes --json. Throws
// kinetrace::Error naming the file and the problem. Returns 0. What it holds in memory is
// within options.memoryBytes (one read budget for the whole command).
int analyzeCommand(const AnalyzeOptions& options, std::FILE* out, std::FILE* messages);
// The same within a budget the caller made (`kinetrace summary`, analysing a trace without
// a summary, draws from its own); options.memoryBytes is not read.
int analyzeWithin(const AnalyzeOptions& options, kinetrace::detail::ReadBudget& budget,
                  std::FILE* out, std::FILE* messages);

}  // namespace kinetrace::cli
