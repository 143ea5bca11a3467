#pragma once

#include <cstddef>
#include <cstdint>

#include "analysis/byte_source.h"
#include "analysis/read_budget.h"
#include "analysis/trace_reader.h"
#include "kinetrace/sink.h"

// The body the trace reader targets share: one input read as `kinetrace analyze` reads a
// trace (into the collector, then analysed and reported in text, JSON and HTML) and as
// `kinetrace convert` does (into the Chrome JSON writer, then into the Perfetto writer, their
// bytes thrown away), each from its own start.
//
// Limits, as the readers promise them (docs/ANALYSIS.md, "Memory"; trace_reader.h): an
// input is read with the smallest cap `kinetrace analyze --memory-mb` takes, 16 MB, and each
// pass may hold at most that plus kFixedAllowanceBytes on the heap; any input ends in an
// answer or a kinetrace::Error, never a crash or another exception.

namespace kinetrace::fuzz {

// What the reader and the collector are given to read within.
constexpr std::size_t kReadCapBytes = std::size_t{16} << 20;
// What a pass holds besides what the cap bounds, for an input of at most 1 MB (-max_len,
// scripts/fuzz.sh): the writers' 1 MB buffers (the Chrome JSON writer's, the Perfetto
// writer's), zlib's inflate state and window, the collector's table of distinct names and
// the analysis's rows per step (bounded by the input's size, a few MB at most), and the
// report's text. 8 MB is several times that: a pass that needs more grows with something
// other than the cap.
constexpr std::size_t kFixedAllowanceBytes = std::size_t{8} << 20;

// Reads the source into the sink within the budget, as one target's reader does; throws
// kinetrace::Error.
using ReadTrace = detail::ReadReport (*)(detail::ByteSource& source, Sink& sink,
                                         detail::ReadBudget& budget);

// Reads one input in the three passes with `read`, if it is in `format` (detectTraceFormat:
// an input of the other format is left to the other target).
void fuzzTraceReader(const uint8_t* data, std::size_t size, detail::TraceFileFormat format,
                     ReadTrace read);

}  // namespace kinetrace::fuzz
