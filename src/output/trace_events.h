#pragma once

#include <string>

#include "kinetrace/sink.h"
#include "model/trace_data.h"
#include "output/trace_tracks.h"

namespace kinetrace::detail {

// Turns assembled records into Chrome-trace events in the layout of PyTorch's profiler
// (libkineto), so Perfetto, TensorBoard and HTA read them unchanged (the names and keys:
// output/trace_vocabulary.h).
// This is where kinds get their display names ("Memcpy HtoD (Pinned -> Device)", "Stream
// Sync"); records get their tracks from a TrackBook (output/trace_tracks.h), which describes
// each track to the sink before its first event, and every event names its track:
//   host ranges, API calls, instants, counters, [memory] events: pid = the process, tid =
//     the OS thread; async ranges: tid kAsyncLaneTidBase + lane ("async ranges", "async
//     ranges 2", ...);
//   GPU work: pid = device index, tid = stream id for lane 0 of a stream; further lanes,
//     the stream's synchronisation track and its annotation (gpu_user_annotation) tracks
//     get tids of their own (gpuTrackTid), each named after the stream ("stream 7",
//     "stream 7 (2)", "stream 7 sync", "stream 7 annotations");
//   CUPTI overhead: pid -1, tid = the thread (or device) it was spent for, plus lanes;
//   GPU metric samples: one counter track per metric under the GPU's "GPU metrics" track
//     (tid kGpuMetricsTid), a sample's value at its start, keyed by the metric's unit; a
//     kernel's averages are arguments of its slice.
// Arrows: a FlowRecord is the 's' end at its call; a GPU record with hasLaunchCall carries
// the 'f' end ("bp":"e").
//
// Records may come in any number of write() calls (a trace written while it is recorded);
// finish() describes again the host threads named since their first event. Nothing is
// allocated per event.
class EventWriter {
 public:
  // `tables` must outlive the writer; names in it may be added between write() calls.
  EventWriter(Sink& sink, const TraceTables& tables, int64_t baseTimeNs);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void write(const TraceRecords& records);
  // The final names of the host threads. Call once, after the last write().
  void finish();

 private:
  class Impl;
  Impl* impl_;
};

// Writes a trace held in memory: begin(trace.header), every record (with its tracks'
// descriptions), end(trace.footer followed by `extraFooter`). `traceName` is the header's
// traceName.
void writeTrace(const TraceData& trace, const std::string& traceName, const Metadata& extraFooter,
                Sink& sink);

}  // namespace kinetrace::detail
