#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <string>

#include "support/path_rule.h"

// Byte outputs: where a serialising sink sends its bytes. A compressor can wrap another
// output; tests substitute one that keeps the bytes in memory or fails on demand.

namespace kinetrace::detail {

struct PendingTemporaryFile;  // atomic_file.cpp: what the signal handler removes

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
// to "<name>.tmp.<pid>.<hex>" in the target's directory (so the final rename stays on one
// file system and is atomic), commit() renames it onto the target, and destruction without
// commit() removes it. A reader never sees a half-written trace, and a failed save leaves
// the previous file in place.
//
// The target is found by the one path rule (support/path_rule.h): links are followed to the
// end of the chain, by hand and at every depth, and a link of another user in a sticky
// directory writable by all (/tmp) is refused, as the kernel's fs.protected_symlinks does for
// open(): otherwise another user could point it at /etc and have root's save replace a file
// there. Saving to a link replaces the file it points to (created if the link dangles) and
// leaves the link a link. A path that exists and is not a regular file (a directory, a FIFO,
// a device such as /dev/null, a socket) is refused: renaming over it would replace it. A
// rule with allowed directories confines the file to them. The target's directory is held
// open from then on: the temporary file and the rename land where the rule was checked.
//
// A file replaced keeps its permission bits (0600 stays 0600) and, where the caller may
// set them (root, or the file's own owner for its group), its owner and group. A new file
// gets 0666 less the umask, as open() gives.
//
// Only temporary files this object created are ever removed: a leftover of a killed save
// stays until someone removes it (it may be the very file being salvaged).
//
// Every failure throws kinetrace::Error naming the path and the reason:
//   "cannot write trace to /nope/x.json: /nope: No such file or directory"
//   "cannot write trace to /dev/null: it is a character device, not a regular file"
class AtomicFile final : public ByteOutput {
 public:
  // Resolves the path under `rule` and creates the temporary file.
  explicit AtomicFile(std::string path, const PathRule& rule = PathRule{});
  ~AtomicFile() override;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const char* data, std::size_t size) override;
  void commit() override;

  // The path as given, as error messages name it.
  const std::string& path() const { return path_; }
  // The file commit() replaces: the path with symbolic links followed.
  std::string target() const { return location_.path(); }
  std::string tempPath() const { return location_.directory.pathOf(tempName_); }

 private:
  [[noreturn]] void fail(int error) const;
  // Throws unless the target is missing or a regular file.
  void refuseUnlessRegularFile() const;
  void discard() noexcept;
  // Gives the temporary file the mode, owner and group of the file it will replace.
  void takeOverAttributes(const struct stat& replaced) noexcept;
  // Takes the temporary file out of the signal handler's registry.
  void unregister() noexcept;

  std::string path_;
  OutputLocation location_;
  std::string tempName_;  // in location_.directory
  int fd_ = -1;
  bool committed_ = false;
  // The temporary file as the signal handler sees it (its directory and name, a copy it may
  // read at any time), and its slot in the handler's registry; null when not registered.
  PendingTemporaryFile* registered_ = nullptr;
  std::size_t registeredSlot_ = 0;
};

// Makes SIGINT, SIGTERM and SIGHUP remove the temporary file of every AtomicFile of the
// process still being written, then end the process as the signal would have (its exit
// status says the signal). For a program that owns its signal handling, such as the
// kinetrace command: a library never calls it, a traced program's signals being its own.
// A signal the program ignores (started under nohup) stays ignored, and one with a handler
// of its own keeps it. Call from the main thread before writing; calling again is harmless.
void removeTemporaryFilesOnSignals();

}  // namespace kinetrace::detail
