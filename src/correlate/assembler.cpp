#include "correlate/assembler.h"

#include <algorithm>

#include "correlate/occupancy.h"

namespace kinetrace::detail {
namespace {

// How long after a GPU operation ended its launch call's record may still be on its way
// (written when the call returns, drained on the next cycle). An operation whose call has
// not come by then is written without it.
constexpr int64_t kLateCallGraceNs = 500'000'000;
// A call whose GPU records have not come after this long is given up on (its kind was not
// collected, CUPTI dropped them, or it was a graph launch whose last node ran): keeping
// calls forever would grow without bound. An operation arriving for it later is written
// without its call and counted.
constexpr int64_t kPendingExpiryNs = 30'000'000'000;
// Unless CUPTI still holds a buffer lent before the call's records were due (it hands a
// buffer back when it is full or flushed; a flush leaves out a buffer with a record still
// incomplete, so on a GPU never idle a buffer can stay out for minutes): such a call is
// kept until that buffer is back, at most this long, and the oldest such calls go when
// more calls than this are waiting -- a few buffers' worth of records, a 4 MiB buffer
// holding about 20,000.
constexpr int64_t kPendingLongestNs = 600'000'000'000;
constexpr std::size_t kCallsKeptPastExpiry = std::size_t{1} << 16;
// Launches remembered per CUDA graph, to place the nodes of its conditional bodies.
constexpr std::size_t kGraphLaunchesKept = 1024;
// Graph nodes whose creation site is kept (a clone counts as a node). Nodes are made while
// graphs are built, not replayed: a program that captures a graph of 10,000 kernels and
// instantiates it uses 20,000; one that captures anew every step reaches the cap, and the
// nodes past it are counted (graphNodeSitesNotKept), their work written without a site.
constexpr std::size_t kGraphNodeSitesKept = std::size_t{1} << 18;
// Host events whose arguments (NVTX payloads) are kept. NCCL gives one per collective call:
// a job making 1,000 calls a step fills it in a few hundred steps of one window; the events
// past it are written without their arguments and counted (eventArgsNotKept).
constexpr std::size_t kEventArgsKept = std::size_t{1} << 18;
// Ends of async ranges that began before the recording are kept this long in case their
// begin is still to be drained, then dropped.
constexpr int64_t kEarlyEndGraceNs = 2'000'000'000;
// Track kinds on a stream.
constexpr int kOpsTrack = 0;
constexpr int kSyncTrack = 1;
constexpr int kSpanTrack = 2;

uint64_t streamKey(uint32_t device, uint32_t stream) {
  return uint64_t{device} << 32 | stream;
}

GpuPlacement& placementOf(KernelRecord& r) {
  return r.at;
}
GpuPlacement& placementOf(MemcpyRecord& r) {
  return r.at;
}
GpuPlacement& placementOf(MemsetRecord& r) {
  return r.at;
}
GpuPlacement& placementOf(GraphRecord& r) {
  return r.at;
}
GpuPlacement& placementOf(SyncRecord& r) {
  return r.at;
}

}  // namespace

Assembler::Assembler(TraceTables& tables, AssemblerOptions options)
    : tables_(tables),
      options_(std::move(options)),
      ncclGroups_(tables, kEventArgsKept),
      // Launches are kept as long as a call is, an older launch's call being gone anyway.
      graphLaunches_(kGraphLaunchesKept, kPendingExpiryNs),
      graphSites_(tables, kGraphNodeSitesKept),
      kernelMetrics_(losses_) {}

// ---- host side ------------------------------------------------------------------------

uint32_t Assembler::threadOf(uint32_t instance) {
  auto found = threadByInstance_.find(instance);
  if (found != threadByInstance_.end()) return found->second;
  // Events before the thread was announced do not happen (the recorder announces a thread
  // before its first event); a placeholder keeps the index valid all the same.
  auto index = static_cast<uint32_t>(tables_.threads.size());
  tables_.threads.push_back(ThreadInfo{tables_.pid, 0, StringTable::kEmpty});
  threadByInstance_.emplace(instance, index);
  return index;
}

uint32_t Assembler::threadOfTid(int64_t tid) {
  auto found = threadByTid_.find(tid);
  if (found != threadByTid_.end()) return found->second;
  auto index = static_cast<uint32_t>(tables_.threads.size());
  tables_.threads.push_back(ThreadInfo{tables_.pid, tid, StringTable::kEmpty});
  threadByTid_.emplace(tid, index);
  return index;
}

void Assembler::onThread(uint32_t instance, int64_t tid, std::string_view name) {
  auto found = threadByInstance_.find(instance);
  uint32_t index;
  if (found != threadByInstance_.end()) {
    index = found->second;
  } else {
    // One table entry per OS thread: a buffer reused by a thread of a tid seen before (tids
    // are recycled) joins that thread's track.
    index = threadOfTid(tid);
    threadByInstance_.emplace(instance, index);
  }
  tables_.threads[index].tid = tid;
  if (!name.empty()) tables_.threads[index].name = tables_.strings.intern(name);
}

StringId Assembler::intern(HostName name) {
  if (name.literal == nullptr) return tables_.strings.intern(name.text);
  auto found = literalNames_.find(name.literal);
  if (found != literalNames_.end()) return found->second;
  StringId id = tables_.strings.intern(name.text);
  literalNames_.emplace(name.literal, id);
  return id;
}

StringId Assembler::apiNameOf(ApiDomain domain, uint32_t callbackId) {
  const uint32_t key = (domain == ApiDomain::Driver ? 1u << 16 : 0u) | (callbackId & 0xffffu);
  auto found = apiNames_.find(key);
  if (found != apiNames_.end()) return found->second;
  std::string name = options_.apiName ? options_.apiName(domain, callbackId)
                                      : "CUDA API " + std::to_string(callbackId);
  StringId id = tables_.strings.intern(name);
  apiNames_.emplace(key, id);
  return id;
}

uint32_t Assembler::keepArgs(std::string_view event, std::string_view encoded, uint64_t rangeId) {
  if (encoded.empty()) return 0;
  uint32_t index = 0;
  if (rangeId != 0) {
    const auto known = tables_.argsOfRange.find(rangeId);
    if (known != tables_.argsOfRange.end()) index = known->second;
  }
  if (index == 0 && tables_.eventArgs.size() >= kEventArgsKept) {
    ++losses_.eventArgsNotKept;
    return 0;
  }
  StoredArgs added;
  forEachEventArg(encoded, [&](const EventArg& arg) {
    StoredArg value;
    value.key = tables_.strings.intern(arg.key);
    value.type = arg.type;
    value.number = arg.number;
    if (arg.type == ArgType::Text) value.text = tables_.strings.intern(arg.text);
    added.values.push_back(value);
  });
  if (added.values.empty()) return index;
  if (index != 0) {
    std::vector<StoredArg>& values = tables_.eventArgs[index - 1].values;
    values.insert(values.end(), added.values.begin(), added.values.end());
    return index;
  }
  added.event = tables_.strings.intern(event);
  added.nccl = isNcclRange(event);
  tables_.eventArgs.push_back(std::move(added));
  index = static_cast<uint32_t>(tables_.eventArgs.size());
  if (rangeId != 0) tables_.argsOfRange[rangeId] = index;
  return index;
}

void Assembler::onRangeBegin(uint32_t instance, int64_t timeNs, uint64_t id, HostName name) {
  if (!inWindow(timeNs)) {
    ++losses_.outOfWindowEvents;
    return;
  }
  auto& stack = openRanges_[instance];
  const uint64_t parent = stack.empty() ? 0 : stack.back().id;
  const StringId nameId = intern(name);
  stack.push_back(OpenRange{timeNs, id, nameId});
  const uint32_t args = keepArgs(name.text, name.args, id);
  if (isNcclRange(name.text)) {
    ncclGroups_.onRange(instance, name.text.substr(kNcclRangePrefix.size()), id, args);
  }
  if (!collectsSpans()) return;
  RangeState& state = ranges_[id];
  state.parentId = parent;
  state.name = nameId;
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
  auto state = ranges_.find(open.id);
  if (state != ranges_.end()) {
    state->second.endNs = endNs;
    closedRanges_.push_back(open.id);
  }
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
  const uint32_t thread = threadOf(instance);
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
  ready_.instants.push_back(
      InstantRecord{timeNs, intern(name), threadOf(instance), keepArgs(name.text, name.args, 0)});
}

void Assembler::onCounter(uint32_t instance, int64_t timeNs, HostName name, double value) {
  if (!inWindow(timeNs)) {
    ++losses_.outOfWindowEvents;
    return;
  }
  ready_.counters.push_back(CounterRecord{timeNs, value, intern(name), threadOf(instance)});
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
  const bool captured =
      graphSites_.onCall(recorded.thread, recorded.startNs, recorded.endNs, recorded.correlationId,
                         [&] { return apiNameOf(recorded.domain, recorded.callbackId); });
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
  call.thread = threadOf(recorded.thread);
  call.name = apiNameOf(call.domain, call.callbackId);
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
  pending_[call.correlationId] =
      PendingCall{call.startNs, call.endNs, call.externalId, call.thread, call.effect};
  pendingByStart_.emplace(call.startNs, call.correlationId);
}

void Assembler::onAsyncBegin(uint32_t instance, int64_t timeNs, uint64_t id, HostName name) {
  if (!inWindow(timeNs)) {
    ++losses_.outOfWindowEvents;
    return;
  }
  AsyncOpen open{timeNs, intern(name), threadOf(instance)};
  keepArgs(name.text, name.args, id);
  if (collectsSpans()) ranges_[id].name = open.name;
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
        keepArgs(tables_.strings.get(open.name), args, id);
        return;
      }
    }
  }
  const auto async = asyncOpen_.find(id);
  if (async != asyncOpen_.end()) keepArgs(tables_.strings.get(async->second.name), args, id);
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
  auto state = ranges_.find(id);
  if (state != ranges_.end()) {
    state->second.endNs = endNs;
    closedRanges_.push_back(id);
  }
}

// ---- GPU side -------------------------------------------------------------------------

Assembler::PendingCall* Assembler::findCall(uint32_t correlationId) {
  if (correlationId == 0) return nullptr;
  auto found = pending_.find(correlationId);
  return found == pending_.end() ? nullptr : &found->second;
}

void Assembler::forgetCall(uint32_t correlationId, const PendingCall& call) {
  // A graph launch's id is shared by every node it ran: it stays until it expires.
  if (call.effect != CallEffect::Graph) pending_.erase(correlationId);
}

void Assembler::join(GpuPlacement& at, uint32_t callCorrelationId, PendingCall& call,
                     bool gpuWork) {
  at.correlationId = callCorrelationId;  // so both ends of the arrow share the id
  if (at.externalId == 0) at.externalId = call.externalId;
  if (at.startNs < call.startNs) ++losses_.gpuOpsBeforeLaunch;
  if (!gpuWork) return;
  at.hasLaunchCall = true;
  // One start per call: a viewer pairs an arrow's start with the first end of its id, so a
  // graph launch shows one arrow, to its first node, as PyTorch's traces do.
  if (!call.arrowStarted) {
    ready_.flows.push_back(FlowRecord{call.startNs, callCorrelationId, call.thread});
    call.arrowStarted = true;
  }
  clock_.addLaunched(at, call.startNs, call.endNs);
  extendSpans(at);
}

template <typename Record>
bool Assembler::tryJoin(Record& record) {
  GpuPlacement& at = placementOf(record);
  uint32_t id = at.correlationId;
  PendingCall* call = findCall(id);
  if constexpr (std::is_same_v<Record, MemcpyRecord>) {
    // CUPTI gives a copy the driver call's id and the runtime call's; the launch may have
    // been recorded under either.
    if (call == nullptr && record.runtimeCorrelationId != 0) {
      id = record.runtimeCorrelationId;
      call = findCall(id);
    }
  }
  constexpr bool kGraphNode =
      !std::is_same_v<Record, SyncRecord> && !std::is_same_v<Record, GraphRecord>;
  if constexpr (kGraphNode) {
    if (call == nullptr && id == 0 && record.graphId != 0) {
      // A node of a conditional's body: its launch is known by its graph.
      id = graphLaunches_.launchAt(record.graphId, at.startNs);
      call = findCall(id);
      if (call != nullptr) at.launchFoundBy = LaunchFoundBy::EarlierNode;
    }
  }
  if (call == nullptr) return false;
  constexpr bool kGpuWork = !std::is_same_v<Record, SyncRecord>;
  if constexpr (kGraphNode) {
    if (call->effect == CallEffect::Graph && record.graphId != 0) {
      graphLaunches_.onJoined(record.graphId, at.startNs, id);
      if (at.launchFoundBy == LaunchFoundBy::Correlation) {
        graphLaunches_.onOperation(id, at.startNs, at.endNs);
      }
    }
  }
  join(at, id, *call, kGpuWork);
  if constexpr (std::is_same_v<Record, SyncRecord>)
    clock_.addSync(record, call->startNs, call->endNs);
  if constexpr (std::is_same_v<Record, GraphRecord>) {
    pending_.erase(id);  // at graph level a launch gives one record, and this is it
  } else {
    forgetCall(id, *call);  // last: it may erase the call
  }
  emit(record);
  return true;
}

// A node of a conditional's body that no launch's other nodes placed: given the only
// launch of its graph it can belong to, when one is left (GraphLaunches::onlyLaunchOf).
// Asked once, when the operation is given up on: every launch called before it started has
// been recorded by then, and the operations around it have come.
template <typename Record>
bool Assembler::joinOnlyLaunch(Record& record) {
  if constexpr (std::is_same_v<Record, KernelRecord> || std::is_same_v<Record, MemcpyRecord> ||
                std::is_same_v<Record, MemsetRecord>) {
    GpuPlacement& at = record.at;
    if (shedding_ || at.correlationId != 0 || record.graphId == 0) return false;
    const GraphLaunches::Found found =
        graphLaunches_.onlyLaunchOf(record.graphId, at.startNs, at.endNs);
    if (found.candidates > 1) {
      ++losses_.gpuOpsAmbiguousGraphLaunch;
      return false;
    }
    PendingCall* call = findCall(found.correlationId);
    if (call == nullptr) return false;
    at.launchFoundBy = LaunchFoundBy::OnlyLaunch;
    graphLaunches_.onOperation(found.correlationId, at.startNs, at.endNs);
    join(at, found.correlationId, *call, true);
    emit(record);
    return true;
  } else {
    return false;
  }
}

template <typename Record>
void Assembler::emitUnjoined(Record& record) {
  GpuPlacement& at = placementOf(record);
  // Work that started after the stop is in the trace only when its launch was in the
  // window (it was still queued at the stop).
  if (at.startNs > stopNs_) {
    ++losses_.outOfWindowEvents;
    return;
  }
  if (options_.launchCallsRecorded) ++losses_.gpuOpsWithoutLaunch;
  if (at.externalId == 0) {
    auto external = externalIds_.find(at.correlationId);
    if (external != externalIds_.end()) at.externalId = external->second;
  }
  emit(record);
}

template <typename Record>
void Assembler::addOperation(Record record, std::vector<Waiting<Record>>& waiting) {
  GpuPlacement& at = placementOf(record);
  if (at.startNs < options_.startNs) {
    ++losses_.outOfWindowEvents;
    return;
  }
  if constexpr (!std::is_same_v<Record, SyncRecord>) clock_.addOperation(at);
  if (tryJoin(record)) return;
  if (!options_.launchCallsRecorded) {
    emitUnjoined(record);
    return;
  }
  waiting.push_back(Waiting<Record>{record, horizonNs_});
}

template <typename Record>
void Assembler::retryWaiting(std::vector<Waiting<Record>>& waiting, bool giveUpAll) {
  auto keep = waiting.begin();
  for (auto it = waiting.begin(); it != waiting.end(); ++it) {
    if (tryJoin(it->record)) continue;
    const int64_t endNs = [&] {
      if constexpr (std::is_same_v<Record, MemoryRecord>) {
        return it->record.timeNs;
      } else {
        return placementOf(it->record).endNs;
      }
    }();
    if (giveUpAll || horizonNs_ > std::max(endNs, it->arrivedAtHorizonNs) + kLateCallGraceNs) {
      if (joinOnlyLaunch(it->record)) continue;
      emitUnjoined(it->record);
      continue;
    }
    *keep++ = std::move(*it);
  }
  waiting.erase(keep, waiting.end());
}

// Memory records are not GPU work: they only learn their thread from the call.
template <>
bool Assembler::tryJoin(MemoryRecord& record) {
  PendingCall* call = findCall(record.correlationId);
  if (call == nullptr) return false;
  record.thread = call->thread;
  forgetCall(record.correlationId, *call);
  emit(record);
  return true;
}

template <>
void Assembler::emitUnjoined(MemoryRecord& record) {
  if (record.timeNs > stopNs_) {
    ++losses_.outOfWindowEvents;
    return;
  }
  // Nobody's call: the allocation goes on the process's main thread.
  record.thread = threadOfTid(tables_.pid);
  emit(record);
}

template <>
void Assembler::addOperation(MemoryRecord record, std::vector<Waiting<MemoryRecord>>& waiting) {
  if (record.timeNs < options_.startNs) {
    ++losses_.outOfWindowEvents;
    return;
  }
  if (tryJoin(record)) return;
  if (!options_.launchCallsRecorded) {
    emitUnjoined(record);
    return;
  }
  waiting.push_back(Waiting<MemoryRecord>{record, horizonNs_});
}

void Assembler::placeOnStream(GpuPlacement& at, int track) {
  at.lane = streamLanes_[{streamKey(at.deviceId, at.streamId), track}].place(at.startNs, at.endNs);
}

void Assembler::emit(KernelRecord& k) {
  auto device = devices_.find(k.at.deviceId);
  if (device != devices_.end()) {
    OccupancyEstimate estimate = estimateOccupancy(device->second, k);
    k.blocksPerSm = estimate.blocksPerSm;
    k.warpsPerSm = estimate.warpsPerSm;
    k.occupancyPercent = estimate.occupancyPercent;
  }
  k.graphNodeSite = graphSites_.siteOf(k.graphNodeId);
  placeOnStream(k.at, kOpsTrack);
  kernelMetrics_.addKernel(k, ready_);
}

void Assembler::emit(MemcpyRecord& m) {
  m.graphNodeSite = graphSites_.siteOf(m.graphNodeId);
  placeOnStream(m.at, kOpsTrack);
  ready_.memcpys.push_back(m);
}

void Assembler::emit(MemsetRecord& m) {
  m.graphNodeSite = graphSites_.siteOf(m.graphNodeId);
  placeOnStream(m.at, kOpsTrack);
  ready_.memsets.push_back(m);
}

void Assembler::emit(GraphRecord& g) {
  placeOnStream(g.at, kOpsTrack);
  ready_.graphs.push_back(g);
}

void Assembler::emit(SyncRecord& s) {
  placeOnStream(s.at, kSyncTrack);
  ready_.syncs.push_back(s);
}

void Assembler::emit(MemoryRecord& m) {
  ready_.memory.push_back(m);
}

// The op counts toward its own range and every range enclosing it on the launching thread.
void Assembler::extendSpans(const GpuPlacement& at) {
  uint64_t id = at.externalId;
  for (int guard = 0; id != 0 && guard < 512; ++guard) {
    auto range = ranges_.find(id);
    if (range == ranges_.end()) return;
    auto& spans = range->second.spans;
    auto span = std::find_if(spans.begin(), spans.end(), [&](const SpanState& s) {
      return s.deviceId == at.deviceId && s.streamId == at.streamId;
    });
    if (span == spans.end()) {
      spans.push_back(SpanState{at.deviceId, at.streamId, at.startNs, at.endNs});
    } else {
      span->startNs = std::min(span->startNs, at.startNs);
      span->endNs = std::max(span->endNs, at.endNs);
    }
    id = range->second.parentId;
  }
}

void Assembler::addGpu(GpuBatch& batch) {
  for (const DeviceInfo& device : batch.newDevices) devices_[device.id] = device;
  for (const auto& [correlationId, externalId] : batch.externalIds) {
    externalIds_[correlationId] = externalId;
  }
  allGpuRecordsBeforeNs_ = batch.allRecordsBeforeNs;
  losses_.cuptiDroppedRecords += batch.droppedRecords;
  losses_.cuptiBuffersRefused += batch.buffersRefused;
  losses_.cuptiRecordsUndecoded += batch.undecoded;
  // A set past kMaxGpuMetrics (a source's bug) is not taken: its samples are then counted
  // as corrupted, never written in part.
  // A device whose sampling starts later in the window comes in a later set of the same
  // metrics: its kernels wait for samples from then on.
  if (batch.metricSet && batch.metricSet->metrics.size() <= kMaxGpuMetrics) {
    GpuMetricSet& kept = tables_.gpuMetrics;
    const GpuMetricSet& offered = *batch.metricSet;
    if (kept.empty() && !offered.empty()) {
      kept = offered;
      kernelMetrics_.configure(kept);
    } else if (!kept.empty() && offered.metrics.size() == kept.metrics.size()) {
      for (uint32_t device : offered.devices) {
        if (std::find(kept.devices.begin(), kept.devices.end(), device) == kept.devices.end()) {
          kept.devices.push_back(device);
        }
      }
      kernelMetrics_.configure(kept);
    } else if (kept.empty() && !offered.refused.empty()) {
      kept.refused = offered.refused;
    }
  }
  losses_.gpuMetricSamplesLost += batch.metricLosses.lost;
  losses_.gpuMetricSamplesCorrupted += batch.metricLosses.corrupted;
  losses_.gpuMetricSetupSamplesDropped += batch.metricLosses.setupDropped;
  // Samples first: a kernel of this batch may find its samples complete already.
  kernelMetrics_.addSamples(batch.records, batch.metricsCompleteUntil, options_.startNs, stopNs_,
                            ready_);
  TraceRecords& r = batch.records;
  for (KernelRecord& k : r.kernels) addOperation(k, waitingKernels_);
  for (MemcpyRecord& m : r.memcpys) addOperation(m, waitingMemcpys_);
  for (MemsetRecord& m : r.memsets) addOperation(m, waitingMemsets_);
  for (GraphRecord& g : r.graphs) addOperation(g, waitingGraphs_);
  for (SyncRecord& s : r.syncs) addOperation(s, waitingSyncs_);
  for (MemoryRecord& m : r.memory) addOperation(m, waitingMemory_);
  for (OverheadRecord& o : r.overheads) {
    if (o.startNs < options_.startNs || o.startNs > stopNs_) {
      ++losses_.outOfWindowEvents;
      continue;
    }
    o.lane = overheadLanes_[{static_cast<int>(o.object), o.objectId}].place(o.startNs, o.endNs);
    ready_.overheads.push_back(o);
  }
  // A pool's operations join no launch: the window is all they go through.
  for (const MemoryPoolRecord& p : r.memoryPools) {
    if (!inWindow(p.timeNs)) {
      ++losses_.outOfWindowEvents;
      continue;
    }
    ready_.memoryPools.push_back(p);
  }
  batch.clear();
}

// ---- completing -----------------------------------------------------------------------

int64_t Assembler::launchWatermark() {
  while (!pendingByStart_.empty()) {
    auto [start, id] = pendingByStart_.top();
    auto found = pending_.find(id);
    if (found != pending_.end() && found->second.startNs == start) return start;
    pendingByStart_.pop();  // joined or expired
  }
  return INT64_MAX;
}

void Assembler::expirePending(int64_t horizonNs) {
  // The records of a call that began before `due` were written (30 s is long enough for
  // its work to run) into buffers CUPTI has handed back: they came, or they never will.
  const int64_t due = std::min(horizonNs, allGpuRecordsBeforeNs_) - kPendingExpiryNs;
  const int64_t overdue = horizonNs - kPendingExpiryNs;
  while (!pendingByStart_.empty()) {
    auto [start, id] = pendingByStart_.top();
    const bool givenUp = start < due || start < horizonNs - kPendingLongestNs ||
                         (start < overdue && pending_.size() > kCallsKeptPastExpiry);
    if (!givenUp) break;
    pendingByStart_.pop();
    auto found = pending_.find(id);
    if (found != pending_.end() && found->second.startNs == start) pending_.erase(found);
  }
  // The heap keeps joined calls until they reach its top; rebuild it when they dominate.
  if (pendingByStart_.size() > 4 * pending_.size() + 1024) {
    decltype(pendingByStart_) rebuilt;
    for (const auto& [id, call] : pending_) rebuilt.emplace(call.startNs, id);
    pendingByStart_ = std::move(rebuilt);
  }
  // External ids outlive nothing that could use them by much: keep the map bounded.
  if (externalIds_.size() > 65536) externalIds_.clear();
  for (auto it = asyncEndedEarly_.begin(); it != asyncEndedEarly_.end();) {
    it = it->second < horizonNs - kEarlyEndGraceNs ? asyncEndedEarly_.erase(it) : std::next(it);
  }
}

void Assembler::finalizeRange(uint64_t id, RangeState& state) {
  for (const SpanState& span : state.spans) {
    GpuSpanRecord g;
    g.startNs = span.startNs;
    g.endNs = span.endNs;
    g.externalId = id;
    g.name = state.name;
    g.deviceId = span.deviceId;
    g.streamId = span.streamId;
    g.lane = streamLanes_[{streamKey(span.deviceId, span.streamId), kSpanTrack}].place(span.startNs,
                                                                                       span.endNs);
    ready_.gpuSpans.push_back(g);
  }
}

void Assembler::assemble(int64_t horizonNs, TraceRecords& out) {
  horizonNs_ = std::max(horizonNs_, horizonNs);
  retryWaiting(waitingKernels_, false);
  retryWaiting(waitingMemcpys_, false);
  retryWaiting(waitingMemsets_, false);
  retryWaiting(waitingGraphs_, false);
  retryWaiting(waitingSyncs_, false);
  retryWaiting(waitingMemory_, false);
  expirePending(horizonNs_);

  // Every launch before `complete` has been joined: no call still in flight (the grace),
  // none waiting for its GPU records, and no GPU operation waiting for its call (whose
  // call began before the operation did).
  int64_t complete = std::min(launchWatermark(), horizonNs_ - kLateCallGraceNs);
  for (const auto& w : waitingKernels_) complete = std::min(complete, w.record.at.startNs);
  for (const auto& w : waitingMemcpys_) complete = std::min(complete, w.record.at.startNs);
  for (const auto& w : waitingMemsets_) complete = std::min(complete, w.record.at.startNs);
  for (const auto& w : waitingGraphs_) complete = std::min(complete, w.record.at.startNs);
  clock_.advance(complete);
  kernelMetrics_.release(complete, horizonNs_, ready_);
  // A range whose end came before `complete` can gain no more GPU time: its spans go out.
  // Ranges end in roughly the order they are drained; one that ended later than the next
  // holds the queue up for a moment, never wrongly.
  while (!closedRanges_.empty()) {
    auto state = ranges_.find(closedRanges_.front());
    if (state != ranges_.end()) {
      if (state->second.endNs >= complete) break;
      finalizeRange(state->first, state->second);
      ranges_.erase(state);
    }
    closedRanges_.pop_front();
  }
  out.append(std::move(ready_));
}

void Assembler::takeReady(TraceRecords& out) {
  out.append(std::move(ready_));
}

void Assembler::finish(int64_t syncReturnNs, TraceRecords& out) {
  retryWaiting(waitingKernels_, true);
  retryWaiting(waitingMemcpys_, true);
  retryWaiting(waitingMemsets_, true);
  retryWaiting(waitingGraphs_, true);
  retryWaiting(waitingSyncs_, true);
  retryWaiting(waitingMemory_, true);
  kernelMetrics_.finish(ready_);
  // Ranges still open at the stop end there, marked so nobody mistakes them for finished.
  for (auto& [instance, stack] : openRanges_) {
    const uint32_t thread = threadOf(instance);
    while (!stack.empty()) {
      OpenRange open = stack.back();
      stack.pop_back();
      closeRange(thread, open, stopNs_, stack.empty() ? 0 : stack.back().id, true);
    }
  }
  for (auto& [id, open] : asyncOpen_) finishAsync(id, open, stopNs_, true);
  asyncOpen_.clear();
  for (auto& [id, state] : ranges_) finalizeRange(id, state);
  ranges_.clear();
  closedRanges_.clear();
  pending_.clear();
  graphLaunches_.clear();
  graphSites_.clear();
  clockBounds_ = clock_.finish(syncReturnNs);
  out.append(std::move(ready_));
}

void Assembler::shed(std::size_t bytes) {
  // Operations waiting for their call go out first: unlinked, but written; then the clock
  // bound's launches (its bound loosens, stays true).
  // Launches still to be recorded may own them: none is found by elimination.
  shedding_ = true;
  auto giveUp = [this](auto& waiting) {
    retryWaiting(waiting, true);
    waiting.shrink_to_fit();
  };
  giveUp(waitingKernels_);
  giveUp(waitingMemcpys_);
  giveUp(waitingMemsets_);
  giveUp(waitingGraphs_);
  giveUp(waitingSyncs_);
  giveUp(waitingMemory_);
  shedding_ = false;
  kernelMetrics_.shed(ready_);
  clock_.shed();
  constexpr std::size_t kPerCall = sizeof(PendingCall) + 48;
  std::size_t freed = 0;
  while (freed < bytes && !pendingByStart_.empty()) {
    auto [start, id] = pendingByStart_.top();
    pendingByStart_.pop();
    auto found = pending_.find(id);
    if (found == pending_.end() || found->second.startNs != start) continue;
    pending_.erase(found);
    freed += kPerCall;
  }
  if (pending_.empty()) {
    pending_ = {};  // gives back the buckets too
    pendingByStart_ = {};
  }
}

std::vector<DeviceInfo> Assembler::devices() const {
  std::vector<DeviceInfo> result;
  for (const auto& [id, device] : devices_) result.push_back(device);
  return result;
}

std::size_t Assembler::heldBytes() const {
  // Hash-map nodes cost about their payload plus two pointers and a hash.
  constexpr std::size_t kNode = 32;
  std::size_t bytes = ready_.bytes();
  bytes += pending_.size() * (sizeof(PendingCall) + kNode) + pendingByStart_.size() * 16;
  for (const auto& [id, state] : ranges_)
    bytes += sizeof(RangeState) + kNode + state.spans.size() * sizeof(SpanState);
  for (const auto& [instance, stack] : openRanges_)
    bytes += stack.capacity() * sizeof(OpenRange) + kNode;
  bytes += closedRanges_.size() * sizeof(uint64_t);
  bytes += (asyncOpen_.size() + asyncEndedEarly_.size() + externalIds_.size()) * (16 + kNode);
  bytes += waitingKernels_.capacity() * sizeof(Waiting<KernelRecord>) +
           waitingMemcpys_.capacity() * sizeof(Waiting<MemcpyRecord>) +
           waitingMemsets_.capacity() * sizeof(Waiting<MemsetRecord>) +
           waitingGraphs_.capacity() * sizeof(Waiting<GraphRecord>) +
           waitingSyncs_.capacity() * sizeof(Waiting<SyncRecord>) +
           waitingMemory_.capacity() * sizeof(Waiting<MemoryRecord>);
  bytes += graphLaunches_.heldBytes();
  bytes += graphSites_.heldBytes() + ncclGroups_.heldBytes();
  bytes += clock_.heldBytes();
  bytes += kernelMetrics_.heldBytes();
  for (const auto& [key, lanes] : streamLanes_) bytes += lanes.heldBytes() + kNode;
  for (const auto& [key, lanes] : overheadLanes_) bytes += lanes.heldBytes() + kNode;
  bytes += asyncLanes_.heldBytes();
  return bytes;
}

}  // namespace kinetrace::detail
