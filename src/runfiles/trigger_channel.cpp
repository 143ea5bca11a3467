#include "runfiles/trigger_channel.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "ondemand/trigger_decision.h"
#include "support/path_rule.h"
#include "support/text.h"

namespace kinetrace::runfiles {

using detail::endsWith;
using detail::Failure;
using detail::Result;
namespace {

// A request or answer is one short line: anything longer is not ours.
constexpr std::size_t kMaxLine = 4096;

int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string errorText() {
  return std::strerror(errno);
}

// Reads up to a newline (not kept), all of it within `timeoutMs`: a deadline for the whole
// line, not for each byte.
bool readLine(int fd, std::string* line, int timeoutMs) {
  line->clear();
  const int64_t deadline = monotonicNs() + static_cast<int64_t>(timeoutMs) * 1000000;
  while (line->size() < kMaxLine) {
    const int64_t left = deadline - monotonicNs();
    pollfd wait{fd, POLLIN, 0};
    // The last wait is zero: what already arrived is read even when the time is up.
    const int waitMs = left <= 0 ? 0 : static_cast<int>((left + 999999) / 1000000);
    if (::poll(&wait, 1, waitMs) <= 0) return false;
    char c = 0;
    const ssize_t n = ::read(fd, &c, 1);
    if (n <= 0) return !line->empty();
    if (c == '\n') return true;
    line->push_back(c);
  }
  return false;
}

// A whole decimal number, nothing before or after it ("12abc" is not 12).
std::optional<int64_t> wholeNumber(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || at != end) return std::nullopt;
  return value;
}

bool processIsGone(int64_t pid) {
  return pid > 0 && pid <= INT_MAX && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
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
  if (!request.output.empty()) line += " output=" + ondemand::encodedPath(request.output);
  if (request.startAtNs != 0) line += " start_at_ns=" + std::to_string(request.startAtNs);
  if (request.startStep >= 0) line += " start_step=" + std::to_string(request.startStep);
  if (request.roundUpSteps > 1) line += " round_up=" + std::to_string(request.roundUpSteps);
  return line;
}

Result<TriggerRequest> parseRequest(const std::string& line) {
  std::istringstream words(line);
  std::string verb;
  words >> verb;
  TriggerRequest request;
  if (verb == "status") {
    request.verb = TriggerRequest::Verb::Status;
    return request;
  }
  if (verb != "record") {
    return Failure{"unknown request \"" + verb + "\" (expected \"record\" or \"status\")"};
  }
  for (std::string word; words >> word;) {
    const std::size_t equals = word.find('=');
    const std::string key = word.substr(0, equals);
    const std::string value = equals == std::string::npos ? "" : word.substr(equals + 1);
    if (key == "output") {
      std::optional<std::string> path = ondemand::decodedPath(value);
      if (!path || path->empty()) {
        return Failure{"\"output\" needs a percent-encoded path, got \"" + value + "\""};
      }
      if (std::optional<std::string> why = ondemand::whyPathUnusable(*path)) return Failure{*why};
      request.output = std::move(*path);
      continue;
    }
    int64_t* field = key == "duration_ns"   ? &request.durationNs
                     : key == "steps"       ? &request.steps
                     : key == "start_at_ns" ? &request.startAtNs
                     : key == "start_step"  ? &request.startStep
                     : key == "round_up"    ? &request.roundUpSteps
                                            : nullptr;
    if (field == nullptr) return Failure{"unknown field \"" + key + "\""};
    const std::optional<int64_t> number = wholeNumber(value);
    if (!number) return Failure{"\"" + key + "\" needs a whole number, got \"" + value + "\""};
    *field = *number;
  }
  if (detail::Status usable = ondemand::checkRequest(request); !usable.ok()) {
    return Failure{usable.why()};
  }
  return request;
}

std::string controlDirectory() {
  const char* configured = std::getenv("KINETRACE_CONTROL_DIR");
  std::string dir = configured != nullptr && *configured != '\0'
                        ? std::string(configured)
                        : "/tmp/kinetrace-" + std::to_string(::getuid());
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  // The directory above it reached by the one path rule (no other user's link followed on
  // the way), the directory itself made or opened by name there, never through a link.
  const std::size_t slash = dir.rfind('/');
  const std::string parent = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : dir.substr(0, slash);
  const std::string name = dir.substr(slash == std::string::npos ? 0 : slash + 1);
  const detail::Result<detail::OpenDirectory> above = detail::openDirectory(parent, {});
  if (!above.ok()) {
    throw std::runtime_error("cannot use the control directory " + dir + ": " + above.why());
  }
  const int parentFd = above.value().fd();
  if (::mkdirat(parentFd, name.c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::runtime_error("cannot create the control directory " + dir + ": " + errorText());
  }
  const std::string remedy =
      "; triggers are off (remove it, or set KINETRACE_CONTROL_DIR to a directory of your own)";
  struct stat info {};
  if (::fstatat(parentFd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
    throw std::runtime_error("cannot use the control directory " + dir + ": " + errorText());
  }
  if (!S_ISDIR(info.st_mode)) {
    throw std::runtime_error("the control directory " + dir + " is not a directory" + remedy);
  }
  if (info.st_uid != ::getuid()) {
    throw std::runtime_error("the control directory " + dir + " belongs to another user (uid " +
                             std::to_string(info.st_uid) + ", not " + std::to_string(::getuid()) +
                             ")" + remedy);
  }
  if ((info.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    throw std::runtime_error("the control directory " + dir + " is open to other users (mode " +
                             mode + ", not 0700)" + remedy);
  }
  // Where it really is: sockets are made and reached there, without the links on the way.
  return above.value().pathOf(name);
}

std::string socketName(const std::string& runId, int64_t pid) {
  return (runId.empty() ? "" : runId + ".") + std::to_string(pid) + ".sock";
}

Result<TriggerListener> listenForTriggers(const std::string& runId, int64_t pid) {
  TriggerListener listener;
  try {
    listener.path = controlDirectory() + "/" + socketName(runId, pid);
  } catch (const std::exception& e) {
    return Failure{e.what()};
  }
  sockaddr_un address;
  if (!fillAddress(listener.path, &address)) {
    return Failure{"the socket path " + listener.path + " is too long"};
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Failure{"socket: " + errorText()};
  removeStaleSockets();             // those of killed processes, which could not remove their own
  ::unlink(listener.path.c_str());  // a socket left by an earlier process of the same pid
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 64) != 0) {
    std::string why = listener.path + ": " + errorText();
    ::close(fd);
    return Failure{std::move(why)};
  }
  ::chmod(listener.path.c_str(), 0600);
  listener.fd = fd;
  return listener;
}

RequestReader::RequestReader(int listenFd, Limits limits) : listenFd_(listenFd), limits_(limits) {
  limits_.maxConnections = std::max<std::size_t>(1, limits_.maxConnections);
}

RequestReader::~RequestReader() {
  for (Connection& connection : connections_) ::close(connection.fd);
}

void RequestReader::abandon() {
  for (Connection& connection : connections_) ::close(connection.fd);
  connections_.clear();
}

void RequestReader::addPollFds(std::vector<pollfd>* fds) const {
  if (listenFd_ >= 0) fds->push_back(pollfd{listenFd_, POLLIN, 0});
  for (const Connection& connection : connections_) {
    fds->push_back(pollfd{connection.fd, POLLIN, 0});
  }
}

int64_t RequestReader::nextDeadlineNs() const {
  int64_t next = INT64_MAX;
  for (const Connection& connection : connections_) next = std::min(next, connection.deadlineNs);
  return next;
}

bool RequestReader::read(Connection& connection, std::vector<Request>* complete) {
  char chunk[512];
  while (true) {
    const ssize_t n = ::recv(connection.fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // The client closed: a line without its newline still counts.
      if (connection.buffer.empty()) {
        ::close(connection.fd);
      } else {
        complete->push_back(Request{connection.fd, connection.buffer, connection.peerAllowed});
      }
      return true;
    }
    connection.buffer.append(chunk, static_cast<std::size_t>(n));
    const std::size_t newline = connection.buffer.find('\n');
    if (newline != std::string::npos) {
      connection.buffer.resize(newline);
      complete->push_back(Request{connection.fd, connection.buffer, connection.peerAllowed});
      return true;
    }
    if (connection.buffer.size() > kMaxLine) {
      answer(connection.fd,
             "refused the request is longer than " + std::to_string(kMaxLine) + " bytes");
      return true;
    }
  }
}

std::vector<RequestReader::Request> RequestReader::service(int64_t nowNs) {
  std::vector<Request> complete;
  // Those already waiting first: a connection that has sent its request is served before
  // newcomers may push it out.
  for (std::size_t i = 0; i < connections_.size();) {
    if (read(connections_[i], &complete)) {
      connections_.erase(connections_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  while (listenFd_ >= 0) {
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      break;  // EAGAIN: none left; EMFILE and the like: the next round tries again
    }
    ucred peer{};
    socklen_t size = sizeof peer;
    const bool allowed =
        ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0 && peer.uid == ::getuid();
    Connection connection{fd, {}, nowNs + limits_.requestTimeoutNs, allowed};
    if (read(connection, &complete)) continue;
    if (connections_.size() >= limits_.maxConnections) {
      answer(connections_.front().fd,
             "refused too many connections waiting; this one sent no request in time");
      connections_.erase(connections_.begin());
    }
    connections_.push_back(std::move(connection));
  }
  for (std::size_t i = 0; i < connections_.size();) {
    if (nowNs >= connections_[i].deadlineNs) {
      answer(connections_[i].fd, "refused the request did not arrive within " +
                                     std::to_string(limits_.requestTimeoutNs / 1000000) +
                                     " ms of connecting");
      connections_.erase(connections_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  return complete;
}

bool answer(int fd, const std::string& line) {
  const std::string text = line + "\n";
  std::size_t written = 0;
  bool delivered = true;
  while (written < text.size()) {
    const ssize_t n =
        ::send(fd, text.data() + written, text.size() - written, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      delivered = false;  // the client went away (or stopped reading): nothing to tell it
      break;
    }
    written += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return delivered;
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

std::string sendRequest(const std::string& socketPath, const TriggerRequest& request,
                        int timeoutMs) {
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
  const bool got = readLine(fd, &reply, timeoutMs);
  ::close(fd);
  if (!got) {
    throw std::runtime_error(socketPath + ": no answer within " + std::to_string(timeoutMs) +
                             " ms (the request was not carried out)");
  }
  return reply;
}

int64_t pidOfSocket(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  if (!endsWith(name, ".sock")) return -1;
  name.resize(name.size() - 5);
  const std::size_t dot = name.rfind('.');
  const std::string digits = dot == std::string::npos ? name : name.substr(dot + 1);
  if (digits.empty() || digits.size() > 18 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::stoll(digits);
}

int removeStaleSockets() {
  int removed = 0;
  for (const std::string& socket :
       socketsWhere([](const std::string&, const std::string&) { return true; }, "")) {
    if (!processIsGone(pidOfSocket(socket))) continue;
    // Its process is gone; a socket nobody listens on refuses a connection.
    sockaddr_un address;
    if (!fillAddress(socket, &address)) continue;
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const bool refused =
        ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 &&
        errno == ECONNREFUSED;
    ::close(fd);
    if (refused && ::unlink(socket.c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace kinetrace::runfiles
