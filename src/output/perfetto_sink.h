#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "kinetrace/sink.h"
#include "output/atomic_file.h"
#include "output/sink_losses.h"
#include "output/sink_memory.h"

namespace kinetrace::detail {

// Writes a trace in Perfetto's native protobuf format (a .pftrace file: a `Trace` message,
// one `TracePacket` per track descriptor, track event or start of a packet sequence),
// streamed like the JSON: packets are encoded into a buffer that is handed to the output
// whenever it fills.
//
// The mapping (docs/PERFETTO_FORMAT.md, perfetto_layout.h):
//   - a described track (Sink::describe) is written as its kind says: a process track, a
//     counter track under its parent's track with its unit, and every other kind a thread
//     track (each has a tid of its own in the JSON too); events that name no track, and
//     the Chrome trace's naming events (a trace read back), go by pid and tid the same way:
//     every (pid, tid) a thread track under a process track, named by thread_name;
//   - every track with events has a packet sequence whose defaults name the track and
//     whose incremental clocks carry the events' times as small steps;
//   - a Complete event is a SLICE_BEGIN / SLICE_END pair, an Instant an INSTANT, each
//     series of a Counter event a counter track under its thread;
//   - event names, categories, argument names and short string values are interned;
//     arguments are debug annotations (Dim3 as an array of three; JSON text as an interned
//     string with an odd id, or a legacy JSON value when long);
//   - slices of a track that would not nest as Perfetto reads them go on lanes, child
//     tracks of the thread's track (perfetto_lanes.h);
//   - flow events are Chrome's legacy flow events ('s' / 'f' with the flow's id), which
//     Perfetto reads as it reads the JSON's: every 'f' an arrow, flows told apart by id,
//     name and category;
//   - the header and footer metadata, and every naming event, are instants on a
//     "kinetrace trace metadata" track inside the events' span, so the file holds
//     everything the JSON holds.
//
// Memory: the buffer, one open slice, a small record per track, the slices the tracks'
// lanes remember (SliceLanes::kDefaultBudget for all tracks together, however many there
// are), and the interned strings with a bit per string and sequence that defined it (up to
// kInternBudgetBytes; past it strings are written in place, uninterned); with a budget
// (drawMemoryFrom), all of it within the budget.
//
// Left out, and counted (in the footer and in losses()): events more than a second before
// the base time, which no clock of the file can place; counter values that are not numbers.
// Changed, and counted: slices ending past INT64_MAX nanoseconds end there.
class PerfettoSink final : public Sink, public ReportsLosses, public DrawsFromBudget {
 public:
  static constexpr std::size_t kDefaultBufferBytes = std::size_t{1} << 20;
  static constexpr std::size_t kInternBudgetBytes = std::size_t{64} << 20;

  explicit PerfettoSink(std::unique_ptr<ByteOutput> output,
                        std::size_t bufferBytes = kDefaultBufferBytes,
                        std::size_t internBudgetBytes = kInternBudgetBytes);
  ~PerfettoSink() override;
  PerfettoSink(const PerfettoSink&) = delete;
  PerfettoSink& operator=(const PerfettoSink&) = delete;

  void begin(const TraceHeader& header) override;
  void write(const Event& event) override;
  void describe(const Track& track) override;
  void end(const Metadata& footer) override;
  SinkLosses losses() const override;
  // From then on its interned strings take at most an eighth of the budget's cap, its lanes
  // remember at most an eighth's worth of slices (both taken at once), and each track,
  // counter series and naming event kept until the header is taken as it comes; past the
  // cap, writing throws kinetrace::Error naming the output and what grew.
  void drawMemoryFrom(MemoryBudget& budget) override;

 private:
  class Encoder;
  std::unique_ptr<Encoder> encoder_;
};

// Whether a path names a Perfetto trace: it ends in ".pftrace" or ".perfetto-trace",
// optionally followed by ".gz".
bool isPerfettoPath(std::string_view path);

// A PerfettoSink over an AtomicFile, for a bare path or a "perfetto://PATH" URL: its
// packets compressed inside the file (perfetto_compression.h) where zlib is there; a path
// ending in ".gz" is gzip over uncompressed packets instead (Perfetto reads both).
std::unique_ptr<Sink> openPerfettoFile(const std::string& pathOrUrl, const PathRule& rule);

}  // namespace kinetrace::detail
