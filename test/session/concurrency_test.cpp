#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kinetrace/error.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "session/session_support.h"
#include "support/test_support.h"

// Profilers used from several threads at once: recording threads never see a torn event,
// whatever the timing of start() and stop(), and only one Profiler records at a time.

namespace kinetrace {
namespace {

using testing::dataOf;
using testing::errorOf;
using testing::eventually;
using testing::hostOnly;
using testing::nameOf;

// "t<thread>-<n>": what the recording threads name their ranges.
bool validName(std::string_view name) {
  const std::size_t dash = name.find('-');
  auto digits = [](std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return name.size() > 2 && name[0] == 't' && dash != std::string_view::npos &&
         digits(name.substr(1, dash - 1)) && digits(name.substr(dash + 1));
}

TEST(ConcurrencyTest, RangesRecordedWhileAnotherThreadStartsAndStopsStayWhole) {
  constexpr int kThreads = 16;
  constexpr int kCycles = 40;
  Profiler profiler(hostOnly());
  std::atomic<bool> done{false};
  std::atomic<uint64_t> recorded{0};  // ranges made while a recording was on
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &done, &recorded] {
      for (int i = 0; !done.load(std::memory_order_relaxed); ++i) {
        // Two cores here: idle threads step aside so the cycling thread can run.
        if (!kinetrace::recording()) std::this_thread::yield();
        const std::string name = "t" + std::to_string(t) + "-" + std::to_string(i % 1000);
        Range outer(name);
        Range inner(name + "0");
        if (kinetrace::recording()) recorded.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  uint64_t ranges = 0;
  std::string problem;
  std::thread cycler([&] {
    for (int cycle = 0; cycle < kCycles && problem.empty(); ++cycle) {
      profiler.start();
      const uint64_t from = recorded.load();
      // A moment of recording: until the threads have made a few hundred ranges in it.
      if (!eventually([&] { return recorded.load() >= from + 500; }))
        problem = "the threads stopped recording";
      Trace trace = profiler.stop();
      const auto& data = dataOf(trace);
      for (const auto& range : data.records.ranges) {
        const std::string name = nameOf(data, range.name);
        const bool inner =
            name.size() > 1 && name.back() == '0' && validName(name.substr(0, name.size() - 1));
        if (!validName(name) && !inner)
          problem = "cycle " + std::to_string(cycle) + ": corrupt name \"" + name + "\"";
        const std::string where = "cycle " + std::to_string(cycle) + ": \"" + name + "\" [" +
                                  std::to_string(range.startNs - trace.stopNs()) + ", " +
                                  std::to_string(range.endNs - trace.stopNs()) +
                                  "] ns from the stop" + (range.unfinished ? ", unfinished" : "");
        if (range.endNs < range.startNs) problem = where + ": negative duration";
        if (range.startNs < trace.startNs() || range.endNs > trace.stopNs()) {
          problem = where + ": outside its window";
        }
      }
      ranges += data.records.ranges.size();
    }
  });
  cycler.join();
  done = true;
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(problem, "");
  EXPECT_GT(ranges, 0u);
}

TEST(ConcurrencyTest, TwoProfilersStartingAtOnceLetExactlyOneRecord) {
  Profiler first(hostOnly());
  Profiler second(hostOnly());
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> ready{0};
    std::string errors[2];
    auto race = [&ready](Profiler& profiler, std::string& error) {
      ++ready;
      while (ready.load() < 2) {
      }
      error = errorOf([&] { profiler.start(); });
    };
    std::thread a(race, std::ref(first), std::ref(errors[0]));
    std::thread b(race, std::ref(second), std::ref(errors[1]));
    a.join();
    b.join();
    ASSERT_NE(first.recording(), second.recording()) << "round " << round;
    const std::string& refused = first.recording() ? errors[1] : errors[0];
    EXPECT_EQ(first.recording() ? errors[0] : errors[1], "");
    EXPECT_NE(refused.find("another kinetrace::Profiler is recording in this process"),
              std::string::npos)
        << refused;
    (first.recording() ? first : second).stop();
  }
}

TEST(ConcurrencyTest, StartAndStopOfOneProfilerFromManyThreadsAreSerialised) {
  Profiler profiler(hostOnly());
  std::atomic<int> starts{0}, stops{0}, refusals{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        const std::string started = errorOf([&] { profiler.start(); });
        if (started.empty())
          ++starts;
        else
          ++refusals;
        Range range("between");
        const std::string stopped = errorOf([&] {
          Trace trace = profiler.stop();
          (void)trace;
        });
        if (stopped.empty())
          ++stops;
        else
          ++refusals;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_FALSE(profiler.recording());
  EXPECT_EQ(starts.load(), stops.load()) << "every recording started was stopped once";
  EXPECT_GT(starts.load(), 0);
  EXPECT_EQ(starts + stops + refusals, 8 * 50 * 2);
}

}  // namespace
}  // namespace kinetrace
