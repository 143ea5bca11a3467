#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

// What the fuzz targets share. Each target is one fuzz/<name>_fuzzer.cpp defining
// LLVMFuzzerTestOneInput; libFuzzer runs it (build-fuzz, scripts/fuzz.sh), and in every other
// build replay_main.cpp runs it on the seed corpus and the regression inputs (a ctest each).
//
// What libFuzzer cannot see, a target checks itself and reports as a finding (a message on
// stderr, then abort(), which libFuzzer saves as a crash): the heap an input made the code
// hold beyond a target's limit, and descriptors it left open.

namespace kinetrace::fuzz {

// Prints "kinetrace fuzz finding: <message>" and aborts. Allocates nothing, so it may be
// called from inside an allocation.
[[noreturn]] void reportFinding(const char* message);

// Holds the heap to `limitBytes` more than it held when the limit was made, until it is
// destroyed: the allocation that goes past the limit is a finding, reported with its stack
// (under a sanitizer). One at a time; not nested.
//
// Live bytes are counted by the sanitizer's allocator hooks where a sanitizer runs (libFuzzer's
// build, CI's ASan and TSan stages), else by replacing the global operator new and delete:
// in a build without a sanitizer, bytes malloc() hands out directly (zlib's state) and
// over-aligned allocations are not counted.
class HeapLimit {
 public:
  HeapLimit(std::size_t limitBytes, const char* what);
  ~HeapLimit();
  HeapLimit(const HeapLimit&) = delete;
  HeapLimit& operator=(const HeapLimit&) = delete;

  // The most the heap held above the starting level so far.
  std::size_t peakBytes() const;
};

// An input's bytes as a file the readers open by path, without touching the disk: a memfd,
// opened by its /proc/self/fd path (each open starts at the first byte). One descriptor for
// the process's life, its content replaced by each input.
class MemoryFile {
 public:
  MemoryFile();
  ~MemoryFile();
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  // Replaces the content; returns the path to open it by.
  const std::string& hold(const uint8_t* data, std::size_t size);

 private:
  int fd_ = -1;
  std::string path_;
};

// The process's open descriptors, counted in /proc/self/fd: a target compares the count
// before and after an input, since a descriptor leaked per trace ends a long analysis of many
// traces with EMFILE.
std::size_t openDescriptors();

}  // namespace kinetrace::fuzz
