#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kinetrace/sink.h"

// What `kinetrace analyze` keeps of a trace while reading it: compact records of the events
// its analyses use, taken from any Chrome trace's events (kinetrace's, torch.profiler's) by
// their categories and arguments, as libkineto lays traces out (shared/TRACE_FORMAT.md):
//
//   GPU operations   "X" of category kernel, gpu_memcpy, gpu_memset, cuda_graph (a whole
//                    graph's run, traced at graph level: compute); device from the
//                    "device" argument (else pid), stream from "stream" (else tid),
//                    "correlation", "External id"
//   launch calls     "X" of category cuda_runtime or cuda_driver with a "correlation"
//   host ranges      "X" of any other category on a host process: steps (ProfilerStep#N),
//                    data-loading ranges (a name containing "DataLoader", "dataloader",
//                    "data_loader" or "data loader"), and the names of ranges with an
//                    "External id" (what issued a kernel)
//   memory           "[memory]" instants: "Total Allocated" over time
//   NCCL calls       GPU operations carrying "nccl call" and "nccl bytes" (kinetrace's, from
//                    NCCL's NVTX payloads): totals per call, the communicator's creation
//                    and destruction left out
//
// Memory: about 48 bytes per GPU operation, 40 per launch call and per host range, plus
// each distinct name once.

namespace kinetrace::detail {

enum class GpuOpKind : uint8_t { Compute, Communication, Memory };

struct CollectedGpuOp {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t externalId = 0;
  uint64_t correlation = 0;  // 0: none
  uint32_t name = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  GpuOpKind kind = GpuOpKind::Compute;
};

struct CollectedCall {
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t tid = 0;
  uint32_t name = 0;
};

struct CollectedRange {
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t tid = 0;
  uint32_t name = 0;
};

// The GPU operations of one NCCL call (ncclAllReduce, ...), summed.
struct NcclCallTotals {
  uint64_t operations = 0;
  uint64_t bytes = 0;  // the calls' message sizes
  int64_t gpuNs = 0;   // the operations' durations
};

struct MemorySample {
  int64_t timeNs = 0;
  int64_t allocatedBytes = 0;
};

// Values by a 64-bit id, as a vector sorted once the trace has been read: a third of a
// hash map's memory, and ids (CUPTI's correlation ids, External ids) arrive nearly in order,
// so the sort is cheap and in place. Ids are unique in practice; of repeats, one is kept.
template <typename T>
class IdMap {
 public:
  void add(uint64_t id, const T& value) { items_.emplace_back(id, value); }
  // Call once every value is in, before find().
  void seal() {
    auto byId = [](const auto& a, const auto& b) { return a.first < b.first; };
    if (!std::is_sorted(items_.begin(), items_.end(), byId))
      std::sort(items_.begin(), items_.end(), byId);
    items_.erase(std::unique(items_.begin(), items_.end(),
                             [](const auto& a, const auto& b) { return a.first == b.first; }),
                 items_.end());
    items_.shrink_to_fit();
  }
  const T* find(uint64_t id) const {
    auto at = std::lower_bound(items_.begin(), items_.end(), id,
                               [](const auto& item, uint64_t key) { return item.first < key; });
    return at != items_.end() && at->first == id ? &at->second : nullptr;
  }
  std::size_t size() const { return items_.size(); }

 private:
  std::vector<std::pair<uint64_t, T>> items_;
};

struct CollectedTrace {
  std::string path;
  int64_t rank = -1;  // distributedInfo.rank; -1 when absent
  int64_t firstNs = 0;
  int64_t lastNs = 0;  // the span of every event
  std::vector<std::string> names;
  std::vector<CollectedGpuOp> gpuOps;
  // By correlation id. A trace holds one process's calls: CUPTI's correlation ids are unique
  // within a process.
  IdMap<CollectedCall> calls;
  std::vector<CollectedRange> steps;
  std::vector<CollectedRange> dataLoading;
  std::vector<CollectedRange> hostRanges;  // every host range, for "what the host was doing"
  IdMap<uint32_t> rangeOfExternalId;       // External id -> name
  std::vector<MemorySample> memory;
  std::vector<std::pair<std::string, NcclCallTotals>> ncclCalls;  // by call name, first seen first
  uint64_t events = 0;

  const std::string& name(uint32_t id) const { return names[id]; }
};

class TraceCollector final : public Sink {
 public:
  explicit TraceCollector(std::string path) { trace_.path = std::move(path); }

  void begin(const TraceHeader& header) override;
  void write(const Event& event) override;
  void end(const Metadata& footer) override;

  CollectedTrace take() { return std::move(trace_); }

 private:
  uint32_t intern(std::string_view name);
  void noteNcclCall(const Event& event);
  CollectedTrace trace_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::string key_;
  bool any_ = false;
};

}  // namespace kinetrace::detail
