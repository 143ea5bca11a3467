#include "files.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "kinetrace/error.h"
#include "standard_output.h"
#include "support/text.h"

namespace kinetrace::cli {

bool isRegularFile(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

bool isReadableStream(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && !S_ISDIR(info.st_mode);
}

void refuseOutputOverInput(const std::string& output, const std::vector<std::string>& inputs,
                           const char* command) {
  if (output.empty() || isStandardOutput(output)) return;
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // not there yet: nothing to destroy
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) != 0) continue;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      throw Error(fmt::format(
          "{}: the output {} is the input {}: writing it would destroy the trace being read; "
          "name another output",
          command, output, input));
    }
  }
}

bool isDirectory(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::string readSmallFile(const std::string& path, std::size_t maxBytes) {
  // O_NONBLOCK: opening a FIFO does not wait for a writer; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  struct stat info {};
  const bool regular = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  if (!regular || static_cast<uint64_t>(info.st_size) > maxBytes) {
    ::close(fd);
    throw Error(regular ? fmt::format("{} is larger than {} bytes, more than such a file holds",
                                      path, maxBytes)
                        : fmt::format("{} is not a regular file", path));
  }
  std::string bytes(static_cast<std::size_t>(info.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<std::size_t>(got);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

std::vector<std::string> listDirectory(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* handle = ::opendir(dir.c_str())) {
    while (dirent* entry = ::readdir(handle)) names.emplace_back(entry->d_name);
    ::closedir(handle);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string baseName(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

}  // namespace kinetrace::cli
