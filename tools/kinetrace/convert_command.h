#pragma once

#include <cstdio>

#include "cli_options.h"

namespace kinetrace::cli {

// `kinetrace convert IN OUT`: reads IN (Chrome trace JSON or a kinetrace .pftrace, gzip or
// not) and writes it to OUT in the format OUT's name asks for. Progress on large inputs and
// the report (events written, sizes, events left out and why) go to `messages` (`out`, there
// for the commands' one shape, stays unused). Throws kinetrace::Error naming the file and the
// problem; OUT is then not written. Returns 0.
int convertCommand(const ConvertOptions& options, std::FILE* out, std::FILE* messages);

}  // namespace kinetrace::cli
