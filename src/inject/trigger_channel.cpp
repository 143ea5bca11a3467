#include "inject/trigger_channel.h"

#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace kinetrace::inject {
namespace {

// A request or answer is one short line: anything longer is not ours.
constexpr std::size_t kMaxLine = 4096;
// A client that connects and says nothing does not hold the control thread for long.
constexpr int kReadTimeoutMs = 2000;

std::string errorText() {
  return std::strerror(errno);
}

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Reads up to a newline (not kept), within the time limit.
bool readLine(int fd, std::string* line) {
  line->clear();
  while (line->size() < kMaxLine) {
    pollfd wait{fd, POLLIN, 0};
    if (::poll(&wait, 1, kReadTimeoutMs) <= 0) return false;
    char c = 0;
    const ssize_t n = ::read(fd, &c, 1);
    if (n <= 0) return !line->empty();
    if (c == '\n') return true;
    line->push_back(c);
  }
  return false;
}

bool fillAddress(const std::string& path, sockaddr_un* address) {
  std::memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  if (path.size() >= sizeof address->sun_path) return false;
  std::memcpy(address->sun_path, path.c_str(), path.size() + 1);
  return true;
}

std::vector<std::string> socketsWhere(bool (*match)(const std::string&, const std::string&),
                                      const std::string& key) {
  std::vector<std::string> found;
  const std::string dir = controlDirectory();
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return found;
  while (dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (endsWith(name, ".sock") && match(name, key)) found.push_back(dir + "/" + name);
  }
  ::closedir(listing);
  return found;
}

}  // namespace

std::string formatRequest(const TriggerRequest& request) {
  if (request.verb == TriggerRequest::Verb::Status) return "status";
  std::string line = request.steps > 0 ? "record steps=" + std::to_string(request.steps)
                                       : "record duration_ns=" + std::to_string(request.durationNs);
  if (!request.output.empty()) line += " output=" + request.output;
  if (request.startAtNs != 0) line += " start_at_ns=" + std::to_string(request.startAtNs);
  if (request.startStep >= 0) line += " start_step=" + std::to_string(request.startStep);
  return line;
}

std::optional<TriggerRequest> parseRequest(const std::string& line, std::string* why) {
  std::istringstream words(line);
  std::string verb;
  words >> verb;
  TriggerRequest request;
  if (verb == "status") {
    request.verb = TriggerRequest::Verb::Status;
    return request;
  }
  if (verb != "record") {
    *why = "unknown request \"" + verb + "\" (expected \"record\" or \"status\")";
    return std::nullopt;
  }
  for (std::string word; words >> word;) {
    const std::size_t equals = word.find('=');
    const std::string key = word.substr(0, equals);
    const std::string value = equals == std::string::npos ? "" : word.substr(equals + 1);
    try {
      if (key == "duration_ns") {
        request.durationNs = std::stoll(value);
      } else if (key == "steps") {
        request.steps = std::stoll(value);
      } else if (key == "start_at_ns") {
        request.startAtNs = std::stoll(value);
      } else if (key == "start_step") {
        request.startStep = std::stoll(value);
      } else if (key == "output") {
        request.output = value;
      } else {
        *why = "unknown field \"" + key + "\"";
        return std::nullopt;
      }
    } catch (const std::exception&) {
      *why = "\"" + key + "\" needs a number, got \"" + value + "\"";
      return std::nullopt;
    }
  }
  if ((request.durationNs > 0) == (request.steps > 0)) {
    *why =
        "say how long to record: a duration (duration_ns > 0) or a number of steps "
        "(steps > 0), one of the two";
    return std::nullopt;
  }
  if (request.steps > 0 && request.startAtNs != 0) {
    *why = "start_at_ns goes with a duration; a window of steps starts at start_step";
    return std::nullopt;
  }
  if (request.durationNs > 0 && request.startStep >= 0) {
    *why = "start_step goes with steps; a window of a duration starts at start_at_ns";
    return std::nullopt;
  }
  return request;
}

std::string controlDirectory() {
  const char* configured = std::getenv("KINETRACE_CONTROL_DIR");
  const std::string dir = configured != nullptr && *configured != '\0'
                              ? std::string(configured)
                              : "/tmp/kinetrace-" + std::to_string(::getuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::runtime_error("cannot create the control directory " + dir + ": " + errorText());
  }
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0) {
    throw std::runtime_error("cannot use the control directory " + dir + ": " + errorText());
  }
  if (!S_ISDIR(info.st_mode) || info.st_uid != ::getuid() || (info.st_mode & 077) != 0) {
    throw std::runtime_error("the control directory " + dir +
                             " is not a directory of this user's alone (mode 0700); "
                             "triggers are off");
  }
  return dir;
}

std::string socketName(const std::string& runId, int64_t pid) {
  return (runId.empty() ? "" : runId + ".") + std::to_string(pid) + ".sock";
}

int listenForTriggers(const std::string& runId, int64_t pid, std::string* path, std::string* why) {
  try {
    *path = controlDirectory() + "/" + socketName(runId, pid);
  } catch (const std::exception& e) {
    *why = e.what();
    return -1;
  }
  sockaddr_un address;
  if (!fillAddress(*path, &address)) {
    *why = "the socket path " + *path + " is too long";
    return -1;
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *why = "socket: " + errorText();
    return -1;
  }
  ::unlink(path->c_str());  // a socket left by an earlier process of the same pid
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 8) != 0) {
    *why = *path + ": " + errorText();
    ::close(fd);
    return -1;
  }
  ::chmod(path->c_str(), 0600);
  return fd;
}

int acceptRequest(int listenFd, std::string* line, bool* peerAllowed) {
  const int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return -1;
  ucred peer{};
  socklen_t size = sizeof peer;
  *peerAllowed =
      ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0 && peer.uid == ::getuid();
  if (!readLine(fd, line)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void answer(int fd, const std::string& line) {
  const std::string text = line + "\n";
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::send(fd, text.data() + written, text.size() - written, MSG_NOSIGNAL);
    if (n <= 0) break;  // the client went away: nothing to tell it
    written += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

std::vector<std::string> socketsOfPid(int64_t pid) {
  return socketsWhere(
      [](const std::string& name, const std::string& pidText) {
        return name == pidText + ".sock" || endsWith(name, "." + pidText + ".sock");
      },
      std::to_string(pid));
}

std::vector<std::string> socketsOfJob(const std::string& job) {
  return socketsWhere(
      [](const std::string& name, const std::string& prefix) {
        return name.compare(0, prefix.size() + 1, prefix + ".") == 0;
      },
      job);
}

std::string sendRequest(const std::string& socketPath, const TriggerRequest& request) {
  sockaddr_un address;
  if (!fillAddress(socketPath, &address)) {
    throw std::runtime_error(socketPath + ": the path is too long");
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket: " + errorText());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const std::string why = errorText();
    ::close(fd);
    throw std::runtime_error(socketPath + ": " + why +
                             " (the process has ended, or is not traced by kinetrace)");
  }
  const std::string line = formatRequest(request) + "\n";
  if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    const std::string why = errorText();
    ::close(fd);
    throw std::runtime_error(socketPath + ": " + why);
  }
  std::string reply;
  const bool got = readLine(fd, &reply);
  ::close(fd);
  if (!got) throw std::runtime_error(socketPath + ": no answer");
  return reply;
}

}  // namespace kinetrace::inject
