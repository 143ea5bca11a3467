#pragma once

#include <cstdio>

#include "cli_options.h"

namespace kinetrace::cli {

// `kinetrace merge TRACE... -o OUT`: the traces of one job (one per rank) as one trace, each
// rank's processes apart and its clock aligned on the NCCL collectives (analysis/trace_merge.h).
// Prints per rank the offset applied and the residual skew to `out`, progress to `messages`.
// Throws kinetrace::Error naming the file and the problem; OUT is then not written.
int mergeCommand(const MergeOptions& options, std::FILE* out, std::FILE* messages);

}  // namespace kinetrace::cli
