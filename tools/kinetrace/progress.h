#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

// Progress of reading a large input, on stderr: on a terminal one line rewritten in place
// at most five times a second; elsewhere (a log file) a line at every tenth of the input.

namespace kinetrace::cli {

// "12.3 MB"
std::string megabytes(uint64_t bytes);

class ProgressLine {
 public:
  // Shows nothing unless `enabled` and the input has at least `fromBytes`.
  ProgressLine(std::FILE* out, std::string what, bool enabled, uint64_t fromBytes);
  void update(uint64_t done, uint64_t total);
  // Ends the line on a terminal. Call before printing anything else.
  void done();
  // Returns work(onProgress), where onProgress(done, total) updates this line, and ends
  // the line after it however it ends (a throw included), so what follows starts clean.
  template <typename Work>
  auto follow(Work&& work) {
    struct Ending {
      ProgressLine& line;
      ~Ending() { line.done(); }
    } ending{*this};
    return work([this](uint64_t done, uint64_t total) { update(done, total); });
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

}  // namespace kinetrace::cli
