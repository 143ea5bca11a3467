#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "host/host_recorder.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "model/trace_data.h"
#include "session/session_support.h"

// Host recording through a Profiler: what the application's threads record arrives in the
// trace, assembled, and nothing else does.

namespace kinetrace {
namespace {

using testing::dataOf;
using testing::findRange;
using testing::hostOnly;
using testing::nameOf;

TEST(HostRecordingTest, NestedRangesKeepTheirParentsAndOrder) {
  Profiler profiler(hostOnly());
  profiler.start();
  {
    Range outer("outer");
    Range inner(std::string("inner ") + std::to_string(7));
  }
  Trace trace = profiler.stop();
  const auto& data = dataOf(trace);
  ASSERT_EQ(data.records.ranges.size(), 2u);
  const auto* outer = findRange(data, "outer");
  const auto* inner = findRange(data, "inner 7");
  ASSERT_NE(outer, nullptr);
  ASSERT_NE(inner, nullptr);
  EXPECT_LE(outer->startNs, inner->startNs);
  EXPECT_GE(outer->endNs, inner->endNs);
  EXPECT_EQ(inner->parentId, outer->externalId);
  EXPECT_EQ(outer->parentId, 0u);
  EXPECT_NE(outer->externalId, inner->externalId);
  EXPECT_FALSE(outer->unfinished);
  EXPECT_GE(outer->startNs, data.startNs);
  EXPECT_LE(outer->endNs, data.stopNs);
}

TEST(HostRecordingTest, RangesStillOpenAtStopEndAtStopAndAreMarkedUnfinished) {
  Profiler profiler(hostOnly());
  profiler.start();
  beginRange("left open");
  Trace trace = profiler.stop();
  endRange();  // after stop: must not disturb anything
  const auto* range = findRange(dataOf(trace), "left open");
  ASSERT_NE(range, nullptr);
  EXPECT_TRUE(range->unfinished);
  EXPECT_EQ(range->endNs, trace.stopNs());
  EXPECT_EQ(trace.stats().unfinishedRanges, 1u);
}

TEST(HostRecordingTest, NothingIsRecordedWithoutAProfiler) {
  {
    Range ignored("before any session");
    counter("ignored", 1.0);
  }
  Profiler profiler(hostOnly());
  profiler.start();
  Trace trace = profiler.stop();
  EXPECT_TRUE(dataOf(trace).records.ranges.empty());
  EXPECT_TRUE(dataOf(trace).records.counters.empty());
  EXPECT_EQ(trace.stats().outOfWindowEvents, 0u) << "not recorded at all, so not counted either";
}

TEST(HostRecordingTest, EndOfARangeOpenedBeforeStartIsIgnored) {
  beginRange("opened before start");
  Profiler profiler(hostOnly());
  profiler.start();
  { Range inside("inside"); }
  endRange();  // closes "opened before start", which this session never saw
  Trace trace = profiler.stop();
  const auto& data = dataOf(trace);
  ASSERT_EQ(data.records.ranges.size(), 1u);
  EXPECT_EQ(nameOf(data, data.records.ranges[0].name), "inside");
  EXPECT_FALSE(data.records.ranges[0].unfinished);
}

TEST(HostRecordingTest, InstantsAndCountersCarryNamesAndValues) {
  Profiler profiler(hostOnly());
  profiler.start();
  instant("checkpoint");
  counter("loss", 0.25);
  counter(std::string("queue depth"), 3.0);
  Trace trace = profiler.stop();
  const auto& data = dataOf(trace);
  ASSERT_EQ(data.records.instants.size(), 1u);
  EXPECT_EQ(nameOf(data, data.records.instants[0].name), "checkpoint");
  ASSERT_EQ(data.records.counters.size(), 2u);
  EXPECT_EQ(nameOf(data, data.records.counters[0].name), "loss");
  EXPECT_DOUBLE_EQ(data.records.counters[0].value, 0.25);
  EXPECT_EQ(nameOf(data, data.records.counters[1].name), "queue depth");
  EXPECT_DOUBLE_EQ(data.records.counters[1].value, 3.0);
  EXPECT_EQ(trace.stats().hostInstants, 1u);
  EXPECT_EQ(trace.stats().counterSamples, 2u);
}

TEST(HostRecordingTest, ARepeatedNameIsStoredOnce) {
  using namespace kinetrace::literals;
  Profiler profiler(hostOnly());
  profiler.start();
  for (int i = 0; i < 10000; ++i) {
    Range literal("step"_kt);
    Range copied(std::string("layer"));
  }
  Trace trace = profiler.stop();
  const auto& data = dataOf(trace);
  EXPECT_EQ(data.records.ranges.size(), 20000u);
  // "", "step", "layer"
  EXPECT_EQ(data.tables.strings.size(), 3u);
}

TEST(HostRecordingTest, ThreadsRecordConcurrentlyWithTheirOwnIdsAndNames) {
  constexpr int kThreads = 8;
  constexpr int kRangesPerThread = 5000;
  Profiler profiler(hostOnly());
  profiler.start();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      setThreadName("worker " + std::to_string(t));
      for (int i = 0; i < kRangesPerThread; ++i) {
        Range outer("outer");
        Range inner("inner");
      }
    });
  }
  for (auto& thread : threads) thread.join();
  Trace trace = profiler.stop();
  const auto& data = dataOf(trace);
  EXPECT_EQ(data.records.ranges.size(), static_cast<size_t>(kThreads * kRangesPerThread * 2));
  EXPECT_EQ(trace.stats().droppedHostEvents, 0u);
  std::vector<std::string> names;
  for (const auto& thread : data.tables.threads) names.push_back(nameOf(data, thread.name));
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_NE(std::find(names.begin(), names.end(), "worker " + std::to_string(t)), names.end());
  }
  // Per thread, every inner range nests in an outer one of the same thread.
  std::map<uint64_t, const detail::RangeRecord*> byId;
  for (const auto& range : data.records.ranges) byId[range.externalId] = &range;
  for (const auto& range : data.records.ranges) {
    if (nameOf(data, range.name) != "inner") continue;
    auto parent = byId.find(range.parentId);
    ASSERT_NE(parent, byId.end());
    EXPECT_EQ(nameOf(data, parent->second->name), "outer");
    EXPECT_EQ(parent->second->thread, range.thread);
  }
}

TEST(HostRecordingTest, CapReachedDropsAndCountsInsteadOfGrowing) {
  Config config = hostOnly();
  config.memoryMb = 1;  // 7 chunks of 4096 records
  Profiler profiler(config);
  profiler.start();
  constexpr uint64_t kRanges = 100000;  // 200000 records: far past the cap
  for (uint64_t i = 0; i < kRanges; ++i) {
    Range range("r");
  }
  Trace trace = profiler.stop();
  const TraceStats stats = trace.stats();
  EXPECT_GT(stats.droppedHostEvents + stats.droppedAssembledRecords, 0u);
  EXPECT_LT(stats.hostRanges, kRanges);
  // A range is in the trace (finished, or unfinished when its end was dropped) or lost: its
  // begin was dropped, or its record found no room once assembled. Its end may be dropped
  // either way.
  const uint64_t lost = kRanges - stats.hostRanges;
  EXPECT_GE(stats.droppedHostEvents + stats.droppedAssembledRecords, lost + stats.unfinishedRanges);
  EXPECT_LE(stats.droppedHostEvents, 2 * lost + stats.unfinishedRanges);
}

TEST(HostRecordingTest, RestartedSessionsDoNotSeeEachOthersEvents) {
  Profiler profiler(hostOnly());
  profiler.start();
  { Range first("first session"); }
  Trace first = profiler.stop();
  profiler.start();
  { Range second("second session"); }
  Trace second = profiler.stop();
  ASSERT_EQ(dataOf(first).records.ranges.size(), 1u);
  ASSERT_EQ(dataOf(second).records.ranges.size(), 1u);
  EXPECT_EQ(nameOf(dataOf(second), dataOf(second).records.ranges[0].name), "second session");
  EXPECT_GT(second.startNs(), first.stopNs());
}

TEST(HostRecordingTest, InnermostOpenRangeIsWhatALaunchCallbackReads) {
  Profiler profiler(hostOnly());
  EXPECT_EQ(detail::HostRecorder::innermostOpenRange(), 0u);
  profiler.start();
  uint64_t seenOuter = 0;
  uint64_t seenInner = 0;
  {
    Range outer("outer");
    seenOuter = detail::HostRecorder::innermostOpenRange();
    {
      Range inner("inner");
      seenInner = detail::HostRecorder::innermostOpenRange();
    }
    EXPECT_EQ(detail::HostRecorder::innermostOpenRange(), seenOuter);
  }
  EXPECT_EQ(detail::HostRecorder::innermostOpenRange(), 0u);
  Trace trace = profiler.stop();
  ASSERT_NE(findRange(dataOf(trace), "outer"), nullptr);
  ASSERT_NE(findRange(dataOf(trace), "inner"), nullptr);
  EXPECT_EQ(findRange(dataOf(trace), "outer")->externalId, seenOuter);
  EXPECT_EQ(findRange(dataOf(trace), "inner")->externalId, seenInner);
}

TEST(HostRecordingTest, ShortLivedThreadsReuseBuffersInsteadOfGrowingForever) {
  constexpr int kThreadsPerSession = 20;
  constexpr int kSessions = 3;
  Profiler profiler(hostOnly());
  const std::size_t buffersBefore = detail::HostRecorder::instance().bufferCount();
  std::vector<Trace> traces;
  for (int session = 0; session < kSessions; ++session) {
    profiler.start();
    for (int i = 0; i < kThreadsPerSession; ++i) {
      std::thread([] { Range range("short-lived worker"); }).join();
    }
    traces.push_back(profiler.stop());
  }
  for (const Trace& trace : traces) {
    EXPECT_EQ(dataOf(trace).records.ranges.size(), static_cast<std::size_t>(kThreadsPerSession));
  }
  // A session needs at most a buffer per thread; a buffer whose thread exited is reused once
  // the pipeline has collected it (by the stop at the latest), so sessions do not add up.
  EXPECT_LE(detail::HostRecorder::instance().bufferCount(), buffersBefore + kThreadsPerSession)
      << "buffers of exited, collected threads are reused";
  // Range ids stay unique across the reused buffers.
  std::vector<uint64_t> ids;
  for (const Trace& trace : traces) {
    for (const auto& range : dataOf(trace).records.ranges) ids.push_back(range.externalId);
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

// Names longer than the limit are cut before the character that crosses it, so what is kept
// is valid UTF-8, and the trace counts them (TraceStats::namesCut, kinetrace_names_cut).
TEST(HostRecordingTest, LongNamesAreCutAtACharacterBoundaryAndCounted) {
  constexpr std::size_t kLimit = detail::kMaxNameBytes;
  // "é" (two bytes) across the limit, in a copied range name.
  const std::string crossing = std::string(kLimit - 1, 'x') + "\xc3\xa9" + std::string(100, 'y');
  // A four-byte character across it, in an instant.
  const std::string emoji = std::string(kLimit - 2, 'z') + "\xf0\x9f\x98\x80" + "tail";
  const std::string exact(kLimit, 'w');  // at the limit: whole, not counted
  Profiler profiler(hostOnly());
  profiler.start();
  { Range range(crossing); }
  instant(emoji);
  { Range range(exact); }
  Trace trace = profiler.stop();
  const auto& data = dataOf(trace);
  EXPECT_NE(findRange(data, std::string(kLimit - 1, 'x')), nullptr);
  EXPECT_NE(findRange(data, exact), nullptr);
  ASSERT_EQ(data.records.instants.size(), 1u);
  EXPECT_EQ(nameOf(data, data.records.instants[0].name), std::string(kLimit - 2, 'z'));
  EXPECT_EQ(trace.stats().namesCut, 2u);
  EXPECT_EQ(testing::unsignedOf(testing::metadataValue(trace.metadata(), "kinetrace_names_cut")),
            2u);
}

}  // namespace
}  // namespace kinetrace
