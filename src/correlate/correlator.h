#pragma once

#include "model/trace_data.h"

namespace kinetrace::detail {

// Links what the sources recorded separately, using CUPTI's correlation id (shared by a
// launch call and the GPU operation it started) and the host range id carried by the call:
//  - each GPU operation gets the External id of the innermost range open at its launch;
//  - launch calls and their GPU operations are marked for an ac2g flow;
//  - each range gets one GPU span per (device, stream) its work -- or the work of ranges
//    nested in it -- ran on;
//  - GPU operations that start before their launch call, or whose launch call is missing,
//    are counted (either means the clocks or the capture cannot be trusted).
// `launchCallsRecorded` says whether launch calls were captured at all; without them a
// missing call is expected and not counted.
void correlate(TraceData& trace, bool launchCallsRecorded);

// What the trace itself proves about the offset between GPU and host timestamps
// (offset = GPU timestamp - true host time): GPU work cannot start before its launch call,
// so offset <= min(op start - call start); it cannot end after a synchronisation that
// waited for it returned (the program's stream and context syncs, and kinetrace's own at
// stop), so offset >= max(op end - sync return).
struct ClockOffsetBounds {
  bool hasHigh = false;
  bool hasLow = false;
  int64_t highNs = 0;
  int64_t lowNs = 0;
};
ClockOffsetBounds measureClockOffsetBounds(const TraceData& trace);

}  // namespace kinetrace::detail
