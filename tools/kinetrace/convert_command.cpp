#include "convert_command.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "analysis/trace_reader.h"
#include "files.h"
#include "kinetrace/sink.h"
#include "output/atomic_file.h"
#include "progress.h"

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
  // Opening the output first names an unwritable OUT before reading a large IN.
  std::unique_ptr<Sink> sink = openSink(options.output);
  ProgressLine progress(messages, "reading " + options.input, !options.quiet,
                        options.progressFromBytes);
  detail::ReadReport report;
  try {
    report = detail::readTraceFile(
        options.input, *sink, options.output,
        [&progress](uint64_t done, uint64_t total) { progress.update(done, total); });
  } catch (...) {
    progress.done();
    throw;
  }
  progress.done();
  sink.reset();
  if (options.quiet) return 0;
  std::fprintf(messages, "kinetrace: wrote %s: %llu events%s (from %s%s)\n", options.output.c_str(),
               static_cast<unsigned long long>(report.events), sizeOf(options.output).c_str(),
               options.input.c_str(), sizeOf(options.input).c_str());
  for (const auto& [why, count] : report.skipped) {
    std::fprintf(messages, "kinetrace: left out %llu %s (the output has no place for them)\n",
                 static_cast<unsigned long long>(count), why.c_str());
  }
  return 0;
}

}  // namespace kinetrace::cli
