#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "host/host_recorder.h"
#include "kinetrace/host.h"
#include "kinetrace/profiler.h"
#include "model/trace_data.h"

namespace kinetrace {
namespace {

Config hostOnly() {
  Config config;
  config.activities = ActivitySet::parse("host");
  return config;
}

std::string nameOf(const detail::TraceData& trace, detail::StringId id) {
  return std::string(trace.strings.get(id));
}

const detail::RangeRecord* findRange(const detail::TraceData& trace, const std::string& name) {
  for (const auto& range : trace.ranges) {
    if (nameOf(trace, range.name) == name) return &range;
  }
  return nullptr;
}

TEST(HostRecorderTest, NestedRangesKeepTheirParentsAndOrder) {
  Profiler profiler(hostOnly());
  profiler.start();
  {
    Range outer("outer");
    Range inner(std::string("inner ") + std::to_string(7));
  }
  Trace trace = profiler.stop();
  const auto& data = trace.data();
  ASSERT_EQ(data.ranges.size(), 2u);
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

TEST(HostRecorderTest, RangesStillOpenAtStopEndAtStopAndAreMarkedUnfinished) {
  Profiler profiler(hostOnly());
  profiler.start();
  beginRange("left open");
  Trace trace = profiler.stop();
  endRange();  // after stop: must not disturb anything
  const auto* range = findRange(trace.data(), "left open");
  ASSERT_NE(range, nullptr);
  EXPECT_TRUE(range->unfinished);
  EXPECT_EQ(range->endNs, trace.data().stopNs);
  EXPECT_EQ(trace.stats().unfinishedRanges, 1u);
}

TEST(HostRecorderTest, NothingIsRecordedWithoutAProfiler) {
  Range ignored("before any session");
  counter("ignored", 1.0);
  Profiler profiler(hostOnly());
  profiler.start();
  Trace trace = profiler.stop();
  EXPECT_TRUE(trace.data().ranges.empty());
  EXPECT_TRUE(trace.data().counters.empty());
}

TEST(HostRecorderTest, EndOfARangeOpenedBeforeStartIsIgnored) {
  beginRange("opened before start");
  Profiler profiler(hostOnly());
  profiler.start();
  {
    Range inside("inside");
  }
  endRange();  // closes "opened before start", which this session never saw
  Trace trace = profiler.stop();
  ASSERT_EQ(trace.data().ranges.size(), 1u);
  EXPECT_EQ(nameOf(trace.data(), trace.data().ranges[0].name), "inside");
  EXPECT_FALSE(trace.data().ranges[0].unfinished);
}

TEST(HostRecorderTest, InstantsAndCountersCarryNamesAndValues) {
  Profiler profiler(hostOnly());
  profiler.start();
  instant("checkpoint");
  counter("loss", 0.25);
  counter(std::string("queue depth"), 3.0);
  Trace trace = profiler.stop();
  const auto& data = trace.data();
  ASSERT_EQ(data.instants.size(), 1u);
  EXPECT_EQ(nameOf(data, data.instants[0].name), "checkpoint");
  ASSERT_EQ(data.counters.size(), 2u);
  EXPECT_EQ(nameOf(data, data.counters[0].name), "loss");
  EXPECT_DOUBLE_EQ(data.counters[0].value, 0.25);
  EXPECT_EQ(nameOf(data, data.counters[1].name), "queue depth");
  EXPECT_DOUBLE_EQ(data.counters[1].value, 3.0);
}

TEST(HostRecorderTest, ARepeatedNameIsStoredOnce) {
  Profiler profiler(hostOnly());
  profiler.start();
  for (int i = 0; i < 10000; ++i) {
    Range literal("step");
    Range copied(std::string("layer"));
  }
  Trace trace = profiler.stop();
  const auto& data = trace.data();
  EXPECT_EQ(data.ranges.size(), 20000u);
  // "", "step", "layer"
  EXPECT_EQ(data.strings.size(), 3u);
}

TEST(HostRecorderTest, ThreadsRecordConcurrentlyWithTheirOwnIdsAndNames) {
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
  const auto& data = trace.data();
  EXPECT_EQ(data.ranges.size(), static_cast<size_t>(kThreads * kRangesPerThread * 2));
  EXPECT_EQ(trace.stats().droppedHostEvents, 0u);
  std::vector<std::string> names;
  for (const auto& thread : data.threads) names.emplace_back(data.strings.get(thread.name));
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_NE(std::find(names.begin(), names.end(), "worker " + std::to_string(t)), names.end());
  }
  // Per thread, every inner range nests in an outer one of the same thread.
  for (const auto& range : data.ranges) {
    if (nameOf(data, range.name) != "inner") continue;
    ASSERT_NE(range.parentId, 0u);
  }
}

TEST(HostRecorderTest, CapReachedDropsAndCountsInsteadOfGrowing) {
  Config config = hostOnly();
  config.hostBufferMb = 1;  // 8 chunks of 4096 records
  Profiler profiler(config);
  profiler.start();
  constexpr int kRanges = 100000;  // 200000 records: far past the cap
  for (int i = 0; i < kRanges; ++i) {
    Range range("r");
  }
  Trace trace = profiler.stop();
  TraceStats stats = trace.stats();
  EXPECT_GT(stats.droppedHostEvents, 0u);
  EXPECT_LT(stats.hostRanges, static_cast<uint64_t>(kRanges));
  // Every record is accounted for: kept as part of a range, or dropped.
  EXPECT_EQ(stats.hostRanges * 2 + stats.unfinishedRanges + stats.droppedHostEvents,
            static_cast<uint64_t>(kRanges) * 2);
}

TEST(HostRecorderTest, RestartedSessionsDoNotSeeEachOthersEvents) {
  Profiler profiler(hostOnly());
  profiler.start();
  {
    Range first("first session");
  }
  Trace first = profiler.stop();
  profiler.start();
  {
    Range second("second session");
  }
  Trace second = profiler.stop();
  ASSERT_EQ(first.data().ranges.size(), 1u);
  ASSERT_EQ(second.data().ranges.size(), 1u);
  EXPECT_EQ(nameOf(second.data(), second.data().ranges[0].name), "second session");
  EXPECT_GT(second.data().startNs, first.data().stopNs);
}

TEST(HostRecorderTest, InnermostOpenRangeIsWhatALaunchCallbackReads) {
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
  EXPECT_EQ(findRange(trace.data(), "outer")->externalId, seenOuter);
  EXPECT_EQ(findRange(trace.data(), "inner")->externalId, seenInner);
}

TEST(HostRecorderTest, ShortLivedThreadsReuseBuffersInsteadOfGrowingForever) {
  Profiler profiler(hostOnly());
  auto oneSessionOfShortThreads = [&] {
    profiler.start();
    for (int i = 0; i < 20; ++i) {
      std::thread([] { Range range("short-lived worker"); }).join();
    }
    return profiler.stop();
  };
  Trace first = oneSessionOfShortThreads();
  std::size_t buffersAfterFirst = detail::HostRecorder::instance().bufferCount();
  Trace second = oneSessionOfShortThreads();
  Trace third = oneSessionOfShortThreads();
  EXPECT_EQ(third.data().ranges.size(), 20u);
  EXPECT_EQ(detail::HostRecorder::instance().bufferCount(), buffersAfterFirst)
      << "buffers of exited, collected threads are reused";
  // Range ids stay unique across the reused buffers.
  std::vector<uint64_t> ids;
  for (const Trace* trace : {&first, &second, &third}) {
    for (const auto& range : trace->data().ranges) ids.push_back(range.externalId);
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

TEST(HostRecorderTest, LongCopiedNamesAreTruncatedNotLost) {
  Profiler profiler(hostOnly());
  profiler.start();
  std::string longName(10000, 'x');
  {
    Range range(longName);
  }
  Trace trace = profiler.stop();
  ASSERT_EQ(trace.data().ranges.size(), 1u);
  EXPECT_EQ(nameOf(trace.data(), trace.data().ranges[0].name), std::string(detail::kMaxCopiedNameBytes, 'x'));
}

}  // namespace
}  // namespace kinetrace
