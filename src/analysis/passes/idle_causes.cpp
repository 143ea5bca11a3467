#include "analysis/passes/idle_causes.h"

#include <algorithm>

namespace kinetrace::detail::passes {

const char* causeName(Cause cause) {
  switch (cause) {
    case Cause::BeforeFirstOp:
      return "before the first GPU operation";
    case Cause::HostWait:
      return "host wait";
    case Cause::Launch:
      return "launch";
    case Cause::KernelWait:
      return "kernel wait";
    case Cause::OtherWork:
      return "waiting on other work";
    case Cause::Other:
      return "other";
  }
  return "other";
}

Found foundOf(const CollectedSync& sync) {
  Found found;
  found.any = true;
  found.kind = sync.kind;
  found.device = sync.device;
  found.stream = sync.stream;
  found.waitOnStream = sync.waitOnStream;
  return found;
}

std::string describe(const Found& found, bool severalDevices) {
  const char* kind = found.kind == SyncKind::StreamWaitEvent ? "Stream Wait Event"
                     : found.kind == SyncKind::EventSync     ? "Event Sync"
                     : found.kind == SyncKind::StreamSync    ? "Stream Sync"
                     : found.kind == SyncKind::ContextSync   ? "Context Sync"
                                                             : "a synchronisation";
  std::string text = kind;
  const std::string gpu = severalDevices ? "GPU " + std::to_string(found.device) + " " : "";
  if (found.stream >= 0) {
    text += " on " + gpu + "stream " + std::to_string(found.stream);
  } else if (severalDevices) {
    text += " on GPU " + std::to_string(found.device);
  }
  if (found.waitOnStream >= 0) {
    text += " (for stream " + std::to_string(found.waitOnStream) + "'s work)";
  }
  return text;
}

Cause causeOf(const Gap& gap, int64_t consecutiveKernelNs) {
  if (gap.endedByOp && gap.first) return Cause::BeforeFirstOp;
  if (!gap.endedByOp || !gap.hasCall) return Cause::Other;
  if (gap.callStartNs >= gap.start) return Cause::HostWait;
  if (gap.end - gap.start < consecutiveKernelNs) return Cause::KernelWait;
  if (gap.callEndNs > gap.start) return Cause::Launch;
  if (gap.found.any) return Cause::OtherWork;
  return Cause::Other;
}

void addIdle(TimeBreakdown& t, const Gap& gap, int64_t from, int64_t to,
             const Intervals& dataLoading) {
  const int64_t length = to - from;
  t.dataLoadingIdleNs += overlapWith(dataLoading, from, to);
  const Cause cause = gap.cause != Cause::BeforeFirstOp && gap.end > to ? Cause::Other : gap.cause;
  switch (cause) {
    case Cause::BeforeFirstOp:
      t.beforeFirstOpNs += length;
      break;
    case Cause::HostWait: {
      // [gap start, in call) the host was still in an earlier launch call, [in call, call
      // start) host wait, [call start, end) launching.
      const int64_t callStart = std::clamp(gap.callStartNs, from, to);
      const int64_t inCall = std::clamp(
          gap.inCallUntil > gap.start ? std::min(gap.inCallUntil, gap.callStartNs) : gap.start,
          from, callStart);
      t.launchPreviousNs += inCall - from;
      t.hostWaitNs += callStart - inCall;
      t.launchNs += (inCall - from) + (to - callStart);
      break;
    }
    case Cause::Launch:
      t.launchNs += length;
      t.launchQueuedNs += length;
      break;
    case Cause::KernelWait:
      t.kernelWaitNs += length;
      break;
    case Cause::OtherWork:
      t.otherWorkWaitNs += length;
      break;
    case Cause::Other:
      t.otherIdleNs += length;
      break;
  }
}

}  // namespace kinetrace::detail::passes
