#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

// The events a sink receives: one Chrome-trace event each, already in trace terms
// (names resolved, pid/tid chosen, times in nanoseconds since the Unix epoch), and the
// tracks they lie on: typed, each with its parent and name (Sink::describe).
//
// Lifetime: every string_view and the args array point into the trace being written and
// stay valid only during the Sink::write() or Sink::describe() call. A sink that keeps
// events copies them (MemorySink does).

namespace kinetrace {

enum class Phase : char {
  Complete = 'X',   // a slice with a duration
  Instant = 'i',    // a point in time (thread scope)
  Counter = 'C',    // a sample of one or more series; args hold the series
  FlowStart = 's',  // start of an arrow (launch call -> GPU work), id in flowId
  FlowEnd = 'f',    // end of an arrow, bound to the enclosing slice ("bp":"e")
  Metadata = 'M',   // process_name, thread_name, sort indexes; args hold the value
};

struct Dim3 {
  int64_t x = 0, y = 0, z = 0;
  bool operator==(const Dim3& o) const { return x == o.x && y == o.y && z == o.z; }
};

// A JSON array or object, kept as its text: the nested arguments of traces written by other
// tools ("Input Dims": [[8, 512], [512]]), which a converted trace carries unchanged. The
// text must be valid JSON; sinks write it as it is or translate it into their format.
struct JsonText {
  std::string_view text;
  bool operator==(const JsonText& o) const { return text == o.text; }
};

using ArgValue = std::variant<int64_t, uint64_t, double, bool, std::string_view, Dim3, JsonText>;

struct Arg {
  std::string_view key;
  ArgValue value;
};

// What a track holds. Tracks form a tree: a process holds threads and a GPU's streams; a
// track holds its lanes and its counters.
enum class TrackKind : uint8_t {
  Process,    // a host process, a GPU, CUPTI's overhead
  Thread,     // a host thread, or a track of a process that is not a stream: async ranges,
              // a GPU's metrics and memory pools, CUPTI's overhead for one thread or device
  GpuStream,  // a stream's operations, its synchronisations or its annotations (first lane)
  Lane,       // a further lane of its parent track, for slices that would not nest on it
  Counter,    // one series of values over time, on its parent's track
};

// A track, described to the sink before its first event and again when its name changes.
// Formats with typed tracks (Perfetto's) write it as it is; the Chrome trace knows only
// processes and threads, and takes `pid` and `tid`: each track but a counter has
// coordinates of its own there, a counter those of its parent.
struct Track {
  uint64_t id = 0;      // nonzero, unique in the trace; events name it in Event::track
  uint64_t parent = 0;  // the enclosing track's id; 0 for a process
  TrackKind kind = TrackKind::Thread;
  std::string_view name;      // as a viewer shows it: "GPU 0", "stream 7 (2)", "SM throughput"
  std::string_view label;     // a process's label ("CPU", "GPU 0"), empty for none
  int64_t sortIndex = 0;      // order among its siblings (equal indexes: by name)
  std::string_view unit;      // a counter's unit ("%", "bytes/s"); empty for none
  std::string_view category;  // a counter's samples' category; empty for none
  int64_t pid = 0;
  int64_t tid = 0;      // a process: 0
  int64_t sinceNs = 0;  // when the description holds from (the Chrome trace's naming
                        // events' time): the trace's start for kinetrace's tracks
};

struct Event {
  Phase phase = Phase::Complete;
  std::string_view name;
  std::string_view category;
  int64_t pid = 0;          // process id for host events, device index for GPU events
  int64_t tid = 0;          // OS thread id for host events, stream id for GPU events
  int64_t timestampNs = 0;  // nanoseconds since the Unix epoch
  int64_t durationNs = 0;   // Complete events only
  uint64_t flowId = 0;      // FlowStart / FlowEnd only
  uint64_t track = 0;       // the described track it lies on; 0: pid and tid alone say where
  const Arg* args = nullptr;
  std::size_t argCount = 0;
};

}  // namespace kinetrace
