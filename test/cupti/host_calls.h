#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "host/host_recorder.h"
#include "model/clock.h"
#include "model/memory_budget.h"

// What the launch callback wrote into the host recorder, read back the way kinetrace's
// pipeline reads it: by draining the recorder.

namespace kinetrace::synthetic {

using detail::ApiCallRecord;

struct HostCalls : detail::HostEventVisitor {
  struct Range {
    uint64_t id;
    std::string name;
    int64_t startNs;
    int64_t endNs = 0;
  };
  std::vector<ApiCallRecord> calls;
  std::vector<Range> ranges;  // in the order they began
  struct GraphNode {
    uint64_t id;
    uint64_t externalId;
    uint64_t clonedFrom;
  };
  std::vector<GraphNode> graphNodes;

  const Range* range(std::string_view name) const {
    for (const Range& r : ranges) {
      if (r.name == name) return &r;
    }
    return nullptr;
  }

  void onThread(uint32_t, int64_t, std::string_view) override {}
  void onRangeBegin(uint32_t, int64_t timeNs, uint64_t id, detail::HostName name) override {
    ranges.push_back({id, std::string(name.text), timeNs});
  }
  void onRangeEnd(uint32_t, int64_t timeNs, uint64_t id) override {
    for (Range& r : ranges) {
      if (r.id == id) r.endNs = timeNs;
    }
  }
  void onInstant(uint32_t, int64_t, detail::HostName) override {}
  void onCounter(uint32_t, int64_t, detail::HostName, double) override {}
  void onApiCall(const ApiCallRecord& call) override { calls.push_back(call); }
  std::vector<detail::LaunchTarget> targets;
  void onLaunchTarget(uint32_t, const detail::LaunchTarget& target) override {
    targets.push_back(target);
  }
  void onAsyncBegin(uint32_t, int64_t, uint64_t, detail::HostName) override {}
  void onAsyncEnd(uint32_t, int64_t, uint64_t) override {}
  void onGraphNode(uint32_t, int64_t, uint64_t nodeId, uint64_t externalId,
                   uint64_t clonedFrom) override {
    graphNodes.push_back({nodeId, externalId, clonedFrom});
  }
};

// Records host events while `body` runs and returns what was recorded.
template <typename Body>
HostCalls recordHost(Body body) {
  detail::HostRecorder& recorder = detail::HostRecorder::instance();
  detail::MemoryBudget budget(64 << 20);
  const uint64_t generation = recorder.startRecording(budget);
  body();
  recorder.stopRecording();
  HostCalls recorded;
  recorder.drain(generation, recorded, detail::Clock::instance());
  recorder.trimPool();
  return recorded;
}

}  // namespace kinetrace::synthetic
