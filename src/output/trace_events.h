#pragma once

#include <string>

#include "kinetrace/sink.h"
#include "model/trace_data.h"

namespace kinetrace::detail {

// Streams a trace into a sink in the layout of PyTorch's profiler traces (the
// Chrome-trace layout that Perfetto, TensorBoard and HTA read): the header with all
// top-level metadata first, then every record as one or more events, then the naming
// metadata events for the processes and threads that appear.
void emitTrace(const TraceData& trace, const std::string& traceName, Sink& sink);

}  // namespace kinetrace::detail
