#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "kinetrace/sink.h"

// Reading trace files back into the sink stream (begin, write per event, end), so any trace
// can be written in another format (`kinetrace convert`) or analysed. Both readers stream:
// memory holds one event (and, for .pftrace, the interned strings), not the file.
//
// Formats, told apart by content (gzip by its magic bytes, then the first byte):
//   - Chrome trace JSON ("{...}" with "traceEvents", or a bare "[...]" of events), as
//     kinetrace, torch.profiler / libkineto and most tracers write it;
//   - kinetrace's Perfetto protobuf (.pftrace), as PerfettoSink writes it.

namespace kinetrace::detail {

// Called now and then while reading: bytes of the file consumed, and its size.
using ReadProgress = std::function<void(uint64_t doneBytes, uint64_t totalBytes)>;

struct ReadReport {
  uint64_t events = 0;  // events handed to the sink
  // Events the sink's model cannot hold, by reason ("phase 'B'", "a non-numeric pid"):
  // left out of the output and reported, never dropped silently.
  std::map<std::string, uint64_t> skipped;
};

enum class TraceFileFormat { ChromeJson, Perfetto };

// The format of a file's content (after gzip). Throws kinetrace::Error naming the file
// when it is neither ("not a trace: it starts with ...") or is empty.
TraceFileFormat detectTraceFormat(const std::string& path);

// Reads a trace file into a sink; `traceName` becomes the header's traceName (the name of
// the trace being written). Throws kinetrace::Error naming the file and the problem (not
// JSON, truncated, a field of the wrong type) with the byte offset where it was found.
ReadReport readTraceFile(const std::string& path, Sink& sink, const std::string& traceName,
                         const ReadProgress& progress = {});

// The two readers, for a known format.
ReadReport readChromeJsonTrace(const std::string& path, Sink& sink, const std::string& traceName,
                               const ReadProgress& progress);
ReadReport readPerfettoTrace(const std::string& path, Sink& sink, const std::string& traceName,
                             const ReadProgress& progress);

}  // namespace kinetrace::detail
