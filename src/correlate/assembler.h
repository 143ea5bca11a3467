#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "correlate/clock_bounds.h"
#include "correlate/graph_launches.h"
#include "correlate/graph_sites.h"
#include "correlate/host_table_writer.h"
#include "correlate/kernel_metrics.h"
#include "correlate/lane_allocator.h"
#include "correlate/nccl_groups.h"
#include "correlate/pending_calls.h"
#include "correlate/range_spans.h"
#include "host/host_recorder.h"
#include "model/gpu_source.h"
#include "model/trace_data.h"

namespace kinetrace::detail {

struct AssemblerOptions {
  int64_t startNs = 0;  // the window's start: anything earlier is out of it
  // Whether launch calls were recorded at all: without them a GPU operation with no call
  // is expected, not counted as a loss.
  bool launchCallsRecorded = false;
  // Which GPU record kinds are collected: a call whose records will never come is not kept
  // waiting for them.
  ActivitySet gpuActivities;
  bool graphs = false;  // graph launches come as one GraphRecord each (graph-level tracing)
  // The name of a CUDA API function by its callback id.
  std::function<std::string(ApiDomain, uint32_t)> apiName;
};

// The one assembly stage: takes what the sources recorded, separately and in pieces, and
// hands on finished records while the session runs.
//
// Host events arrive through the HostEventVisitor interface (HostRecorder::drain), GPU
// records through addGpu(). assemble() then moves out everything complete:
//  - the window filter: events before the start (and, at finish, after the stop) are
//    counted, not kept;
//  - ranges paired from their begin and end, async ranges from begin and end on any
//    threads, each async range on a lane where it overlaps no other;
//  - API calls named; threads, names and event arguments written to the tables once each
//    (HostTableWriter);
//  - launch links: a GPU operation and the call that launched it share CUPTI's correlation
//    id; a joined operation gets the call's External id (the host range open at the
//    launch) and an arrow from the call. Either side may arrive first (calls wait in
//    PendingCalls, operations here); an operation whose call never comes is counted (when
//    calls are recorded);
//  - GPU spans: per host range and stream, from the first to the last GPU operation
//    launched inside it, written once the range has ended and every launch before its
//    end has been joined (RangeSpans);
//  - lanes: operations that overlap on one stream, synchronisations and spans each go on
//    a track where they nest (StreamLanes);
//  - the clock offset bound (ClockBoundsTracker).
//  - GPU metrics: samples pass through to the trace, and each kernel of a sampled device
//    gets its metric averages before it goes out (KernelMetrics), which may hold it until
//    its device's samples are in; samples are kept until the completion mark passes them.
// It feeds two units that keep what is not correlation: NcclGroups (the sum of an NCCL
// group's calls, given to its ncclGroupEnd) and GraphSites (where graph nodes were created,
// named by the work replayed from them).
// What it holds while waiting (pending calls, open ranges, spans, lanes) is bounded by
// what is in flight, not by the length of the window.
//
// Its members are defined in three files, by side: assembler_host_events.cpp (host events:
// the window filter on them, ranges, async ranges, API calls), assembler_launch_join.cpp
// (GPU operations joined to their calls, or waiting for them), assembler.cpp (GPU batches
// in, each kind on its way out, completion, finishing, memory).
//
// Single-threaded: the pipeline thread (or the stopping thread once it has ended) calls
// every member.
class Assembler final : public HostEventVisitor {
 public:
  Assembler(TraceTables& tables, AssemblerOptions options);

  // ---- HostEventVisitor ---------------------------------------------------------------
  void onThread(uint32_t instance, int64_t tid, std::string_view name) override;
  void onRangeBegin(uint32_t instance, int64_t timeNs, uint64_t id, HostName name) override;
  void onRangeEnd(uint32_t instance, int64_t timeNs, uint64_t id) override;
  void onInstant(uint32_t instance, int64_t timeNs, HostName name) override;
  void onCounter(uint32_t instance, int64_t timeNs, HostName name, double value) override;
  void onApiCall(const ApiCallRecord& call) override;
  void onAsyncBegin(uint32_t instance, int64_t timeNs, uint64_t id, HostName name) override;
  void onAsyncEnd(uint32_t instance, int64_t timeNs, uint64_t id) override;
  void onEndArgs(uint32_t instance, uint64_t id, std::string_view args) override;
  void onGraphNode(uint32_t instance, int64_t timeNs, uint64_t nodeId, uint64_t externalId,
                   uint64_t clonedFrom) override;
  void onLaunchTarget(uint32_t instance, const LaunchTarget& target) override;

  // GPU records of one poll. Their names are already in the tables' strings.
  void addGpu(GpuBatch& batch);
  // Moves out what is complete, given that every host event recorded before `horizonNs`
  // has been drained.
  void assemble(int64_t horizonNs, TraceRecords& out);
  // The window ends at `stopNs`: host events after it are outside. Call before the last
  // drain and poll.
  void setStop(int64_t stopNs) { stopNs_ = stopNs; }
  // After the last drain and poll: resolves everything still waiting and moves it out.
  // `syncReturnNs` is when the end-of-window synchronisation returned (0: none).
  void finish(int64_t syncReturnNs, TraceRecords& out);

  const LossCounters& losses() const { return losses_; }
  LossCounters& losses() { return losses_; }
  const ClockOffsetBounds& clockBounds() const { return clockBounds_; }
  // What waits for GPU metric samples, and the samples kept for it.
  const KernelMetrics& kernelMetrics() const { return kernelMetrics_; }
  // Devices whose limits are known (from GPU batches), by id.
  std::vector<DeviceInfo> devices() const;
  // Roughly what the assembler holds besides the tables' strings, for the memory budget.
  std::size_t heldBytes() const;
  // The memory budget is exceeded: gives up waiting, oldest first, for calls' GPU records
  // and for operations' calls, until about `bytes` are freed. What arrives for them later
  // is written without its link and counted (gpuOpsWithoutLaunch), never silently.
  void shed(std::size_t bytes);
  // Moves out what is ready now (what shed() gave up, for one), without waiting for more.
  void takeReady(TraceRecords& out);

 private:
  struct OpenRange {
    int64_t startNs;
    uint64_t id;
    StringId name;
  };
  struct AsyncOpen {
    int64_t startNs;
    StringId name;
    uint32_t thread;
  };
  template <typename Record>
  struct Waiting {
    Record record;
    int64_t arrivedAtHorizonNs;
  };

  // How long after a GPU operation ended its launch call's record may still be on its way
  // (written when the call returns, drained on the next cycle). An operation whose call has
  // not come by then is written without it.
  static constexpr int64_t kLateCallGraceNs = 500'000'000;

  bool inWindow(int64_t timeNs) const { return timeNs >= options_.startNs && timeNs <= stopNs_; }
  // Whether a range can get GPU spans (kernels, copies or memsets are collected): only then
  // is its state kept after it ends, until no launch inside it can still be joined.
  bool collectsSpans() const { return collectsGraphWork(); }
  // Whether anything a graph launch runs is collected: its nodes' kernels, copies or
  // memsets, or the launch as one record (graph level).
  bool collectsGraphWork() const {
    return options_.gpuActivities.anyGraphWork() || options_.graphs;
  }

  // ---- host side (assembler_host_events.cpp) ----
  bool keepsPending(CallEffect effect) const;
  void closeRange(uint32_t thread, const OpenRange& open, int64_t endNs, uint64_t parentId,
                  bool unfinished);
  void finishAsync(uint64_t id, const AsyncOpen& open, int64_t endNs, bool unfinished);
  // At the stop: every range and async range still open ends there, marked unfinished.
  void endOpenRanges();
  // Drops the ends of async ranges whose begin has not come in kEarlyEndGraceNs.
  void forgetEarlyAsyncEnds(int64_t horizonNs);

  // ---- the launch join (assembler_launch_join.cpp) ----
  // A batch's GPU operations, each joined to its call now or waiting for it.
  void addOperations(TraceRecords& records);
  // Tries again to join the operations waiting for their calls; gives up on those past the
  // grace, or on all of them (`giveUpAll`), writing them without their call.
  void retryWaiting(bool giveUpAll);
  // The start of the earliest GPU work (kernel, copy, memset, graph) waiting for its call.
  int64_t earliestWaitingWork() const;
  std::size_t waitingBytes() const;
  void shrinkWaiting();
  template <typename Record>
  void addOperation(Record record, std::vector<Waiting<Record>>& waiting);
  template <typename Record>
  bool tryJoin(Record& record);
  template <typename Record>
  bool joinOnlyLaunch(Record& record);
  template <typename Record>
  void emitUnjoined(Record& record);
  template <typename Record>
  void retryWaiting(std::vector<Waiting<Record>>& waiting, bool giveUpAll);
  void join(GpuPlacement& at, uint32_t callCorrelationId, PendingCall& call, bool gpuWork);

  // ---- each kind on its way out (assembler.cpp) ----
  void emit(KernelRecord& record);
  void emit(MemcpyRecord& record);
  void emit(MemsetRecord& record);
  void emit(GraphRecord& record);
  void emit(SyncRecord& record);
  void emit(MemoryRecord& record);
  void placeOnStream(GpuPlacement& at, StreamTrack track);
  void expirePending(int64_t horizonNs);

  TraceTables& tables_;
  AssemblerOptions options_;
  int64_t stopNs_ = INT64_MAX;
  int64_t horizonNs_ = INT64_MIN;
  TraceRecords ready_;
  LossCounters losses_;
  HostTableWriter hostTables_;

  std::unordered_map<uint32_t, std::vector<OpenRange>> openRanges_;  // by thread instance
  std::unordered_map<uint64_t, AsyncOpen> asyncOpen_;
  std::unordered_map<uint64_t, int64_t> asyncEndedEarly_;  // end drained before its begin
  NcclGroups ncclGroups_;

  PendingCalls pending_;
  std::unordered_map<uint32_t, uint64_t> externalIds_;  // CUPTI external correlation
  GraphLaunches graphLaunches_;  // which launch ran a conditional body's node (correlation 0)
  LaunchTarget target_;          // the target of the call whose onApiCall comes next
  bool shedding_ = false;        // giving up on waiting operations early (the memory cap)
  GraphSites graphSites_;        // where graph nodes were created, for the work replayed from them
  KernelMetrics kernelMetrics_;  // kernels' GPU metric averages

  std::vector<Waiting<KernelRecord>> waitingKernels_;
  std::vector<Waiting<MemcpyRecord>> waitingMemcpys_;
  std::vector<Waiting<MemsetRecord>> waitingMemsets_;
  std::vector<Waiting<GraphRecord>> waitingGraphs_;
  std::vector<Waiting<SyncRecord>> waitingSyncs_;
  std::vector<Waiting<MemoryRecord>> waitingMemory_;

  std::map<uint32_t, DeviceInfo> devices_;
  // Lanes per (device, stream) and track kind; per CUPTI overhead object; for async ranges.
  StreamLanes streamLanes_;
  std::map<std::pair<int, uint64_t>, LaneAllocator> overheadLanes_;
  LaneAllocator asyncLanes_;
  RangeSpans rangeSpans_;  // the GPU spans of host ranges
  ClockBoundsTracker clock_;
  ClockOffsetBounds clockBounds_;
};

}  // namespace kinetrace::detail
