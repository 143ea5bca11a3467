#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "model/string_table.h"
#include "session/core.h"
#include "session/session.h"
#include "session/session_support.h"
#include "support/test_support.h"

// What the tracer holds stays within Config::memoryMb however long it records: host chunks,
// the pipeline's state and, without an output, the trace itself. Beyond the cap records are
// dropped and counted, so what was made is what was kept plus what was dropped.

namespace kinetrace {
namespace {

using testing::dataOf;
using testing::eventually;
using testing::fileContents;
using testing::hostOnly;
using testing::metadataValue;
using testing::TempDir;
using testing::unsignedOf;

constexpr int kThreads = 4;
constexpr std::size_t kMemoryMb = 2;

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

uintmax_t temporarySize(const TempDir& dir, const std::string& name) {
  for (const std::string& entry : dir.entries()) {
    if (entry.rfind(name + ".tmp.", 0) != 0) continue;
    std::error_code error;
    const uintmax_t size = std::filesystem::file_size(dir / entry, error);
    return error ? 0 : size;
  }
  return 0;
}

// Threads that record instants and counters with copied names (one event each) until told
// to stop, or `perThread` each, and count what they made.
class Recorders {
 public:
  explicit Recorders(uint64_t perThread = UINT64_MAX) {
    for (int t = 0; t < kThreads; ++t) {
      threads_.emplace_back([this, t, perThread] {
        const std::string instantName = "instant of thread " + std::to_string(t);
        const std::string counterName = "counter of thread " + std::to_string(t);
        uint64_t made = 0;
        while (made < perThread && !stop_.load(std::memory_order_relaxed)) {
          instant(instantName);
          counter(counterName, static_cast<double>(made));
          made += 2;
        }
        made_ += made;
      });
    }
  }
  // Tells the threads to stop, joins them and returns the events they made.
  uint64_t stop() {
    stop_ = true;
    return join();
  }
  // Joins the threads (that record `perThread` each) and returns the events they made.
  uint64_t join() {
    for (auto& thread : threads_) thread.join();
    threads_.clear();
    return made_.load();
  }
  ~Recorders() { stop(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> made_{0};
  std::vector<std::thread> threads_;
};

TEST(MemoryBoundTest, AStreamedSessionStaysWithinTheCapAndAccountsForEveryEvent) {
  TempDir dir;
  Config config = hostOnly();
  config.memoryMb = kMemoryMb;
  config.output = (dir / "trace.json").string();
  Profiler profiler(config);
  profiler.start();
  Recorders recorders;
  // Long enough that the file holds many times what the cap could: the pipeline drained,
  // wrote and let go while the threads recorded.
  const bool long_enough =
      eventually([&] { return temporarySize(dir, "trace.json") > (8u << 20); });
  const uint64_t made = recorders.stop();
  Trace trace = profiler.stop();
  ASSERT_TRUE(long_enough);

  const Metadata metadata = trace.metadata();
  const uint64_t peak = unsignedOf(metadataValue(metadata, "kinetrace_memory_peak_bytes"));
  const uint64_t cap = unsignedOf(metadataValue(metadata, "kinetrace_memory_cap_bytes"));
  EXPECT_EQ(cap, kMemoryMb << 20);
  EXPECT_GT(peak, 0u);
  EXPECT_LE(peak, cap) << "the tracer held more than its cap";

  const Value counts = metadataValue(metadata, "kinetrace_record_counts");
  const uint64_t recorded =
      unsignedOf(*counts.find("instants")) + unsignedOf(*counts.find("counters"));
  const uint64_t dropped =
      unsignedOf(metadataValue(metadata, "kinetrace_dropped_host_events")) +
      unsignedOf(metadataValue(metadata, "kinetrace_dropped_assembled_records"));
  EXPECT_EQ(recorded + dropped, made) << recorded << " recorded, " << dropped << " dropped";
  EXPECT_GT(recorded * sizeof(detail::HostEventRecord), cap)
      << "more was recorded than the cap could ever hold at once";

  const std::string text = fileContents(config.output);
  EXPECT_EQ(occurrences(text, "{\"ph\":\"i\"") + occurrences(text, "{\"ph\":\"C\""), recorded)
      << "the file holds what the counts say";
}

TEST(MemoryBoundTest, AnInMemoryTraceStaysWithinTheCapAndCountsWhatItDropped) {
  Config config = hostOnly();
  config.memoryMb = kMemoryMb;
  Profiler profiler(config);
  profiler.start();
  // Far more than 2 MiB of records, whether as host chunks or as assembled records.
  Recorders recorders(/*perThread=*/200000);
  const uint64_t made = recorders.join();
  Trace trace = profiler.stop();

  const TraceStats stats = trace.stats();
  EXPECT_EQ(stats.memoryCapBytes, kMemoryMb << 20);
  EXPECT_LE(stats.peakMemoryBytes, stats.memoryCapBytes);
  EXPECT_LE(dataOf(trace).records.bytes(), stats.memoryCapBytes);
  const uint64_t recorded = stats.hostInstants + stats.counterSamples;
  EXPECT_EQ(dataOf(trace).records.instants.size() + dataOf(trace).records.counters.size(), recorded)
      << "a trace without an output holds what it counts";
  EXPECT_GT(stats.droppedHostEvents + stats.droppedAssembledRecords, 0u);
  EXPECT_EQ(recorded + stats.droppedHostEvents + stats.droppedAssembledRecords, made);
}

// Ranges keep state in the pipeline until nothing more can join them: that state counts
// against the cap too, however fast ranges come.
TEST(MemoryBoundTest, RangesFromManyThreadsStreamedStayWithinTheCap) {
  TempDir dir;
  Config config = hostOnly();
  config.memoryMb = kMemoryMb;
  config.output = (dir / "trace.json").string();
  Profiler profiler(config);
  profiler.start();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> madeRanges{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::string> names;
      for (int i = 0; i < 16; ++i)
        names.push_back("range " + std::to_string(t) + "." + std::to_string(i));
      uint64_t ranges = 0;
      for (; !stop.load(std::memory_order_relaxed); ++ranges) {
        Range outer(names[ranges % 16]);
        Range inner(names[(ranges + 1) % 16]);
        // A moment for the pipeline's thread now and then: on a machine of two cores
        // under ThreadSanitizer, four threads that never yield kept it from writing the
        // 8 MB awaited below within the 30 s allowed (the ranges all dropped at the cap).
        if (ranges % 1024 == 1023) std::this_thread::yield();
      }
      madeRanges += 2 * ranges;
    });
  }
  const bool long_enough =
      eventually([&] { return temporarySize(dir, "trace.json") > (8u << 20); });
  stop = true;
  for (auto& thread : threads) thread.join();
  Trace trace = profiler.stop();
  ASSERT_TRUE(long_enough);

  const TraceStats stats = trace.stats();
  EXPECT_LE(stats.peakMemoryBytes, stats.memoryCapBytes) << "the tracer held more than its cap";
  EXPECT_GT(stats.hostRanges * 2 * sizeof(detail::HostEventRecord), stats.memoryCapBytes);
  // A range is in the trace (finished, or unfinished when its end was dropped) or lost with
  // its dropped begin; its end may be dropped either way.
  const uint64_t lost = madeRanges - stats.hostRanges;
  EXPECT_GE(stats.droppedHostEvents + stats.droppedAssembledRecords, lost + stats.unfinishedRanges);
  EXPECT_LE(stats.droppedHostEvents, 2 * lost + stats.unfinishedRanges);
}

// A thread that exits leaves its buffer to the next new thread. When the cap refused its
// events, its drops must still be counted after another thread has taken the buffer over.
TEST(MemoryBoundTest, DropsOfThreadsThatExitedAreStillCounted) {
  using namespace kinetrace::literals;
  Config config = hostOnly();
  config.memoryMb = 1;  // seven chunks: the first threads take them, later ones drop
  Profiler profiler(config);
  profiler.start();
  constexpr uint64_t kManyThreads = 200;
  constexpr uint64_t kEventsPerThread = 100;
  for (uint64_t t = 0; t < kManyThreads; ++t) {
    std::thread([] {
      for (uint64_t i = 0; i < kEventsPerThread; ++i) instant("short-lived"_kt);
    }).join();
  }
  Trace trace = profiler.stop();
  const TraceStats stats = trace.stats();
  EXPECT_GT(stats.droppedHostEvents, 0u);
  // The trace is kept in memory under the same cap: what was drained may still be dropped
  // there, and is counted too.
  EXPECT_EQ(stats.hostInstants + stats.droppedHostEvents + stats.droppedAssembledRecords,
            kManyThreads * kEventsPerThread);
}

// Threads of an earlier recording that exited after its stop left their last chunks in
// their buffers: a recording under a 1 MiB cap takes those back into the pool and counts
// no more of them than the cap holds, so its peak stays within the cap.
TEST(MemoryBoundTest, UnderAOneMegabyteCapThePeakStaysWithinItAndDropsAreCounted) {
  using namespace kinetrace::literals;
  constexpr int kEarlierThreads = 12;  // a chunk each: 1.5 MiB
  {
    Config roomy = hostOnly();
    roomy.memoryMb = 64;
    Profiler profiler(roomy);
    profiler.start();
    std::atomic<int> recorded{0};
    std::atomic<bool> exit{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kEarlierThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 1000; ++i) instant("earlier"_kt);
        ++recorded;
        while (!exit.load()) std::this_thread::yield();  // alive through the stop
      });
    }
    while (recorded.load() < kEarlierThreads) std::this_thread::yield();
    profiler.stop();
    exit = true;
    for (auto& thread : threads) thread.join();
  }
  Config config = hostOnly();
  config.memoryMb = 1;
  Profiler profiler(config);
  profiler.start();
  Recorders recorders(/*perThread=*/100000);  // 12 MiB of host records
  const uint64_t made = recorders.join();
  Trace trace = profiler.stop();
  const TraceStats stats = trace.stats();
  EXPECT_EQ(stats.memoryCapBytes, std::size_t{1} << 20);
  EXPECT_LE(stats.peakMemoryBytes, stats.memoryCapBytes) << "the tracer held more than its cap";
  EXPECT_GT(stats.droppedHostEvents, 0u);
  EXPECT_EQ(stats.hostInstants + stats.counterSamples + stats.droppedHostEvents +
                stats.droppedAssembledRecords,
            made)
      << "every event kept or counted";
}

// Writing a trace holds the sink's buffer within the cap; a cap smaller than that buffer
// would be exceeded from the start, so such a start is refused and nothing is written.
TEST(MemoryBoundTest, ACapTooSmallForTheOutputsWriteBufferIsRefusedAtStart) {
  TempDir dir;
  const std::string path = (dir / "trace.json").string();
  Config config = hostOnly();
  config.memoryMb = 1;
  Profiler profiler(config);
  const std::string error = testing::errorOf([&] { profiler.start(path); });
  EXPECT_EQ(error.rfind("cannot record to \"" + path + "\" with memory_mb=1: ", 0), 0u) << error;
  EXPECT_NE(error.find("set memory_mb to 2 or more, or record in memory"), std::string::npos)
      << error;
  EXPECT_FALSE(profiler.recording());
  EXPECT_TRUE(dir.entries().empty()) << "no file, no temporary";
  config.memoryMb = 2;
  Profiler larger(config);
  larger.start(path);
  Trace trace = larger.stop();
  EXPECT_EQ(trace.saveError(), "");
  EXPECT_LE(trace.stats().peakMemoryBytes, trace.stats().memoryCapBytes);
}

// A name per event (a step number, a request id in the name) would grow the string table
// with the window: past a quarter of the cap new names become one placeholder, counted.
TEST(MemoryBoundTest, NamesPastTheirShareOfTheCapAreReplacedAndCounted) {
  TempDir dir;
  const std::string path = (dir / "trace.json").string();
  Config config = hostOnly();
  config.memoryMb = 4;
  Profiler profiler(config);
  profiler.start(path);
  constexpr int kNames = 40000;  // ~4 MB of table for a 1 MB share
  for (int i = 0; i < kNames; ++i) instant("a name made for event " + std::to_string(i));
  Trace trace = profiler.stop();
  ASSERT_EQ(trace.saveError(), "");
  const Metadata metadata = trace.metadata();
  const uint64_t dropped = unsignedOf(metadataValue(metadata, "kinetrace_dropped_names"));
  EXPECT_GT(dropped, 0u) << "the table stopped growing";
  const uint64_t events = trace.stats().hostInstants + trace.stats().droppedHostEvents +
                          trace.stats().droppedAssembledRecords;
  EXPECT_EQ(events, static_cast<uint64_t>(kNames)) << "every event kept or counted";
  const std::string text = fileContents(path);
  EXPECT_NE(text.find(std::string(detail::StringTable::kDroppedName)), std::string::npos);
  EXPECT_LE(unsignedOf(metadataValue(metadata, "kinetrace_memory_peak_bytes")), uint64_t{4} << 20);
}

// Records decoded from a GPU buffer exist before the pipeline accounts them: the room the
// source asks for is held in the budget for the whole window, and given back at the stop.
TEST(MemoryBoundTest, TheGpuSourcesDecodeRoomIsCountedWhileRecording) {
  auto gpu = std::make_shared<testing::FakeGpuSource::State>();
  gpu->decodeRoom = 1 << 20;
  Config config;
  config.activities = ActivitySet::parse("host,kernel");
  config.memoryMb = 64;
  detail::SessionOptions options;
  options.gpuSourceFactory = [gpu] { return std::make_unique<testing::FakeGpuSource>(gpu); };
  std::unique_ptr<Profiler> profiler = detail::makeProfiler(config, std::move(options));
  detail::MemoryBudget& budget = detail::Core::instance().budget();
  const std::size_t before = budget.used();
  profiler->start();
  EXPECT_GE(budget.used(), before + gpu->decodeRoom);
  Trace trace = profiler->stop();
  EXPECT_GE(trace.stats().peakMemoryBytes, gpu->decodeRoom);
  EXPECT_EQ(budget.used(), before) << "the room went back with the stop";
}

// A cap without room for one CUPTI buffer and its decoding records host activity only,
// and the trace says why in words.
TEST(MemoryBoundTest, ACapWithoutRoomForAGpuBufferRecordsHostOnlyAndSaysWhy) {
  auto gpu = std::make_shared<testing::FakeGpuSource::State>();
  Config config;
  config.activities = ActivitySet::parse("host,kernel");
  config.memoryMb = 1;
  config.gpuBufferKb = 1024;
  detail::SessionOptions options;
  options.gpuSourceFactory = [gpu] { return std::make_unique<testing::FakeGpuSource>(gpu); };
  std::unique_ptr<Profiler> profiler = detail::makeProfiler(config, std::move(options));
  testing::StderrCapture err;
  profiler->start();
  instant("host event"_kt);
  Trace trace = profiler->stop();
  EXPECT_EQ(gpu->enables.load(), 0) << "the GPU source was not even asked";
  EXPECT_EQ(trace.stats().hostInstants, 1u);
  const Value statusValue = metadataValue(trace.metadata(), "kinetrace_gpu_status");
  ASSERT_EQ(statusValue.kind(), Value::Kind::String);
  const std::string status = statusValue.asString();
  EXPECT_NE(status.find("raise memory_mb or lower gpu_buffer_kb"), std::string::npos) << status;
  EXPECT_NE(err.text().find("GPU activity will not be recorded"), std::string::npos);
}

}  // namespace
}  // namespace kinetrace
