// The Chrome trace JSON reader (analysis/trace_reader.h), as `kinetrace analyze` and
// `kinetrace convert` read traces from strangers: kinetrace's and torch.profiler's JSON, plain
// or gzip'd. Corpus: fuzz/corpus/chrome_json; dictionary: fuzz/chrome_json.dict.

#include <cstddef>
#include <cstdint>

#include "trace_reader_fuzzing.h"

namespace {

using namespace kinetrace;

// The one call into the reader: its budget parameter is the only thing to adapt when the
// reader's signature changes.
detail::ReadReport readInput(detail::ByteSource& source, Sink& sink, detail::ReadBudget& budget) {
  return detail::readChromeJsonTrace(source, sink, "fuzz.json", budget);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::fuzzTraceReader(data, size, detail::TraceFileFormat::ChromeJson, readInput);
  return 0;
}
