#include "correlate/correlator.h"

#include <algorithm>
#include <unordered_map>

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

ClockOffsetBounds measureClockOffsetBounds(const TraceData& trace) {
  ClockOffsetBounds bounds;
  std::unordered_map<uint32_t, int64_t> callStart;
  for (const ApiCallRecord& call : trace.apiCalls) callStart.emplace(call.correlationId, call.startNs);
  auto visit = [&](const GpuPlacement& op) {
    if (op.hasLaunchCall) {
      auto found = callStart.find(op.correlationId);
      if (found != callStart.end()) {
        int64_t lead = op.startNs - found->second;
        bounds.highNs = bounds.hasHigh ? std::min(bounds.highNs, lead) : lead;
        bounds.hasHigh = true;
      }
    }
    if (trace.gpuSyncReturnNs != 0) {
      int64_t late = op.endNs - trace.gpuSyncReturnNs;
      bounds.lowNs = bounds.hasLow ? std::max(bounds.lowNs, late) : late;
      bounds.hasLow = true;
    }
  };
  for (const auto& k : trace.kernels) visit(k.at);
  for (const auto& m : trace.memcpys) visit(m.at);
  for (const auto& m : trace.memsets) visit(m.at);
  return bounds;
}

}  // namespace kinetrace::detail
