#include "output/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <system_error>
#include <utility>

#include "kinetrace/error.h"

namespace kinetrace::detail {
namespace {

// Not secret, only distinct: O_EXCL catches the rare collision and we try another name.
uint32_t randomTag() {
  static std::atomic<uint64_t> counter{0};
  uint64_t x = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  x ^= counter.fetch_add(1, std::memory_order_relaxed) * 0x9E3779B97F4A7C15ULL;
  x ^= static_cast<uint64_t>(::getpid()) << 32;
  // splitmix64's finaliser spreads every input bit over the tag.
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return static_cast<uint32_t>(x);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw Error("kinetrace: cannot write trace: the path is empty");
  // The temporary file would be created beside a directory without complaint; only the
  // final rename would fail, after the whole trace was written. Say so now instead.
  struct stat info {};
  if (::stat(path_.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) fail(EISDIR);

  constexpr int kAttempts = 16;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    tempPath_ = fmt::format("{}.tmp.{}.{:08x}", path_, ::getpid(), randomTag());
    fd_ = ::open(tempPath_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) return;
    if (errno != EEXIST) {
      const int error = errno;
      tempPath_.clear();
      fail(error);
    }
  }
  tempPath_.clear();
  fail(EEXIST);
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::write(const char* data, std::size_t size) {
  if (fd_ < 0) throw Error("kinetrace: cannot write trace to " + path_ + ": already closed");
  while (size > 0) {
    const ssize_t written = ::write(fd_, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
}

void AtomicFile::commit() {
  if (committed_) return;
  if (fd_ < 0) throw Error("kinetrace: cannot write trace to " + path_ + ": already closed");
  // No fsync: a rename is enough for readers to see the whole file or none of it, and a
  // trace is diagnostic output that does not need to survive a power cut at the cost of
  // waiting for gigabytes to reach the disk.
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail(errno);  // deferred write errors (NFS, quota) surface here
  if (std::rename(tempPath_.c_str(), path_.c_str()) != 0) fail(errno);
  committed_ = true;
}

void AtomicFile::fail(int error) const {
  throw Error(fmt::format("kinetrace: cannot write trace to {}: {}", path_,
                          std::system_category().message(error)));
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  if (!committed_ && !tempPath_.empty()) ::unlink(tempPath_.c_str());
}

}  // namespace kinetrace::detail
