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
#include "session/session.h"
#include "session/session_support.h"
#include "support/test_support.h"

// Profilers used from several threads at once: recording threads never see a torn event,
// whatever the timing of start() and stop(), and only one Profiler records at a time.

namespace kinetrace {
namespace {

using testing::dataOf;
using testing::errorOf;
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

// Bounded by work, not time: each cycle every thread makes a fixed number of ranges in three
// parts -- the first racing start(), the second while recording is surely on, the third
// racing stop() -- and the threads and the cycling thread meet at each part's end through
// atomics. However slow or loaded the machine, the test does the same work.
TEST(ConcurrencyTest, RangesRecordedWhileAnotherThreadStartsAndStopsStayWhole) {
  constexpr int kThreads = 16;
  constexpr int kCycles = 40;
  constexpr int kRangesPerPart = 64;
  Profiler profiler(hostOnly());
  std::atomic<int> cycleReleased{-1};  // threads begin cycle n once this is n
  std::atomic<int> cycleStarted{-1};   // start() of cycle n has returned
  std::atomic<int> duringDone{0};      // threads done with the part made while recording
  std::atomic<int> cycleDone{0};       // threads done with the whole cycle
  auto waitFor = [](const std::atomic<int>& value, int wanted) {
    while (value.load() < wanted) std::this_thread::yield();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      int made = 0;
      auto makeRanges = [&](int count) {
        for (int i = 0; i < count; ++i, ++made) {
          const std::string name = "t" + std::to_string(t) + "-" + std::to_string(made % 1000);
          Range outer(name);
          Range inner(name + "0");
        }
      };
      for (int cycle = 0; cycle < kCycles; ++cycle) {
        waitFor(cycleReleased, cycle);
        makeRanges(kRangesPerPart);  // racing start()
        waitFor(cycleStarted, cycle);
        makeRanges(kRangesPerPart);  // recording
        ++duringDone;
        makeRanges(kRangesPerPart);  // racing stop()
        ++cycleDone;
      }
    });
  }
  uint64_t ranges = 0;
  std::string problem;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    duringDone = 0;
    cycleDone = 0;
    cycleReleased = cycle;
    profiler.start();
    cycleStarted = cycle;
    waitFor(duringDone, kThreads);
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
    // The part made while recording was surely on is all there, outer and inner ranges.
    if (data.records.ranges.size() < 2u * kThreads * kRangesPerPart && problem.empty()) {
      problem = "cycle " + std::to_string(cycle) + ": " +
                std::to_string(data.records.ranges.size()) + " ranges, fewer than recorded";
    }
    ranges += data.records.ranges.size();
    waitFor(cycleDone, kThreads);
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(problem, "");
  EXPECT_GE(ranges, 2u * kThreads * kRangesPerPart * kCycles);
}

// The window ends when stop() is called: a range another thread begins after that (while
// the stop is under way, before recording ends) is left out and counted out of the window.
TEST(ConcurrencyTest, ARangeBegunOnAnotherThreadAfterStopWasCalledIsLeftOutAndCounted) {
  std::atomic<int> phase{0};  // 1: in-window range made; 2: stop under way; 3: late ones made
  detail::SessionOptions options;
  options.onStopping = [&phase] {
    phase.store(2);
    while (phase.load() != 3) std::this_thread::yield();
  };
  std::unique_ptr<Profiler> profiler = detail::makeProfiler(hostOnly(), std::move(options));
  profiler->start();
  std::thread other([&phase] {
    { Range inside("in the window"); }
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
    { Range late("begun after stop was called"); }
    instant("an instant after stop was called");
    phase.store(3);
  });
  while (phase.load() != 1) std::this_thread::yield();
  Trace trace = profiler->stop();
  other.join();
  const auto& data = dataOf(trace);
  EXPECT_NE(testing::findRange(data, "in the window"), nullptr);
  EXPECT_EQ(testing::findRange(data, "begun after stop was called"), nullptr);
  EXPECT_EQ(trace.stats().hostInstants, 0u);
  // The range's begin and the instant; the range's end falls after the stop with its begin.
  EXPECT_EQ(trace.stats().outOfWindowEvents, 2u);
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
