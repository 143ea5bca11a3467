// A program that uses libkineto's API as PyTorch does, for tests of on-demand traces through
// the real dynolog daemon: it loads libkineto_api.so (linked), registers a framework client
// whose start()/stop() record and hand over "ops" as PyTorch's does, calls libkineto_init
// (which, with KINETO_USE_DAEMON set, starts polling the daemon) and then steps every
// STEP_MS milliseconds, calling step() as PyTorch's optimizer hook does, until its stdin
// closes (the test's way to stop it).
//
//   kineto_framework_app [STEP_MS]
//
// Prints "ready PID" once polling has begun.

#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "libkineto.h"

namespace {

int64_t nowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Records one op per step while started; hands them over at stop(), as PyTorch's
// on-demand client does through transferCpuTrace().
class Framework : public libkineto::ClientInterface {
 public:
  void init() override {}
  void prepare(bool, bool, bool, bool, bool) override {}
  void start() override {
    std::lock_guard<std::mutex> lock(mutex_);
    recording_ = true;
    ops_.clear();
  }
  void stop() override {
    std::vector<std::pair<int64_t, int64_t>> ops;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      recording_ = false;
      ops.swap(ops_);
    }
    auto buffer = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer->span.startTime = ops.empty() ? nowNs() : ops.front().first;
    buffer->gpuOpCount = -1;
    int32_t id = 1;
    for (const auto& [start, end] : ops) {
      buffer->emplace_activity(buffer->span, libkineto::ActivityType::CPU_OP, "app::step_op");
      libkineto::GenericTraceActivity& op =
          libkineto::CpuTraceBuffer::toRef(buffer->activities.back());
      op.device = libkineto::processId();
      op.resource = libkineto::systemThreadId();
      op.id = id++;
      op.startTime = start;
      op.endTime = end;
    }
    libkineto::api().activityProfiler().transferCpuTrace(std::move(buffer));
  }
  void start_memory_profile() override {}
  void stop_memory_profile() override {}
  void export_memory_profile(const std::string&) override {}

  void op(int64_t start, int64_t end) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (recording_) ops_.emplace_back(start, end);
  }

 private:
  std::mutex mutex_;
  bool recording_ = false;
  std::vector<std::pair<int64_t, int64_t>> ops_;
};

bool stdinClosed() {
  pollfd in{0, POLLIN, 0};
  if (::poll(&in, 1, 0) <= 0) return false;
  char byte;
  return ::read(0, &byte, 1) <= 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long stepMs = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 10;
  static Framework framework;
  libkineto::api().registerClient(&framework);
  libkineto_init(/*cpuOnly=*/true, /*logOnError=*/true);
  std::printf("ready %d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  while (!stdinClosed()) {
    const int64_t start = nowNs();
    timespec pause{0, stepMs * 1000000L};
    nanosleep(&pause, nullptr);
    framework.op(start, nowNs());
    libkineto::api().activityProfiler().step();
  }
  return 0;
}
