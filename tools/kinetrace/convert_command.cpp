#include "convert_command.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "analysis/read_budget.h"
#include "analysis/trace_reader.h"
#include "files.h"
#include "kinetrace/sink.h"
#include "left_out.h"
#include "output/atomic_file.h"
#include "output/sink_losses.h"
#include "output/sink_memory.h"
#include "progress.h"
#include "standard_output.h"
#include "support/text.h"

namespace kinetrace::cli {
namespace {

// A file's size, or "" for what has none (a pipe).
std::string sizeOf(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return "";
  return ", " + megabytes(static_cast<uint64_t>(info.st_size));
}

}  // namespace

int convertCommand(const ConvertOptions& options, std::FILE* /*out*/, std::FILE* messages) {
  refuseOutputOverInput(options.output, {options.input}, "kinetrace convert");
  // Ctrl-C, a hangup or a kill leaves no half-written OUT beside the real one.
  detail::removeTemporaryFilesOnSignals();
  detail::ReadBudget budget(options.memoryBytes);
  // Opening the output first names an unwritable OUT before reading a large IN.
  std::unique_ptr<Sink> sink = openTraceOutput(options.output);
  // Its growing state (a .pftrace's tracks, lanes, interned strings) within the same cap.
  detail::drawSinkMemoryFrom(*sink, budget.memory());
  ProgressLine progress(messages, "reading " + options.input, !options.quiet,
                        options.progressFromBytes);
  const detail::ReadReport report = progress.follow([&](auto onProgress) {
    return detail::readTraceFile(options.input, *sink, options.output, budget, onProgress);
  });
  const detail::SinkLosses losses = detail::lossesOf(*sink);
  sink.reset();
  if (!options.quiet) {
    std::fprintf(messages, "kinetrace: wrote %s: %s of %s events%s (from %s%s)\n",
                 outputName(options.output).c_str(),
                 detail::withThousands(eventsWritten(report.events, losses)).c_str(),
                 detail::withThousands(eventsRead(report.events, report.skipped)).c_str(),
                 isStandardOutput(options.output) ? "" : sizeOf(options.output).c_str(),
                 options.input.c_str(), sizeOf(options.input).c_str());
  }
  // Every event of IN is either written or said here with why it was not, --quiet or not.
  sayWhatWasLeftOut(messages, report.skipped, losses);
  return 0;
}

}  // namespace kinetrace::cli
