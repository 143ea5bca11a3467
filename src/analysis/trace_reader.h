#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "analysis/read_budget.h"
#include "kinetrace/sink.h"

// Reading trace files back into the sink stream (begin, write per event, end), so any trace
// can be written in another format (`kinetrace convert`) or analysed. Both readers stream:
// memory holds one event, the top-level metadata (and, for .pftrace, the interned strings,
// the tracks and the slices begun and not yet ended), not the file; all of it drawn from the
// read budget given (read_budget.h), so a file that needs more is an error naming what grew.
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

// How deeply JSON values (an event's args, metadata) and .pftrace messages may nest: deeper
// is an error naming the file, where following it would exhaust the stack.
constexpr std::size_t kMaxJsonDepth = 128;
constexpr std::size_t kMaxProtoDepth = 32;
// compressed_packets inside compressed_packets: kinetrace writes one level.
constexpr std::size_t kMaxCompressedDepth = 4;
// What compressed_packets may inflate to, all levels of nesting together, for each byte of
// the file read so far: deflate's own limit is about 1032 to 1, so one level of kinetrace's
// packets stays within it, while nesting (each level inflating the one inside) would
// multiply it. Past it the file is an error, read in time linear in its size.
constexpr uint64_t kMaxInflationRatio = 1032;
// Inflated bytes allowed at any point whatever was read: a small file's first packet.
constexpr uint64_t kInflationAllowanceBytes = uint64_t{4} << 20;

// Throws kinetrace::Error naming `what` (a file, a field) when `text`, JSON, nests arrays
// and objects deeper than kMaxJsonDepth: checked before handing it to a recursive parser.
void checkJsonDepth(std::string_view text, const std::string& what);

// The format of a file's content (after gzip). Throws kinetrace::Error naming the file
// when it is neither ("not a trace: it starts with ...") or is empty.
TraceFileFormat detectTraceFormat(const std::string& path, ReadBudget& budget);
// The same, peeking at a source's first bytes: reading goes on from its start.
TraceFileFormat detectTraceFormat(ByteSource& source);

// Reads a trace file into a sink; `traceName` becomes the header's traceName (the name of
// the trace being written). The file is read once, as a stream (a pipe or FIFO reads as a
// file does). Throws kinetrace::Error naming the file and the problem (not JSON,
// truncated, a field of the wrong type, a number that does not fit, more memory needed
// than `budget` gives) with the byte offset where it was found. What the reader holds is
// given back to the budget when it returns; what the sink holds is the sink's.
//
//   ReadBudget budget(std::size_t{64} << 20);
//   MemorySink sink;
//   readTraceFile("trace.json.gz", sink, "copy", budget);
ReadReport readTraceFile(const std::string& path, Sink& sink, const std::string& traceName,
                         ReadBudget& budget, const ReadProgress& progress = {});

// The two readers, for a known format, from an open source.
ReadReport readChromeJsonTrace(ByteSource& source, Sink& sink, const std::string& traceName,
                               ReadBudget& budget, const ReadProgress& progress = {});
ReadReport readPerfettoTrace(ByteSource& source, Sink& sink, const std::string& traceName,
                             ReadBudget& budget, const ReadProgress& progress = {});

}  // namespace kinetrace::detail
