#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kinetrace/sink.h"
#include "model/records.h"
#include "model/trace_data.h"

namespace kinetrace::detail {

// The tid of a GPU track: lane 0 of the stream's operations is the stream id itself, as in
// libkineto; every other track puts the track kind (1 ops, 2 sync, 3 annotations) in bits
// 28..29 and the lane in bits 20..27 (lanes past 255 share 255) above the stream id's low 20
// bits, so tids stay below 2^31: Perfetto's JSON importer takes a tid as a 32-bit number.
// (CUPTI's stream ids are small counters; two streams 2^20 apart would share such tracks.)
int64_t gpuTrackTid(uint32_t streamId, int trackKind, uint16_t lane);
constexpr int kGpuOpsTrack = 1;
constexpr int kGpuSyncTrack = 2;
constexpr int kGpuSpanTrack = 3;
// Tids of async-range lanes: above any Linux tid (pid_max <= 2^22).
constexpr int64_t kAsyncLaneTidBase = int64_t{1} << 30;
// The GPU metrics' track on a GPU's process: above every gpuTrackTid (bits 0..29), below 2^31.
constexpr int64_t kGpuMetricsTid = int64_t{1} << 30;
// A GPU's "memory pools" track: beside its "GPU metrics" track, above every stream's.
constexpr int64_t kMemoryPoolsTid = kGpuMetricsTid + 1;

// Where an event goes: the described track's id and its Chrome coordinates.
struct TrackRef {
  uint64_t id = 0;
  int64_t pid = 0;
  int64_t tid = 0;
};

// The tracks of a trace being written, each made the first time a record needs it and then
// described to the sink (its parents first), as Perfetto's model wants: before its first
// event. The tree, in libkineto's layout:
//   host process (pid = the process): a Thread per OS thread, a Thread per async-range lane;
//   "CUPTI overhead" (pid -1): a Thread per thread or device CUPTI spent time for, Lanes;
//   "GPU N" (pid = device): "GPU metrics" (a Thread holding a Counter per metric), "memory
//     pools" (a Thread), and per stream a GpuStream for its operations, one for its
//     synchronisations, one for its annotations, each with Lanes for slices that overlap.
// Names are made here only; the tids are those of output/trace_events.h's layout. A host
// thread named after its first event is described again by finish(). Nothing is allocated
// for a track already made; the GPU tracks, which almost every operation asks for, are
// found through a small direct-mapped memo.
class TrackBook {
 public:
  // `tables` must outlive the book; `sinceNs` is the tracks' descriptions' time.
  TrackBook(Sink& sink, const TraceTables& tables, int64_t sinceNs);

  // A host thread's track (by its index in the thread table); an index outside the table,
  // a bug upstream, gets tid 0 of the host process.
  TrackRef hostThread(uint32_t thread);
  TrackRef asyncLane(uint16_t lane);
  TrackRef overhead(OverheadObject object, uint64_t objectId, uint16_t lane);
  // A GPU track: one lane of one kind (kGpuOpsTrack, kGpuSyncTrack, kGpuSpanTrack) of one
  // stream of one device.
  TrackRef gpu(uint32_t device, uint32_t stream, int kind, uint16_t lane);
  // A device's counters, one per metric of the tables' GPU metrics, in their order; valid
  // until the next call.
  const TrackRef* gpuMetrics(uint32_t device);
  TrackRef memoryPools(uint32_t device);
  // Describes again the host threads whose name changed since they were described.
  void finish();

 private:
  struct GpuKey {
    uint32_t device = 0;
    uint32_t stream = 0;
    uint8_t kind = 0;
    uint8_t lane = 0;
    bool operator==(const GpuKey& o) const {
      return device == o.device && stream == o.stream && kind == o.kind && lane == o.lane;
    }
    bool operator<(const GpuKey& o) const;
    uint64_t hash() const;
  };
  struct MemoEntry {
    GpuKey key{~0u, ~0u, 0xFF, 0xFF};  // no real track has kind 0xFF
    TrackRef ref;
  };
  struct HostThread {
    TrackRef ref;
    std::string name;  // as described
  };
  struct Device {
    TrackRef process;
    TrackRef metrics;                      // id 0 until a metric sample needs it
    TrackRef pools;                        // id 0 until a pool event needs it
    std::vector<TrackRef> metricCounters;  // by metric; empty until a sample needs them
  };

  TrackRef describe(TrackKind kind, uint64_t parent, const std::string& name, int64_t pid,
                    int64_t tid, int64_t sortIndex, std::string_view label = {},
                    std::string_view unit = {}, std::string_view category = {});
  // Describes the track `ref` (again, under its id: a host thread renamed).
  void describeAs(const TrackRef& ref, TrackKind kind, uint64_t parent, const std::string& name,
                  int64_t sortIndex, std::string_view label = {}, std::string_view unit = {},
                  std::string_view category = {});
  TrackRef hostProcess();
  TrackRef overheadProcess();
  Device& device(uint32_t device);
  TrackRef makeGpu(const GpuKey& key);
  std::string hostThreadName(int64_t tid) const;

  Sink& sink_;
  const TraceTables& tables_;
  const int64_t sinceNs_;
  uint64_t nextId_ = 1;
  TrackRef hostProcess_;
  TrackRef overheadProcess_;
  std::vector<TrackRef> threadTracks_;         // by thread index; id 0 until needed
  std::map<int64_t, HostThread> hostThreads_;  // by OS tid: entries sharing one share it
  std::vector<TrackRef> asyncLanes_;           // by lane; id 0 until needed
  std::map<std::pair<OverheadObject, uint64_t>, std::vector<TrackRef>> overheads_;  // by lane
  std::map<uint32_t, Device> devices_;
  std::map<GpuKey, TrackRef> gpuTracks_;
  std::array<MemoEntry, 64> memo_{};
};

}  // namespace kinetrace::detail
