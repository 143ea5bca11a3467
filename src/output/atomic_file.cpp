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
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "kinetrace/error.h"

namespace kinetrace::detail {

// A temporary file as the signal handler removes it: by name in its directory, held open by
// its AtomicFile, so the handler removes that file and no other of the same path.
struct PendingTemporaryFile {
  int directoryFd = -1;
  char name[NAME_MAX + 1] = {};
};

namespace {

// ---- temporary files removed on a signal ----------------------------------------------------
// A fixed table that a signal handler reads without a lock or an allocation: each slot
// holds a temporary file being written, or null. The handler takes an entry with
// exchange(); its AtomicFile takes it back with a compare-exchange, which fails once the
// handler has it (the handler may still be reading it, so it is then never freed: the
// process is ending anyway). Past kSignalSlots files at once, the others are left on a
// signal.
constexpr std::size_t kSignalSlots = 128;
std::atomic<PendingTemporaryFile*> signalEntries[kSignalSlots];
static_assert(std::atomic<PendingTemporaryFile*>::is_always_lock_free, "read by a signal handler");

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
std::size_t registerSignalEntry(PendingTemporaryFile* entry) {
  for (std::size_t slot = 0; slot < kSignalSlots; ++slot) {
    PendingTemporaryFile* expected = nullptr;
    if (signalEntries[slot].compare_exchange_strong(expected, entry)) return slot;
  }
  return kSignalSlots;
}

// False when the handler took the entry first.
bool unregisterSignalEntry(std::size_t slot, PendingTemporaryFile* entry) {
  PendingTemporaryFile* expected = entry;
  return signalEntries[slot].compare_exchange_strong(expected, nullptr);
}

// Async-signal-safe: atomic exchanges, unlinkat() and raise() only.
void removeTemporaryFilesAndRaise(int signal) {
  const int savedErrno = errno;
  for (std::atomic<PendingTemporaryFile*>& slot : signalEntries) {
    if (PendingTemporaryFile* entry = slot.exchange(nullptr)) {
      ::unlinkat(entry->directoryFd, entry->name, 0);
    }
  }
  // SA_RESETHAND put the default action back on entry: the signal, blocked while this
  // handler runs, ends the process when the handler returns, and its status says so.
  ::raise(signal);
  errno = savedErrno;
}

}  // namespace

AtomicFile::AtomicFile(std::string path, const PathRule& rule) : path_(std::move(path)) {
  if (path_.empty()) throw Error("cannot write trace: the path is empty");
  Result<OutputLocation> location = resolveOutput(path_, rule);
  if (!location.ok())
    throw Error(fmt::format("cannot write trace to {}: {}", path_, location.why()));
  location_ = std::move(location.value());

  // The temporary name keeps the start of the target's, within NAME_MAX.
  const std::string stem = location_.name.substr(0, NAME_MAX - 32);
  constexpr int kAttempts = 16;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    tempName_ = fmt::format("{}.tmp.{}.{:08x}", stem, ::getpid(), distinctTag());
    // The handler's copy, made first: nothing may throw between creating the file and
    // registering it.
    auto entry = std::make_unique<PendingTemporaryFile>();
    entry->directoryFd = location_.directory.fd();
    std::memcpy(entry->name, tempName_.c_str(), tempName_.size() + 1);
    const CleanupSignalsBlocked blocked;
    fd_ = ::openat(location_.directory.fd(), tempName_.c_str(),
                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ >= 0) {
      registeredSlot_ = registerSignalEntry(entry.get());
      if (registeredSlot_ < kSignalSlots) registered_ = entry.release();
      if (location_.exists) takeOverAttributes(location_.existing);
      return;
    }
    if (errno != EEXIST) {
      const int error = errno;
      tempName_.clear();
      fail(error);
    }
  }
  tempName_.clear();
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
  // A trace written while recording may take hours: the target may have changed since. The
  // rename replaces the name itself, never what a link planted there meanwhile points to.
  refuseUnlessRegularFile();
  const CleanupSignalsBlocked blocked;
  const int dir = location_.directory.fd();
  if (::renameat(dir, tempName_.c_str(), dir, location_.name.c_str()) != 0) fail(errno);
  committed_ = true;
  unregister();
}

void AtomicFile::refuseUnlessRegularFile() const {
  struct stat info {};
  if (::fstatat(location_.directory.fd(), location_.name.c_str(), &info, AT_SYMLINK_NOFOLLOW) !=
          0 ||
      S_ISREG(info.st_mode) || S_ISLNK(info.st_mode)) {
    return;
  }
  if (!location_.viaLinks) {
    throw Error(fmt::format("cannot write trace to {}: it is {}, not a regular file", path_,
                            describeFileType(info.st_mode)));
  }
  throw Error(fmt::format("cannot write trace to {}: it links to {}, {}, not a regular file", path_,
                          target(), describeFileType(info.st_mode)));
}

void AtomicFile::fail(int error) const {
  throw Error(
      fmt::format("cannot write trace to {}: {}", path_, std::system_category().message(error)));
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  const CleanupSignalsBlocked blocked;
  if (!committed_ && !tempName_.empty()) ::unlinkat(location_.directory.fd(), tempName_.c_str(), 0);
  unregister();
}

void AtomicFile::unregister() noexcept {
  if (registered_ == nullptr) return;
  PendingTemporaryFile* const entry = std::exchange(registered_, nullptr);
  if (unregisterSignalEntry(registeredSlot_, entry)) delete entry;
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
