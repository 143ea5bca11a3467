#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <utility>

namespace kinetrace::cli {

std::string megabytes(uint64_t bytes) {
  return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6);
}

ProgressLine::ProgressLine(std::FILE* out, std::string what, bool enabled, uint64_t fromBytes)
    : out_(out),
      what_(std::move(what)),
      enabled_(enabled),
      fromBytes_(fromBytes),
      terminal_(enabled && ::isatty(::fileno(out)) != 0) {}

void ProgressLine::update(uint64_t done, uint64_t total) {
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

void ProgressLine::done() {
  if (shown_) std::fputc('\n', out_);
  shown_ = false;
}

}  // namespace kinetrace::cli
