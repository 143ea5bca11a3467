#include "output/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
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

// ---- temporary files removed on a signal ----------------------------------------------------
// A fixed table that a signal handler reads without a lock or an allocation: each slot
// holds the path of a temporary file being written, or null. The handler takes a path with
// exchange(); its AtomicFile takes it back with a compare-exchange, which fails once the
// handler has it (the handler may still be reading it, so it is then never freed: the
// process is ending anyway). Past kSignalSlots files at once, the others are left on a
// signal.
constexpr std::size_t kSignalSlots = 128;
std::atomic<char*> signalPaths[kSignalSlots];
static_assert(std::atomic<char*>::is_always_lock_free, "read by a signal handler");

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

sigset_t cleanupSignalSet() {
  sigset_t set;
  ::sigemptyset(&set);
  for (int signal : kCleanupSignals) ::sigaddset(&set, signal);
  return set;
}

// Blocks the cleanup signals on this thread while a temporary file comes into being or
// goes, so that the handler finds a path registered exactly while its file exists (the
// handler of another thread may still run: then at worst a file is left, or a name that
// no longer exists is unlinked).
class CleanupSignalsBlocked {
 public:
  CleanupSignalsBlocked() {
    const sigset_t set = cleanupSignalSet();
    ::pthread_sigmask(SIG_BLOCK, &set, &previous_);
  }
  ~CleanupSignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  CleanupSignalsBlocked(const CleanupSignalsBlocked&) = delete;
  CleanupSignalsBlocked& operator=(const CleanupSignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

// The slot taken, or kSignalSlots when every slot is taken.
std::size_t registerSignalPath(char* path) {
  for (std::size_t slot = 0; slot < kSignalSlots; ++slot) {
    char* expected = nullptr;
    if (signalPaths[slot].compare_exchange_strong(expected, path)) return slot;
  }
  return kSignalSlots;
}

// False when the handler took the path first.
bool unregisterSignalPath(std::size_t slot, char* path) {
  char* expected = path;
  return signalPaths[slot].compare_exchange_strong(expected, nullptr);
}

// Async-signal-safe: atomic exchanges, unlink() and raise() only.
void removeTemporaryFilesAndRaise(int signal) {
  const int savedErrno = errno;
  for (std::atomic<char*>& slot : signalPaths) {
    if (char* path = slot.exchange(nullptr)) ::unlink(path);
  }
  // SA_RESETHAND put the default action back on entry: the signal, blocked while this
  // handler runs, ends the process when the handler returns, and its status says so.
  ::raise(signal);
  errno = savedErrno;
}

// Following a link in a sticky world-writable directory (/tmp) is what the kernel's
// fs.protected_symlinks allows only when the link's owner is the caller or the directory's
// owner. Following links by hand bypasses the kernel's check, so it is made here.
// Empty when the link may be followed, else why not.
std::string whyNotFollow(const std::string& link, const struct stat& linkInfo) {
  const std::string directory = directoryOf(link);
  struct stat info {};
  if (::stat(directory.c_str(), &info) != 0) {
    return fmt::format("cannot check the directory of the link {}: {}", link,
                       std::system_category().message(errno));
  }
  const bool shared = (info.st_mode & S_ISVTX) != 0 && (info.st_mode & S_IWOTH) != 0;
  if (!shared || linkInfo.st_uid == info.st_uid || linkInfo.st_uid == ::geteuid()) return "";
  return fmt::format(
      "not following {}: it is a symbolic link of another user (uid {}) in the shared "
      "directory {} (sticky and writable by all), so it may point anywhere; remove it or "
      "write elsewhere",
      link, linkInfo.st_uid, directory);
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
    const std::string why = whyNotFollow(target_, info);
    if (!why.empty()) throw Error(fmt::format("cannot write trace to {}: {}", path_, why));
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
  struct stat replaced {};
  const bool replacing = ::lstat(target_.c_str(), &replaced) == 0;

  constexpr int kAttempts = 16;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    tempPath_ = fmt::format("{}.tmp.{}.{:08x}", target_, ::getpid(), randomTag());
    // The handler's copy, made first: nothing may throw between creating the file and
    // registering it.
    auto copy = std::make_unique<char[]>(tempPath_.size() + 1);
    std::memcpy(copy.get(), tempPath_.c_str(), tempPath_.size() + 1);
    const CleanupSignalsBlocked blocked;
    fd_ = ::open(tempPath_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) {
      registeredSlot_ = registerSignalPath(copy.get());
      if (registeredSlot_ < kSignalSlots) registeredPath_ = copy.release();
      if (replacing) takeOverAttributes(replaced);
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
  const CleanupSignalsBlocked blocked;
  if (std::rename(tempPath_.c_str(), target_.c_str()) != 0) fail(errno);
  committed_ = true;
  unregister();
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
  const CleanupSignalsBlocked blocked;
  if (!committed_ && !tempPath_.empty()) ::unlink(tempPath_.c_str());
  unregister();
}

void AtomicFile::unregister() noexcept {
  if (registeredPath_ == nullptr) return;
  char* const path = std::exchange(registeredPath_, nullptr);
  if (unregisterSignalPath(registeredSlot_, path)) delete[] path;
}

void AtomicFile::takeOverAttributes(const struct stat& replaced) noexcept {
  struct stat mine {};
  if (::fstat(fd_, &mine) != 0) return;
  if ((mine.st_uid != replaced.st_uid || mine.st_gid != replaced.st_gid) &&
      ::fchown(fd_, replaced.st_uid, replaced.st_gid) != 0) {
    // Not root: the group at least, where the caller is a member of it.
    if (::fchown(fd_, static_cast<uid_t>(-1), replaced.st_gid) != 0) {
    }
  }
  // The permission bits only, after fchown (which clears them anyway): a set-user-ID or
  // set-group-ID bit kept on bytes this process wrote would hand its rights to them.
  if (::fchmod(fd_, replaced.st_mode & 0777) != 0) {
  }
}

void removeTemporaryFilesOnSignals() {
  for (int signal : kCleanupSignals) {
    struct sigaction current {};
    if (::sigaction(signal, nullptr, &current) != 0) continue;
    // Ignored (nohup), or handled by the program: left as it is.
    if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = removeTemporaryFilesAndRaise;
    action.sa_mask = cleanupSignalSet();  // one cleanup at a time
    action.sa_flags = SA_RESETHAND;
    ::sigaction(signal, &action, nullptr);
  }
}

}  // namespace kinetrace::detail
