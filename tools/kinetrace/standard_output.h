#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kinetrace/sink.h"
#include "output/atomic_file.h"

// "-" as an output: standard output, for `convert IN -`, `merge -o -` and `analyze --json -`
// (the trace or report piped on, as Unix tools do). A file named "-" is "./-".

namespace kinetrace::cli {

// The operand that stands for standard output.
inline bool isStandardOutput(const std::string& path) {
  return path == "-";
}

// Bytes to a descriptor as they come; commit() has nothing left to do. A write that fails
// (a full disk, a closed pipe) throws kinetrace::Error naming standard output.
class DescriptorOutput final : public kinetrace::detail::ByteOutput {
 public:
  explicit DescriptorOutput(int fd) : fd_(fd) {}
  void write(const char* data, std::size_t size) override;
  void commit() override {}

 private:
  int fd_;
};

// A trace sink for `output`: Chrome trace JSON to standard output for "-", else the format
// its name chooses (openSink).
std::unique_ptr<Sink> openTraceOutput(const std::string& output);

// What to call `output` in messages.
inline std::string outputName(const std::string& output) {
  return isStandardOutput(output) ? std::string("standard output") : output;
}

}  // namespace kinetrace::cli
