#include "analysis/spill.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "kinetrace/error.h"
#include "support/path_rule.h"

namespace kinetrace::detail {
namespace {

std::string temporaryDirectory() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && dir[0] != '\0' ? dir : "/tmp";
}

}  // namespace

SpillFile::SpillFile() : directory_(temporaryDirectory()) {
  const auto fail = [this](const std::string& why) {
    throw Error("cannot make a temporary file in " + directory_ +
                " (analysing a large trace needs room there; set TMPDIR to another "
                "directory): " +
                why);
  };
  // The directory reached by the one path rule (no other user's link in /tmp followed), and
  // a file without a name in it: nothing another user could open, replace or leave behind.
  const Result<OpenDirectory> dir = openDirectory(directory_, {});
  if (!dir.ok()) fail(dir.why());
  fd_ = ::openat(dir.value().fd(), ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ >= 0) return;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) fail(std::strerror(errno));
  // A file system without unnamed files: a new name, removed as soon as it is made.
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    const std::string name =
        "kinetrace-analyze-" + std::to_string(::getpid()) + "-" + std::to_string(distinctTag());
    fd_ = ::openat(dir.value().fd(), name.c_str(),
                   O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ >= 0) {
      ::unlinkat(dir.value().fd(), name.c_str(), 0);
    } else if (errno != EEXIST) {
      fail(std::strerror(errno));
    }
  }
  if (fd_ < 0) fail(std::strerror(EEXIST));
}

SpillFile::~SpillFile() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t SpillFile::append(const void* data, std::size_t size) {
  const uint64_t offset = size_;
  const char* at = static_cast<const char*>(data);
  std::size_t left = size;
  while (left > 0) {
    const ssize_t wrote = ::pwrite(fd_, at, left, static_cast<off_t>(size_));
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      throw Error("cannot write a temporary file in " + directory_ +
                  " (analysing a large trace needs room there; set TMPDIR to another "
                  "directory): " +
                  std::strerror(wrote < 0 ? errno : ENOSPC));
    }
    at += wrote;
    left -= static_cast<std::size_t>(wrote);
    size_ += static_cast<uint64_t>(wrote);
  }
  return offset;
}

void SpillFile::read(uint64_t offset, void* data, std::size_t size) const {
  char* at = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t got = ::pread(fd_, at, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw Error("cannot read back a temporary file in " + directory_ + ": " +
                  (got < 0 ? std::strerror(errno) : "it is shorter than what was written"));
    }
    at += got;
    offset += static_cast<uint64_t>(got);
    size -= static_cast<std::size_t>(got);
  }
}

}  // namespace kinetrace::detail
