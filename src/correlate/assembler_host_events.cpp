// The Assembler's host side (assembler.h): host events as HostRecorder::drain hands them
// over. The window filter on them; ranges paired from begin and end on their thread, async
// ranges from begin and end on any; API calls named and, when their GPU records are
// collected, left waiting for them in PendingCalls. Table entries are HostTableWriter's.

#include <algorithm>
#include <iterator>

#include "correlate/assembler.h"

namespace kinetrace::detail {
namespace {

// Ends of async ranges that began before the recording are kept this long in case their
// begin is still to be drained, then dropped.
constexpr int64_t kEarlyEndGraceNs = 2'000'000'000;

}  // namespace

void Assembler::onThread(uint32_t instance, int64_t tid, std::string_view name) {
  hostTables_.onThread(instance, tid, name);
}

void Assembler::onRangeBegin(uint32_t instance, int64_t timeNs, uint64_t id, HostName name) {
  if (!inWindow(timeNs)) {
    ++losses_.outOfWindowEvents;
    return;
  }
  auto& stack = openRanges_[instance];
  const uint64_t parent = stack.empty() ? 0 : stack.back().id;
  const StringId nameId = hostTables_.intern(name);
  stack.push_back(OpenRange{timeNs, id, nameId});
  const uint32_t args = hostTables_.keepArgs(name.text, name.args, id);
  if (isNcclRange(name.text)) {
    ncclGroups_.onRange(instance, name.text.substr(kNcclRangePrefix.size()), id, args);
  }
  if (!collectsSpans()) return;
  rangeSpans_.onBegin(id, parent, nameId);
}

void Assembler::closeRange(uint32_t thread, const OpenRange& open, int64_t endNs, uint64_t parentId,
                           bool unfinished) {
  RangeRecord r;
  r.startNs = open.startNs;
  r.endNs = endNs;
  r.externalId = open.id;
  r.parentId = parentId;
  r.name = open.name;
  r.thread = thread;
  r.unfinished = unfinished;
  if (unfinished) ++losses_.unfinishedRanges;
  ready_.ranges.push_back(r);
  rangeSpans_.onEnd(open.id, endNs);
}

void Assembler::onRangeEnd(uint32_t instance, int64_t timeNs, uint64_t id) {
  // After the stop the range is still open at the stop: finish() ends it there.
  if (timeNs > stopNs_) return;
  auto found = openRanges_.find(instance);
  if (found == openRanges_.end() || found->second.empty()) return;
  auto& stack = found->second;
  // The end names its range; ranges above it on the stack lost their ends (the memory cap
  // dropped them) and end here too, marked unfinished. An id not on the stack belongs to a
  // range whose begin was dropped: nothing to close.
  if (id != 0 &&
      std::none_of(stack.begin(), stack.end(), [id](const OpenRange& o) { return o.id == id; })) {
    return;
  }
  const uint32_t thread = hostTables_.threadOf(instance);
  while (!stack.empty()) {
    OpenRange open = stack.back();
    stack.pop_back();
    const uint64_t parent = stack.empty() ? 0 : stack.back().id;
    const bool matched = id == 0 || open.id == id;
    closeRange(thread, open, timeNs, parent, !matched);
    if (matched) break;
  }
}

void Assembler::onInstant(uint32_t instance, int64_t timeNs, HostName name) {
  if (!inWindow(timeNs)) {
    ++losses_.outOfWindowEvents;
    return;
  }
  ready_.instants.push_back(InstantRecord{timeNs, hostTables_.intern(name),
                                          hostTables_.threadOf(instance),
                                          hostTables_.keepArgs(name.text, name.args, 0)});
}

void Assembler::onCounter(uint32_t instance, int64_t timeNs, HostName name, double value) {
  if (!inWindow(timeNs)) {
    ++losses_.outOfWindowEvents;
    return;
  }
  ready_.counters.push_back(
      CounterRecord{timeNs, value, hostTables_.intern(name), hostTables_.threadOf(instance)});
}

bool Assembler::keepsPending(CallEffect effect) const {
  const ActivitySet& a = options_.gpuActivities;
  switch (effect) {
    case CallEffect::Kernel:
      return a.has(Activity::Kernel);
    case CallEffect::Copy:
      return a.has(Activity::Memcpy);
    case CallEffect::Set:
      return a.has(Activity::Memset);
    case CallEffect::Graph:
      return collectsGraphWork();
    case CallEffect::Sync:
      return a.has(Activity::Sync);
    case CallEffect::Memory:
      return a.has(Activity::Memory);
    case CallEffect::None:
      return false;
  }
  return false;
}

void Assembler::onGraphNode(uint32_t instance, int64_t timeNs, uint64_t nodeId, uint64_t externalId,
                            uint64_t clonedFrom) {
  // The range is known by name when it is one of kinetrace's own, open on this thread (a
  // framework's pushed correlation id is only an id).
  StringId range = StringTable::kEmpty;
  auto open = openRanges_.find(instance);
  if (clonedFrom == 0 && externalId != 0 && open != openRanges_.end() && !open->second.empty() &&
      open->second.back().id == externalId) {
    range = open->second.back().name;
  }
  if (!graphSites_.onNode(instance, timeNs, nodeId, externalId, range, clonedFrom)) {
    ++losses_.graphNodeSitesNotKept;
  }
}

void Assembler::onLaunchTarget(uint32_t, const LaunchTarget& target) {
  target_ = target;
}

void Assembler::onApiCall(const ApiCallRecord& recorded) {
  // `thread` is the instance. A launch that created a graph node was captured into a graph:
  // it ran nothing, and waiting for its GPU work would hold every later span back.
  const bool captured = graphSites_.onCall(
      recorded.thread, recorded.startNs, recorded.endNs, recorded.correlationId,
      [&] { return hostTables_.apiNameOf(recorded.domain, recorded.callbackId); });
  LaunchTarget target;
  if (target_.correlationId == recorded.correlationId) target = target_;
  target_ = LaunchTarget{};
  // What a graph's instantiation and a synchronisation say holds whether or not the call is
  // in the window: a graph made now has no launch before it; a synchronisation fences.
  if (target.graphInstantiated) graphLaunches_.onInstantiated(target.graphExecId);
  if (recorded.effect == CallEffect::Sync && target.contextKnown) {
    graphLaunches_.onSync(target.contextId, !target.streamKnown, target.streamId, recorded.startNs,
                          recorded.endNs);
  }
  if (!inWindow(recorded.startNs) || !inWindow(recorded.endNs)) {
    ++losses_.outOfWindowEvents;
    return;
  }
  ApiCallRecord call = recorded;
  call.thread = hostTables_.threadOf(recorded.thread);
  call.name = hostTables_.apiNameOf(call.domain, call.callbackId);
  ready_.apiCalls.push_back(call);
  if (captured || !keepsPending(call.effect)) return;
  if (call.effect == CallEffect::Graph && target.graphLaunched) {
    GraphLaunches::LaunchCall launch;
    launch.graphId = target.graphExecId;
    launch.correlationId = call.correlationId;
    launch.contextId = target.contextId;
    launch.streamId = target.streamId;
    launch.streamKnown = target.streamKnown && target.contextKnown;
    launch.callStartNs = call.startNs;
    launch.callEndNs = call.endNs;
    graphLaunches_.onLaunch(launch);
  }
  pending_.add(call.correlationId,
               PendingCall{call.startNs, call.endNs, call.externalId, call.thread, call.effect});
}

void Assembler::onAsyncBegin(uint32_t instance, int64_t timeNs, uint64_t id, HostName name) {
  if (!inWindow(timeNs)) {
    ++losses_.outOfWindowEvents;
    return;
  }
  AsyncOpen open{timeNs, hostTables_.intern(name), hostTables_.threadOf(instance)};
  hostTables_.keepArgs(name.text, name.args, id);
  if (collectsSpans()) rangeSpans_.onAsyncBegin(id, open.name);
  auto early = asyncEndedEarly_.find(id);
  if (early != asyncEndedEarly_.end()) {
    const int64_t end = early->second;
    asyncEndedEarly_.erase(early);
    finishAsync(id, open, end, false);
    return;
  }
  asyncOpen_.emplace(id, open);
}

void Assembler::onEndArgs(uint32_t instance, uint64_t id, std::string_view args) {
  // Only for a range this recording holds: one that began before it is not written.
  auto thread = openRanges_.find(instance);
  if (thread != openRanges_.end()) {
    for (const OpenRange& open : thread->second) {
      if (open.id == id) {
        hostTables_.keepArgs(tables_.strings.get(open.name), args, id);
        return;
      }
    }
  }
  const auto async = asyncOpen_.find(id);
  if (async != asyncOpen_.end()) {
    hostTables_.keepArgs(tables_.strings.get(async->second.name), args, id);
  }
}

void Assembler::onAsyncEnd(uint32_t, int64_t timeNs, uint64_t id) {
  if (timeNs > stopNs_) return;  // still open at the stop
  auto found = asyncOpen_.find(id);
  if (found == asyncOpen_.end()) {
    // Its begin may be in a thread drained later in this cycle, or it began before the
    // recording (then it never comes).
    asyncEndedEarly_[id] = timeNs;
    return;
  }
  AsyncOpen open = found->second;
  asyncOpen_.erase(found);
  finishAsync(id, open, timeNs, false);
}

void Assembler::finishAsync(uint64_t id, const AsyncOpen& open, int64_t endNs, bool unfinished) {
  if (endNs < open.startNs) endNs = open.startNs;
  RangeRecord r;
  r.startNs = open.startNs;
  r.endNs = endNs;
  r.externalId = id;
  r.name = open.name;
  r.thread = open.thread;
  r.async = true;
  r.unfinished = unfinished;
  r.lane = asyncLanes_.place(open.startNs, endNs);
  if (unfinished) ++losses_.unfinishedRanges;
  ready_.ranges.push_back(r);
  rangeSpans_.onEnd(id, endNs);
}

void Assembler::endOpenRanges() {
  // Marked, so nobody mistakes them for finished.
  for (auto& [instance, stack] : openRanges_) {
    const uint32_t thread = hostTables_.threadOf(instance);
    while (!stack.empty()) {
      OpenRange open = stack.back();
      stack.pop_back();
      closeRange(thread, open, stopNs_, stack.empty() ? 0 : stack.back().id, true);
    }
  }
  for (auto& [id, open] : asyncOpen_) finishAsync(id, open, stopNs_, true);
  asyncOpen_.clear();
}

void Assembler::forgetEarlyAsyncEnds(int64_t horizonNs) {
  for (auto it = asyncEndedEarly_.begin(); it != asyncEndedEarly_.end();) {
    it = it->second < horizonNs - kEarlyEndGraceNs ? asyncEndedEarly_.erase(it) : std::next(it);
  }
}

}  // namespace kinetrace::detail
