#pragma once

#include <cstdio>

#include "cli_options.h"

namespace kinetrace::cli {

// `kinetrace diff BASE NEW`: reads both runs (each a trace or a directory of one job's
// traces, in any format kinetrace reads), profiles each rank as analyze analyses it
// (analysis/diff/run_profile.h), compares the ranks one to one (analysis/diff/trace_diff.h)
// and prints the findings and tables on `out`, progress and what was left out on
// `messages`; writes --json and --html. Throws kinetrace::Error naming the file and the
// problem: a path that does not exist, runs whose ranks differ, a trace that cannot be read.
// Returns 0. What it holds in memory is within options.memoryBytes (one read budget for
// both runs).
int diffCommand(const DiffOptions& options, std::FILE* out, std::FILE* messages);

}  // namespace kinetrace::cli
