#include "convert_command.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "analysis/trace_reader.h"
#include "kinetrace/sink.h"

namespace kinetrace::cli {
namespace {

uint64_t fileSize(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? static_cast<uint64_t>(info.st_size) : 0;
}

std::string megabytes(uint64_t bytes) {
  return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6);
}

// Progress on a terminal: one line rewritten in place, at most five times a second.
// Elsewhere (a log file): a line at every tenth of the input.
class ProgressLine {
 public:
  ProgressLine(std::FILE* out, std::string what, bool enabled, uint64_t fromBytes)
      : out_(out),
        what_(std::move(what)),
        enabled_(enabled),
        fromBytes_(fromBytes),
        terminal_(enabled && ::isatty(::fileno(out)) != 0) {}

  void update(uint64_t done, uint64_t total) {
    if (!enabled_ || total == 0 || total < fromBytes_) return;
    const int percent = static_cast<int>(done * 100 / total);
    if (terminal_) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_ < std::chrono::milliseconds(200) && percent != 100) return;
      last_ = now;
      std::fprintf(out_, "\r%s: %3d%% (%s of %s)", what_.c_str(), percent, megabytes(done).c_str(),
                   megabytes(total).c_str());
      std::fflush(out_);
      shown_ = true;
    } else if (percent / 10 > lastTenth_) {
      lastTenth_ = percent / 10;
      std::fprintf(out_, "%s: %d%% (%s of %s)\n", what_.c_str(), lastTenth_ * 10,
                   megabytes(done).c_str(), megabytes(total).c_str());
    }
  }

  void done() {
    if (shown_) std::fputc('\n', out_);
    shown_ = false;
  }

 private:
  std::FILE* out_;
  std::string what_;
  bool enabled_;
  uint64_t fromBytes_;
  bool terminal_;
  bool shown_ = false;
  int lastTenth_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

int convertCommand(const ConvertOptions& options, std::FILE* messages) {
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
  std::fprintf(messages, "kinetrace: wrote %s: %llu events, %s (from %s, %s)\n",
               options.output.c_str(), static_cast<unsigned long long>(report.events),
               megabytes(fileSize(options.output)).c_str(), options.input.c_str(),
               megabytes(fileSize(options.input)).c_str());
  for (const auto& [why, count] : report.skipped) {
    std::fprintf(messages, "kinetrace: left out %llu %s (the output has no place for them)\n",
                 static_cast<unsigned long long>(count), why.c_str());
  }
  return 0;
}

}  // namespace kinetrace::cli
