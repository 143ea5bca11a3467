#pragma once

#include <cstdio>

#include "cli_options.h"

namespace kinetrace::cli {

// `kinetrace summary`: prints the summaries of the traces named on `out` (a trace without a
// summary file is analysed as `kinetrace analyze` does), what could not be read on `err`.
// Returns 0, or 1 when one was missing or none was printed.
int summaryCommand(const SummaryOptions& options, std::FILE* out, std::FILE* err);

}  // namespace kinetrace::cli
