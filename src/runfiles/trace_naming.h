#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kinetrace/config.h"

// File names for the traces the CUDA injection writes: one per traced process and recording
// window, unique across the processes and ranks of a run and across hosts sharing a file
// system:
//
//   kinetrace[-<run id>][-rank<R>][-local<L>]-<host>-pid<P>[-w<N>].json
//
// (or .json.gz or .pftrace, per the trace format).
//
// RANK and LOCAL_RANK are what launchers such as torchrun set for each worker; -w<N> marks
// the second and later windows of one process (cudaProfilerStart/Stop called repeatedly).
// Every part is reduced to [A-Za-z0-9._-], so a name is always a plain file name.

namespace kinetrace::runfiles {

struct TraceNaming {
  std::string runId;
  std::string host;
  int64_t pid = 0;
  std::optional<std::string> rank;         // RANK, when set
  std::optional<std::string> localRank;    // LOCAL_RANK, when set
  TraceFormat format = TraceFormat::Json;  // Config::traceFormat
};

// The naming of the calling process: hostname, getpid(), RANK and LOCAL_RANK.
TraceNaming namingFromEnvironment(std::string runId);

// The trace's file name for a recording window (1 for the first).
std::string traceFileName(const TraceNaming& naming, int window = 1);

// Where a trace's summary goes: "x.json" (or "x.json.gz", "x.pftrace") -> "x.summary.json".
std::string summaryPathFor(const std::string& tracePath);

// Whether a directory entry is a summary of the given run ("" matches every run).
bool isSummaryOfRun(std::string_view fileName, std::string_view runId);

// Keeps [A-Za-z0-9._-], replaces anything else with '_', caps the length.
std::string sanitizeNamePart(std::string_view text, std::size_t maxLength = 64);

}  // namespace kinetrace::runfiles
