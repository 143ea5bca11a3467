#pragma once

// A ByteOutput that keeps what a sink writes in memory, for tests of serialising sinks; and
// what a command wrote to a temporary FILE*, for tests of the commands.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "kinetrace/error.h"
#include "output/atomic_file.h"

namespace kinetrace::testing {

struct Captured {
  std::string bytes;
  int writes = 0;
  bool committed = false;
};

// Keeps the bytes in `captured`; fails (as a full disk would) once the bytes would pass
// `failAfter`.
class CaptureOutput : public detail::ByteOutput {
 public:
  explicit CaptureOutput(Captured& captured, std::size_t failAfter = SIZE_MAX)
      : captured_(captured), failAfter_(failAfter) {}
  void write(const char* data, std::size_t size) override {
    if (captured_.bytes.size() + size > failAfter_) throw Error("disk full (test)");
    captured_.bytes.append(data, size);
    ++captured_.writes;
  }
  void commit() override { captured_.committed = true; }

 private:
  Captured& captured_;
  std::size_t failAfter_;
};

// What was written to `file` (a std::tmpfile()), which is then closed.
inline std::string readBack(std::FILE* file) {
  std::rewind(file);
  std::string text;
  char buffer[4096];
  while (std::size_t got = std::fread(buffer, 1, sizeof buffer, file)) text.append(buffer, got);
  std::fclose(file);
  return text;
}

}  // namespace kinetrace::testing
