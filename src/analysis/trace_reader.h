#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

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

class ByteSource;

// What a reader may hold in memory at once (one event, a packet, the slices begun and not
// yet ended), whatever the file: an input that needs more is an error, not a crash.
constexpr std::size_t kDefaultReadMemoryBytes = std::size_t{256} << 20;
// How deeply JSON values (an event's args, metadata) and .pftrace messages may nest: deeper
// is an error naming the file, where following it would exhaust the stack.
constexpr std::size_t kMaxJsonDepth = 128;
constexpr std::size_t kMaxProtoDepth = 32;
// compressed_packets inside compressed_packets: kinetrace writes one level.
constexpr std::size_t kMaxCompressedDepth = 4;

// Throws kinetrace::Error naming `what` (a file, a field) when `text`, JSON, nests arrays
// and objects deeper than kMaxJsonDepth: checked before handing it to a recursive parser.
void checkJsonDepth(std::string_view text, const std::string& what);

// The format of a file's content (after gzip). Throws kinetrace::Error naming the file
// when it is neither ("not a trace: it starts with ...") or is empty.
TraceFileFormat detectTraceFormat(const std::string& path);
// The same, peeking at a source's first bytes: reading goes on from its start.
TraceFileFormat detectTraceFormat(ByteSource& source);

// Reads a trace file into a sink; `traceName` becomes the header's traceName (the name of
// the trace being written). The file is read once, as a stream (a pipe or FIFO reads as a
// file does). Throws kinetrace::Error naming the file and the problem (not JSON,
// truncated, a field of the wrong type, an event larger than `memoryBytes`) with the byte
// offset where it was found.
ReadReport readTraceFile(const std::string& path, Sink& sink, const std::string& traceName,
                         const ReadProgress& progress = {},
                         std::size_t memoryBytes = kDefaultReadMemoryBytes);

// The two readers, for a known format, from an open source.
ReadReport readChromeJsonTrace(ByteSource& source, Sink& sink, const std::string& traceName,
                               const ReadProgress& progress, std::size_t memoryBytes);
ReadReport readPerfettoTrace(ByteSource& source, Sink& sink, const std::string& traceName,
                             const ReadProgress& progress, std::size_t memoryBytes);

}  // namespace kinetrace::detail
