#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ondemand/dynolog_ipc.h"

// A traced process's side of dynolog (ondemand/dynolog_ipc.h): a thread that polls the daemon
// at an interval and hands each configuration it sends over to the front-end, so that
// `dyno gputrace` reaches kinetrace as it reaches libkineto.
//
//   DynologClient client(DynologClientOptions::fromEnvironment(),
//                        [&] { return recording(); },                       // busy?
//                        [&](const std::string& config) { schedule(config); });
//
// It never holds the program up: the thread is its own, its socket never blocks, and a
// missing daemon costs one debug line and a datagram per interval (the daemon may start
// later). Nothing it does throws into the caller.

namespace kinetrace::ondemand {

struct DynologClientOptions {
  // Seconds between polls. Not positive or not finite: 5.
  double intervalSeconds = 5;
  std::string socketDir;  // KINETO_IPC_SOCKET_DIR; "" = abstract names
  // The process's identity: jobId and pids (the poll's type is filled per poll). Empty pids:
  // this process's pid and ancestors.
  Poll identity;
  // Whether the process answers the daemon yet, asked when a poll is due; while false no
  // poll is sent, so the daemon does not know the process (and a request's process limit
  // counts only processes that answer). Once true, it is not asked again. Empty: at once.
  // libkineto polls from the framework's import on; kinetrace waits for GPU use.
  std::function<bool()> answers;

  // From the environment, as libkineto reads it: ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS
  // (seconds, a decimal such as 0.05 allowed; not a positive number: a warning, and 5),
  // KINETO_IPC_SOCKET_DIR, SLURM_JOB_ID, and this process's pid and ancestors.
  static DynologClientOptions fromEnvironment();
};

class DynologClient {
 public:
  // Makes and binds the client's socket (so the daemon's replies have somewhere to go
  // before the first poll) and starts the thread "kinetrace-dyno", which polls at once and
  // then every interval. `busy` is asked before each poll (true: a kPollBusy poll, which
  // keeps the process registered without taking a configuration); `onConfig` gets each
  // non-empty configuration text the daemon hands over, once. Both are called on the
  // client's thread only, never both at once; what they throw is logged and dropped. They
  // may not call stop() or destroy the client.
  //
  // A client that cannot work (no socket, a socket directory too long) says why once, as a
  // warning, and does nothing; one whose socket cannot be bound yet tries again each poll.
  DynologClient(DynologClientOptions options, std::function<bool()> busy,
                std::function<void(const std::string& config)> onConfig);
  ~DynologClient();  // stop()
  DynologClient(const DynologClient&) = delete;
  DynologClient& operator=(const DynologClient&) = delete;

  // Wakes the thread at once and joins it (at most the callback under way is waited for),
  // then closes the socket and removes its file (KINETO_IPC_SOCKET_DIR). Idempotent; any
  // thread but the client's own.
  void stop();
  // Wakes the thread to poll now, and restarts the interval from there. Never blocks; after
  // stop() it does nothing.
  void pollNow();
  // In a child made by fork(), where the thread does not exist: closes the child's copies
  // of the descriptors without joining and without removing the socket file, which is the
  // parent's. The client then does nothing, and its destructor neither.
  void abandonInForkedChild() noexcept;

  struct Counts {
    int64_t polls;        // polls the daemon's socket took
    int64_t replies;      // well-formed replies from the daemon, empty ones included
    int64_t configs;      // replies with a configuration, counted once onConfig returned
    int64_t unreachable;  // polls that found no daemon (ECONNREFUSED, ENOENT)
    int64_t malformed;    // datagrams from the daemon that were not a "req" message
    int64_t foreign;      // datagrams from any other sender, ignored
    int64_t sendErrors;   // polls that failed otherwise (the daemon's queue full, ...)
  };
  Counts counts() const;

  // The client's socket name (kDynologClientPrefix + hex) and the directory it is in ("" for
  // an abstract name).
  const std::string& name() const { return name_; }
  const std::string& socketDir() const { return options_.socketDir; }

 private:
  enum class Reach { Unknown, Reachable, Unreachable };

  void loop();
  bool answering();
  bool bindSocket();
  void sendPoll();
  void receiveAll();
  bool fromDaemon(const sockaddr_un& from, socklen_t length) const;
  void wake();
  void closeDescriptors() noexcept;

  DynologClientOptions options_;
  std::function<bool()> busy_;
  std::function<void(const std::string&)> onConfig_;
  std::string name_;
  int64_t intervalNs_ = 0;

  sockaddr_un daemonAddress_{};
  socklen_t daemonLength_ = 0;
  sockaddr_un ownAddress_{};
  socklen_t ownLength_ = 0;
  int socketFd_ = -1;
  int wakeFd_ = -1;  // an eventfd: stop() and pollNow() wake poll() with it

  // Owned by the thread once it runs (set before it starts; read by stop() after the join).
  bool bound_ = false;
  bool bindWarned_ = false;
  bool sendErrorLogged_ = false;
  bool malformedLogged_ = false;
  Reach reach_ = Reach::Unknown;
  bool answers_ = false;  // options_.answers said yes (or there is none)
  bool waitingLogged_ = false;
  std::string receiveBuffer_;

  std::atomic<bool> stopping_{false};
  std::atomic<bool> pollRequested_{false};
  std::atomic<bool> abandoned_{false};
  std::mutex stopMutex_;
  bool stopped_ = false;  // under stopMutex_
  std::unique_ptr<std::thread> thread_;

  std::atomic<int64_t> polls_{0};
  std::atomic<int64_t> replies_{0};
  std::atomic<int64_t> configs_{0};
  std::atomic<int64_t> unreachable_{0};
  std::atomic<int64_t> malformed_{0};
  std::atomic<int64_t> foreign_{0};
  std::atomic<int64_t> sendErrors_{0};
};

}  // namespace kinetrace::ondemand
