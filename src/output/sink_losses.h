#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kinetrace/sink.h"

// What a sink left out of its output, by reason, for the command that fed it to say (a
// `kinetrace convert` to .pftrace: "left out 3 events more than a second before the trace's
// base time"). The trace itself says it too (the sink's footer); this is the same count for
// the terminal, never a reason to drop silently.

namespace kinetrace::detail {

struct SinkLosses {
  std::map<std::string, uint64_t> events;  // events not written, by reason
  // Parts of events written without them, or changed to fit, by reason: the events are in
  // the output, not as they came.
  std::map<std::string, uint64_t> changes;
};

// Implemented by sinks that can leave something out; read after end().
class ReportsLosses {
 public:
  virtual ~ReportsLosses();
  virtual SinkLosses losses() const = 0;
};

// What `sink` left out: none for a sink that cannot leave anything out.
SinkLosses lossesOf(const Sink& sink);

}  // namespace kinetrace::detail
