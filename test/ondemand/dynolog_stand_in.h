#pragma once

// A stand-in for the dynolog daemon, written from the protocol's facts (the layout of its
// datagrams, its replies) and not from kinetrace's encoder, so that a client test checks the
// client's bytes against the protocol rather than against itself.
//
// It binds DIR/dynolog (the KINETO_IPC_SOCKET_DIR form, never the abstract name, so that
// tests running at once on one machine never meet), and a thread of its own answers as the
// daemon does:
//
//   a "req" poll with n > 0   -> recorded, then answered with a "req" message: the oldest
//                                queued configuration when the poll's type has the
//                                activities bit (2), else an empty one (size 0)
//   a "req" poll with n = 0   -> recorded, no answer
//   anything else             -> counted as malformed, no answer
//
//   kinetrace::testing::TempDir dir("dyno");
//   kinetrace::testing::DynologStandIn daemon(dir.path());
//   daemon.queueConfig("ACTIVITIES_DURATION_MSECS=500");
//   ASSERT_TRUE(daemon.waitForPolls(3));
//
// Waits are on a condition variable with a deadline: a test is as fast as the client is.

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kinetrace::testing {

class DynologStandIn {
 public:
  // One poll as the daemon read it.
  struct ReceivedPoll {
    int32_t type = 0;
    int32_t count = 0;  // n, the number of pids
    int64_t jobId = 0;
    std::vector<int32_t> pids;
    std::string sender;   // the sender's socket path, as recvfrom gave it
    std::string payload;  // the payload's bytes, as sent
  };

  explicit DynologStandIn(const std::string& dir) {
    path_ = dir + "/dynolog";
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path_.size() + 1 > sizeof(address.sun_path)) {
      why_ = "the stand-in's path " + path_ + " is too long";
      return;
    }
    std::memcpy(address.sun_path, path_.c_str(), path_.size() + 1);
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    wakeFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd_ < 0 || wakeFd_ < 0 ||
        ::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      why_ = "the stand-in cannot bind " + path_ + ": " + std::strerror(errno);
      return;
    }
    thread_ = std::thread([this] { serve(); });
  }

  ~DynologStandIn() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    if (wakeFd_ >= 0) {
      const uint64_t one = 1;
      ssize_t ignored = ::write(wakeFd_, &one, sizeof(one));
      (void)ignored;
    }
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
    if (wakeFd_ >= 0) ::close(wakeFd_);
    if (why_.empty()) ::unlink(path_.c_str());
  }
  DynologStandIn(const DynologStandIn&) = delete;
  DynologStandIn& operator=(const DynologStandIn&) = delete;

  // "" when it serves; else why not.
  const std::string& why() const { return why_; }
  const std::string& path() const { return path_; }

  // Handed over, oldest first, one per poll that wants activities.
  void queueConfig(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    configs_.push_back(text);
  }
  // Sent, as it is, in answer to the next poll whatever its type, instead of the reply.
  void queueRawReply(const std::string& datagram) {
    std::lock_guard<std::mutex> lock(mutex_);
    rawReplies_.push_back(datagram);
  }
  // Sends `datagram` from the daemon's socket to the socket file `to`; false when it could
  // not be sent.
  bool sendTo(const std::string& to, const std::string& datagram) const {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (to.size() + 1 > sizeof(address.sun_path)) return false;
    std::memcpy(address.sun_path, to.c_str(), to.size() + 1);
    return ::sendto(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT,
                    reinterpret_cast<const sockaddr*>(&address), sizeof(address)) >= 0;
  }

  // Waits until `count` polls have arrived in all; false when the time ran out first.
  bool waitForPolls(std::size_t count,
                    std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return arrived_.wait_for(lock, timeout, [&] { return polls_.size() >= count; });
  }

  std::vector<ReceivedPoll> polls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return polls_;
  }
  std::size_t pollCount() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return polls_.size();
  }
  std::size_t configsHanded() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return configsHanded_;
  }
  std::size_t configsQueued() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return configs_.size();
  }
  std::size_t malformed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return malformed_;
  }

  // The daemon's datagram: {size_t size; char type[32];} then the payload, in this
  // machine's byte order (as the daemon writes it).
  static std::string message(const std::string& type, const std::string& payload) {
    char header[40] = {};
    const uint64_t size = payload.size();
    std::memcpy(header, &size, sizeof(size));
    std::memcpy(header + 8, type.data(), std::min<std::size_t>(type.size(), 31));
    return std::string(header, sizeof(header)) + payload;
  }

 private:
  static constexpr int32_t kActivitiesBit = 2;

  void serve() {
    std::vector<char> buffer(1 << 16);
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (quit_) return;
      }
      pollfd fds[2] = {{fd_, POLLIN, 0}, {wakeFd_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) continue;
      if (fds[1].revents & POLLIN) continue;  // quit_ is set: checked above
      sockaddr_un from{};
      socklen_t fromLength = sizeof(from);
      const ssize_t got = ::recvfrom(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT,
                                     reinterpret_cast<sockaddr*>(&from), &fromLength);
      if (got < 0) continue;
      handle(std::string(buffer.data(), static_cast<std::size_t>(got)), from, fromLength);
    }
  }

  void handle(const std::string& datagram, const sockaddr_un& from, socklen_t fromLength) {
    ReceivedPoll poll;
    uint64_t size = 0;
    bool valid = datagram.size() >= 40;
    if (valid) {
      std::memcpy(&size, datagram.data(), sizeof(size));
      valid = size == datagram.size() - 40 && std::strncmp(datagram.data() + 8, "req", 32) == 0;
    }
    if (valid) {
      poll.payload = datagram.substr(40);
      valid = poll.payload.size() >= 16;
    }
    if (valid) {
      std::memcpy(&poll.type, poll.payload.data(), 4);
      std::memcpy(&poll.count, poll.payload.data() + 4, 4);
      std::memcpy(&poll.jobId, poll.payload.data() + 8, 8);
      valid = poll.count >= 0 && poll.payload.size() == 16 + 4 * std::size_t(poll.count);
    }
    std::unique_lock<std::mutex> lock(mutex_);
    if (!valid) {
      ++malformed_;
      return;
    }
    poll.pids.resize(static_cast<std::size_t>(poll.count));
    if (poll.count > 0)
      std::memcpy(poll.pids.data(), poll.payload.data() + 16, 4 * poll.pids.size());
    const auto pathOffset = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path));
    if (fromLength > pathOffset) {
      poll.sender.assign(from.sun_path, strnlen(from.sun_path, fromLength - pathOffset));
    }
    std::string reply;
    if (!rawReplies_.empty()) {
      reply = rawReplies_.front();
      rawReplies_.pop_front();
    } else if (poll.count > 0) {
      std::string config;
      if ((poll.type & kActivitiesBit) != 0 && !configs_.empty()) {
        config = configs_.front();
        configs_.pop_front();
        ++configsHanded_;
      }
      reply = message("req", config);
    }
    // Answered before the poll is recorded, so that a test that saw it arrive may count on
    // its answer being in the client's queue (a non-blocking send: fine under the lock).
    if (poll.count > 0 || !reply.empty()) {
      ::sendto(fd_, reply.data(), reply.size(), MSG_DONTWAIT,
               reinterpret_cast<const sockaddr*>(&from), fromLength);
    }
    polls_.push_back(std::move(poll));
    lock.unlock();
    arrived_.notify_all();
  }

  std::string path_;
  std::string why_;
  int fd_ = -1;
  int wakeFd_ = -1;
  std::thread thread_;

  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  bool quit_ = false;
  std::deque<std::string> configs_;
  std::deque<std::string> rawReplies_;
  std::vector<ReceivedPoll> polls_;
  std::size_t configsHanded_ = 0;
  std::size_t malformed_ = 0;
};

}  // namespace kinetrace::testing
