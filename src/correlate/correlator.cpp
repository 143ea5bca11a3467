#include "correlate/correlator.h"

#include <algorithm>
#include <iterator>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kinetrace::detail {
namespace {

struct SpanKey {
  uint64_t externalId;
  uint32_t deviceId;
  uint32_t streamId;
  bool operator==(const SpanKey& o) const {
    return externalId == o.externalId && deviceId == o.deviceId && streamId == o.streamId;
  }
};
struct SpanKeyHash {
  std::size_t operator()(const SpanKey& k) const {
    return std::hash<uint64_t>()(k.externalId * 0x9E3779B97F4A7C15ull ^
                                 (static_cast<uint64_t>(k.deviceId) << 32 | k.streamId));
  }
};

class Linker {
 public:
  Linker(TraceData& trace, bool launchCallsRecorded)
      : trace_(trace), launchCallsRecorded_(launchCallsRecorded) {
    callByCorrelation_.reserve(trace.apiCalls.size());
    for (uint32_t i = 0; i < trace.apiCalls.size(); ++i) {
      callByCorrelation_.emplace(trace.apiCalls[i].correlationId, i);
    }
    rangeById_.reserve(trace.ranges.size());
    for (uint32_t i = 0; i < trace.ranges.size(); ++i) rangeById_.emplace(trace.ranges[i].externalId, i);
  }

  void link(GpuPlacement& op, bool isGpuWork, uint32_t otherCorrelationId = 0) {
    auto found = callByCorrelation_.find(op.correlationId);
    if (found == callByCorrelation_.end() && otherCorrelationId != 0) {
      found = callByCorrelation_.find(otherCorrelationId);
      // Name the op by the id its launch call carries, so the flow's two ends share it.
      if (found != callByCorrelation_.end()) op.correlationId = otherCorrelationId;
    }
    if (found == callByCorrelation_.end()) {
      if (launchCallsRecorded_) ++trace_.losses.gpuOpsWithoutLaunch;
    } else {
      ApiCallRecord& call = trace_.apiCalls[found->second];
      if (op.externalId == 0) op.externalId = call.externalId;
      if (op.startNs < call.startNs) ++trace_.losses.gpuOpsBeforeLaunch;
      if (isGpuWork) {
        op.hasLaunchCall = true;
        call.hasGpuOp = true;
      }
    }
    // A synchronisation is the host waiting, not GPU work: it neither draws a flow nor
    // widens a range's GPU span.
    if (isGpuWork) extendSpans(op);
  }

  void linkMemory(MemoryRecord& record) {
    auto found = callByCorrelation_.find(record.correlationId);
    if (found != callByCorrelation_.end()) record.thread = trace_.apiCalls[found->second].thread;
  }

  void emitSpans() {
    for (const auto& [key, span] : spans_) {
      auto range = rangeById_.find(key.externalId);
      if (range == rangeById_.end()) continue;
      trace_.gpuSpans.push_back(GpuSpanRecord{span.first, span.second, key.externalId,
                                              trace_.ranges[range->second].name, key.deviceId,
                                              key.streamId});
    }
    std::sort(trace_.gpuSpans.begin(), trace_.gpuSpans.end(),
              [](const GpuSpanRecord& a, const GpuSpanRecord& b) { return a.startNs < b.startNs; });
  }

 private:
  // The op counts toward its own range and every range enclosing it on the launching thread.
  void extendSpans(const GpuPlacement& op) {
    uint64_t id = op.externalId;
    for (int guard = 0; id != 0 && guard < 512; ++guard) {
      auto range = rangeById_.find(id);
      if (range == rangeById_.end()) return;
      auto [it, inserted] = spans_.try_emplace(SpanKey{id, op.deviceId, op.streamId},
                                               op.startNs, op.endNs);
      if (!inserted) {
        it->second.first = std::min(it->second.first, op.startNs);
        it->second.second = std::max(it->second.second, op.endNs);
      }
      id = trace_.ranges[range->second].parentId;
    }
  }

  TraceData& trace_;
  bool launchCallsRecorded_;
  std::unordered_map<uint32_t, uint32_t> callByCorrelation_;
  std::unordered_map<uint64_t, uint32_t> rangeById_;
  std::unordered_map<SpanKey, std::pair<int64_t, int64_t>, SpanKeyHash> spans_;
};

}  // namespace

void correlate(TraceData& trace, bool launchCallsRecorded) {
  Linker linker(trace, launchCallsRecorded);
  for (auto& kernel : trace.kernels) linker.link(kernel.at, true);
  for (auto& copy : trace.memcpys) linker.link(copy.at, true, copy.runtimeCorrelationId);
  for (auto& set : trace.memsets) linker.link(set.at, true);
  for (auto& sync : trace.syncs) linker.link(sync.at, false);
  for (auto& record : trace.memory) linker.linkMemory(record);
  linker.emitSpans();
}

namespace {

// GPU operations that had finished by some host time, per track, searchable by when their
// launch call returned: for every prefix, the latest end.
class FinishedWork {
 public:
  void add(uint64_t track, int64_t launchEndNs, int64_t opEndNs) {
    tracks_[track].push_back({launchEndNs, opEndNs});
  }
  void seal() {
    for (auto& [track, ops] : tracks_) {
      std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.launchEndNs < b.launchEndNs; });
      for (std::size_t i = 1; i < ops.size(); ++i) ops[i].opEndNs = std::max(ops[i].opEndNs, ops[i - 1].opEndNs);
    }
  }
  // The latest end among ops of `track` launched before `hostNs`; false if none.
  bool latestEndLaunchedBefore(uint64_t track, int64_t hostNs, int64_t& endNs) const {
    auto found = tracks_.find(track);
    if (found == tracks_.end()) return false;
    const auto& ops = found->second;
    auto it = std::upper_bound(ops.begin(), ops.end(), hostNs,
                               [](int64_t t, const Op& op) { return t < op.launchEndNs; });
    if (it == ops.begin()) return false;
    endNs = std::prev(it)->opEndNs;
    return true;
  }

 private:
  struct Op {
    int64_t launchEndNs;
    int64_t opEndNs;
  };
  std::unordered_map<uint64_t, std::vector<Op>> tracks_;
};

uint64_t streamTrack(uint32_t device, uint32_t stream) { return uint64_t{device} << 32 | stream; }
uint64_t deviceTrack(uint32_t device) { return uint64_t{device} << 32 | 0xffffffffu; }

}  // namespace

ClockOffsetBounds measureClockOffsetBounds(const TraceData& trace) {
  ClockOffsetBounds bounds;
  auto lower = [&](int64_t late) {
    bounds.lowNs = bounds.hasLow ? std::max(bounds.lowNs, late) : late;
    bounds.hasLow = true;
  };
  std::unordered_map<uint32_t, const ApiCallRecord*> calls;
  for (const ApiCallRecord& call : trace.apiCalls) calls.emplace(call.correlationId, &call);

  FinishedWork finished;
  auto visit = [&](const GpuPlacement& op) {
    if (op.hasLaunchCall) {
      auto found = calls.find(op.correlationId);
      if (found != calls.end()) {
        const ApiCallRecord& call = *found->second;
        int64_t lead = op.startNs - call.startNs;
        bounds.highNs = bounds.hasHigh ? std::min(bounds.highNs, lead) : lead;
        bounds.hasHigh = true;
        finished.add(streamTrack(op.deviceId, op.streamId), call.endNs, op.endNs);
        finished.add(deviceTrack(op.deviceId), call.endNs, op.endNs);
      }
    }
    if (trace.gpuSyncReturnNs != 0) lower(op.endNs - trace.gpuSyncReturnNs);
  };
  for (const auto& k : trace.kernels) visit(k.at);
  for (const auto& m : trace.memcpys) visit(m.at);
  for (const auto& m : trace.memsets) visit(m.at);
  finished.seal();

  // The program's own synchronisations are tighter probes than the one at stop: when a
  // stream (or context) synchronisation returns, everything launched on that stream (or
  // device) before the call began has ended.
  for (const SyncRecord& sync : trace.syncs) {
    auto found = calls.find(sync.at.correlationId);
    if (found == calls.end()) continue;
    const ApiCallRecord& call = *found->second;
    std::string_view kind = trace.strings.get(sync.name);
    uint64_t track;
    if (kind == "Stream Sync") {
      track = streamTrack(sync.at.deviceId, sync.at.streamId);
    } else if (kind == "Context Sync") {
      track = deviceTrack(sync.at.deviceId);
    } else {
      continue;  // an event's work is unknown here; a stream wait does not block the host
    }
    int64_t latestEnd = 0;
    if (finished.latestEndLaunchedBefore(track, call.startNs, latestEnd)) lower(latestEnd - call.endNs);
  }
  return bounds;
}

}  // namespace kinetrace::detail
