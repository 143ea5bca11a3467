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

// A file that appears whole or not at all, without damaging what is at the path: bytes go
// to "<target>.tmp.<pid>.<hex>" in the target's directory (so the final rename stays on
// one file system and is atomic), commit() renames it onto the target, and destruction
// without commit() removes it. A reader never sees a half-written trace, and a failed
// save leaves the previous file in place.
//
// The target is the path with symbolic links followed to the end of the chain: saving to
// a link replaces the file it points to (created if the link dangles) and leaves the link
// a link. A path that exists and is not a regular file (a directory, a FIFO, a device such
// as /dev/null, a socket) is refused: renaming over it would replace it.
//
// Creating an AtomicFile also removes temporary files that earlier saves to the same
// target left when they were killed: "<target>.tmp.<pid>.<hex>" whose process is gone and
// which no process holds locked. Nothing else in the directory is touched.
//
// Every failure throws kinetrace::Error naming the path and the reason:
//   "cannot write trace to /nope/x.json: No such file or directory"
//   "cannot write trace to /dev/null: it is a character device, not a regular file"
class AtomicFile final : public ByteOutput {
 public:
  // Resolves the path, removes stale temporary files and creates the temporary file.
  explicit AtomicFile(std::string path);
  ~AtomicFile() override;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const char* data, std::size_t size) override;
  void commit() override;

  // The path as given, as error messages name it.
  const std::string& path() const { return path_; }
  // The file commit() replaces: the path with symbolic links followed.
  const std::string& target() const { return target_; }
  const std::string& tempPath() const { return tempPath_; }

 private:
  [[noreturn]] void fail(int error) const;
  // Throws unless the target is missing or a regular file.
  void refuseUnlessRegularFile() const;
  void discard() noexcept;

  std::string path_;
  std::string target_;
  std::string tempPath_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace kinetrace::detail
