// Async ranges (kinetrace::startAsyncRange, nvtxRangeStart): ranges that overlap without
// nesting and may end on another thread, recorded through a public Profiler. The trace's
// records are read from memory; where the tracks are drawn is read from the saved JSON.

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "host/host_recorder.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "model/clock.h"
#include "model/trace_data.h"
#include "output/trace_events.h"
#include "session/seam.h"
#include "support/temp_dir.h"

namespace kinetrace {
namespace {

using detail::HostRecorder;

Config hostOnly() {
  Config config;
  config.activities = ActivitySet::parse("host");
  return config;
}

const detail::RangeRecord* findRange(const detail::TraceData& trace, const std::string& name) {
  for (const auto& range : trace.records.ranges) {
    if (trace.tables.strings.get(range.name) == name) return &range;
  }
  return nullptr;
}

int64_t osThreadId() {
  return static_cast<int64_t>(::syscall(SYS_gettid));
}

// The saved trace's events named `name` and the names of their tracks (thread_name).
struct SavedEvent {
  int64_t tid = 0;
  std::string track;
};
std::vector<SavedEvent> savedEvents(const Trace& trace, const std::string& name) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/trace.json";
  trace.save(path);
  const nlohmann::json root = nlohmann::json::parse(testing::fileContents(path));
  std::map<int64_t, std::string> tracks;
  for (const auto& event : root["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "thread_name") {
      tracks[event["tid"].get<int64_t>()] = event["args"]["name"];
    }
  }
  std::vector<SavedEvent> found;
  for (const auto& event : root["traceEvents"]) {
    if (event["ph"] != "M" && event.value("name", "") == name) {
      const int64_t tid = event["tid"].get<int64_t>();
      found.push_back({tid, tracks[tid]});
    }
  }
  return found;
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
  r->flags = static_cast<uint8_t>(static_cast<uint8_t>(detail::CallEffect::Kernel)
                                  << detail::kApiEffectShift);
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
  const detail::TraceData& data = detail::dataOf(trace);
  const auto* ra = findRange(data, "A");
  const auto* rb = findRange(data, "B");
  const auto* rc = findRange(data, "C");
  ASSERT_TRUE(ra && rb && rc);
  EXPECT_NE(a, b);
  EXPECT_EQ(ra->externalId, a);
  EXPECT_TRUE(ra->async && rb->async && rc->async);
  EXPECT_NE(ra->lane, rb->lane) << "A and B overlap: two lanes";
  EXPECT_EQ(rc->lane, ra->lane) << "C starts after A ended: A's lane is free again";
  EXPECT_FALSE(ra->unfinished);

  std::vector<SavedEvent> savedA = savedEvents(trace, "A");
  std::vector<SavedEvent> savedB = savedEvents(trace, "B");
  ASSERT_EQ(savedA.size(), 1u);
  ASSERT_EQ(savedB.size(), 1u);
  EXPECT_GE(savedA[0].tid, detail::kAsyncLaneTidBase) << "off the thread tracks";
  EXPECT_NE(savedA[0].tid, osThreadId());
  EXPECT_EQ(savedA[0].track, "async ranges");
  EXPECT_EQ(savedB[0].track, "async ranges 2");
}

TEST(AsyncRangeTest, ARangeMayEndOnAnotherThread) {
  Profiler profiler(hostOnly());
  profiler.start();
  uint64_t id = startAsyncRange(std::string("request ") + std::to_string(42));
  std::thread other([id] { endAsyncRange(id); });
  other.join();
  Trace trace = profiler.stop();
  const auto* range = findRange(detail::dataOf(trace), "request 42");
  ASSERT_NE(range, nullptr);
  EXPECT_FALSE(range->unfinished);
  EXPECT_LE(range->startNs, range->endNs);
}

TEST(AsyncRangeTest, UnendedRangesEndAtStopMarkedUnfinished) {
  Profiler profiler(hostOnly());
  profiler.start();
  startAsyncRange("never ended");
  Trace trace = profiler.stop();
  const auto* range = findRange(detail::dataOf(trace), "never ended");
  ASSERT_NE(range, nullptr);
  EXPECT_TRUE(range->unfinished);
  EXPECT_EQ(range->endNs, trace.stopNs());
  EXPECT_EQ(trace.stats().unfinishedRanges, 1u);
}

TEST(AsyncRangeTest, OutsideARecordingNothingIsRecordedAndIdZeroIsHarmless) {
  EXPECT_EQ(startAsyncRange("not recording"), 0u);
  endAsyncRange(0);
  Profiler profiler(hostOnly());
  profiler.start();
  endAsyncRange(0);
  endAsyncRange(123456);  // started before this recording: ignored
  Trace trace = profiler.stop();
  EXPECT_TRUE(detail::dataOf(trace).records.ranges.empty());
  EXPECT_EQ(trace.stats().hostRanges, 0u);
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
  const detail::TraceData& data = detail::dataOf(trace);
  const auto* pushed = findRange(data, "pushed");
  ASSERT_NE(pushed, nullptr);
  ASSERT_EQ(data.records.apiCalls.size(), 5u);
  std::vector<uint64_t> owner(6, 0);
  for (const auto& call : data.records.apiCalls) owner[call.correlationId] = call.externalId;
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
  const detail::TraceData& data = detail::dataOf(trace);
  ASSERT_EQ(data.records.apiCalls.size(), 1u);
  EXPECT_EQ(data.records.apiCalls[0].externalId, 0u);
}

TEST(OsThreadNameTest, AThreadCanBeNamedFromAnotherByItsTid) {
  Profiler profiler(hostOnly());
  profiler.start();
  int64_t workerTid = 0;
  std::thread worker([&] {
    workerTid = osThreadId();
    instant("worker ran");
  });
  worker.join();
  internal::nameOsThread(workerTid, "loader");
  Trace trace = profiler.stop();
  const detail::TraceData& data = detail::dataOf(trace);
  ASSERT_EQ(data.records.instants.size(), 1u);
  const detail::ThreadInfo& thread = data.tables.threads[data.records.instants[0].thread];
  EXPECT_EQ(thread.tid, workerTid);
  EXPECT_EQ(data.tables.strings.get(thread.name), "loader");
}

}  // namespace
}  // namespace kinetrace
