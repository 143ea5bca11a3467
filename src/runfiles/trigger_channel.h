#pragma once

#include <poll.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ondemand/trigger_request.h"
#include "support/result.h"

// The channel `kinetrace trigger` uses to ask a traced process to record: one Unix-domain
// socket per process, in a directory only its owner can enter.
//
//   directory  $KINETRACE_CONTROL_DIR, else /tmp/kinetrace-<uid>; mode 0700, owned by the
//              user (a directory that is not is refused, never used)
//   socket     <run id>.<pid>.sock, or <pid>.sock without a run id (--job finds a run's
//              processes by the prefix)
//
// A request is one line, answered with one line:
//
//   record duration_ns=N [output=PATH] [start_at_ns=T]  ->  ok PATH | refused WHY
//   record steps=N [output=PATH] [start_step=S] [round_up=R]
//                                                       ->  ok PATH<TAB>from step S | refused WHY
//   status                                              ->  ok step=K state=STATE
//
// A path (output=) is written percent-encoded ("%20" for a space, "%25" for '%'), so any path
// is one word. start_at_ns (CLOCK_REALTIME) lets every process of a job start together; start_step
// does the same by the program's own steps (step marks, Config::stepMarks), which the processes of
// a job count alike; round_up=R starts at the next multiple of R from there (dynolog's
// iteration round-up). `status` tells how many steps the process has marked so far. The listener
// also checks the peer's uid (SO_PEERCRED): only the process's owner may trigger it. Standard
// library and POSIX only.

namespace kinetrace::runfiles {

using ondemand::TriggerRequest;

std::string formatRequest(const TriggerRequest& request);
// The request, or why the line is not a valid one.
detail::Result<TriggerRequest> parseRequest(const std::string& line);

// The control directory for this user, created (0700) when missing. Throws std::runtime_error
// naming the directory when it cannot be used safely (another owner, open to others).
std::string controlDirectory();
std::string socketName(const std::string& runId, int64_t pid);

// The listening socket of this process (non-blocking) and its path, or why it could not be
// made. A socket of the same name whose process has died is replaced.
struct TriggerListener {
  int fd = -1;
  std::string path;
};
detail::Result<TriggerListener> listenForTriggers(const std::string& runId, int64_t pid);

// The connections of a listening socket that have not yet sent their request line, read
// without ever blocking: the control thread serves them between its other work (timers,
// signals), so a slow or silent client never holds it.
//
// Each connection has one deadline for its whole request, counted from when it was accepted
// (however slowly its bytes trickle in); at most `maxConnections` wait at a time, and when
// another arrives the one that has waited longest is dropped. A request that is complete is
// served at once, so idle connections cannot starve it. Dropped connections are answered
// "refused" with the reason.
class RequestReader {
 public:
  struct Limits {
    std::size_t maxConnections = 16;
    int64_t requestTimeoutNs = 2'000'000'000;
  };
  struct Request {
    int fd = -1;  // the connection: answer() closes it
    std::string line;
    bool peerAllowed = false;  // the peer is this process's owner
  };

  explicit RequestReader(int listenFd, Limits limits);
  explicit RequestReader(int listenFd) : RequestReader(listenFd, Limits{}) {}
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // The listening socket and every waiting connection, to poll for input.
  void addPollFds(std::vector<pollfd>* fds) const;
  // Accepts what is waiting, reads what arrived, drops connections past their deadline, and
  // returns the requests now complete. `nowNs`: a monotonic clock, the one of nextDeadlineNs.
  std::vector<Request> service(int64_t nowNs);
  // The earliest deadline of a waiting connection; INT64_MAX when none waits.
  int64_t nextDeadlineNs() const;
  std::size_t waiting() const { return connections_.size(); }
  // Drops every waiting connection, unanswered (a forked child: they are the parent's).
  void abandon();

 private:
  struct Connection {
    int fd;
    std::string buffer;
    int64_t deadlineNs;
    bool peerAllowed;
  };
  // Reads what `connection` has; true when it is done with (complete, or dropped).
  bool read(Connection& connection, std::vector<Request>* complete);

  int listenFd_;
  Limits limits_;
  std::vector<Connection> connections_;  // oldest first
};

// Sends the answer line and closes `fd`; false when the client was no longer there to
// receive it (the caller may then undo what it granted).
bool answer(int fd, const std::string& line);

// Sockets in the control directory: of process `pid`, or of every process of run `job`.
std::vector<std::string> socketsOfPid(int64_t pid);
std::vector<std::string> socketsOfJob(const std::string& job);
// Sends a request to one socket and returns its answer, waiting at most `timeoutMs` for the
// whole of it; throws std::runtime_error naming the socket when it cannot be reached or did
// not answer (a process whose answer cannot be delivered undoes the request).
std::string sendRequest(const std::string& socketPath, const TriggerRequest& request,
                        int timeoutMs = 10000);
// Removes the sockets of the control directory whose process has died (killed before it
// could remove its own); returns how many.
int removeStaleSockets();
// The pid a socket's name carries ("<run id>.<pid>.sock" or "<pid>.sock"); -1 when none.
int64_t pidOfSocket(const std::string& path);

}  // namespace kinetrace::runfiles
