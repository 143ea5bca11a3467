#include "ondemand/dynolog_client.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string_view>
#include <tuple>

#include "support/log.h"

namespace kinetrace::ondemand {

using detail::log;

namespace {

constexpr double kDefaultIntervalSeconds = 5;
// Beyond a day between polls the daemon has long forgotten the process (it does after a
// minute of silence); the cap only keeps the arithmetic in nanoseconds from overflowing.
constexpr double kLongestIntervalSeconds = 86400;
// A configuration is a few lines of KEY=VALUE: a datagram larger than this is not one.
constexpr std::size_t kReceiveBytes = 64 << 10;
// Datagrams read per wake-up, so that a flood cannot keep the thread from polling.
constexpr int kReceivesPerWake = 64;

int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// "DIR/NAME" or "@NAME" (the usual way to write an abstract name), for messages.
std::string describe(const std::string& name, const std::string& dir) {
  if (dir.empty()) return "@" + name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Seconds from the text, or why it is not a positive number. strtod, not iostreams: this
// runs inside cuInit() of the traced process (see parentOf in dynolog_ipc.cpp).
detail::Result<double> parseSeconds(const std::string& text) {
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return detail::Failure{"not a number"};
  while (*end == ' ' || *end == '\t' || *end == '\n') ++end;
  if (*end != '\0') return detail::Failure{"not a number"};
  if (!std::isfinite(seconds) || seconds <= 0) return detail::Failure{"not positive"};
  return seconds;
}

}  // namespace

DynologClientOptions DynologClientOptions::fromEnvironment() {
  DynologClientOptions options;
  if (const char* text = std::getenv("ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS")) {
    auto seconds = parseSeconds(text);
    if (seconds.ok()) {
      options.intervalSeconds = seconds.value();
    } else {
      log(LogLevel::Warning,
          "ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS=\"{}\" is {}: polling dynolog every {} s", text,
          seconds.why(), kDefaultIntervalSeconds);
    }
  }
  if (const char* dir = std::getenv("KINETO_IPC_SOCKET_DIR")) options.socketDir = dir;
  options.identity.jobId = jobIdFromEnvironment();
  options.identity.pids = pidAndAncestors(static_cast<int32_t>(::getpid()));
  return options;
}

DynologClient::DynologClient(DynologClientOptions options, std::function<bool()> busy,
                             std::function<void(const std::string& config)> onConfig)
    : options_(std::move(options)),
      busy_(std::move(busy)),
      onConfig_(std::move(onConfig)),
      name_(randomClientName()) {
  double seconds = options_.intervalSeconds;
  if (!std::isfinite(seconds) || seconds <= 0) seconds = kDefaultIntervalSeconds;
  intervalNs_ = static_cast<int64_t>(std::min(seconds, kLongestIntervalSeconds) * 1e9);
  if (options_.identity.pids.empty()) {
    options_.identity.pids = pidAndAncestors(static_cast<int32_t>(::getpid()));
  }

  auto daemon = dynologAddress(kDynologDaemonName, options_.socketDir);
  auto own = dynologAddress(name_, options_.socketDir);
  if (!daemon.ok() || !own.ok()) {
    log(LogLevel::Warning, "dynolog cannot be polled: {}", daemon.ok() ? own.why() : daemon.why());
    return;
  }
  std::tie(daemonAddress_, daemonLength_) = daemon.value();
  std::tie(ownAddress_, ownLength_) = own.value();

  socketFd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  wakeFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (socketFd_ < 0 || wakeFd_ < 0) {
    log(LogLevel::Warning, "dynolog cannot be polled: no socket ({})", std::strerror(errno));
    closeDescriptors();
    return;
  }
  receiveBuffer_.resize(kReceiveBytes);
  bindSocket();
  try {
    thread_ = std::make_unique<std::thread>([this] { loop(); });
  } catch (const std::exception& error) {
    log(LogLevel::Warning, "dynolog cannot be polled: no thread ({})", error.what());
    closeDescriptors();
    if (bound_ && !options_.socketDir.empty()) ::unlink(ownAddress_.sun_path);
    bound_ = false;
  }
}

DynologClient::~DynologClient() {
  stop();
  if (!abandoned_.load()) closeDescriptors();
}

void DynologClient::stop() {
  // Checked before the lock: in a forked child the lock may be a copy held by a thread of
  // the parent's.
  if (abandoned_.load()) return;
  if (thread_ && thread_->get_id() == std::this_thread::get_id()) {
    stopping_.store(true);  // from a callback: the loop ends after it; joining would hang
    return;
  }
  std::lock_guard<std::mutex> lock(stopMutex_);
  if (stopped_) return;
  stopped_ = true;
  stopping_.store(true);
  wake();
  if (thread_) {
    thread_->join();
    thread_.reset();
  }
  // The wake descriptor stays open until the destructor, so that a late pollNow() never
  // writes to a number the program has reused.
  if (socketFd_ >= 0) ::close(socketFd_);
  socketFd_ = -1;
  if (bound_ && !options_.socketDir.empty()) ::unlink(ownAddress_.sun_path);
  bound_ = false;
}

void DynologClient::pollNow() {
  if (stopping_.load() || abandoned_.load()) return;
  pollRequested_.store(true);
  wake();
}

void DynologClient::abandonInForkedChild() noexcept {
  abandoned_.store(true);
  // The std::thread refers to a thread of the parent: destroying it joinable would end the
  // process, joining it would wait forever.
  (void)thread_.release();
  closeDescriptors();
  bound_ = false;
}

DynologClient::Counts DynologClient::counts() const {
  return Counts{polls_.load(),     replies_.load(), configs_.load(),   unreachable_.load(),
                malformed_.load(), foreign_.load(), sendErrors_.load()};
}

void DynologClient::wake() {
  if (wakeFd_ < 0) return;
  const uint64_t one = 1;
  // EAGAIN means the counter is already past any need to wake: fine.
  ssize_t ignored = ::write(wakeFd_, &one, sizeof(one));
  (void)ignored;
}

void DynologClient::closeDescriptors() noexcept {
  if (socketFd_ >= 0) ::close(socketFd_);
  if (wakeFd_ >= 0) ::close(wakeFd_);
  socketFd_ = wakeFd_ = -1;
}

bool DynologClient::bindSocket() {
  if (bound_) return true;
  if (::bind(socketFd_, reinterpret_cast<const sockaddr*>(&ownAddress_), ownLength_) == 0) {
    bound_ = true;
    return true;
  }
  if (!bindWarned_) {
    bindWarned_ = true;
    log(LogLevel::Warning, "cannot bind the dynolog client socket {}: {}; trying again each poll",
        describe(name_, options_.socketDir), std::strerror(errno));
  }
  return false;
}

void DynologClient::loop() {
  // Named so that `top -H` and per-thread CPU accounting show what it is.
  pthread_setname_np(pthread_self(), "kinetrace-dyno");
  int64_t nextPollNs = monotonicNs();  // the first poll registers the process at once
  while (!stopping_.load()) {
    int64_t now = monotonicNs();
    if (pollRequested_.exchange(false) || now >= nextPollNs) {
      if (answering()) sendPoll();
      now = monotonicNs();
      nextPollNs = now + intervalNs_;
    }
    pollfd fds[2] = {{wakeFd_, POLLIN, 0}, {socketFd_, POLLIN, 0}};
    const int64_t leftNs = std::max<int64_t>(0, nextPollNs - now);
    // Rounded up: waking a little early would only come back here to wait again.
    const int timeoutMs = static_cast<int>(std::min<int64_t>((leftNs + 999999) / 1000000, 1 << 30));
    const int ready = ::poll(fds, 2, timeoutMs);
    if (ready <= 0) continue;  // the interval is up, or a signal (EINTR)
    if (fds[0].revents & POLLIN) {
      uint64_t count = 0;
      ssize_t ignored = ::read(wakeFd_, &count, sizeof(count));
      (void)ignored;
    }
    if (fds[1].revents & POLLIN) receiveAll();
  }
}

bool DynologClient::answering() {
  if (answers_) return true;
  try {
    answers_ = !options_.answers || options_.answers();
  } catch (...) {
    answers_ = true;  // a check that fails must not keep the process from being traced
  }
  if (!answers_ && !waitingLogged_) {
    waitingLogged_ = true;
    log(LogLevel::Debug, "not answering dynolog until this process uses a GPU");
  }
  return answers_;
}

void DynologClient::sendPoll() {
  if (!bindSocket()) return;
  Poll poll = options_.identity;
  bool isBusy = false;
  if (busy_) {
    try {
      isBusy = busy_();
    } catch (...) {
      log(LogLevel::Warning, "the dynolog client's busy() check threw; polling as busy");
      isBusy = true;
    }
  }
  poll.type = isBusy ? kPollBusy : kPollWantsActivities;
  const std::string datagram = encodeMessage(kDynologRequestType, encodePoll(poll));
  const ssize_t sent =
      ::sendto(socketFd_, datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(&daemonAddress_), daemonLength_);
  if (sent >= 0) {
    polls_.fetch_add(1, std::memory_order_relaxed);
    if (reach_ == Reach::Unreachable) {
      log(LogLevel::Info, "reached dynolog at {}",
          describe(kDynologDaemonName, options_.socketDir));
    }
    reach_ = Reach::Reachable;
    return;
  }
  const int error = errno;
  if (error == ECONNREFUSED || error == ENOENT) {
    // No daemon (yet): said once each time it goes missing, at debug level, since most
    // processes never run under one; the polls go on quietly, as it may start later.
    unreachable_.fetch_add(1, std::memory_order_relaxed);
    if (reach_ != Reach::Unreachable) {
      log(LogLevel::Debug, "no dynolog at {} ({}); polling every {} s in case it starts",
          describe(kDynologDaemonName, options_.socketDir), std::strerror(error),
          static_cast<double>(intervalNs_) / 1e9);
    }
    reach_ = Reach::Unreachable;
    return;
  }
  sendErrors_.fetch_add(1, std::memory_order_relaxed);
  if (!sendErrorLogged_) {
    sendErrorLogged_ = true;
    log(LogLevel::Debug, "a poll of dynolog at {} failed: {}",
        describe(kDynologDaemonName, options_.socketDir), std::strerror(error));
  }
}

bool DynologClient::fromDaemon(const sockaddr_un& from, socklen_t length) const {
  const auto pathOffset = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path));
  if (from.sun_family != AF_UNIX || length <= pathOffset) return false;  // unnamed
  const std::size_t pathBytes = std::min<std::size_t>(length - pathOffset, sizeof(from.sun_path));
  const std::string_view path(from.sun_path, pathBytes);
  if (options_.socketDir.empty()) {
    // Abstract: NUL + name, then the NUL the daemon counts as part of its name.
    if (path.empty() || path[0] != '\0') return false;
    std::string_view name = path.substr(1);
    while (!name.empty() && name.back() == '\0') name.remove_suffix(1);
    return name == kDynologDaemonName;
  }
  // A file: the path up to its NUL, compared with where the daemon's socket is.
  const std::string_view own(daemonAddress_.sun_path);
  return path.substr(0, path.find('\0')) == own;
}

void DynologClient::receiveAll() {
  for (int i = 0; i < kReceivesPerWake && !stopping_.load(); ++i) {
    sockaddr_un from{};
    socklen_t fromLength = sizeof(from);
    // MSG_TRUNC: the datagram's whole length, so that one larger than the buffer is seen as
    // such rather than read cut short.
    const ssize_t got =
        ::recvfrom(socketFd_, receiveBuffer_.data(), receiveBuffer_.size(),
                   MSG_DONTWAIT | MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &fromLength);
    if (got < 0) return;  // EAGAIN: all read
    if (!fromDaemon(from, fromLength)) {
      foreign_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    std::string why;
    if (static_cast<std::size_t>(got) > receiveBuffer_.size()) {
      why = "a datagram of " + std::to_string(got) + " bytes is too large for a configuration";
    } else {
      auto message =
          decodeMessage(std::string_view(receiveBuffer_.data(), static_cast<std::size_t>(got)));
      if (!message.ok()) {
        why = message.why();
      } else if (message.value().type != kDynologRequestType) {
        why = "a reply of type \"" + message.value().type + "\", not \"req\"";
      } else {
        replies_.fetch_add(1, std::memory_order_relaxed);
        if (message.value().payload.empty()) continue;
        if (onConfig_) {
          try {
            onConfig_(message.value().payload);
          } catch (const std::exception& error) {
            log(LogLevel::Warning, "a dynolog configuration was not taken: {}", error.what());
          } catch (...) {
            log(LogLevel::Warning, "a dynolog configuration was not taken");
          }
        }
        // Counted once handed over, so that whoever sees the count sees what onConfig did.
        configs_.fetch_add(1, std::memory_order_release);
        continue;
      }
    }
    malformed_.fetch_add(1, std::memory_order_relaxed);
    if (!malformedLogged_) {
      malformedLogged_ = true;
      log(LogLevel::Debug, "ignored a malformed datagram from dynolog: {}", why);
    }
  }
}

}  // namespace kinetrace::ondemand
