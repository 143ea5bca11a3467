#pragma once

#include <cstdio>
#include <string>

#include "cli_options.h"

namespace kinetrace::cli {

// `kinetrace trigger`: asks the processes named to record now (runfiles/trigger_channel.h).
// Prints each process's answer to `out`; `err` stays unused (a refusal is an answer).
// Returns 0 when every process accepted, 1 when one refused or could not be reached; throws
// UsageError for a bad --config file.
int triggerCommand(const TriggerOptions& options, std::FILE* out, std::FILE* err);

// libkineto's on-demand configuration keys in `text` applied to `options` where the
// command line left them unset: ACTIVITIES_DURATION_SECS, ACTIVITIES_DURATION_MSECS,
// ACTIVITIES_ITERATIONS (steps), ACTIVITIES_LOG_FILE, PROFILE_START_TIME (ms since the
// epoch; sets the start), PROFILE_START_ITERATION (the first step). Other keys are listed
// in `ignored`. Throws UsageError naming a bad value.
void applyLibkinetoConfig(const std::string& text, TriggerOptions* options, int64_t* startAtNs,
                          std::string* ignored);

}  // namespace kinetrace::cli
