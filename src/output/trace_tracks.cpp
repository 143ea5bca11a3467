#include "output/trace_tracks.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "output/kind_names.h"
#include "output/trace_vocabulary.h"

namespace kinetrace::detail {
namespace {

// libkineto's kExceedMaxPid: above any Linux pid (pid_max <= 2^22), so GPU processes sort
// after the host process, whose sort index is its pid.
constexpr int64_t kGpuSortIndexBase = 5'000'000;
constexpr int64_t kOverheadPid = -1;
constexpr int64_t kOverheadSortIndex = 2 * kGpuSortIndexBase;
// Lanes past this share the last track (gpuTrackTid's lane field is 8 bits wide).
constexpr uint16_t kMaxLane = 255;
// Overhead lanes other than 0 go above any thread id (pid_max <= 2^22); device tracks go
// above every thread track; all stay below 2^31: Perfetto's JSON importer takes a tid as
// a 32-bit number, and some readers as a signed one.
constexpr int kOverheadLaneShift = 22;
constexpr uint64_t kOverheadDeviceBase = uint64_t{1} << 30;
// A GPU's metrics and pools sort above its streams, as profilers show a GPU's metrics
// above its work (equal indexes are ordered by name).
constexpr int64_t kAboveStreams = -1;

uint16_t cappedLane(uint16_t lane) {
  return std::min(lane, kMaxLane);
}

// " (2)" for the second lane of a track, nothing for the first.
std::string laneSuffix(uint16_t lane) {
  return lane == 0 ? "" : fmt::format(" ({})", lane + 1);
}

int64_t overheadTid(OverheadObject object, uint64_t objectId, uint16_t lane) {
  const uint64_t base = object == OverheadObject::Device ? kOverheadDeviceBase : 0;
  return static_cast<int64_t>(base + (objectId & 0x3FFFFF) +
                              (uint64_t{lane} << kOverheadLaneShift));
}

}  // namespace

int64_t gpuTrackTid(uint32_t streamId, int trackKind, uint16_t lane) {
  if (trackKind == kGpuOpsTrack && lane == 0) return streamId;
  return static_cast<int64_t>(uint64_t{static_cast<uint8_t>(trackKind) & 3u} << 28 |
                              uint64_t{cappedLane(lane)} << 20 | (streamId & 0xFFFFFu));
}

bool TrackBook::GpuKey::operator<(const GpuKey& o) const {
  return std::tie(device, stream, kind, lane) < std::tie(o.device, o.stream, o.kind, o.lane);
}

uint64_t TrackBook::GpuKey::hash() const {
  const uint64_t key =
      (uint64_t{device} << 32 | stream) ^ (uint64_t{kind} << 56 | uint64_t{lane} << 48);
  return key * 0x9E3779B97F4A7C15ULL;
}

TrackBook::TrackBook(Sink& sink, const TraceTables& tables, int64_t sinceNs)
    : sink_(sink), tables_(tables), sinceNs_(sinceNs) {}

TrackRef TrackBook::describe(TrackKind kind, uint64_t parent, const std::string& name,
                             int64_t pid, int64_t tid, int64_t sortIndex, std::string_view label,
                             std::string_view unit, std::string_view category) {
  const TrackRef ref{nextId_++, pid, tid};
  describeAs(ref, kind, parent, name, sortIndex, label, unit, category);
  return ref;
}

void TrackBook::describeAs(const TrackRef& ref, TrackKind kind, uint64_t parent,
                           const std::string& name, int64_t sortIndex, std::string_view label,
                           std::string_view unit, std::string_view category) {
  Track track;
  track.id = ref.id;
  track.parent = parent;
  track.kind = kind;
  track.name = name;
  track.label = label;
  track.sortIndex = sortIndex;
  track.unit = unit;
  track.category = category;
  track.pid = ref.pid;
  track.tid = ref.tid;
  track.sinceNs = sinceNs_;
  sink_.describe(track);
}

TrackRef TrackBook::hostProcess() {
  if (hostProcess_.id == 0) {
    const std::string name = tables_.processName.empty() ? "host" : tables_.processName;
    hostProcess_ = describe(TrackKind::Process, 0, name, tables_.pid, 0, tables_.pid, "CPU");
  }
  return hostProcess_;
}

std::string TrackBook::hostThreadName(int64_t tid) const {
  // Of thread-table entries that share the tid (used ones), the one with a name wins.
  std::string_view given;
  for (std::size_t i = 0; i < threadTracks_.size() && given.empty(); ++i) {
    if (threadTracks_[i].id != 0 && tables_.threads[i].tid == tid) {
      given = tables_.strings.get(tables_.threads[i].name);
    }
  }
  return given.empty() ? fmt::format("thread {}", tid) : fmt::format("thread {} ({})", tid, given);
}

TrackRef TrackBook::hostThread(uint32_t thread) {
  if (thread >= tables_.threads.size()) return TrackRef{hostProcess().id, tables_.pid, 0};
  // The table may have grown since the last call; grows with it, not per event.
  if (thread >= threadTracks_.size()) threadTracks_.resize(tables_.threads.size());
  TrackRef& ref = threadTracks_[thread];
  if (ref.id != 0) return ref;
  const int64_t tid = tables_.threads[thread].tid;
  auto [it, made] = hostThreads_.try_emplace(tid);
  if (made) {
    const uint64_t parent = hostProcess().id;
    ref.id = 1;  // counted as used by hostThreadName
    it->second.name = hostThreadName(tid);
    it->second.ref = describe(TrackKind::Thread, parent, it->second.name, tables_.pid, tid, tid);
  }
  ref = it->second.ref;
  return ref;
}

TrackRef TrackBook::asyncLane(uint16_t lane) {
  if (lane >= asyncLanes_.size()) asyncLanes_.resize(lane + 1u);
  TrackRef& ref = asyncLanes_[lane];
  if (ref.id == 0) {
    const uint64_t parent = hostProcess().id;
    const int64_t tid = kAsyncLaneTidBase + lane;
    const std::string name =
        lane == 0 ? std::string("async ranges") : fmt::format("async ranges {}", lane + 1);
    ref = describe(TrackKind::Thread, parent, name, tables_.pid, tid, tid);
  }
  return ref;
}

TrackRef TrackBook::overheadProcess() {
  if (overheadProcess_.id == 0) {
    overheadProcess_ = describe(TrackKind::Process, 0, chrome::kOverheadProcessName, kOverheadPid,
                                0, kOverheadSortIndex);
  }
  return overheadProcess_;
}

TrackRef TrackBook::overhead(OverheadObject object, uint64_t objectId, uint16_t lane) {
  lane = cappedLane(lane);
  std::vector<TrackRef>& lanes = overheads_[{object, objectId}];
  if (lane < lanes.size() && lanes[lane].id != 0) return lanes[lane];
  if (lane >= lanes.size()) lanes.resize(lane + 1u);
  // A lane's parent is the first lane, made first.
  const uint64_t parent = lane == 0 ? overheadProcess().id : overhead(object, objectId, 0).id;
  std::string name = chrome::kOverheadProcessName;
  if (object == OverheadObject::Thread) {
    name = fmt::format("CUPTI overhead (thread {})", objectId);
  } else if (object == OverheadObject::Device) {
    name = fmt::format("CUPTI overhead (device {})", objectId);
  }
  name += laneSuffix(lane);
  const int64_t tid = overheadTid(object, objectId, lane);
  lanes[lane] = describe(lane == 0 ? TrackKind::Thread : TrackKind::Lane, parent, name,
                         kOverheadPid, tid, tid);
  return lanes[lane];
}

TrackBook::Device& TrackBook::device(uint32_t device) {
  Device& d = devices_[device];
  if (d.process.id == 0) {
    const std::string label = fmt::format("GPU {}", device);
    d.process = describe(TrackKind::Process, 0, label, device, 0,
                         kGpuSortIndexBase + int64_t{device}, label);
  }
  return d;
}

TrackRef TrackBook::gpu(uint32_t device, uint32_t stream, int kind, uint16_t lane) {
  const GpuKey key{device, stream, static_cast<uint8_t>(kind),
                   static_cast<uint8_t>(cappedLane(lane))};
  MemoEntry& memo = memo_[key.hash() >> 58];
  if (memo.key == key) return memo.ref;
  auto found = gpuTracks_.find(key);
  const TrackRef ref = found != gpuTracks_.end() ? found->second : makeGpu(key);
  memo = MemoEntry{key, ref};
  return ref;
}

TrackRef TrackBook::makeGpu(const GpuKey& key) {
  // A lane's parent is the first lane of its stream's track of that kind, made first.
  const uint64_t parent =
      key.lane == 0 ? device(key.device).process.id : gpu(key.device, key.stream, key.kind, 0).id;
  std::string name = fmt::format("stream {}", key.stream);
  if (key.kind == kGpuSyncTrack) name += " sync";
  if (key.kind == kGpuSpanTrack) name += " annotations";
  name += laneSuffix(key.lane);
  // Every track of a stream shares the stream's sort index, so they stay together (viewers
  // order tracks of equal index by name).
  const TrackRef ref =
      describe(key.lane == 0 ? TrackKind::GpuStream : TrackKind::Lane, parent, name, key.device,
               gpuTrackTid(key.stream, key.kind, key.lane), int64_t{key.stream});
  gpuTracks_.emplace(key, ref);
  return ref;
}

const TrackRef* TrackBook::gpuMetrics(uint32_t deviceId) {
  Device& d = device(deviceId);
  const std::vector<GpuMetric>& metrics = tables_.gpuMetrics.metrics;
  if (d.metricCounters.size() == metrics.size()) return d.metricCounters.data();
  if (d.metrics.id == 0) {
    d.metrics = describe(TrackKind::Thread, d.process.id, chrome::kGpuMetricsThreadName, deviceId,
                         kGpuMetricsTid, kAboveStreams);
  }
  // The metrics are known from the first GPU batch on, before any sample.
  for (std::size_t m = d.metricCounters.size(); m < metrics.size(); ++m) {
    d.metricCounters.push_back(describe(TrackKind::Counter, d.metrics.id, metrics[m].displayName,
                                        deviceId, kGpuMetricsTid, 0, {},
                                        metricUnitName(metrics[m].unit), chrome::kCatGpuMetric));
  }
  return d.metricCounters.data();
}

TrackRef TrackBook::memoryPools(uint32_t deviceId) {
  Device& d = device(deviceId);
  if (d.pools.id == 0) {
    d.pools = describe(TrackKind::Thread, d.process.id, chrome::kMemoryPoolsThreadName, deviceId,
                       kMemoryPoolsTid, kAboveStreams);
  }
  return d.pools;
}

void TrackBook::finish() {
  for (auto& [tid, thread] : hostThreads_) {
    std::string name = hostThreadName(tid);
    if (name == thread.name) continue;
    thread.name = std::move(name);
    describeAs(thread.ref, TrackKind::Thread, hostProcess_.id, thread.name, tid);
  }
}

}  // namespace kinetrace::detail
