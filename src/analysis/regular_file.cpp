#include "analysis/regular_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kinetrace/error.h"

namespace kinetrace::detail {
namespace {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

const char* kindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string readRegularFile(const std::string& path, BudgetHold& hold, std::string_view what) {
  // O_NOFOLLOW: a link is not followed (open fails with ELOOP); O_NONBLOCK: opening a FIFO
  // does not wait for a writer. Whether it is a regular file is asked of what was opened,
  // so nothing can be swapped in between.
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ELOOP) {
      throw Error(fmt::format("{} is a symbolic link; only a regular file is read there", path));
    }
    throw Error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    throw Error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(info.st_mode)) {
    throw Error(
        fmt::format("{} is {}; only a regular file is read there", path, kindOf(info.st_mode)));
  }
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size > hold.budget().cap()) hold.budget().refuse(what);
  hold.take(static_cast<std::size_t>(size) + 1 + kAllocationOverheadBytes, what);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    if (got == 0) break;  // it shrank while read: what is there
    done += static_cast<std::size_t>(got);
  }
  bytes.resize(done);
  // A file that grew while it was read is read as it was when opened: its size then.
  return bytes;
}

}  // namespace kinetrace::detail
