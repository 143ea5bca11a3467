// The summary reader (analysis/summary.h): a "<trace>.summary.json" read back and printed, as
// `kinetrace summary` and `kinetrace run` do with the files traced processes leave beside
// their traces. Corpus: fuzz/corpus/summary; dictionary: fuzz/summary.dict.
//
// Besides not crashing: what the summary writer makes of a summary read back, the reader reads
// back the same (summaryToJson is a fixed point after one trip).

#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/summary.h"
#include "fuzz_support.h"
#include "kinetrace/error.h"
#include "output/trace_summary.h"

namespace {

using namespace kinetrace;

// A summary file is a few KB (-max_len is 256 KB, scripts/fuzz.sh); its JSON tree and typed
// values take a few dozen bytes per byte of text at most. More is an allocation sized by
// something other than the text.
constexpr std::size_t kHeapPerInputByte = 64;
constexpr std::size_t kHeapFixedBytes = std::size_t{1} << 20;

// The one call into the reader.
detail::Summary readSummary(const std::string& text) {
  return detail::summaryFromJson(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::HeapLimit limit(kHeapFixedBytes + kHeapPerInputByte * size, "reading a summary");
  detail::Summary summary;
  try {
    summary = readSummary(text);
  } catch (const Error&) {
    return 0;  // not a summary, said so
  }
  (void)detail::formatSummary(summary, 5);
  (void)detail::formatSummary(summary, summary.topKernels.size());
  const std::string written = detail::summaryToJson(summary);
  std::string again;
  try {
    again = detail::summaryToJson(readSummary(written));
  } catch (const Error&) {
    fuzz::reportFinding("a summary the writer wrote is not read back");
  }
  if (again != written) fuzz::reportFinding("a summary written, read back and written differs");
  return 0;
}
