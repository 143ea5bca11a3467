// Cost of host recording on the application's thread.
#include <benchmark/benchmark.h>

#include <string>

#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "model/clock.h"
#include "session/seam.h"

namespace {

using namespace kinetrace::literals;

kinetrace::Config hostOnly() {
  kinetrace::Config config;
  config.activities = kinetrace::ActivitySet::parse("host");
  config.memoryMb = 4096;  // the benchmark measures recording, not dropping
  config.logLevel = kinetrace::LogLevel::Error;
  return config;
}

// Recording sessions are restarted every so often so the buffers stay inside the cap; the
// restart (collecting millions of events) is excluded from the timing.
template <typename Body>
void recordInSessions(benchmark::State& state, Body body) {
  kinetrace::Profiler profiler(hostOnly());
  profiler.start();
  int64_t sinceRestart = 0;
  for (auto _ : state) {
    body();
    if (++sinceRestart == 4'000'000) {
      state.PauseTiming();
      profiler.stop();
      profiler.start();
      sinceRestart = 0;
      state.ResumeTiming();
    }
  }
  profiler.stop();  // after the timed loop
  state.SetItemsProcessed(state.iterations());
}

// A literal marked with _kt: stored by address.
void BM_RangeLiteral(benchmark::State& state) {
  recordInSessions(state, [] { kinetrace::Range range("step"_kt); });
}
BENCHMARK(BM_RangeLiteral);

// An unmarked literal: copied, as any other name.
void BM_RangeUnmarkedLiteral(benchmark::State& state) {
  recordInSessions(state, [] { kinetrace::Range range("step"); });
}
BENCHMARK(BM_RangeUnmarkedLiteral);

void BM_RangeCopiedName(benchmark::State& state) {
  const std::string name = "ProfilerStep#12";
  recordInSessions(state, [&] { kinetrace::Range range(name); });
}
BENCHMARK(BM_RangeCopiedName);

void BM_BeginEndLiteral(benchmark::State& state) {
  recordInSessions(state, [] {
    kinetrace::beginRange("step"_kt);
    kinetrace::endRange();
  });
}
BENCHMARK(BM_BeginEndLiteral);

// A range with what an NCCL call's NVTX payload says (decoded: communicator, size, reduction),
// as the CUDA injection records "NCCL: ncclAllReduce".
void BM_RangeWithNcclArgs(benchmark::State& state) {
  const kinetrace::internal::EventArg args[] = {
      kinetrace::internal::EventArg::unsignedValue("NCCL communicator ID", 0xb07a5c1e00000001ull),
      kinetrace::internal::EventArg::unsignedValue("Message size [bytes]", 4u << 20),
      kinetrace::internal::EventArg::textValue("Reduction operation", "Sum")};
  recordInSessions(state, [&] {
    kinetrace::internal::beginRangeWithArgs("NCCL: ncclAllReduce", args, 3);
    kinetrace::endRange();
  });
}
BENCHMARK(BM_RangeWithNcclArgs);

void BM_Counter(benchmark::State& state) {
  recordInSessions(state, [] { kinetrace::counter("loss"_kt, 0.5); });
}
BENCHMARK(BM_Counter);

// Tracing off: what every instrumented call costs when no session records.
void BM_RangeNotRecording(benchmark::State& state) {
  for (auto _ : state) {
    kinetrace::Range range("step"_kt);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RangeNotRecording);

void BM_ClockTicks(benchmark::State& state) {
  kinetrace::detail::Clock::instance();
  for (auto _ : state) benchmark::DoNotOptimize(kinetrace::detail::Clock::ticks());
}
BENCHMARK(BM_ClockTicks);

void BM_RangeFourThreads(benchmark::State& state) {
  // Each thread has its own buffer: the per-range cost should not grow with threads.
  static kinetrace::Profiler* profiler = nullptr;
  if (state.thread_index() == 0) {
    profiler = new kinetrace::Profiler(hostOnly());
    profiler->start();
  }
  for (auto _ : state) {
    kinetrace::Range range("step"_kt);
  }
  if (state.thread_index() == 0) {
    profiler->stop();
    delete profiler;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RangeFourThreads)->Threads(4)->Iterations(2'000'000)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
