#include <gtest/gtest.h>
#include <malloc.h>

#include <cstddef>
#include <string>

#include "host/host_recorder.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "session/core.h"
#include "session/session_support.h"

// A process may start and stop recording any number of times (a schedule that traces a few
// steps every few minutes, for days): nothing may accumulate from one recording to the next.

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KINETRACE_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KINETRACE_TEST_SANITIZED 1
#endif
#endif

namespace kinetrace {
namespace {

using testing::dataOf;
using testing::hostOnly;

struct Footprint {
  std::size_t chunks = 0;
  std::size_t budgetUsed = 0;
  std::size_t heapBytes = 0;  // in use on malloc's heap; 0 under a sanitizer (its own allocator)
};

Footprint footprint() {
  Footprint f;
  f.chunks = detail::HostRecorder::instance().chunksAllocated();
  f.budgetUsed = detail::Core::instance().budget().used();
#ifndef KINETRACE_TEST_SANITIZED
  f.heapBytes = mallinfo2().uordblks;
#endif
  return f;
}

TEST(StartStopCyclesTest, AThousandCyclesLeakNothing) {
  Profiler profiler(hostOnly());
  int cycles = 0;
  auto cycle = [&] {
    profiler.start();
    {
      Range range("cycle " + std::to_string(cycles++ % 10));
      instant("tick");
      counter("value", cycles);
    }
    Trace trace = profiler.stop();
    return dataOf(trace).records.ranges.size() == 1 && dataOf(trace).records.instants.size() == 1;
  };
  // Warm-up: the thread's buffer, the chunk pool, the sink registry, stdio.
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(cycle());
  const Footprint before = footprint();
  int complete = 0;
  for (int i = 0; i < 1000; ++i) complete += cycle() ? 1 : 0;
  const Footprint after = footprint();

  EXPECT_EQ(complete, 1000) << "every cycle's trace holds its events";
  EXPECT_EQ(after.chunks, before.chunks) << "host chunks";
  EXPECT_EQ(after.budgetUsed, before.budgetUsed) << "memory still counted against the budget";
#ifndef KINETRACE_TEST_SANITIZED  // a sanitizer's allocator is not malloc's: no mallinfo2()
  // A leak of even one small allocation per cycle adds 1000 of them; malloc's own
  // bookkeeping moves by far less.
  const auto grown =
      static_cast<long long>(after.heapBytes) - static_cast<long long>(before.heapBytes);
  EXPECT_LT(grown, 16 * 1024) << "the heap grew by " << grown << " bytes over 1000 cycles";
#endif
}

}  // namespace
}  // namespace kinetrace
