// The Assembler's launch join (assembler.h): a GPU operation and the API call that launched
// it share CUPTI's correlation id, and either may arrive first. An operation whose call is
// waiting (PendingCalls) is joined at once: it takes the call's External id, an arrow from
// the call, and its place in its ranges' GPU spans. One whose call has not come waits here,
// by kind, until it does or the grace for a late call is over; then it is written without
// it, and counted. A copy may be known by its runtime call's id, and a node of a
// conditional's body (correlation 0) by its graph's launches (GraphLaunches).

#include <algorithm>
#include <type_traits>

#include "correlate/assembler.h"

namespace kinetrace::detail {
namespace {

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
  rangeSpans_.extend(at);
}

template <typename Record>
bool Assembler::tryJoin(Record& record) {
  GpuPlacement& at = placementOf(record);
  uint32_t id = at.correlationId;
  PendingCall* call = pending_.find(id);
  if constexpr (std::is_same_v<Record, MemcpyRecord>) {
    // CUPTI gives a copy the driver call's id and the runtime call's; the launch may have
    // been recorded under either.
    if (call == nullptr && record.runtimeCorrelationId != 0) {
      id = record.runtimeCorrelationId;
      call = pending_.find(id);
    }
  }
  constexpr bool kGraphNode =
      !std::is_same_v<Record, SyncRecord> && !std::is_same_v<Record, GraphRecord>;
  if constexpr (kGraphNode) {
    if (call == nullptr && id == 0 && record.graphId != 0) {
      // A node of a conditional's body: its launch is known by its graph.
      id = graphLaunches_.launchAt(record.graphId, at.startNs);
      call = pending_.find(id);
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
    pending_.forget(id, *call);  // last: it may erase the call
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
    PendingCall* call = pending_.find(found.correlationId);
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
  PendingCall* call = pending_.find(record.correlationId);
  if (call == nullptr) return false;
  record.thread = call->thread;
  pending_.forget(record.correlationId, *call);
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
  record.thread = hostTables_.threadOfTid(tables_.pid);
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

void Assembler::addOperations(TraceRecords& r) {
  for (KernelRecord& k : r.kernels) addOperation(k, waitingKernels_);
  for (MemcpyRecord& m : r.memcpys) addOperation(m, waitingMemcpys_);
  for (MemsetRecord& m : r.memsets) addOperation(m, waitingMemsets_);
  for (GraphRecord& g : r.graphs) addOperation(g, waitingGraphs_);
  for (SyncRecord& s : r.syncs) addOperation(s, waitingSyncs_);
  for (MemoryRecord& m : r.memory) addOperation(m, waitingMemory_);
}

void Assembler::retryWaiting(bool giveUpAll) {
  retryWaiting(waitingKernels_, giveUpAll);
  retryWaiting(waitingMemcpys_, giveUpAll);
  retryWaiting(waitingMemsets_, giveUpAll);
  retryWaiting(waitingGraphs_, giveUpAll);
  retryWaiting(waitingSyncs_, giveUpAll);
  retryWaiting(waitingMemory_, giveUpAll);
}

int64_t Assembler::earliestWaitingWork() const {
  int64_t earliest = INT64_MAX;
  for (const auto& w : waitingKernels_) earliest = std::min(earliest, w.record.at.startNs);
  for (const auto& w : waitingMemcpys_) earliest = std::min(earliest, w.record.at.startNs);
  for (const auto& w : waitingMemsets_) earliest = std::min(earliest, w.record.at.startNs);
  for (const auto& w : waitingGraphs_) earliest = std::min(earliest, w.record.at.startNs);
  return earliest;
}

std::size_t Assembler::waitingBytes() const {
  return waitingKernels_.capacity() * sizeof(Waiting<KernelRecord>) +
         waitingMemcpys_.capacity() * sizeof(Waiting<MemcpyRecord>) +
         waitingMemsets_.capacity() * sizeof(Waiting<MemsetRecord>) +
         waitingGraphs_.capacity() * sizeof(Waiting<GraphRecord>) +
         waitingSyncs_.capacity() * sizeof(Waiting<SyncRecord>) +
         waitingMemory_.capacity() * sizeof(Waiting<MemoryRecord>);
}

void Assembler::shrinkWaiting() {
  waitingKernels_.shrink_to_fit();
  waitingMemcpys_.shrink_to_fit();
  waitingMemsets_.shrink_to_fit();
  waitingGraphs_.shrink_to_fit();
  waitingSyncs_.shrink_to_fit();
  waitingMemory_.shrink_to_fit();
}

}  // namespace kinetrace::detail
