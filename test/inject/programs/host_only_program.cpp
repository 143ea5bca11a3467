// A program that uses no CUDA at all, for `kinetrace run` end-to-end tests:
//
//   host_only_program exit N        exits with status N
//   host_only_program echo          copies stdin to stdout, then exits 0
//   host_only_program signal N      raises signal N
//   host_only_program env NAME      prints the variable's value
//   host_only_program wait DIR      waits for SIGTERM, SIGHUP, SIGINT or SIGQUIT; once its
//                                   handlers are in place writes its pid to DIR/ready; on a
//                                   signal N creates DIR/got-N, then dies of the signal

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// DIR/got-N for each signal, made before any signal can come: the handler only opens it.
char gMarkers[NSIG][512];

void markAndDie(int signal) {
  int fd = ::open(gMarkers[signal], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
  ::signal(signal, SIG_DFL);
  ::raise(signal);  // delivered when the handler returns: the process dies of it
}

int waitForSignals(const std::string& dir) {
  rlimit noCore{0, 0};
  setrlimit(RLIMIT_CORE, &noCore);  // SIGQUIT's default action would dump core
  // Blocked until sigsuspend() below waits for them: a signal that comes between "ready"
  // and the wait stays pending instead of being lost (ThreadSanitizer's runtime defers a
  // signal that lands outside a blocking call, and pause() would then wait forever).
  sigset_t awaited, unblocked;
  sigemptyset(&awaited);
  for (int signal : {SIGTERM, SIGHUP, SIGINT, SIGQUIT}) sigaddset(&awaited, signal);
  sigprocmask(SIG_BLOCK, &awaited, &unblocked);
  for (int signal : {SIGTERM, SIGHUP, SIGINT, SIGQUIT}) {
    std::snprintf(gMarkers[signal], sizeof gMarkers[signal], "%s/got-%d", dir.c_str(), signal);
    struct sigaction action = {};
    action.sa_handler = &markAndDie;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, nullptr);
  }
  // Written whole, then renamed: a reader never sees a partial pid.
  const std::string ready = dir + "/ready", partial = ready + ".partial";
  if (FILE* file = std::fopen(partial.c_str(), "w")) {
    std::fprintf(file, "%d\n", static_cast<int>(::getpid()));
    std::fclose(file);
  }
  std::rename(partial.c_str(), ready.c_str());
  sigdelset(&unblocked, SIGTERM);
  sigdelset(&unblocked, SIGHUP);
  sigdelset(&unblocked, SIGINT);
  sigdelset(&unblocked, SIGQUIT);
  while (true) ::sigsuspend(&unblocked);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 0;
  if (std::strcmp(argv[1], "exit") == 0 && argc > 2) return std::atoi(argv[2]);
  if (std::strcmp(argv[1], "echo") == 0) {
    int c;
    while ((c = std::getchar()) != EOF) std::putchar(c);
    return 0;
  }
  if (std::strcmp(argv[1], "signal") == 0 && argc > 2) {
    raise(std::atoi(argv[2]));
    return 99;
  }
  if (std::strcmp(argv[1], "env") == 0 && argc > 2) {
    const char* value = std::getenv(argv[2]);
    std::printf("%s\n", value != nullptr ? value : "(unset)");
    return 0;
  }
  if (std::strcmp(argv[1], "wait") == 0 && argc > 2) return waitForSignals(argv[2]);
  return 0;
}
