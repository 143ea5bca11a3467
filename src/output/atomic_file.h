#pragma once

#include <cstddef>
#include <string>

// Byte outputs: where a serialising sink sends its bytes. A compressor can wrap another
// output; tests substitute one that keeps the bytes in memory or fails on demand.

namespace kinetrace::detail {

class ByteOutput {
 public:
  virtual ~ByteOutput() = default;
  // Appends bytes. Throws kinetrace::Error on failure; nothing is called after a throw
  // except the destructor.
  virtual void write(const char* data, std::size_t size) = 0;
  // Completes the output. Destroying an output without commit() discards it.
  virtual void commit() = 0;
};

// A file that appears whole or not at all: bytes go to "<path>.tmp.<pid>.<random>" in the
// same directory (so the final rename stays on one file system and is atomic), commit()
// renames it onto the path, and destruction without commit() removes it. A reader never
// sees a half-written trace, and a failed save leaves the previous file in place.
//
// Every failure throws kinetrace::Error naming the path and the system's reason:
//   "kinetrace: cannot write trace to /nope/x.json: No such file or directory"
class AtomicFile final : public ByteOutput {
 public:
  // Creates the temporary file. Fails when the directory is missing or not writable, or
  // when the path names a directory.
  explicit AtomicFile(std::string path);
  ~AtomicFile() override;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const char* data, std::size_t size) override;
  void commit() override;

  const std::string& path() const { return path_; }
  const std::string& tempPath() const { return tempPath_; }

 private:
  [[noreturn]] void fail(int error) const;
  void discard() noexcept;

  std::string path_;
  std::string tempPath_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace kinetrace::detail
