// The full-queue pass: per stream, the time its launch queue held options.maxQueueLength
// operations or more (HTA's get_time_spent_blocked_on_full_queue), and its share of the window.

#include "analysis/passes/full_queue_pass.h"

#include <gtest/gtest.h>

#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

FullQueueReport fullQueueOf(CollectedTrace trace, int64_t limit) {
  AnalysisOptions options;
  options.maxQueueLength = limit;
  PassFixture f(std::move(trace), options);
  FullQueuePass pass(f.context());
  f.addOperations(pass);
  RankReport report;
  pass.finish(report);
  return report.fullQueue;
}

// Stream 7: three launches at 0, 1 and 2 us, started at 10, 20 and 30 us (depth 1, 2, 3,
// then 2, 1, 0); stream 9: one launch, never more than one queued. The window: 0 to 100 us.
CollectedTrace queues() {
  TraceBuilder b;
  b.range("main", 0, 100);
  b.op("a", 0, 1, 10, 15);
  b.op("b", 1, 2, 20, 25);
  b.op("c", 2, 3, 30, 35);
  b.op("d", 4, 5, 6, 8, "kernel", 9);
  return b.take();
}

TEST(FullQueuePassTest, AStreamIsFullFromTheLaunchThatFillsItToTheStartThatEmptiesIt) {
  const FullQueueReport q = fullQueueOf(queues(), 2);
  EXPECT_EQ(q.maxQueueLength, 2);
  EXPECT_EQ(q.windowNs, 100 * kUs);
  ASSERT_EQ(q.streams.size(), 1u) << "stream 9 never held 2";
  const FullQueueStream& s = q.streams[0];
  EXPECT_EQ(s.stream, 7);
  EXPECT_EQ(s.maxDepth, 3);
  EXPECT_EQ(s.fullNs, 19 * kUs) << "2 or more queued from b's launch (1 us) to b's start (20 us)";
  EXPECT_DOUBLE_EQ(s.windowShare, 0.19);
  EXPECT_EQ(q.fullNs, 19 * kUs);
  EXPECT_EQ(q.streamsFull, 1u);
}

TEST(FullQueuePassTest, AtTheDefaultLimitNoStreamOfAFewOperationsIsFull) {
  const FullQueueReport q = fullQueueOf(queues(), 1024);
  EXPECT_TRUE(q.streams.empty());
  EXPECT_EQ(q.fullNs, 0);
}

TEST(FullQueuePassTest, ChangesAtOneMomentCountTogether) {
  // A launch at 10 us as a's start: the depth is 1 either way, never 2 for a while.
  TraceBuilder b;
  b.op("a", 0, 1, 10, 15);
  b.op("b", 10, 11, 20, 25);
  const FullQueueReport q = fullQueueOf(b.take(), 2);
  EXPECT_TRUE(q.streams.empty());
}

TEST(FullQueuePassTest, StreamsComeTheLongestFullFirstAndTheTableIsBounded) {
  TraceBuilder b;
  for (uint32_t stream = 1; stream <= 12; ++stream) {
    // Two launches at 0 and 1 us on each stream, both started `stream` us later.
    b.op("k", 0, 1, 1 + stream, 2 + stream, "kernel", stream);
    b.op("k", 1, 2, 2 + stream, 3 + stream, "kernel", stream);
  }
  const FullQueueReport q = fullQueueOf(b.take(), 2);
  EXPECT_EQ(q.streamsFull, 12u);
  ASSERT_EQ(q.streams.size(), 10u) << "options.top";
  EXPECT_EQ(q.streams[0].stream, 12);
  EXPECT_EQ(q.streams[0].fullNs, 12 * kUs);
  EXPECT_EQ(q.streams[9].stream, 3);
}

TEST(FullQueuePassTest, SpilledListsGiveTheSameFigures) {
  TraceBuilder inMemory;
  TraceBuilder spilled(-1, 4096);
  for (TraceBuilder* b : {&inMemory, &spilled}) {
    for (int i = 0; i < 3000; ++i) b->op("k", i, i + 1, 2 * i + 50, 2 * i + 51);
  }
  const FullQueueReport a = fullQueueOf(inMemory.take(), 40);
  const FullQueueReport b = fullQueueOf(spilled.take(), 40);
  ASSERT_EQ(a.streams.size(), 1u);
  EXPECT_GT(a.streams[0].fullNs, 0);
  EXPECT_EQ(a.streams[0].fullNs, b.streams[0].fullNs);
  EXPECT_EQ(a.streams[0].maxDepth, b.streams[0].maxDepth);
}

}  // namespace
}  // namespace kinetrace::detail::passes
