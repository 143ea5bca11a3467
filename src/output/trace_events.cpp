#include "output/trace_events.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "output/kind_names.h"
#include "output/nccl_kernel_name.h"
#include "output/trace_vocabulary.h"

namespace kinetrace::detail {
namespace {

// c10::DeviceType::CUDA, which PyTorch's memory view expects in "[memory]" events.
constexpr int64_t kCudaDeviceType = 1;
constexpr std::string_view kFlowName = chrome::kFlowLaunch;
// The event's args, in storage reused for every event: writing a trace allocates nothing
// per event. Twenty-four covers the largest event, an NCCL kernel launched from a graph (21
// args), to which GPU metric averages add one each.
class ArgList {
 public:
  static constexpr std::size_t kCapacity = 24 + kMaxGpuMetrics;
  void clear() { count_ = 0; }
  void add(std::string_view key, ArgValue value) {
    assert(count_ < kCapacity && "an event kind gained args: raise kCapacity");
    if (count_ < kCapacity) args_[count_++] = Arg{key, value};
  }
  bool has(std::string_view key) const {
    for (std::size_t i = 0; i < count_; ++i) {
      if (args_[i].key == key) return true;
    }
    return false;
  }
  const Arg* data() const { return args_.data(); }
  std::size_t size() const { return count_; }

 private:
  std::array<Arg, kCapacity> args_{};
  std::size_t count_ = 0;
};

// Floats print their widening error as a double (0.1f is 0.10000000149011612); six
// decimals is more than CUPTI's occupancy figures carry and prints as people expect.
double displayFloat(float value) {
  return std::round(static_cast<double>(value) * 1e6) / 1e6;
}

}  // namespace

class EventWriter::Impl {
 public:
  Impl(Sink& sink, const TraceTables& tables, int64_t baseTimeNs)
      : sink_(sink), tables_(tables), tracks_(sink, tables, baseTimeNs) {}

  void write(const TraceRecords& records) {
    writeHost(records);
    writeGpu(records);
  }
  void finish() { tracks_.finish(); }

 private:
  void writeHost(const TraceRecords& records);
  void writeGpu(const TraceRecords& records);
  void writeGpuOp(const GpuPlacement& at, int trackKind, std::string_view category,
                  std::string_view name);
  void writeFlowEnd(const GpuPlacement& at, int trackKind);
  void writeMetricSamples(const TraceRecords& records);
  void writeMemoryPools(const TraceRecords& records);
  // Starts the next event; args are added to args_ until send().
  void start(Phase phase, std::string_view category, std::string_view name, const TrackRef& on,
             int64_t timestampNs, int64_t durationNs = 0) {
    event_ = Event{};
    event_.phase = phase;
    event_.category = category;
    event_.name = name;
    event_.pid = on.pid;
    event_.tid = on.tid;
    event_.track = on.id;
    event_.timestampNs = timestampNs;
    event_.durationNs = durationNs;
    args_.clear();
  }
  void send() {
    event_.args = args_.data();
    event_.argCount = args_.size();
    sink_.write(event_);
  }

  // What every GPU operation carries: its range link, where it ran, its launch's id.
  void addPlacementArgs(const GpuPlacement& at) {
    if (at.externalId != 0) args_.add(chrome::kArgExternalId, at.externalId);
    args_.add(chrome::kArgDevice, int64_t{at.deviceId});
    args_.add(chrome::kArgContext, int64_t{at.contextId});
    args_.add(chrome::kArgStream, int64_t{at.streamId});
    args_.add(chrome::kArgCorrelation, int64_t{at.correlationId});
    if (at.externalId != 0 && !tables_.argsOfRange.empty()) addNcclCallArgs(at.externalId);
  }
  // An event's own arguments (an NVTX payload), under their own names; of a key given twice
  // (at a range's begin and at its end), the first.
  void addEventArgs(uint32_t args) {
    if (args == 0 || args > tables_.eventArgs.size()) return;
    for (const StoredArg& arg : tables_.eventArgs[args - 1].values) {
      const std::string_view key = tables_.strings.get(arg.key);
      if (!args_.has(key)) addStoredArg(key, arg);
    }
  }
  // GPU work launched inside an NCCL call carries what the call's NVTX payload says: the
  // call ("nccl call": "ncclAllReduce"), the message size, communicator, peer or root.
  void addNcclCallArgs(uint64_t externalId) {
    const auto found = tables_.argsOfRange.find(externalId);
    if (found == tables_.argsOfRange.end() || found->second > tables_.eventArgs.size()) return;
    const StoredArgs& call = tables_.eventArgs[found->second - 1];
    if (!call.nccl) return;
    args_.add(chrome::kArgNcclCall,
              tables_.strings.get(call.event).substr(kNcclRangePrefix.size()));
    for (const StoredArg& arg : call.values) {
      const std::string_view name = ncclPayloadArgName(tables_.strings.get(arg.key));
      if (!name.empty() && !args_.has(name)) addStoredArg(name, arg);
    }
  }
  void addStoredArg(std::string_view key, const StoredArg& arg) {
    switch (arg.type) {
      case ArgType::Unsigned:
        // JSON readers hold numbers as doubles: an integer past 2^53 (NCCL's communicator
        // ids are 64-bit hashes) is written as its decimal text, to stay exact.
        if (arg.number > (uint64_t{1} << 53)) {
          char* text = bigNumbers_[args_.size() % bigNumbers_.size()].data();
          const auto written = std::to_chars(text, text + 24, arg.number);
          args_.add(key, std::string_view(text, static_cast<std::size_t>(written.ptr - text)));
        } else {
          args_.add(key, arg.number);
        }
        break;
      case ArgType::Signed:
        args_.add(key, static_cast<int64_t>(arg.number));
        break;
      case ArgType::Double: {
        double value;
        std::memcpy(&value, &arg.number, sizeof value);
        args_.add(key, value);
        break;
      }
      case ArgType::Text:
        args_.add(key, tables_.strings.get(arg.text));
        break;
    }
  }
  // What an NCCL kernel's name says (output/nccl_kernel_name.h), as arguments a viewer shows
  // and an analysis can group by: the operation, its reduction and datatype, NCCL's
  // algorithm and protocol.
  void addNcclArgs(std::string_view kernelName) {
    const std::optional<NcclKernelName> nccl = parseNcclKernelName(kernelName);
    if (!nccl) return;
    args_.add(chrome::kArgNcclOperation, nccl->operation);
    args_.add(chrome::kArgNcclCollective, nccl->collective);
    // The call's payload may have named the reduction already.
    if (!nccl->reduction.empty() && !args_.has(chrome::kArgNcclReduction)) {
      args_.add(chrome::kArgNcclReduction, nccl->reduction);
    }
    if (!nccl->datatype.empty()) args_.add(chrome::kArgNcclDatatype, nccl->datatype);
    if (!nccl->algorithm.empty()) args_.add(chrome::kArgNcclAlgorithm, nccl->algorithm);
    if (!nccl->protocol.empty()) args_.add(chrome::kArgNcclProtocol, nccl->protocol);
  }
  // Which graph, and which of its nodes, a replayed kernel, copy or memset came from, and
  // where that node was created: the call that captured or added it (by name and
  // correlation id, so it can be found in the trace) and the host range open then.
  void addGraphArgs(uint32_t graphId, uint64_t graphNodeId, uint32_t site, LaunchFoundBy found) {
    if (graphId == 0) return;
    args_.add(chrome::kArgGraphId, int64_t{graphId});
    args_.add(chrome::kArgGraphNodeId, graphNodeId);
    // A conditional body's node has no correlation id of its own: say how its launch was found.
    if (found == LaunchFoundBy::EarlierNode) {
      args_.add(chrome::kArgGraphLaunchFoundBy, chrome::kGraphLaunchByEarlierNode);
    } else if (found == LaunchFoundBy::OnlyLaunch) {
      args_.add(chrome::kArgGraphLaunchFoundBy, chrome::kGraphLaunchByElimination);
    }
    if (site == 0 || site > tables_.graphNodeSites.size()) return;
    const GraphNodeSite& created = tables_.graphNodeSites[site - 1];
    if (created.call != StringTable::kEmpty) {
      args_.add(chrome::kArgGraphNodeCreatedBy, tables_.strings.get(created.call));
      args_.add(chrome::kArgGraphNodeCreationCorrelation, int64_t{created.correlationId});
    }
    if (created.range != StringTable::kEmpty) {
      args_.add(chrome::kArgGraphNodeCreatedIn, tables_.strings.get(created.range));
    } else if (created.externalId != 0) {
      args_.add(chrome::kArgGraphNodeCreationExternalId, created.externalId);
    }
  }

  // The argument keys of the session's metrics, made once (the metrics are known from the
  // first GPU batch on, before any kernel that has averages).
  const std::vector<std::string>& metricArgKeys() {
    const auto& metrics = tables_.gpuMetrics.metrics;
    if (metricArgKeys_.size() != metrics.size()) {
      metricArgKeys_.clear();
      for (const GpuMetric& metric : metrics) metricArgKeys_.push_back(gpuMetricArgKey(metric));
    }
    return metricArgKeys_;
  }
  void addMetricArgs(const TraceRecords& r, uint32_t averages) {
    if (averages == 0) return;
    const std::vector<std::string>& keys = metricArgKeys();
    if (averages - 1 + keys.size() > r.metricValues.size()) return;  // a bug upstream
    for (std::size_t m = 0; m < keys.size(); ++m) {
      args_.add(keys[m], r.metricValues[averages - 1 + m]);
    }
  }

  Sink& sink_;
  const TraceTables& tables_;
  TrackBook tracks_;
  Event event_;
  ArgList args_;
  std::vector<std::string> metricArgKeys_;
  std::array<std::array<char, 24>, ArgList::kCapacity> bigNumbers_{};  // addStoredArg's texts
};

void EventWriter::Impl::writeHost(const TraceRecords& r) {
  for (const RangeRecord& range : r.ranges) {
    const std::string_view category =
        range.category == RangeCategory::CpuOp ? chrome::kCatCpuOp : chrome::kCatUserAnnotation;
    // Async ranges begin and end on any thread: they get tracks of their own, one per lane
    // so that they nest.
    const TrackRef on =
        range.async ? tracks_.asyncLane(range.lane) : tracks_.hostThread(range.thread);
    start(Phase::Complete, category, tables_.strings.get(range.name), on, range.startNs,
          range.endNs - range.startNs);
    args_.add(chrome::kArgExternalId, range.externalId);
    if (range.unfinished) args_.add(chrome::kArgUnfinished, true);
    if (!tables_.argsOfRange.empty()) {
      const auto args = tables_.argsOfRange.find(range.externalId);
      if (args != tables_.argsOfRange.end()) addEventArgs(args->second);
    }
    send();
  }
  for (const ApiCallRecord& call : r.apiCalls) {
    const std::string_view category =
        call.domain == ApiDomain::Driver ? chrome::kCatCudaDriver : chrome::kCatCudaRuntime;
    start(Phase::Complete, category, tables_.strings.get(call.name),
          tracks_.hostThread(call.thread), call.startNs, call.endNs - call.startNs);
    args_.add(chrome::kArgCallbackId, int64_t{call.callbackId});
    args_.add(chrome::kArgCorrelation, int64_t{call.correlationId});
    if (call.externalId != 0) args_.add(chrome::kArgExternalId, call.externalId);
    send();
  }
  for (const FlowRecord& flow : r.flows) {
    start(Phase::FlowStart, kFlowName, kFlowName, tracks_.hostThread(flow.thread), flow.startNs);
    event_.flowId = flow.correlationId;
    send();
  }
  for (const InstantRecord& instant : r.instants) {
    start(Phase::Instant, chrome::kCatUserInstant, tables_.strings.get(instant.name),
          tracks_.hostThread(instant.thread), instant.timeNs);
    addEventArgs(instant.args);
    send();
  }
  for (const CounterRecord& counter : r.counters) {
    const std::string_view name = tables_.strings.get(counter.name);
    start(Phase::Counter, chrome::kCatCounter, name, tracks_.hostThread(counter.thread),
          counter.timeNs);
    args_.add(name, counter.value);
    send();
  }
  for (const MemoryRecord& m : r.memory) {
    // PyTorch's own "[memory]" events use this category; its memory view looks for them.
    start(Phase::Instant, chrome::kCatCpuInstant, chrome::kMemoryEventName,
          tracks_.hostThread(m.thread), m.timeNs);
    args_.add(chrome::kArgTotalAllocated, m.totalAllocated);
    args_.add(chrome::kArgTotalReserved, m.totalReserved);
    args_.add(chrome::kArgMemoryBytes, m.bytes);
    args_.add(chrome::kArgAddress, m.address);
    args_.add(chrome::kArgDeviceType, kCudaDeviceType);
    args_.add(chrome::kArgDeviceId, int64_t{m.deviceId});
    send();
  }
  for (const OverheadRecord& o : r.overheads) {
    start(Phase::Complete, chrome::kCatOverhead, overheadKindName(o.kind),
          tracks_.overhead(o.object, o.objectId, o.lane), o.startNs, o.endNs - o.startNs);
    send();
  }
}

void EventWriter::Impl::writeGpuOp(const GpuPlacement& at, int trackKind, std::string_view category,
                                   std::string_view name) {
  start(Phase::Complete, category, name, tracks_.gpu(at.deviceId, at.streamId, trackKind, at.lane),
        at.startNs, at.endNs - at.startNs);
}

// Written after the op's slice: the arrow from its launch call ends here, bound to the
// slice that encloses its timestamp.
void EventWriter::Impl::writeFlowEnd(const GpuPlacement& at, int trackKind) {
  if (!at.hasLaunchCall) return;
  start(Phase::FlowEnd, kFlowName, kFlowName,
        tracks_.gpu(at.deviceId, at.streamId, trackKind, at.lane), at.startNs);
  event_.flowId = at.correlationId;
  send();
}

void EventWriter::Impl::writeGpu(const TraceRecords& r) {
  auto bandwidth = [](uint64_t bytes, const GpuPlacement& at) {
    const int64_t ns = at.endNs - at.startNs;
    return ns > 0 ? static_cast<double>(bytes) / static_cast<double>(ns) : 0.0;  // B/ns = GB/s
  };

  for (const KernelRecord& k : r.kernels) {
    writeGpuOp(k.at, kGpuOpsTrack, chrome::kCatKernel, tables_.strings.get(k.name));
    args_.add(chrome::kArgQueued, k.queuedNs == 0 ? int64_t{0} : k.at.startNs - k.queuedNs);
    addPlacementArgs(k.at);
    args_.add(chrome::kArgRegistersPerThread, int64_t{k.registersPerThread});
    args_.add(chrome::kArgSharedMemory,
              int64_t{k.staticSharedBytes} + int64_t{k.dynamicSharedBytes});
    args_.add(chrome::kArgBlocksPerSm, displayFloat(k.blocksPerSm));
    args_.add(chrome::kArgWarpsPerSm, displayFloat(k.warpsPerSm));
    args_.add(chrome::kArgGrid, Dim3{k.grid[0], k.grid[1], k.grid[2]});
    args_.add(chrome::kArgBlock, Dim3{k.block[0], k.block[1], k.block[2]});
    if (k.occupancyPercent >= 0) {
      args_.add(chrome::kArgOccupancy, displayFloat(k.occupancyPercent));
    }
    addGraphArgs(k.graphId, k.graphNodeId, k.graphNodeSite, k.at.launchFoundBy);
    addNcclArgs(tables_.strings.get(k.name));
    addMetricArgs(r, k.metricAverages);
    send();
    writeFlowEnd(k.at, kGpuOpsTrack);
  }
  for (const MemcpyRecord& m : r.memcpys) {
    writeGpuOp(m.at, kGpuOpsTrack, chrome::kCatMemcpy,
               memcpyEventName(m.copyKind, m.srcKind, m.dstKind));
    addPlacementArgs(m.at);
    args_.add(chrome::kArgBytes, m.bytes);
    args_.add(chrome::kArgBandwidth, bandwidth(m.bytes, m.at));
    if (m.peer) {
      args_.add(chrome::kArgSrcDevice, int64_t{m.srcDeviceId});
      args_.add(chrome::kArgDstDevice, int64_t{m.dstDeviceId});
    }
    addGraphArgs(m.graphId, m.graphNodeId, m.graphNodeSite, m.at.launchFoundBy);
    send();
    writeFlowEnd(m.at, kGpuOpsTrack);
  }
  for (const MemsetRecord& m : r.memsets) {
    writeGpuOp(m.at, kGpuOpsTrack, chrome::kCatMemset, memsetEventName(m.memoryKind));
    addPlacementArgs(m.at);
    args_.add(chrome::kArgBytes, m.bytes);
    args_.add(chrome::kArgBandwidth, bandwidth(m.bytes, m.at));
    addGraphArgs(m.graphId, m.graphNodeId, m.graphNodeSite, m.at.launchFoundBy);
    send();
    writeFlowEnd(m.at, kGpuOpsTrack);
  }
  for (const GraphRecord& g : r.graphs) {
    writeGpuOp(g.at, kGpuOpsTrack, chrome::kCatCudaGraph, tables_.strings.get(g.name));
    addPlacementArgs(g.at);
    args_.add(chrome::kArgGraphId, int64_t{g.graphId});
    send();
    writeFlowEnd(g.at, kGpuOpsTrack);
  }
  for (const SyncRecord& s : r.syncs) {
    writeGpuOp(s.at, kGpuSyncTrack, chrome::kCatCudaSync, syncKindName(s.kind));
    addPlacementArgs(s.at);
    if (s.eventId != 0) args_.add(chrome::kArgEvent, int64_t{s.eventId});
    send();
    writeFlowEnd(s.at, kGpuSyncTrack);
  }
  writeMetricSamples(r);
  writeMemoryPools(r);
  for (const GpuSpanRecord& g : r.gpuSpans) {
    start(Phase::Complete, chrome::kCatGpuAnnotation, tables_.strings.get(g.name),
          tracks_.gpu(g.deviceId, g.streamId, kGpuSpanTrack, g.lane), g.startNs,
          g.endNs - g.startNs);
    args_.add(chrome::kArgExternalId, g.externalId);
    send();
  }
}

void EventWriter::Impl::writeMetricSamples(const TraceRecords& r) {
  const std::vector<GpuMetric>& metrics = tables_.gpuMetrics.metrics;
  if (r.metricSamples.empty() || metrics.empty()) return;
  uint32_t lastDevice = ~0u;
  const TrackRef* counters = nullptr;  // the device's, one per metric
  for (const GpuMetricSampleRecord& sample : r.metricSamples) {
    if (sample.values + metrics.size() > r.metricValues.size()) continue;  // a bug upstream
    if (sample.deviceId != lastDevice) {
      lastDevice = sample.deviceId;
      counters = tracks_.gpuMetrics(sample.deviceId);
    }
    // The value holds from the sample's start until the next sample, as a counter does.
    for (std::size_t m = 0; m < metrics.size(); ++m) {
      start(Phase::Counter, chrome::kCatGpuMetric, metrics[m].displayName, counters[m],
            sample.startNs);
      args_.add(metricUnitName(metrics[m].unit), r.metricValues[sample.values + m]);
      send();
    }
  }
}

void EventWriter::Impl::writeMemoryPools(const TraceRecords& r) {
  for (const MemoryPoolRecord& p : r.memoryPools) {
    const char* name = p.operation == PoolOperation::Created     ? chrome::kMemoryPoolCreated
                       : p.operation == PoolOperation::Destroyed ? chrome::kMemoryPoolDestroyed
                                                                 : chrome::kMemoryPoolTrimmed;
    start(Phase::Instant, chrome::kCatGpuMemoryPool, name, tracks_.memoryPools(p.deviceId),
          p.timeNs);
    args_.add(chrome::kArgAddress, p.address);
    args_.add(chrome::kArgPoolType, std::string_view(p.imported ? "imported" : "local"));
    args_.add(chrome::kArgPoolMemory, std::string_view(p.managed ? "managed" : "device"));
    if (!p.imported) {
      args_.add(chrome::kArgPoolBytes, p.sizeBytes);
      args_.add(chrome::kArgPoolUtilizedBytes, p.utilizedBytes);
      args_.add(chrome::kArgPoolReleaseThreshold, p.releaseThresholdBytes);
    }
    if (p.operation == PoolOperation::Trimmed) {
      args_.add(chrome::kArgPoolMinBytesToKeep, p.minBytesToKeep);
    }
    args_.add(chrome::kArgDevice, int64_t{p.deviceId});
    args_.add(chrome::kArgCorrelation, int64_t{p.correlationId});
    send();
  }
}

EventWriter::EventWriter(Sink& sink, const TraceTables& tables, int64_t baseTimeNs)
    : impl_(new Impl(sink, tables, baseTimeNs)) {}

EventWriter::~EventWriter() {
  delete impl_;
}

void EventWriter::write(const TraceRecords& records) {
  impl_->write(records);
}

void EventWriter::finish() {
  impl_->finish();
}

void writeTrace(const TraceData& trace, const std::string& traceName, const Metadata& extraFooter,
                Sink& sink) {
  sink.begin(TraceHeader{traceName, trace.startNs, trace.header});
  EventWriter writer(sink, trace.tables, trace.startNs);
  writer.write(trace.records);
  writer.finish();
  Metadata footer;
  footer.reserve(trace.footer.size() + extraFooter.size());
  footer.insert(footer.end(), trace.footer.begin(), trace.footer.end());
  footer.insert(footer.end(), extraFooter.begin(), extraFooter.end());
  sink.end(footer);
}

}  // namespace kinetrace::detail
