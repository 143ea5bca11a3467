#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

// The events a sink receives: one Chrome-trace event each, already in trace terms
// (names resolved, pid/tid chosen, times in nanoseconds since the Unix epoch).
//
// Lifetime: every string_view and the args array point into the trace being written and
// stay valid only during the Sink::write() call. A sink that keeps events copies them
// (MemorySink does).

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

struct Event {
  Phase phase = Phase::Complete;
  std::string_view name;
  std::string_view category;
  int64_t pid = 0;          // process id for host events, device index for GPU events
  int64_t tid = 0;          // OS thread id for host events, stream id for GPU events
  int64_t timestampNs = 0;  // nanoseconds since the Unix epoch
  int64_t durationNs = 0;   // Complete events only
  uint64_t flowId = 0;      // FlowStart / FlowEnd only
  const Arg* args = nullptr;
  std::size_t argCount = 0;
};

}  // namespace kinetrace
