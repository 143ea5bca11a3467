#pragma once

#include <string>

#include "kinetrace/config.h"
#include "kinetrace/value.h"
#include "model/trace_data.h"

// The top-level metadata kinetrace writes about each trace, typed. Header: what is known
// when recording starts, in the order readers need it (schemaVersion, then distributedInfo:
// HTA's fast reader stops at "traceEvents" and refuses a trace whose rank it did not see).
// Footer: what is known only at the end (losses, peak memory, devices, clock bounds),
// written after the events.

namespace kinetrace::detail {

// `user` is what Profiler::addMetadata() was given before the start; kinetrace's own keys
// replace user entries of the same name.
Metadata headerMetadata(const Config& config, bool usesTsc, const Metadata& user);

struct FooterFacts {
  std::string gpuStatus;
  Metadata gpuMetadata;  // versions and clock source from the GPU backend
  int64_t hostClockDriftNs = 0;
  uint64_t droppedMetadata = 0;  // addMetadata() entries refused since the last trace
};
// From a finished trace's records, counts and losses; `user` is what addMetadata() was
// given while recording (kinetrace's own keys replace user entries of the same name).
Metadata footerMetadata(const TraceData& trace, const FooterFacts& facts, const Metadata& user);

// Sets key to value in `metadata`, replacing an existing entry in place.
void setMetadata(Metadata& metadata, std::string key, Value value);

}  // namespace kinetrace::detail
