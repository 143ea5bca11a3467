#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
//   record steps=N [output=PATH] [start_step=S]         ->  ok PATH<TAB>from step S | refused WHY
//   status                                              ->  ok step=K state=STATE
//
// start_at_ns (CLOCK_REALTIME) lets every process of a job start together; start_step does
// the same by the program's own steps (step marks, Config::stepMarks), which the processes of
// a job count alike. `status` tells how many steps the process has marked so far. The listener also
// checks the peer's uid (SO_PEERCRED): only the process's owner may trigger it. Standard
// library and POSIX only.

namespace kinetrace::inject {

struct TriggerRequest {
  enum class Verb { Record, Status };
  Verb verb = Verb::Record;
  // Record: exactly one of the two.
  int64_t durationNs = 0;
  int64_t steps = 0;
  std::string output;      // a trace path or a directory; "" = the run's output directory
  int64_t startAtNs = 0;   // CLOCK_REALTIME, with a duration; 0 = now
  int64_t startStep = -1;  // with steps: the first step recorded; -1 = the next one
};

std::string formatRequest(const TriggerRequest& request);
// nullopt and `why` for a line that is not a valid request.
std::optional<TriggerRequest> parseRequest(const std::string& line, std::string* why);

// The control directory for this user, created (0700) when missing. Throws std::runtime_error
// naming the directory when it cannot be used safely (another owner, open to others).
std::string controlDirectory();
std::string socketName(const std::string& runId, int64_t pid);

// The listening socket of this process; -1 and `why` when it could not be made.
int listenForTriggers(const std::string& runId, int64_t pid, std::string* path, std::string* why);
// Accepts one connection on `listenFd`, reads its request line, and returns the connected
// socket (-1 when nothing usable came); `line` gets the request, `peerAllowed` whether the
// peer is this process's owner.
int acceptRequest(int listenFd, std::string* line, bool* peerAllowed);
void answer(int fd, const std::string& line);

// Sockets in the control directory: of process `pid`, or of every process of run `job`.
std::vector<std::string> socketsOfPid(int64_t pid);
std::vector<std::string> socketsOfJob(const std::string& job);
// Sends a request to one socket and returns its answer; throws std::runtime_error naming the
// socket when it cannot be reached.
std::string sendRequest(const std::string& socketPath, const TriggerRequest& request);

}  // namespace kinetrace::inject
