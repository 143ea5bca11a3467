#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/result.h"

// The one rule for every file kinetrace writes: traces, summaries, reports, run manifests,
// temporary files and the trigger socket, in the tracer, the CUDA injection, libkineto_api
// and the kinetrace command alike (docs/SECURITY.md says who may ask for what). A path is
// resolved component by component from directories held open (openat with O_NOFOLLOW), never
// handed to open() as text, so what is checked is what is written:
//
//   - a symbolic link, at any depth, is followed by hand, one hop at a time (at most 40, as
//     Linux does), and only where the kernel's fs.protected_symlinks would follow it: a link
//     in a sticky directory writable by all (/tmp) that belongs to neither the caller nor the
//     directory's owner is refused, since that user may point it anywhere;
//   - allowed directories, when the rule has them (a request from the dynolog daemon, which
//     nobody authenticates: /tmp and $KINETO_ONDEMAND_TRACE_DIR), are compared with where the
//     file really lands once every link is followed, and are themselves resolved the same way;
//   - missing directories are made only where asked, and then only inside the allowed ones;
//   - the file itself is missing or a regular file: never a directory, FIFO, device or socket.
//
// What resolving returns holds the file's directory open, so that what comes next (a
// temporary file, the rename onto the name, a removal) lands in the directory that was
// checked, whatever is renamed or relinked in the meantime.

namespace kinetrace::detail {

struct PathRule {
  // Where a file may land, once links are followed (at any depth below one of them); empty:
  // wherever the caller may write.
  std::vector<std::string> allowedDirectories;
  // Directories missing on the way are made (mode 0777 less the umask), as mkdir -p does.
  bool createDirectories = false;
  // Said after a refusal for landing outside the allowed directories: why they are the only
  // ones, and how to allow another.
  std::string confinedBecause;
};

// A directory held open (O_PATH): a handle to that directory, not to a name that may change.
class OpenDirectory {
 public:
  OpenDirectory() = default;
  OpenDirectory(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~OpenDirectory();
  OpenDirectory(OpenDirectory&& other) noexcept;
  OpenDirectory& operator=(OpenDirectory&& other) noexcept;
  OpenDirectory(const OpenDirectory&) = delete;
  OpenDirectory& operator=(const OpenDirectory&) = delete;

  // For openat(), renameat(), unlinkat(); -1 when empty.
  int fd() const { return fd_; }
  // Where it was reached, every link followed: "/" or "/a/b".
  const std::string& path() const { return path_; }
  // `name` in this directory, as text for messages.
  std::string pathOf(const std::string& name) const;

 private:
  int fd_ = -1;
  std::string path_;
};

// Where a file is to be written.
struct OutputLocation {
  OpenDirectory directory;
  std::string name;         // in `directory`; never empty, "." or "..", never a link
  bool exists = false;      // a regular file is there now
  struct stat existing {};  // with `exists`: that file
  bool viaLinks = false;    // links were followed to get here

  std::string path() const { return directory.pathOf(name); }
};

// The directory at `path` under `rule` (made, with rule.createDirectories, when missing).
// Failure: why, naming the part of the path at fault.
Result<OpenDirectory> openDirectory(const std::string& path, const PathRule& rule);

// Where a file at `path` goes under `rule`: its directory (made, with
// rule.createDirectories) and its name, links followed. Failure: why, naming the part of the
// path at fault ("it is a character device, not a regular file", "not following /tmp/d: it is
// a symbolic link of another user ...", "it lands in /etc, outside ...").
Result<OutputLocation> resolveOutput(const std::string& path, const PathRule& rule);

// Whether a file can be made in `directory` now: makes one (hidden, named after `name`) and
// removes it. What a process answers a request by, before it says "ok".
Status probeWritable(const OpenDirectory& directory, const std::string& name);

// Removes the regular file at `path` under `rule`; a file that is not there is not an error.
Status removeOutput(const std::string& path, const PathRule& rule);

// A tag for a temporary file's name: not secret, only distinct (O_EXCL catches the rare
// collision, and the caller tries another).
uint32_t distinctTag();

// "a character device", for "it is a character device, not a regular file".
const char* describeFileType(mode_t mode);

}  // namespace kinetrace::detail
