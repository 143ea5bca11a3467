#pragma once

#include <string>

#include "kinetrace/sink.h"
#include "model/trace_data.h"

namespace kinetrace::detail {

// Turns assembled records into Chrome-trace events in the layout of PyTorch's profiler
// (libkineto), so Perfetto, TensorBoard and HTA read them unchanged (the names and keys:
// output/trace_vocabulary.h).
// This is where kinds get their display names ("Memcpy HtoD (Pinned -> Device)", "Stream
// Sync") and records their tracks:
//   host ranges, API calls, instants, counters, [memory] events: pid = the process, tid =
//     the OS thread; async ranges: tid kAsyncLaneTidBase + lane ("async ranges", "async
//     ranges 2", ...);
//   GPU work: pid = device index, tid = stream id for lane 0 of a stream; further lanes,
//     the stream's synchronisation track and its annotation (gpu_user_annotation) tracks
//     get tids of their own (gpuTrackTid), each named after the stream ("stream 7",
//     "stream 7 (2)", "stream 7 sync", "stream 7 annotations");
//   CUPTI overhead: pid -1, tid = the thread (or device) it was spent for, plus lanes;
//   GPU metric samples: counters (one per metric, at each sample's start) on pid = device,
//     tid kGpuMetricsTid ("GPU metrics"), named by the metric, the series keyed by its unit;
//     a kernel's averages are arguments of its slice.
// Arrows: a FlowRecord is the 's' end at its call; a GPU record with hasLaunchCall carries
// the 'f' end ("bp":"e").
//
// Records may come in any number of write() calls (a trace written while it is recorded);
// finish() then writes the naming metadata (process_name, thread_name, sort indexes,
// labels) of every process and track that appeared, with the thread names the tables hold
// by then. Nothing is allocated per event.
class EventWriter {
 public:
  // `tables` must outlive the writer; names in it may be added between write() calls.
  EventWriter(Sink& sink, const TraceTables& tables, int64_t baseTimeNs);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void write(const TraceRecords& records);
  // Naming metadata for everything written. Call once, after the last write().
  void finish();

 private:
  class Impl;
  Impl* impl_;
};

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

// Writes a trace held in memory: begin(trace.header), every record, the naming metadata,
// end(trace.footer followed by `extraFooter`). `traceName` is the header's traceName.
void writeTrace(const TraceData& trace, const std::string& traceName, const Metadata& extraFooter,
                Sink& sink);

}  // namespace kinetrace::detail
