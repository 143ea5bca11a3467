#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

#include "output/sink_losses.h"

// What `convert` and `merge` say on their standard error about the events they did not write
// as they read them: every event left out, by the reader (the output's model has no place for
// it) or by the sink (the output's format cannot place it), and every event changed to fit,
// each with its count. Said even with --quiet: a conversion never loses an event silently.

namespace kinetrace::cli {

// The events read: those handed to the sink and those the reader left out.
uint64_t eventsRead(uint64_t handed, const std::map<std::string, uint64_t>& skipped);
// Of those handed to the sink, the ones it wrote.
uint64_t eventsWritten(uint64_t handed, const detail::SinkLosses& losses);

void sayWhatWasLeftOut(std::FILE* messages, const std::map<std::string, uint64_t>& skipped,
                       const detail::SinkLosses& losses);

}  // namespace kinetrace::cli
