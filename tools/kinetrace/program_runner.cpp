#include "program_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli_options.h"

namespace kinetrace::cli {
namespace {

constexpr int kPassedOn[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};

// The signals the wait below takes: those it may pass on, and SIGCHLD for the program's end.
sigset_t awaitedSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : kPassedOn) sigaddset(&set, signal);
  sigaddset(&set, SIGCHLD);
  return set;
}

// The terminal sends SIGINT and SIGQUIT to the whole foreground process group (si_code
// SI_KERNEL), so the program has its own copy; passing kinetrace's on would deliver it twice
// (a second KeyboardInterrupt while Python unwinds from the first).
bool isForTheProgram(const siginfo_t& info) {
  if (info.si_signo == SIGTERM || info.si_signo == SIGHUP) return true;
  return info.si_code != SI_KERNEL;
}

// Waits for the child to end, passing signals on meanwhile. The awaited signals are blocked
// and taken here with sigwaitinfo, so nothing runs in a signal handler.
int waitForProgram(pid_t child, const sigset_t& awaited) {
  while (true) {
    int status = 0;
    const pid_t ended = ::waitpid(child, &status, WNOHANG);
    if (ended == child) return status;
    // ECHILD: reaped elsewhere (SIGCHLD is not ignored here, so not by the kernel); its
    // status is lost.
    if (ended < 0 && errno != EINTR) return 0;
    siginfo_t info{};
    if (::sigwaitinfo(&awaited, &info) < 0 || info.si_signo == SIGCHLD) continue;
    if (!isForTheProgram(info)) continue;
    std::fprintf(stderr, "\nkinetrace: signal %s received: passed on to the program (pid %d)\n",
                 signalName(info.si_signo).c_str(), static_cast<int>(child));
    ::kill(child, info.si_signo);
  }
}

}  // namespace

std::string signalName(int signal) {
  const char* description = strsignal(signal);
  return std::to_string(signal) +
         (description != nullptr ? std::string(" (") + description + ")" : "");
}

int runProgram(const std::string& path, const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  int execFailed[2];
  if (::pipe2(execFailed, O_CLOEXEC) != 0) {
    throw UsageError(
        std::string("kinetrace run: cannot start the program: pipe: ") + std::strerror(errno), 126);
  }
  // Blocked before the fork, so a signal that comes at any moment from here on waits for
  // waitForProgram; the child unblocks them before exec. SIGCHLD must not be ignored while
  // waiting (an ignored SIGCHLD is never sent); the child gets back what kinetrace had.
  const sigset_t awaited = awaitedSignals();
  sigset_t oldMask;
  pthread_sigmask(SIG_BLOCK, &awaited, &oldMask);
  struct sigaction defaultAction = {};
  struct sigaction oldChild = {};
  defaultAction.sa_handler = SIG_DFL;
  sigemptyset(&defaultAction.sa_mask);
  sigaction(SIGCHLD, &defaultAction, &oldChild);
  auto restore = [&] {
    sigaction(SIGCHLD, &oldChild, nullptr);
    pthread_sigmask(SIG_SETMASK, &oldMask, nullptr);
  };

  pid_t child = ::fork();
  if (child == 0) {
    restore();
    ::close(execFailed[0]);
    ::execv(path.c_str(), args.data());
    int error = errno;
    ssize_t ignored = ::write(execFailed[1], &error, sizeof error);
    (void)ignored;
    ::_exit(127);
  }
  ::close(execFailed[1]);
  if (child < 0) {
    int error = errno;
    restore();
    ::close(execFailed[0]);
    throw UsageError(
        std::string("kinetrace run: cannot start the program: fork: ") + std::strerror(error), 126);
  }
  // The pipe closes on a successful exec; otherwise it carries exec's errno.
  int execError = 0;
  ssize_t got;
  do {
    got = ::read(execFailed[0], &execError, sizeof execError);
  } while (got < 0 && errno == EINTR);
  ::close(execFailed[0]);

  const int status = waitForProgram(child, awaited);
  // What is still pending was for the program, which has ended: a terminal's Ctrl-C whose
  // copy for kinetrace came after the program's end was seen must not end kinetrace before
  // it reports.
  const timespec now{0, 0};
  while (::sigtimedwait(&awaited, nullptr, &now) > 0) {
  }
  restore();
  if (got == static_cast<ssize_t>(sizeof execError)) {
    throw UsageError("kinetrace run: cannot run '" + path + "': " + std::strerror(execError),
                     execError == ENOENT ? 127 : 126);
  }
  return status;
}

}  // namespace kinetrace::cli
