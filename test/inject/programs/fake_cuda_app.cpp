// Stands in for a CUDA program on machines without a GPU: it does what the CUDA driver does
// with CUDA_INJECTION64_PATH (load the library, call InitializeInjection()) and then makes
// NVTX calls through the real NVTX headers, which load NVTX_INJECTION64_PATH on their own.
// Built twice: fake_cuda_app links nothing of kinetrace and nothing of CUDA; linked_cuda_app
// (FAKE_APP_LINKS_KINETRACE) also links libkinetrace.so and records through its public API,
// as a program instrumented with kinetrace does when it runs under `kinetrace run`.
//
//   fake_cuda_app [setenv NAME VALUE]... [ACTION...]
//     setenv        (before the first CUDA call) sets a variable, as a program may
//     nvtx          push/pop, start/end (one ended on another thread), marks, a domain
//     sleep MS      sleeps
//     steps N MS    a loop of N steps, each an NVTX range "step K" (K from 0) lasting MS ms
//     fork          forks a child that makes NVTX calls and exits through exit()
//     exit N        std::exit(N) from a second thread
//     sigterm       sends itself SIGTERM
//     sigint        sends itself SIGINT
//     fsize BYTES   no file it writes may grow past BYTES (RLIMIT_FSIZE, SIGXFSZ ignored,
//                   so a write fails with EFBIG): a disk that fills up, even for root
//   linked_cuda_app only (fake_cuda_app exits with 5 on these):
//     own           kinetrace::Range "app's own range" holding kinetrace::instant
//                   "app's own instant"
//     profiler      starts a kinetrace::Profiler of its own; prints "profiler: started"
//                   or "profiler: " and the error
//     maps          prints "pid P", then "mapped PATH" for each file mapped into the process
//                   whose name starts with "libkinetrace"
//     ksteps N MS   a loop of N steps marked in code: each a kinetrace::Range "kstep K"
//                   lasting MS ms, then kinetrace::step()
//   then returns 0 from main.

#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#if FAKE_APP_LINKS_KINETRACE
#include <kinetrace/kinetrace.h>
#endif

namespace {

int initializeInjectionLikeTheDriver() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr) return 0;
  void* library = dlopen(path, RTLD_NOW);
  if (library == nullptr) {
    std::fprintf(stderr, "fake_cuda_app: %s\n", dlerror());
    return 1;
  }
  auto initialize = reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection"));
  if (initialize == nullptr || initialize() != 1) {
    std::fprintf(stderr, "fake_cuda_app: InitializeInjection failed\n");
    return 1;
  }
  return 0;
}

void nvtxWork() {
  nvtxRangePushA("train_step");
  std::string layer = "layer " + std::to_string(3);
  nvtxRangePushA(layer.c_str());
  layer = "overwritten";
  nvtxRangePop();
  nvtxMarkA("checkpoint");
  nvtxRangePop();

  nvtxRangeId_t load = nvtxRangeStartA("load batch");
  nvtxRangeId_t other = nvtxRangeStartA("ended elsewhere");
  nvtxRangeEnd(load);
  std::thread([other] { nvtxRangeEnd(other); }).join();

  nvtxDomainHandle_t domain = nvtxDomainCreateA("NCCL");
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = "AllReduce";
  nvtxDomainRangePushEx(domain, &attributes);
  nvtxDomainRangePop(domain);
}

#if FAKE_APP_LINKS_KINETRACE
// The program's own instrumentation: it lands in whichever session of the process records.
void ownRanges() {
  kinetrace::Range own("app's own range");
  kinetrace::instant("app's own instant");
}

void ownProfiler() {
  try {
    kinetrace::Config config;
    config.set("activities", "host");
    kinetrace::Profiler profiler(config);
    profiler.start();
    profiler.stop();
    std::printf("profiler: started\n");
  } catch (const kinetrace::Error& error) {
    std::printf("profiler: %s\n", error.what());
  }
}

void printKinetraceMappings() {
  std::printf("pid %d\n", static_cast<int>(getpid()));
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> paths;
  for (std::string line; std::getline(maps, line);) {
    const std::size_t path = line.find('/');
    if (path == std::string::npos) continue;
    const std::string file = line.substr(path);
    if (file.compare(file.rfind('/') + 1, 12, "libkinetrace") == 0) paths.insert(file);
  }
  for (const std::string& file : paths) std::printf("mapped %s\n", file.c_str());
}
#endif

// An action only linked_cuda_app has: runs it there, else says so. Returns whether it ran.
bool codeMarkedSteps(int steps, int ms) {
#if FAKE_APP_LINKS_KINETRACE
  for (int step = 0; step < steps; ++step) {
    {
      kinetrace::Range range("kstep " + std::to_string(step));
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    kinetrace::step();
  }
  return true;
#else
  (void)steps;
  (void)ms;
  std::fprintf(stderr, "fake_cuda_app: 'ksteps' needs linked_cuda_app\n");
  return false;
#endif
}

bool linkedOnly(const std::string& action) {
#if FAKE_APP_LINKS_KINETRACE
  if (action == "own") ownRanges();
  if (action == "profiler") ownProfiler();
  if (action == "maps") printKinetraceMappings();
  return true;
#else
  std::fprintf(stderr, "fake_cuda_app: '%s' needs linked_cuda_app\n", action.c_str());
  return false;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  int first = 1;
  for (; first + 2 < argc && std::strcmp(argv[first], "setenv") == 0; first += 3) {
    setenv(argv[first + 1], argv[first + 2], 1);
  }
  if (initializeInjectionLikeTheDriver() != 0) return 3;
  for (int i = first; i < argc; ++i) {
    std::string action = argv[i];
    if (action == "nvtx") {
      nvtxWork();
    } else if (action == "steps" && i + 2 < argc) {
      const int steps = std::atoi(argv[++i]);
      const int ms = std::atoi(argv[++i]);
      for (int step = 0; step < steps; ++step) {
        nvtxRangePushA(("step " + std::to_string(step)).c_str());
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        nvtxRangePop();
      }
    } else if (action == "sleep" && i + 1 < argc) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(argv[++i])));
    } else if (action == "fork") {
      pid_t child = fork();
      if (child == 0) {
        nvtxRangePushA("in the child");
        nvtxRangePop();
        std::exit(0);
      }
      int status = 0;
      waitpid(child, &status, 0);
    } else if (action == "exit" && i + 1 < argc) {
      int code = std::atoi(argv[++i]);
      std::thread([code] { std::exit(code); }).join();
    } else if (action == "sigterm") {
      kill(getpid(), SIGTERM);
      std::this_thread::sleep_for(std::chrono::seconds(10));
      return 98;  // not reached: the signal ends the process
    } else if (action == "fsize" && i + 1 < argc) {
      signal(SIGXFSZ, SIG_IGN);
      rlimit limit{};
      limit.rlim_cur = limit.rlim_max = std::strtoull(argv[++i], nullptr, 10);
      if (setrlimit(RLIMIT_FSIZE, &limit) != 0) {
        std::perror("fake_cuda_app: setrlimit");
        return 4;
      }
    } else if (action == "sigint") {
      kill(getpid(), SIGINT);
      std::this_thread::sleep_for(std::chrono::seconds(10));
      return 98;
    } else if (action == "own" || action == "profiler" || action == "maps") {
      if (!linkedOnly(action)) return 5;
    } else if (action == "ksteps" && i + 2 < argc) {
      const int steps = std::atoi(argv[++i]);
      const int ms = std::atoi(argv[++i]);
      if (!codeMarkedSteps(steps, ms)) return 5;
    }
  }
  return 0;
}
