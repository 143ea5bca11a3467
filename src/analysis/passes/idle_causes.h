#pragma once

#include <cstdint>
#include <string>
#include <tuple>

#include "analysis/passes/analysis_common.h"
#include "analysis/trace_collector.h"

// Why a device was idle: each gap in its busy time classed by the operation that ended it,
// and its time split into the idle causes of trace_analysis.h (host wait, launch, kernel
// wait, waiting on other work, other). Pure: the time pass (time_pass.h) finds the gaps and
// what was around them; these say what that means.

namespace kinetrace::detail::passes {

enum class Cause { BeforeFirstOp, HostWait, Launch, KernelWait, OtherWork, Other };

// "host wait", "waiting on other work", ...: GapReport::cause.
const char* causeName(Cause cause);

// What a queued operation was found waiting on, or the host was in: a synchronisation
// record.
struct Found {
  bool any = false;
  SyncKind kind = SyncKind::Other;
  int64_t device = 0;
  int64_t stream = -1;
  int64_t waitOnStream = -1;
  bool operator<(const Found& o) const {
    return std::tie(any, kind, device, stream, waitOnStream) <
           std::tie(o.any, o.kind, o.device, o.stream, o.waitOnStream);
  }
};

Found foundOf(const CollectedSync& sync);

// "Stream Wait Event on stream 7 (for stream 12's work)", "Context Sync on GPU 1": the GPU
// named only when the trace has several.
std::string describe(const Found& found, bool severalDevices);

// A stretch of a device's idle time, and the operation that ended it (none: the stretch
// after the last one).
struct Gap {
  int64_t start = 0;
  int64_t end = 0;
  bool endedByOp = false;
  bool first = false;    // before the device's first operation
  uint32_t endedBy = 0;  // its name
  bool hasCall = false;  // whether that operation's launch call is known
  int64_t callStartNs = 0;
  int64_t callEndNs = 0;
  int64_t callTid = 0;
  Found found;     // what a queued operation was found waiting on
  Found hostSync;  // for host wait: the sync the host was in when the gap opened
  // For host wait: the launch call (of an operation that already ran) the launching thread
  // was still in when the gap opened; inCallUntil 0: none.
  int64_t inCallStart = 0;
  int64_t inCallUntil = 0;
  uint32_t inCallOf = 0;
  Cause cause = Cause::Other;
};

// Why the device was idle in `gap` (the definitions in trace_analysis.h); a queued
// operation's gap shorter than `consecutiveKernelNs` is kernel wait.
Cause causeOf(const Gap& gap, int64_t consecutiveKernelNs);

// Adds the part [from, to) of `gap` within a window (the trace's, a step's) to its idle
// causes: by the operation that ended the gap, if it ends within the window (else other);
// the time before the first operation whatever the window. `dataLoading` (sorted, merged):
// the data-loading ranges, whose overlap is counted apart.
void addIdle(TimeBreakdown& t, const Gap& gap, int64_t from, int64_t to,
             const Intervals& dataLoading);

}  // namespace kinetrace::detail::passes
