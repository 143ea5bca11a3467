#include "ondemand/dynolog_ipc.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

namespace kinetrace::ondemand {

using detail::Failure;
using detail::Result;

namespace {

void putLittleEndian(std::string* out, uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) {
    out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
}

uint64_t getLittleEndian(std::string_view in, std::size_t offset, std::size_t bytes) {
  uint64_t value = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[offset + i])) << (8 * i);
  }
  return value;
}

// The parent of `pid` from /proc/PID/stat; -1 when it cannot be read. The second field is the
// command name in parentheses, which may itself hold spaces and ')': the fields after it
// start after the LAST ')'.
int64_t parentOf(int32_t pid) {
  // POSIX reads, not iostreams: this runs inside cuInit() of the traced process, where an
  // iostream read crashed PyTorch processes.
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buffer[1024];
  const ssize_t length = ::read(fd, buffer, sizeof buffer - 1);
  ::close(fd);
  if (length <= 0) return -1;
  buffer[length] = '\0';
  const char* close = std::strrchr(buffer, ')');
  if (close == nullptr) return -1;
  // ") S PPID ...": the state, then the parent.
  const char* field = close + 1;
  while (*field == ' ') ++field;
  if (*field == '\0') return -1;
  ++field;  // the state, one letter
  char* end = nullptr;
  const long long parent = std::strtoll(field, &end, 10);
  return end == field ? -1 : static_cast<int64_t>(parent);
}

}  // namespace

std::string encodeMessage(std::string_view type, std::string_view payload) {
  std::string out;
  out.reserve(kDynologHeaderBytes + payload.size());
  putLittleEndian(&out, payload.size(), 8);
  const std::size_t typeBytes = std::min(type.size(), kDynologTypeBytes - 1);
  out.append(type.data(), typeBytes);
  out.append(kDynologTypeBytes - typeBytes, '\0');
  out.append(payload.data(), payload.size());
  return out;
}

Result<DynologMessage> decodeMessage(std::string_view datagram) {
  if (datagram.size() < kDynologHeaderBytes) {
    return Failure{"a dynolog datagram of " + std::to_string(datagram.size()) +
                   " bytes is shorter than its 40-byte header"};
  }
  const uint64_t size = getLittleEndian(datagram, 0, 8);
  const std::size_t payloadBytes = datagram.size() - kDynologHeaderBytes;
  if (size != payloadBytes) {
    return Failure{"a dynolog datagram's header says " + std::to_string(size) +
                   " payload bytes, but " + std::to_string(payloadBytes) + " follow it"};
  }
  const std::string_view typeField = datagram.substr(8, kDynologTypeBytes);
  const std::size_t end = typeField.find('\0');
  if (end == std::string_view::npos) {
    return Failure{"a dynolog datagram's type is not NUL-terminated within its 32 bytes"};
  }
  return DynologMessage{std::string(typeField.substr(0, end)),
                        std::string(datagram.substr(kDynologHeaderBytes))};
}

std::string encodePoll(const Poll& poll) {
  std::string out;
  out.reserve(kPollFixedBytes + 4 * poll.pids.size());
  putLittleEndian(&out, static_cast<uint32_t>(poll.type), 4);
  putLittleEndian(&out, static_cast<uint32_t>(poll.pids.size()), 4);
  putLittleEndian(&out, static_cast<uint64_t>(poll.jobId), 8);
  for (int32_t pid : poll.pids) putLittleEndian(&out, static_cast<uint32_t>(pid), 4);
  return out;
}

Result<Poll> decodePoll(std::string_view payload) {
  if (payload.size() < kPollFixedBytes) {
    return Failure{"a dynolog poll of " + std::to_string(payload.size()) +
                   " bytes is shorter than its 16 fixed bytes"};
  }
  Poll poll;
  poll.type = static_cast<int32_t>(getLittleEndian(payload, 0, 4));
  const auto count = static_cast<int32_t>(getLittleEndian(payload, 4, 4));
  poll.jobId = static_cast<int64_t>(getLittleEndian(payload, 8, 8));
  if (count < 0) {
    return Failure{"a dynolog poll counts " + std::to_string(count) + " pids"};
  }
  const std::size_t expected = kPollFixedBytes + 4 * static_cast<std::size_t>(count);
  if (payload.size() != expected) {
    return Failure{"a dynolog poll of " + std::to_string(count) + " pids should be " +
                   std::to_string(expected) + " bytes, not " + std::to_string(payload.size())};
  }
  poll.pids.reserve(static_cast<std::size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    poll.pids.push_back(static_cast<int32_t>(getLittleEndian(payload, kPollFixedBytes + 4 * i, 4)));
  }
  return poll;
}

Result<std::pair<sockaddr_un, socklen_t>> dynologAddress(const std::string& name,
                                                         const std::string& dir) {
  if (name.empty()) return Failure{"a dynolog socket needs a name"};
  if (name.find('\0') != std::string::npos) {
    return Failure{"a dynolog socket name may not hold a NUL"};
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  constexpr std::size_t kPathBytes = sizeof(address.sun_path);
  if (dir.empty()) {
    // Abstract: a leading NUL, the name, and a trailing NUL that the daemon counts as part of
    // the name, so a client must bind and send to exactly these bytes.
    if (name.size() + 2 > kPathBytes) {
      return Failure{"the abstract socket name \"" + name + "\" is longer than " +
                     std::to_string(kPathBytes - 2) + " bytes"};
    }
    std::memcpy(address.sun_path + 1, name.data(), name.size());
    return std::make_pair(address, static_cast<socklen_t>(sizeof(sa_family_t) + name.size() + 2));
  }
  std::string path = dir;
  if (path.back() != '/') path += '/';
  path += name;
  if (path.size() + 1 > kPathBytes) {
    return Failure{"the socket path " + path + " is longer than a Unix socket's " +
                   std::to_string(kPathBytes - 1) + " bytes (KINETO_IPC_SOCKET_DIR is too long)"};
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return std::make_pair(address,
                        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1));
}

std::string randomClientName() {
  unsigned char bytes[16] = {};
  bool haveBytes = false;
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    std::size_t got = 0;
    while (got < sizeof(bytes)) {
      const ssize_t n = ::read(fd, bytes + got, sizeof(bytes) - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    haveBytes = got == sizeof(bytes);
    ::close(fd);
  }
  if (!haveBytes) {
    std::random_device device;
    for (std::size_t i = 0; i < sizeof(bytes); i += 4) {
      const uint32_t word = device();
      for (std::size_t j = 0; j < 4; ++j)
        bytes[i + j] = static_cast<unsigned char>(word >> (8 * j));
    }
  }
  static const char kHex[] = "0123456789abcdef";
  std::string name = kDynologClientPrefix;
  for (unsigned char byte : bytes) {
    name += kHex[byte >> 4];
    name += kHex[byte & 15];
  }
  return name;
}

std::vector<int32_t> pidAndAncestors(int32_t pid, std::size_t maxAncestors) {
  std::vector<int32_t> pids{pid};
  int32_t current = pid;
  while (pids.size() <= maxAncestors) {
    const int64_t parent = parentOf(current);
    if (parent <= 0 || parent > std::numeric_limits<int32_t>::max()) break;
    current = static_cast<int32_t>(parent);
    pids.push_back(current);
  }
  return pids;
}

int64_t jobIdFromEnvironment() {
  const char* text = std::getenv("SLURM_JOB_ID");
  if (text == nullptr || *text == '\0') return 0;
  int64_t value = 0;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9') return 0;
    const int digit = *c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return 0;
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace kinetrace::ondemand
