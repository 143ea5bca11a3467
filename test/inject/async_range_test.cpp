// Async ranges (kinetrace::startAsyncRange, nvtxRangeStart): ranges that overlap without
// nesting and may end on another thread.

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "host/host_recorder.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "model/clock.h"
#include "model/trace_data.h"

namespace kinetrace {
namespace {

using detail::HostRecorder;

Config hostOnly() {
  Config config;
  config.activities = ActivitySet::parse("host");
  return config;
}

const detail::RangeRecord* findRange(const detail::TraceData& trace, const std::string& name) {
  for (const auto& range : trace.ranges) {
    if (trace.strings.get(range.name) == name) return &range;
  }
  return nullptr;
}

int64_t tidOf(const detail::TraceData& trace, const detail::RangeRecord& range) {
  return trace.threads[range.thread].tid;
}

// What the CUPTI launch callback writes for a launch call on this thread.
void recordLaunchCall(uint32_t correlationId) {
  detail::ThreadBuffer* buffer = HostRecorder::threadBuffer();
  ASSERT_NE(buffer, nullptr);
  detail::HostEventRecord* r = HostRecorder::reserve(*buffer);
  ASSERT_NE(r, nullptr);
  r->ticks = detail::Clock::ticks();
  r->a = detail::Clock::ticks();
  r->b = HostRecorder::innermostOpenRange();
  r->c = correlationId;
  r->d = 0;
  r->flags = detail::kApiLaunchesGpuWork;
  r->kind = detail::HostEventKind::ApiCall;
  HostRecorder::publish(*buffer);
}

TEST(AsyncRangeTest, OverlappingRangesGoOnSeparateLanesOffTheThreadTracks) {
  Profiler profiler(hostOnly());
  profiler.start();
  uint64_t a = startAsyncRange("A");
  uint64_t b = startAsyncRange("B");
  endAsyncRange(a);  // A ends while B is open: they overlap without nesting
  uint64_t c = startAsyncRange("C");
  endAsyncRange(b);
  endAsyncRange(c);
  Trace trace = profiler.stop();
  const auto& data = trace.data();
  const auto* ra = findRange(data, "A");
  const auto* rb = findRange(data, "B");
  const auto* rc = findRange(data, "C");
  ASSERT_TRUE(ra && rb && rc);
  EXPECT_NE(a, b);
  EXPECT_EQ(ra->externalId, a);
  EXPECT_GE(tidOf(data, *ra), HostRecorder::kAsyncLaneTidBase);
  EXPECT_NE(ra->thread, rb->thread) << "A and B overlap: two lanes";
  EXPECT_EQ(rc->thread, ra->thread) << "C starts after A ended: A's lane is free again";
  EXPECT_EQ(data.strings.get(data.threads[ra->thread].name), "async ranges");
  EXPECT_EQ(data.strings.get(data.threads[rb->thread].name), "async ranges 2");
  EXPECT_FALSE(ra->unfinished);
}

TEST(AsyncRangeTest, ARangeMayEndOnAnotherThread) {
  Profiler profiler(hostOnly());
  profiler.start();
  uint64_t id = startAsyncRange(std::string("request ") + std::to_string(42));
  std::thread other([id] { endAsyncRange(id); });
  other.join();
  Trace trace = profiler.stop();
  const auto* range = findRange(trace.data(), "request 42");
  ASSERT_NE(range, nullptr);
  EXPECT_FALSE(range->unfinished);
  EXPECT_LE(range->startNs, range->endNs);
}

TEST(AsyncRangeTest, UnendedRangesEndAtStopMarkedUnfinished) {
  Profiler profiler(hostOnly());
  profiler.start();
  startAsyncRange("never ended");
  Trace trace = profiler.stop();
  const auto* range = findRange(trace.data(), "never ended");
  ASSERT_NE(range, nullptr);
  EXPECT_TRUE(range->unfinished);
  EXPECT_EQ(range->endNs, trace.data().stopNs);
  EXPECT_EQ(trace.data().losses.unfinishedRanges, 1u);
}

TEST(AsyncRangeTest, OutsideARecordingNothingIsRecordedAndIdZeroIsHarmless) {
  EXPECT_EQ(startAsyncRange("not recording"), 0u);
  endAsyncRange(0);
  Profiler profiler(hostOnly());
  profiler.start();
  endAsyncRange(0);
  endAsyncRange(123456);  // started before this recording: ignored
  Trace trace = profiler.stop();
  EXPECT_TRUE(trace.data().ranges.empty());
}

TEST(AsyncRangeTest, LaunchesOnTheStartingThreadAreLinkedToTheLatestOpenAsyncRange) {
  Profiler profiler(hostOnly());
  profiler.start();
  uint64_t outer = startAsyncRange("outer");
  recordLaunchCall(1);
  uint64_t inner = startAsyncRange("inner");
  recordLaunchCall(2);
  endAsyncRange(inner);
  recordLaunchCall(3);
  {
    Range pushed("pushed");
    recordLaunchCall(4);  // a nested push/pop range is the closer owner
  }
  endAsyncRange(outer);
  recordLaunchCall(5);
  Trace trace = profiler.stop();
  const auto& data = trace.data();
  const auto* pushed = findRange(data, "pushed");
  ASSERT_NE(pushed, nullptr);
  std::vector<uint64_t> owner(6, 0);
  for (const auto& call : data.apiCalls) owner[call.correlationId] = call.externalId;
  EXPECT_EQ(owner[1], outer);
  EXPECT_EQ(owner[2], inner);
  EXPECT_EQ(owner[3], outer);
  EXPECT_EQ(owner[4], pushed->externalId);
  EXPECT_EQ(owner[5], 0u);
}

TEST(AsyncRangeTest, LaunchesOnOtherThreadsAreNotLinked) {
  Profiler profiler(hostOnly());
  profiler.start();
  uint64_t id = startAsyncRange("main thread's");
  std::thread other([] { recordLaunchCall(9); });
  other.join();
  endAsyncRange(id);
  Trace trace = profiler.stop();
  ASSERT_EQ(trace.data().apiCalls.size(), 1u);
  EXPECT_EQ(trace.data().apiCalls[0].externalId, 0u);
}

TEST(OsThreadNameTest, AThreadCanBeNamedFromAnotherByItsTid) {
  Profiler profiler(hostOnly());
  profiler.start();
  int64_t workerTid = 0;
  std::thread worker([&] {
    workerTid = HostRecorder::threadBuffer() ? HostRecorder::threadBuffer()->tid : 0;
    instant("worker ran");
  });
  worker.join();
  HostRecorder::instance().nameOsThread(workerTid, "loader");
  Trace trace = profiler.stop();
  bool named = false;
  for (const auto& thread : trace.data().threads) {
    if (thread.tid == workerTid) named = trace.data().strings.get(thread.name) == "loader";
  }
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace kinetrace
