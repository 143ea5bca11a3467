// The .pftrace reader (analysis/trace_reader.h), as `kinetrace analyze` and `kinetrace
// convert` read Perfetto traces: packets plain or in compressed_packets, the whole file plain
// or gzip'd. Corpus: fuzz/corpus/pftrace (written by kinetrace's Perfetto writer); dictionary:
// fuzz/pftrace.dict.

#include <cstddef>
#include <cstdint>

#include "trace_reader_fuzzing.h"

namespace {

using namespace kinetrace;

// The one call into the reader: its budget parameter is the only thing to adapt when the
// reader's signature changes.
detail::ReadReport readInput(detail::ByteSource& source, Sink& sink, detail::ReadBudget& budget) {
  return detail::readPerfettoTrace(source, sink, "fuzz.pftrace", budget);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::fuzzTraceReader(data, size, detail::TraceFileFormat::Perfetto, readInput);
  return 0;
}
