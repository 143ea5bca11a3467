#include "trace_reader_fuzzing.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/ranked_collector.h"
#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"
#include "fuzz_support.h"
#include "kinetrace/error.h"
#include "output/atomic_file.h"
#include "output/chrome_json_sink.h"
#include "output/perfetto_sink.h"
#include "output/sink_memory.h"

namespace kinetrace::fuzz {
namespace {

// Where the writers' bytes go: nowhere. The writers are fuzzed for what the readers hand them,
// not for their file handling.
class DiscardedOutput final : public detail::ByteOutput {
 public:
  void write(const char* /*data*/, std::size_t /*size*/) override {}
  void commit() override {}
};

// `kinetrace analyze` on one trace: as its ranks when it says it is a merged one.
void analyse(const std::string& path, detail::TraceFileFormat format, ReadTrace read) {
  HeapLimit limit(kReadCapBytes + kFixedAllowanceBytes, "reading and analysing a trace");
  try {
    detail::ReadBudget budget(kReadCapBytes);
    detail::ByteSource source(path, budget);
    if (detail::detectTraceFormat(source) != format) return;
    detail::RankedCollector collector(path, budget);
    read(source, collector, budget);
    const detail::AnalysisOptions options;
    std::vector<detail::RankReport> reports;
    std::vector<detail::RankCollectives> collectives;
    for (detail::CollectedTrace& trace : collector.take()) {
      detail::RankAnalysis rank = detail::analyzeRank(std::move(trace), options);
      reports.push_back(std::move(rank.report));
      collectives.push_back(std::move(rank.collectives));
    }
    const detail::AnalysisReport report =
        detail::combineRanks(std::move(reports), collectives, options);
    (void)detail::formatReport(report, options);
    (void)detail::reportJson(report);
    (void)detail::reportHtml(report, options);
  } catch (const Error&) {
    // Bad input, said with the file and the byte: what the reader promises.
  }
}

// `kinetrace convert` into the writer `sink` makes.
template <typename MakeSink>
void convert(const std::string& path, detail::TraceFileFormat format, ReadTrace read,
             const char* what, MakeSink makeSink) {
  HeapLimit limit(kReadCapBytes + kFixedAllowanceBytes, what);
  try {
    detail::ReadBudget budget(kReadCapBytes);
    detail::ByteSource source(path, budget);
    if (detail::detectTraceFormat(source) != format) return;
    const std::unique_ptr<Sink> sink = makeSink();
    // As `kinetrace convert` does: the writer's own growing state within the same cap.
    detail::drawSinkMemoryFrom(*sink, budget.memory());
    read(source, *sink, budget);
  } catch (const Error&) {
  }
}

}  // namespace

void fuzzTraceReader(const uint8_t* data, std::size_t size, detail::TraceFileFormat format,
                     ReadTrace read) {
  static MemoryFile input;
  const std::string& path = input.hold(data, size);
  const std::size_t descriptors = openDescriptors();
  analyse(path, format, read);
  convert(path, format, read, "converting a trace to Chrome JSON", [] {
    return std::make_unique<detail::ChromeJsonSink>(std::make_unique<DiscardedOutput>());
  });
  convert(path, format, read, "converting a trace to .pftrace", [] {
    return std::make_unique<detail::PerfettoSink>(std::make_unique<DiscardedOutput>());
  });
  if (openDescriptors() != descriptors) reportFinding("reading a trace left a descriptor open");
}

}  // namespace kinetrace::fuzz
