#include "output/trace_events.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "output/json_escape.h"

namespace kinetrace::detail {
namespace {

// libkineto's kExceedMaxPid: above any Linux pid (pid_max <= 2^22), so GPU processes sort
// after the host process, whose sort index is its pid.
constexpr int64_t kGpuSortIndexBase = 5'000'000;
constexpr int64_t kOverheadPid = -1;
constexpr int64_t kOverheadSortIndex = 2 * kGpuSortIndexBase;
// c10::DeviceType::CUDA, which PyTorch's memory view expects in "[memory]" events.
constexpr int64_t kCudaDeviceType = 1;
constexpr std::string_view kFlowName = "ac2g";

// The event's args, in storage reused for every event: writing a trace allocates nothing
// per event. Sixteen covers the largest event, a graph-launched kernel (15 args).
class ArgList {
 public:
  static constexpr std::size_t kCapacity = 16;
  void clear() { count_ = 0; }
  void add(std::string_view key, ArgValue value) {
    assert(count_ < kCapacity && "an event kind gained args: raise kCapacity");
    if (count_ < kCapacity) args_[count_++] = Arg{key, value};
  }
  const Arg* data() const { return args_.data(); }
  std::size_t size() const { return count_; }

 private:
  std::array<Arg, kCapacity> args_{};
  std::size_t count_ = 0;
};

// Floats print their widening error as a double (0.1f is 0.10000000149011612); six
// decimals is more than CUPTI's occupancy figures carry and prints as people expect.
double displayFloat(float value) { return std::round(static_cast<double>(value) * 1e6) / 1e6; }

const std::string* findMetadata(const TraceData& trace, std::string_view key) {
  for (const auto& entry : trace.metadataJson) {
    if (entry.first == key) return &entry.second;
  }
  return nullptr;
}

std::string devicePropertiesJson(const TraceData& trace) {
  std::string json = "[";
  for (const DeviceInfo& d : trace.devices) {
    if (json.size() > 1) json += ", ";
    json += fmt::format("{{\"id\": {}, \"name\": ", d.id);
    appendJsonString(json, trace.strings.get(d.name));
    json += fmt::format(
        ", \"totalGlobalMem\": {}, \"computeMajor\": {}, \"computeMinor\": {}, "
        "\"maxThreadsPerBlock\": {}, \"maxThreadsPerMultiprocessor\": {}, \"regsPerBlock\": {}, "
        "\"warpSize\": {}, \"sharedMemPerBlock\": {}, \"numSms\": {}, "
        "\"regsPerMultiprocessor\": {}, \"sharedMemPerBlockOptin\": {}, "
        "\"sharedMemPerMultiprocessor\": {}}}",
        d.totalGlobalMem, d.computeMajor, d.computeMinor, d.maxThreadsPerBlock,
        d.maxThreadsPerMultiprocessor, d.regsPerBlock, d.warpSize, d.sharedMemPerBlock, d.numSms,
        d.regsPerMultiprocessor, d.sharedMemPerBlockOptin, d.sharedMemPerMultiprocessor);
  }
  return json + "]";
}

// schemaVersion first and distributedInfo right after it: HTA's fast reader stops at
// "traceEvents" and refuses a trace whose rank it did not see. kinetrace's own keys
// replace user entries of the same name.
TraceHeader makeHeader(const TraceData& trace, const std::string& traceName, int64_t baseTimeNs) {
  const LossCounters& loss = trace.losses;
  const std::pair<std::string_view, uint64_t> counters[] = {
      {"kinetrace_dropped_host_events", loss.droppedHostEvents},
      {"kinetrace_dropped_host_name_bytes", loss.droppedHostNameBytes},
      {"kinetrace_cupti_dropped_records", loss.cuptiDroppedRecords},
      {"kinetrace_cupti_buffers_refused", loss.cuptiBuffersRefused},
      {"kinetrace_cupti_records_undecoded", loss.cuptiRecordsUndecoded},
      {"kinetrace_out_of_window_events", loss.outOfWindowEvents},
      {"kinetrace_gpu_ops_before_launch", loss.gpuOpsBeforeLaunch},
      {"kinetrace_gpu_ops_without_launch", loss.gpuOpsWithoutLaunch},
      {"kinetrace_unfinished_ranges", loss.unfinishedRanges},
  };
  auto isGenerated = [&counters](std::string_view key) {
    if (key == "schemaVersion" || key == "distributedInfo" ||
        key == "kinetrace_window_start_ns" || key == "kinetrace_window_stop_ns") {
      return true;
    }
    return std::any_of(std::begin(counters), std::end(counters),
                       [key](const auto& counter) { return counter.first == key; });
  };

  TraceHeader header;
  header.traceName = traceName;
  header.baseTimeNs = baseTimeNs;
  auto& out = header.metadataJson;
  out.emplace_back("schemaVersion", "1");
  if (const std::string* info = findMetadata(trace, "distributedInfo")) {
    out.emplace_back("distributedInfo", *info);
  }
  // Written even when empty: readers (HTA) look the key up unconditionally.
  if (!findMetadata(trace, "deviceProperties")) {
    out.emplace_back("deviceProperties", devicePropertiesJson(trace));
  }
  for (const auto& entry : trace.metadataJson) {
    if (!isGenerated(entry.first)) out.push_back(entry);
  }
  for (const auto& [key, value] : counters) out.emplace_back(key, fmt::format_int(value).str());
  out.emplace_back("kinetrace_window_start_ns", fmt::format_int(trace.startNs).str());
  out.emplace_back("kinetrace_window_stop_ns", fmt::format_int(trace.stopNs).str());
  return header;
}

// The window start, unless an event lies before it (or no start was recorded): "ts"
// values stay small and non-negative, which keeps nanosecond precision in a double.
int64_t baseTimeOf(const TraceData& t) {
  int64_t earliest = std::numeric_limits<int64_t>::max();
  auto seeAll = [&earliest](const auto& records, auto timeOf) {
    for (const auto& r : records) earliest = std::min(earliest, timeOf(r));
  };
  auto start = [](const auto& r) { return r.startNs; };
  auto time = [](const auto& r) { return r.timeNs; };
  auto placed = [](const auto& r) { return r.at.startNs; };
  seeAll(t.ranges, start);
  seeAll(t.instants, time);
  seeAll(t.counters, time);
  seeAll(t.memory, time);
  seeAll(t.apiCalls, start);
  seeAll(t.overheads, start);
  seeAll(t.gpuSpans, start);
  seeAll(t.kernels, placed);
  seeAll(t.memcpys, placed);
  seeAll(t.memsets, placed);
  seeAll(t.syncs, placed);
  if (earliest == std::numeric_limits<int64_t>::max()) return t.startNs;
  return t.startNs == 0 ? earliest : std::min(t.startNs, earliest);
}

// No real key has all bits set: device and stream ids are below 2^32 - 1.
constexpr std::array<uint64_t, 64> makeEmptyMemo() {
  std::array<uint64_t, 64> memo{};
  for (auto& entry : memo) entry = ~uint64_t{0};
  return memo;
}

class TraceEmitter {
 public:
  TraceEmitter(const TraceData& trace, Sink& sink)
      : trace_(trace), sink_(sink), usedThreads_(trace.threads.size(), false) {}

  void emit(const std::string& traceName) {
    baseTimeNs_ = baseTimeOf(trace_);
    sink_.begin(makeHeader(trace_, traceName, baseTimeNs_));
    emitHostEvents();
    emitGpuEvents();
    emitNamingMetadata();
    sink_.end();
  }

 private:
  void emitHostEvents();
  void emitGpuEvents();
  void emitGpuOp(const GpuPlacement& at, std::string_view category, std::string_view name);
  void emitNamingMetadata();
  void emitMetadata(std::string_view name, int64_t pid, int64_t tid, std::string_view key,
                    ArgValue value);

  // Starts the next event; args are added to args_ until send().
  void start(Phase phase, std::string_view category, std::string_view name, int64_t pid,
             int64_t tid, int64_t timestampNs, int64_t durationNs = 0) {
    event_ = Event{};
    event_.phase = phase;
    event_.category = category;
    event_.name = name;
    event_.pid = pid;
    event_.tid = tid;
    event_.timestampNs = timestampNs;
    event_.durationNs = durationNs;
    args_.clear();
  }
  void send() {
    event_.args = args_.data();
    event_.argCount = args_.size();
    sink_.write(event_);
  }

  // The OS thread id of a host record's thread. An index outside the thread table is a
  // bug upstream; writing the event on tid 0 loses less than refusing the whole trace.
  int64_t hostTid(uint32_t thread) {
    if (thread >= trace_.threads.size()) return 0;
    usedThreads_[thread] = true;
    return trace_.threads[thread].tid;
  }
  void noteStream(uint32_t deviceId, uint32_t streamId) {
    const uint64_t key = (static_cast<uint64_t>(deviceId) << 32) | streamId;
    // A direct-mapped memo of streams already noted answers almost every op; the sorted
    // list (few streams, so a vector) is searched only on a miss.
    uint64_t& memo = recentStreams_[(key * 0x9E3779B97F4A7C15ULL) >> 58];
    if (memo == key) return;
    memo = key;
    auto at = std::lower_bound(streams_.begin(), streams_.end(), key);
    if (at == streams_.end() || *at != key) streams_.insert(at, key);
  }
  // What every GPU operation carries: its range link, where it ran, its launch's id.
  void addPlacementArgs(const GpuPlacement& at) {
    if (at.externalId != 0) args_.add("External id", at.externalId);
    args_.add("device", int64_t{at.deviceId});
    args_.add("context", int64_t{at.contextId});
    args_.add("stream", int64_t{at.streamId});
    args_.add("correlation", int64_t{at.correlationId});
  }

  const TraceData& trace_;
  Sink& sink_;
  int64_t baseTimeNs_ = 0;
  Event event_;
  ArgList args_;
  std::vector<bool> usedThreads_;
  bool hostProcessUsed_ = false;
  bool overheadUsed_ = false;
  std::vector<uint64_t> streams_;  // (device << 32 | stream), sorted
  std::array<uint64_t, 64> recentStreams_ = makeEmptyMemo();
};

void TraceEmitter::emitHostEvents() {
  const TraceData& t = trace_;
  const int64_t pid = t.pid;
  for (const RangeRecord& r : t.ranges) {
    const std::string_view category =
        r.category == RangeCategory::CpuOp ? "cpu_op" : "user_annotation";
    start(Phase::Complete, category, t.strings.get(r.name), pid, hostTid(r.thread), r.startNs,
          r.endNs - r.startNs);
    args_.add("External id", r.externalId);
    if (r.unfinished) args_.add("unfinished", true);
    send();
  }
  for (const ApiCallRecord& c : t.apiCalls) {
    const std::string_view category =
        c.domain == ApiDomain::Driver ? "cuda_driver" : "cuda_runtime";
    const int64_t tid = hostTid(c.thread);
    start(Phase::Complete, category, t.strings.get(c.name), pid, tid, c.startNs,
          c.endNs - c.startNs);
    args_.add("cbid", int64_t{c.callbackId});
    args_.add("correlation", int64_t{c.correlationId});
    if (c.externalId != 0) args_.add("External id", c.externalId);
    send();
    if (c.hasGpuOp) {
      start(Phase::FlowStart, kFlowName, kFlowName, pid, tid, c.startNs);
      event_.flowId = c.correlationId;
      send();
    }
  }
  for (const InstantRecord& i : t.instants) {
    start(Phase::Instant, "user_instant", t.strings.get(i.name), pid, hostTid(i.thread), i.timeNs);
    send();
  }
  for (const CounterRecord& c : t.counters) {
    const std::string_view name = t.strings.get(c.name);
    start(Phase::Counter, "counter", name, pid, hostTid(c.thread), c.timeNs);
    args_.add(name, c.value);
    send();
  }
  for (const MemoryRecord& m : t.memory) {
    // PyTorch's own "[memory]" events use this category; its memory view looks for them.
    start(Phase::Instant, "cpu_instant_event", "[memory]", pid, hostTid(m.thread), m.timeNs);
    args_.add("Total Allocated", m.totalAllocated);
    args_.add("Total Reserved", m.totalReserved);
    args_.add("Bytes", m.bytes);
    args_.add("Addr", m.address);
    args_.add("Device Type", kCudaDeviceType);
    args_.add("Device Id", int64_t{m.deviceId});
    send();
  }
  hostProcessUsed_ = !t.ranges.empty() || !t.apiCalls.empty() || !t.instants.empty() ||
                     !t.counters.empty() || !t.memory.empty();
  for (const OverheadRecord& o : t.overheads) {
    start(Phase::Complete, "overhead", t.strings.get(o.name), kOverheadPid, 0, o.startNs,
          o.endNs - o.startNs);
    send();
  }
  overheadUsed_ = !t.overheads.empty();
}

void TraceEmitter::emitGpuOp(const GpuPlacement& at, std::string_view category,
                             std::string_view name) {
  start(Phase::Complete, category, name, at.deviceId, at.streamId, at.startNs,
        at.endNs - at.startNs);
  noteStream(at.deviceId, at.streamId);
}

void TraceEmitter::emitGpuEvents() {
  const TraceData& t = trace_;
  // Called after each GPU op's slice: the arrow from its launch call ends here.
  auto flowEnd = [this](const GpuPlacement& at) {
    if (!at.hasLaunchCall) return;
    start(Phase::FlowEnd, kFlowName, kFlowName, at.deviceId, at.streamId, at.startNs);
    event_.flowId = at.correlationId;
    send();
  };
  auto bandwidth = [](uint64_t bytes, const GpuPlacement& at) {
    const int64_t ns = at.endNs - at.startNs;
    return ns > 0 ? static_cast<double>(bytes) / static_cast<double>(ns) : 0.0;  // B/ns = GB/s
  };

  for (const KernelRecord& k : t.kernels) {
    emitGpuOp(k.at, "kernel", t.strings.get(k.name));
    args_.add("queued", k.queuedNs == 0 ? int64_t{0} : k.at.startNs - k.queuedNs);
    addPlacementArgs(k.at);
    args_.add("registers per thread", int64_t{k.registersPerThread});
    args_.add("shared memory", int64_t{k.staticSharedBytes} + int64_t{k.dynamicSharedBytes});
    args_.add("blocks per SM", displayFloat(k.blocksPerSm));
    args_.add("warps per SM", displayFloat(k.warpsPerSm));
    args_.add("grid", Dim3{k.grid[0], k.grid[1], k.grid[2]});
    args_.add("block", Dim3{k.block[0], k.block[1], k.block[2]});
    if (k.occupancyPercent >= 0) {
      args_.add("est. achieved occupancy %", displayFloat(k.occupancyPercent));
    }
    if (k.graphId != 0) {
      args_.add("graph id", int64_t{k.graphId});
      args_.add("graph node id", k.graphNodeId);
    }
    send();
    flowEnd(k.at);
  }
  for (const MemcpyRecord& m : t.memcpys) {
    emitGpuOp(m.at, "gpu_memcpy", t.strings.get(m.name));
    addPlacementArgs(m.at);
    args_.add("bytes", m.bytes);
    args_.add("memory bandwidth (GB/s)", bandwidth(m.bytes, m.at));
    if (m.peer) {
      args_.add("src device", int64_t{m.srcDeviceId});
      args_.add("dst device", int64_t{m.dstDeviceId});
    }
    send();
    flowEnd(m.at);
  }
  for (const MemsetRecord& m : t.memsets) {
    emitGpuOp(m.at, "gpu_memset", t.strings.get(m.name));
    addPlacementArgs(m.at);
    args_.add("bytes", m.bytes);
    args_.add("memory bandwidth (GB/s)", bandwidth(m.bytes, m.at));
    send();
    flowEnd(m.at);
  }
  for (const SyncRecord& s : t.syncs) {
    emitGpuOp(s.at, "cuda_sync", t.strings.get(s.name));
    addPlacementArgs(s.at);
    if (s.eventId != 0) args_.add("event", int64_t{s.eventId});
    send();
    flowEnd(s.at);
  }
  for (const GpuSpanRecord& g : t.gpuSpans) {
    start(Phase::Complete, "gpu_user_annotation", t.strings.get(g.name), g.deviceId, g.streamId,
          g.startNs, g.endNs - g.startNs);
    noteStream(g.deviceId, g.streamId);
    args_.add("External id", g.externalId);
    send();
  }
}

void TraceEmitter::emitMetadata(std::string_view name, int64_t pid, int64_t tid,
                                std::string_view key, ArgValue value) {
  start(Phase::Metadata, {}, name, pid, tid, baseTimeNs_);
  args_.add(key, value);
  send();
}

std::string hostProcessName(const TraceData& trace) {
  if (const std::string* json = findMetadata(trace, "kinetrace_process_name")) {
    const auto parsed = nlohmann::json::parse(*json, nullptr, false);
    if (parsed.is_string()) return parsed.get<std::string>();
  }
  return "host";
}

// Names only what appeared, in libkineto's order: the host process and its threads, then
// each GPU and its streams.
void TraceEmitter::emitNamingMetadata() {
  const TraceData& t = trace_;
  if (hostProcessUsed_) {
    const std::string processName = hostProcessName(t);
    emitMetadata("process_name", t.pid, 0, "name", std::string_view(processName));
    emitMetadata("process_labels", t.pid, 0, "labels", std::string_view("CPU"));
    emitMetadata("process_sort_index", t.pid, 0, "sort_index", t.pid);

    // Sorted by tid, one name per tid even if two thread-table entries share it.
    std::map<int64_t, StringId> threadNames;
    for (std::size_t i = 0; i < usedThreads_.size(); ++i) {
      if (usedThreads_[i]) threadNames.emplace(t.threads[i].tid, t.threads[i].name);
    }
    for (const auto& [tid, nameId] : threadNames) {
      const std::string_view given = t.strings.get(nameId);
      const std::string name =
          given.empty() ? fmt::format("thread {}", tid) : fmt::format("thread {} ({})", tid, given);
      emitMetadata("thread_name", t.pid, tid, "name", std::string_view(name));
      emitMetadata("thread_sort_index", t.pid, tid, "sort_index", tid);
    }
  }
  if (overheadUsed_) {
    emitMetadata("process_name", kOverheadPid, 0, "name", std::string_view("CUPTI overhead"));
    emitMetadata("process_sort_index", kOverheadPid, 0, "sort_index", kOverheadSortIndex);
    emitMetadata("thread_name", kOverheadPid, 0, "name", std::string_view("CUPTI overhead"));
  }

  int64_t namedDevice = -1;
  for (uint64_t key : streams_) {  // by device, then stream
    const auto device = static_cast<int64_t>(key >> 32);
    const auto stream = static_cast<int64_t>(key & 0xFFFFFFFFu);
    if (device != namedDevice) {
      namedDevice = device;
      const std::string label = fmt::format("GPU {}", device);
      emitMetadata("process_name", device, 0, "name", std::string_view(label));
      emitMetadata("process_labels", device, 0, "labels", std::string_view(label));
      emitMetadata("process_sort_index", device, 0, "sort_index", kGpuSortIndexBase + device);
    }
    const std::string name = fmt::format("stream {}", stream);
    emitMetadata("thread_name", device, stream, "name", std::string_view(name));
    emitMetadata("thread_sort_index", device, stream, "sort_index", stream);
  }
}

}  // namespace

void emitTrace(const TraceData& trace, const std::string& traceName, Sink& sink) {
  TraceEmitter(trace, sink).emit(traceName);
}

}  // namespace kinetrace::detail
