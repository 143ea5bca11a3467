// The periodic flush's thread: it calls at its period, and its destructor does not wait out
// a period.

#include "cupti/periodic_flusher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace kinetrace::detail {
namespace {

struct Calls {
  std::mutex mutex;
  std::condition_variable changed;
  int count = 0;

  void add() {
    std::lock_guard<std::mutex> lock(mutex);
    ++count;
    changed.notify_all();
  }
  // Whether `at least` calls came before the (generous) deadline.
  bool waitFor(int atLeast) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(60), [&] { return count >= atLeast; });
  }
  int now() {
    std::lock_guard<std::mutex> lock(mutex);
    return count;
  }
};

TEST(PeriodicFlusherTest, CallsAgainAndAgainWithoutBeingAsked) {
  Calls calls;
  PeriodicFlusher flusher([&] { calls.add(); }, std::chrono::milliseconds(1));
  EXPECT_TRUE(calls.waitFor(3));
}

TEST(PeriodicFlusherTest, DestructionDoesNotWaitOutThePeriod) {
  Calls calls;
  {
    PeriodicFlusher flusher([&] { calls.add(); }, std::chrono::hours(1));
  }  // would hang for an hour (and the test time out) if the thread slept the period out
  EXPECT_EQ(calls.now(), 0);
}

}  // namespace
}  // namespace kinetrace::detail
