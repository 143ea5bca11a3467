// Host-only kinetrace example: named threads, nested ranges, instants and counters.
//
//   ./host_threads [trace.json]
//   KINETRACE_LOG_LEVEL=info ./host_threads /tmp/host.json
//
// Open the trace in https://ui.perfetto.dev or chrome://tracing. No GPU is needed: without
// one the profiler says so once and records host activity only.

#include <kinetrace/kinetrace.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using namespace kinetrace::literals;

namespace {

constexpr int kTrainers = 3;
constexpr int kSteps = 5;
constexpr int kLayers = 4;

// Stands in for real work: spins so the ranges have visible, deterministic widths.
void busyFor(std::chrono::microseconds duration) {
  const auto until = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < until) {
  }
}

void trainer(int index) {
  kinetrace::setThreadName("trainer " + std::to_string(index));
  double loss = 2.0 + index;
  for (int step = 0; step < kSteps; ++step) {
    // "ProfilerStep#N" is the name HTA and TensorBoard look for to find steps.
    kinetrace::Range stepRange("ProfilerStep#" + std::to_string(step));
    {
      kinetrace::Range forward("forward"_kt);  // a marked literal: stored by address
      for (int layer = 0; layer < kLayers; ++layer) {
        kinetrace::Range layerRange("linear_" + std::to_string(layer));  // dynamic: copied
        busyFor(std::chrono::microseconds(150));
      }
    }
    {
      kinetrace::Range backward("backward");
      for (int layer = kLayers - 1; layer >= 0; --layer) {
        kinetrace::Range layerRange("linear_" + std::to_string(layer) + "_grad");
        busyFor(std::chrono::microseconds(250));
      }
    }
    {
      kinetrace::Range optimizer("optimizer");
      busyFor(std::chrono::microseconds(100));
    }
    loss *= 0.8;
    kinetrace::counter("loss", loss);
  }
  kinetrace::instant("trainer finished");
}

// Feeds the trainers: its queue depth shows as a counter track next to their steps.
void dataLoader(const std::atomic<bool>& stop) {
  kinetrace::setThreadName("data loader");
  int queueDepth = 0;
  for (int batch = 0; !stop.load(std::memory_order_relaxed); ++batch) {
    {
      kinetrace::Range load("load batch " + std::to_string(batch));
      busyFor(std::chrono::microseconds(300));
    }
    queueDepth = (queueDepth + 3) % 8;
    kinetrace::counter("queue depth", queueDepth);
    if (batch % 10 == 0) kinetrace::instant("epoch shard boundary");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string output = argc > 1 ? argv[1] : "kinetrace_host_example.json";
  try {
    kinetrace::Profiler profiler(kinetrace::Config::fromEnvironment());
    profiler.addMetadata("example", "host_threads");
    // The trace is written while it is recorded: memory stays within the configured cap.
    profiler.start(output);
    // Without a GPU (or with CUPTI busy) this says why; host activity is recorded anyway.
    std::printf("GPU: %s\n", profiler.gpuStatus().c_str());
    kinetrace::setThreadName("main");
    {
      kinetrace::Range run("run");
      std::atomic<bool> stopLoader{false};
      std::thread loader(dataLoader, std::cref(stopLoader));
      std::vector<std::thread> trainers;
      for (int i = 0; i < kTrainers; ++i) trainers.emplace_back(trainer, i);
      for (auto& t : trainers) t.join();
      stopLoader = true;
      loader.join();
    }
    kinetrace::Trace trace = profiler.stop();
    if (!trace.saveError().empty()) {
      std::fprintf(stderr, "kinetrace: the trace could not be written: %s\n", trace.saveError().c_str());
      return 1;
    }

    const kinetrace::TraceStats stats = trace.stats();
    std::printf("trace written to %s\n", output.c_str());
    std::printf("ranges=%llu instants=%llu counter_samples=%llu dropped_host_events=%llu "
                "unfinished_ranges=%llu\n",
                static_cast<unsigned long long>(stats.hostRanges),
                static_cast<unsigned long long>(stats.hostInstants),
                static_cast<unsigned long long>(stats.counterSamples),
                static_cast<unsigned long long>(stats.droppedHostEvents),
                static_cast<unsigned long long>(stats.unfinishedRanges));
    // What to run next: the kinetrace command built beside this example reads the trace back
    // (why the GPU was idle; on a machine without one, the host's view).
    const std::filesystem::path built =
        std::filesystem::path(argv[0]).parent_path().parent_path() / "bin" / "kinetrace";
    std::error_code ignored;
    const std::string command =
        std::filesystem::is_regular_file(built, ignored) ? built.string() : "kinetrace";
    std::printf("next: %s analyze %s\n", command.c_str(), output.c_str());
  } catch (const kinetrace::Error& error) {
    std::fprintf(stderr, "kinetrace: %s\n", error.what());
    return 1;
  }
  return 0;
}
