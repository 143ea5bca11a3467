#include "inject/process_hooks.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace kinetrace::inject {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM};

std::atomic<int> gWakeFd{-1};
std::atomic<bool> gSignalSeen{false};
std::atomic<bool> gInstalled[sizeof kSignals / sizeof kSignals[0]];

void setDefaultAction(int signal) noexcept {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(signal, &action, nullptr);
}

// Only async-signal-safe calls: atomics, write, sigaction, raise.
void onTerminationSignal(int signal) {
  const int savedErrno = errno;
  const int fd = gWakeFd.load();
  bool handedOff = false;
  if (!gSignalSeen.exchange(true) && fd >= 0) {
    unsigned char byte = static_cast<unsigned char>(signal);
    handedOff = ::write(fd, &byte, 1) == 1;
  }
  if (!handedOff) {
    // A second signal, or nobody to hand it to: the default action, now. The signal is
    // blocked while its handler runs, so raise() delivers it as soon as this returns.
    setDefaultAction(signal);
    raise(signal);
  }
  errno = savedErrno;
}

}  // namespace

void installTerminationHandlers(int wakeFd) noexcept {
  gWakeFd.store(wakeFd);
  for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    struct sigaction current {};
    if (sigaction(kSignals[i], nullptr, &current) != 0) continue;
    const bool isDefault = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
    if (!isDefault) continue;  // the program's own handler, or SIG_IGN: leave it
    struct sigaction action {};
    action.sa_handler = &onTerminationSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(kSignals[i], &action, nullptr) == 0) gInstalled[i].store(true);
  }
}

void restoreTerminationHandlersInChild() noexcept {
  gWakeFd.store(-1);
  for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    if (!gInstalled[i].load()) continue;
    struct sigaction current {};
    if (sigaction(kSignals[i], nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
        current.sa_handler == &onTerminationSignal) {
      setDefaultAction(kSignals[i]);
    }
    gInstalled[i].store(false);
  }
}

void reraiseWithDefaultAction(int signal) noexcept {
  setDefaultAction(signal);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  ::kill(::getpid(), signal);
  // A process-directed signal reaches some thread that does not block it; give it time.
  for (int i = 0; i < 50; ++i) ::usleep(100000);
  ::_exit(128 + signal);
}

}  // namespace kinetrace::inject
