#include "output/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "kinetrace/error.h"

namespace kinetrace::detail {
namespace {

// Linux's own limit on the links followed in one path lookup (MAXSYMLINKS).
constexpr int kMaxSymlinkHops = 40;

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

std::string directoryOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string baseNameOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// What a link points to, as stored; false with errno set when it cannot be read.
bool readLink(const std::string& path, std::string& target) {
  std::vector<char> buffer(256);
  for (;;) {
    const ssize_t size = ::readlink(path.c_str(), buffer.data(), buffer.size());
    if (size < 0) return false;
    if (static_cast<std::size_t>(size) < buffer.size()) {
      target.assign(buffer.data(), static_cast<std::size_t>(size));
      return true;
    }
    buffer.resize(buffer.size() * 2);  // possibly truncated: read again with more room
  }
}

// "a character device", for "it is a character device, not a regular file".
const char* describeFileType(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

bool allOf(std::string_view text, bool (*accept)(char)) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!accept(c)) return false;
  }
  return true;
}
bool isDigit(char c) {
  return c >= '0' && c <= '9';
}
bool isHexDigit(char c) {
  return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// The pid in "<base>.tmp.<pid>.<hex>", or 0 when the name is not a temporary file of ours.
pid_t temporaryFileOwner(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return 0;
  name.remove_prefix(prefix.size());
  const std::size_t dot = name.find('.');
  if (dot == std::string_view::npos) return 0;
  const std::string_view pidText = name.substr(0, dot);
  if (!allOf(pidText, isDigit) || !allOf(name.substr(dot + 1), isHexDigit)) return 0;
  if (pidText.size() > 9) return 0;  // above any pid, and keeps the sum below from overflowing
  long pid = 0;
  for (char c : pidText) pid = pid * 10 + (c - '0');
  return pid > 0 && pid <= INT_MAX ? static_cast<pid_t>(pid) : 0;
}

// Removes the temporary files that saves to `target` left when their process was killed.
// A file is left alone unless its pid names no process here (kill(pid, 0) fails with
// ESRCH) and no one holds its lock: a save from another pid namespace (a container writing
// to a shared directory) has a pid this one cannot see, but it holds the lock while it
// writes. Best effort: what cannot be read or removed stays.
void removeStaleTemporaryFiles(const std::string& target) {
  const std::string prefix = baseNameOf(target) + ".tmp.";
  if (prefix.size() == std::string_view(".tmp.").size()) return;  // no base name
  DIR* directory = ::opendir(directoryOf(target).c_str());
  if (directory == nullptr) return;
  const int directoryFd = ::dirfd(directory);
  while (const dirent* entry = ::readdir(directory)) {
    const pid_t owner = temporaryFileOwner(entry->d_name, prefix);
    if (owner == 0) continue;
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;  // alive, or someone else's
    const int fd = ::openat(directoryFd, entry->d_name,
                            O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat info {};
    const bool regular = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
    // A file system without locks (ENOLCK, EOPNOTSUPP) leaves the pid as the only sign.
    const bool unlocked = ::flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK;
    if (regular && unlocked) ::unlinkat(directoryFd, entry->d_name, 0);
    ::close(fd);
  }
  ::closedir(directory);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw Error("cannot write trace: the path is empty");

  // Follow the links to the file they end at: renaming onto the link itself would replace
  // the link with a regular file. A missing final target (a dangling link) is created.
  target_ = path_;
  for (int hops = 0;; ++hops) {
    struct stat info {};
    if (::lstat(target_.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) break;
    if (hops == kMaxSymlinkHops) fail(ELOOP);
    std::string link;
    if (!readLink(target_, link)) fail(errno);
    if (link.empty()) fail(ENOENT);
    // A relative link is relative to the directory that holds it.
    const std::string directory = directoryOf(target_);
    if (link.front() == '/' || directory == ".") {
      target_ = std::move(link);
    } else {
      target_ = directory.back() == '/' ? directory + link : directory + "/" + link;
    }
  }
  // Say so now rather than after the whole trace was written, and never rename over a
  // directory, a FIFO or a device (as root, saving to /dev/null would replace it).
  refuseUnlessRegularFile();
  removeStaleTemporaryFiles(target_);

  constexpr int kAttempts = 16;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    tempPath_ = fmt::format("{}.tmp.{}.{:08x}", target_, ::getpid(), randomTag());
    fd_ = ::open(tempPath_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) {
      // Held until commit or discard: tells a cleaning save in another pid namespace that
      // this file is being written.
      ::flock(fd_, LOCK_EX | LOCK_NB);
      return;
    }
    if (errno != EEXIST) {
      const int error = errno;
      tempPath_.clear();
      fail(error);
    }
  }
  tempPath_.clear();
  fail(EEXIST);
}

AtomicFile::~AtomicFile() {
  discard();
}

void AtomicFile::write(const char* data, std::size_t size) {
  if (fd_ < 0) throw Error("cannot write trace to " + path_ + ": already closed");
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
  if (fd_ < 0) throw Error("cannot write trace to " + path_ + ": already closed");
  // No fsync: a rename is enough for readers to see the whole file or none of it, and a
  // trace is diagnostic output that does not need to survive a power cut at the cost of
  // waiting for gigabytes to reach the disk.
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail(errno);  // deferred write errors (NFS, quota) surface here
  // A trace written while recording may take hours: the target may have changed since.
  refuseUnlessRegularFile();
  if (std::rename(tempPath_.c_str(), target_.c_str()) != 0) fail(errno);
  committed_ = true;
}

void AtomicFile::refuseUnlessRegularFile() const {
  struct stat info {};
  if (::lstat(target_.c_str(), &info) != 0 || S_ISREG(info.st_mode)) return;
  if (target_ == path_) {
    throw Error(fmt::format("cannot write trace to {}: it is {}, not a regular file", path_,
                            describeFileType(info.st_mode)));
  }
  throw Error(fmt::format("cannot write trace to {}: it links to {}, {}, not a regular file", path_,
                          target_, describeFileType(info.st_mode)));
}

void AtomicFile::fail(int error) const {
  throw Error(
      fmt::format("cannot write trace to {}: {}", path_, std::system_category().message(error)));
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  if (!committed_ && !tempPath_.empty()) ::unlink(tempPath_.c_str());
}

}  // namespace kinetrace::detail
