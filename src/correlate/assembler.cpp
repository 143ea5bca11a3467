// The Assembler (assembler.h): GPU batches in, each kind of record on its way out (occupancy,
// a graph node's creation site, GPU metrics, a lane on its stream), and completion: what is
// final once every launch before a time has been joined, what finish() resolves, what shed()
// gives up when memory is short. The host side is in assembler_host_events.cpp, the launch
// join in assembler_launch_join.cpp.

#include "correlate/assembler.h"

#include <algorithm>

#include "correlate/occupancy.h"

namespace kinetrace::detail {
namespace {

// Launches remembered per CUDA graph, to place the nodes of its conditional bodies.
constexpr std::size_t kGraphLaunchesKept = 1024;
// Graph nodes whose creation site is kept (a clone counts as a node). Nodes are made while
// graphs are built, not replayed: a program that captures a graph of 10,000 kernels and
// instantiates it uses 20,000; one that captures anew every step reaches the cap, and the
// nodes past it are counted (graphNodeSitesNotKept), their work written without a site.
constexpr std::size_t kGraphNodeSitesKept = std::size_t{1} << 18;

}  // namespace

Assembler::Assembler(TraceTables& tables, AssemblerOptions options)
    : tables_(tables),
      options_(std::move(options)),
      hostTables_(tables, losses_, options_.apiName),
      ncclGroups_(tables, HostTableWriter::kEventArgsKept),
      // Launches are kept as long as a call is, an older launch's call being gone anyway.
      graphLaunches_(kGraphLaunchesKept, PendingCalls::kExpiryNs),
      graphSites_(tables, kGraphNodeSitesKept),
      kernelMetrics_(losses_),
      rangeSpans_(streamLanes_) {}

// ---- GPU batches in, each kind out ----------------------------------------------------

void Assembler::addGpu(GpuBatch& batch) {
  for (const DeviceInfo& device : batch.newDevices) devices_[device.id] = device;
  for (const auto& [correlationId, externalId] : batch.externalIds) {
    externalIds_[correlationId] = externalId;
  }
  pending_.setAllRecordsBefore(batch.allRecordsBeforeNs);
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
  addOperations(r);
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

void Assembler::placeOnStream(GpuPlacement& at, StreamTrack track) {
  at.lane = streamLanes_.place(at.deviceId, at.streamId, track, at.startNs, at.endNs);
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
  placeOnStream(k.at, StreamTrack::Ops);
  kernelMetrics_.addKernel(k, ready_);
}

void Assembler::emit(MemcpyRecord& m) {
  m.graphNodeSite = graphSites_.siteOf(m.graphNodeId);
  placeOnStream(m.at, StreamTrack::Ops);
  ready_.memcpys.push_back(m);
}

void Assembler::emit(MemsetRecord& m) {
  m.graphNodeSite = graphSites_.siteOf(m.graphNodeId);
  placeOnStream(m.at, StreamTrack::Ops);
  ready_.memsets.push_back(m);
}

void Assembler::emit(GraphRecord& g) {
  placeOnStream(g.at, StreamTrack::Ops);
  ready_.graphs.push_back(g);
}

void Assembler::emit(SyncRecord& s) {
  placeOnStream(s.at, StreamTrack::Syncs);
  ready_.syncs.push_back(s);
}

void Assembler::emit(MemoryRecord& m) {
  ready_.memory.push_back(m);
}

// ---- completing -----------------------------------------------------------------------

void Assembler::expirePending(int64_t horizonNs) {
  pending_.expire(horizonNs);
  // External ids outlive nothing that could use them by much: keep the map bounded.
  if (externalIds_.size() > 65536) externalIds_.clear();
  forgetEarlyAsyncEnds(horizonNs);
}

void Assembler::assemble(int64_t horizonNs, TraceRecords& out) {
  horizonNs_ = std::max(horizonNs_, horizonNs);
  retryWaiting(false);
  expirePending(horizonNs_);

  // Every launch before `complete` has been joined: no call still in flight (the grace),
  // none waiting for its GPU records, and no GPU operation waiting for its call (whose
  // call began before the operation did).
  int64_t complete = std::min(pending_.watermark(), horizonNs_ - kLateCallGraceNs);
  complete = std::min(complete, earliestWaitingWork());
  clock_.advance(complete);
  kernelMetrics_.release(complete, horizonNs_, ready_);
  // A range whose end came before `complete` can gain no more GPU time: its spans go out.
  rangeSpans_.release(complete, ready_.gpuSpans);
  out.append(std::move(ready_));
}

void Assembler::takeReady(TraceRecords& out) {
  out.append(std::move(ready_));
}

void Assembler::finish(int64_t syncReturnNs, TraceRecords& out) {
  retryWaiting(true);
  kernelMetrics_.finish(ready_);
  // Ranges still open at the stop end there.
  endOpenRanges();
  rangeSpans_.finish(ready_.gpuSpans);
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
  retryWaiting(true);
  shrinkWaiting();
  shedding_ = false;
  kernelMetrics_.shed(ready_);
  clock_.shed();
  pending_.shed(bytes);
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
  bytes += pending_.heldBytes() + rangeSpans_.heldBytes();
  for (const auto& [instance, stack] : openRanges_)
    bytes += stack.capacity() * sizeof(OpenRange) + kNode;
  bytes += (asyncOpen_.size() + asyncEndedEarly_.size() + externalIds_.size()) * (16 + kNode);
  bytes += waitingBytes();
  bytes += graphLaunches_.heldBytes();
  bytes += graphSites_.heldBytes() + ncclGroups_.heldBytes();
  bytes += clock_.heldBytes();
  bytes += kernelMetrics_.heldBytes();
  bytes += streamLanes_.heldBytes();
  for (const auto& [key, lanes] : overheadLanes_) bytes += lanes.heldBytes() + kNode;
  bytes += asyncLanes_.heldBytes();
  return bytes;
}

}  // namespace kinetrace::detail
