#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/passes/pass_context.h"

// The critical path's first stage: the trace's events (CollectedTrace::criticalPathEvents)
// joined to what a step's graph needs from elsewhere in the trace, and handed out step by
// step. As Holistic Trace Analysis clips a step (critical_path_analysis), a step holds the
// host events that start in it (inclusive at both ends) and last, and the GPU operations
// and synchronisation records whose call does. What it joins:
//
//   GPU operation   its launch call (by correlation id); whether its stream's queue was
//                   empty when it was launched and still empty when it started (HTA's
//                   queue length: 1 after its launch, 0 after its start), counting the
//                   operations of HTA's launch calls (isQueueCountingLaunch)
//   sync record     its call (cudaStreamSynchronize, cudaEventSynchronize, ...); for an
//                   Event Sync or Stream Wait Event that names its cudaEventRecord
//                   ("wait_on_cuda_event_record_corr_id", with "wait_on_stream"): the last
//                   operation launched on the event's stream before the record (what it
//                   waits for), and for a Stream Wait Event the next operation the waiting
//                   thread launched on the waiting stream (what waits)
//
// Memory: four lists of the trace's budget (spill.h) sorted in turn; what a sweep holds is
// a stream's operations in flight. Every record left out is counted (leftOut).

namespace kinetrace::detail::passes {

inline constexpr uint64_t kNoEvent = ~uint64_t{0};

// An event of a step's graph, as critical_path_graph.h reads it.
struct StepEvent {
  static constexpr uint8_t kQueueEmpty = 1;  // a GPU operation: HTA's launch rule holds
  uint64_t step = 0;
  uint64_t ordinal = 0;  // its place in the trace (CriticalPathEvent::ordinal)
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t pid = 0;  // a GPU operation's or sync's device
  int64_t tid = 0;  // a GPU operation's or sync's stream
  int64_t callStartNs = 0;
  int64_t callEndNs = 0;
  uint64_t callOrdinal = kNoEvent;  // a GPU operation's or sync's call
  uint64_t waitsFor = kNoEvent;     // an Event Sync's or Stream Wait Event's operation
  uint64_t releases = kNoEvent;     // the operation a Stream Wait Event holds back
  uint32_t name = 0;
  PathEventKind kind = PathEventKind::HostRange;
  uint8_t detail = 0;  // CriticalPathEvent::detail
  uint8_t flags = 0;
};

struct ByStepThenOrdinal {
  bool operator()(const StepEvent& a, const StepEvent& b) const {
    return a.step != b.step ? a.step < b.step : a.ordinal < b.ordinal;
  }
};

struct PathWindow {
  int64_t startNs = 0;
  int64_t endNs = 0;
};

// HTA's launch calls, whose operations its queue length counts (cudaLaunchKernel(ExC),
// cuLaunchKernel(Ex), cudaMemcpyAsync, cudaMemsetAsync) and the only ones its graph draws
// a launch edge from.
bool isQueueCountingLaunch(std::string_view call);

class StepEvents {
 public:
  explicit StepEvents(const PassContext& context);

  // Reads the trace's critical-path events (once) and sorts them into `windows` (by start).
  void collect(const std::vector<PathWindow>& windows);
  // Calls visit(event) for each event of `step`, in the trace's order; steps are read in
  // increasing order, each once.
  template <typename Visit>
  void forStep(uint64_t step, Visit&& visit) {
    while (!byStep_.done() && byStep_.front().step < step) byStep_.pop();
    for (; !byStep_.done() && byStep_.front().step == step; byStep_.pop()) visit(byStep_.front());
  }
  // The events each step holds, by step index.
  const std::vector<uint64_t>& counts() const { return counts_; }
  std::map<std::string, uint64_t>& leftOut() { return leftOut_; }

 private:
  // An event by the correlation id it joins on: its own (a call, and its operations and
  // syncs), or, for a sync, its event record's.
  struct Joining {
    enum Role : uint8_t { kCall, kOfCall, kWantsRecord };
    uint64_t key = 0;
    Role role = kCall;
    CriticalPathEvent event;
  };
  struct ByKey {
    bool operator()(const Joining& a, const Joining& b) const;
  };
  // What a stream's sweep meets, in time order: operations starting and being launched,
  // event records (for the operation launched last before them) and waits (for the next
  // operation their thread launches).
  struct Queued {
    enum What : uint8_t { kStart, kLaunch, kRecord, kWait };
    int64_t device = 0;
    int64_t stream = 0;
    int64_t timeNs = 0;
    What what = kStart;
    int64_t pid = 0;  // a launch's or a wait's thread
    int64_t tid = 0;
    uint64_t sync = 0;  // a record's or wait's sync
    StepEvent op;       // a start's or launch's operation
  };
  struct ByStreamThenTime {
    bool operator()(const Queued& a, const Queued& b) const;
  };
  // A sync and what the sweeps found for it.
  struct Resolving {
    enum Role : uint8_t { kSync, kWaitsFor, kReleases };
    uint64_t sync = 0;
    Role role = kSync;
    uint64_t op = 0;
    StepEvent event;  // the sync's
  };
  struct BySync {
    bool operator()(const Resolving& a, const Resolving& b) const;
  };

  void join();
  void sweepStreams();
  void resolveSyncs();
  // Into each window whose span holds `keyNs`, inclusive.
  void assign(StepEvent event, int64_t keyNs);

  const PassContext& context_;
  std::vector<PathWindow> windows_;
  std::vector<int64_t> latestEnd_;  // the latest end of windows_[0..i]
  std::vector<uint64_t> counts_;
  std::map<std::string, uint64_t> leftOut_;
  ExternalSorter<Joining, ByKey> byCorrelation_;
  ExternalSorter<Queued, ByStreamThenTime> byStream_;
  ExternalSorter<Resolving, BySync> bySync_;
  ExternalSorter<StepEvent, ByStepThenOrdinal> byStep_;
};

}  // namespace kinetrace::detail::passes
