// The critical path on traces from a stranger: timestamps that make cycles or run
// backwards, events of no duration, operations whose launch the trace lacks, a step too large
// for the memory allowed, and a step of many events. Each is handled and counted, never a
// crash or an unbounded allocation.

#include <gtest/gtest.h>

#include <random>

#include "critical_path_builder.h"

namespace kinetrace::detail {
namespace {

constexpr int64_t us(int64_t n) {
  return n * kUs;
}

uint64_t leftOutMatching(const CriticalPathReport& report, std::string_view words) {
  uint64_t count = 0;
  for (const auto& [why, n] : report.leftOut) {
    if (why.find(words) != std::string::npos) count += n;
  }
  return count;
}

TEST(CriticalPathHostileTest, ACycleFromBadTimestampsIsBrokenAndCounted) {
  // An operator [0,10] and two launch calls on its thread that cross it ([5,15], [12,14]):
  // nested by time, the second call follows the first's end (15) and the runtime lock puts
  // the first's end after the second's (14), a cycle. HTA refuses such a graph.
  PathTraceBuilder t;
  t.range("A", 0, 10);
  t.call("cudaLaunchKernel", 5, 15);
  t.call("cudaLaunchKernel", 12, 14);
  const CriticalPathReport report = criticalPathOf(t.take());
  ASSERT_TRUE(report.failed.empty());
  ASSERT_EQ(report.steps.size(), 1u);
  const CriticalPathStep& step = report.steps.front();
  EXPECT_GE(step.cycleEdges, 1u);
  EXPECT_GE(step.backwardEdges, 1u);
  EXPECT_GE(leftOutMatching(report, "closing a cycle"), 1u);
  EXPECT_GT(step.lengthNs, 0);
  EXPECT_LE(step.lengthNs, us(15));  // never more than the events' span
}

TEST(CriticalPathHostileTest, AChildEndingAfterItsParentWeighsNothingThere) {
  // B ends 1 ns after A, as nanosecond timestamps do: B's end to A's end runs backwards.
  PathTraceBuilder t;
  t.rangeNs("A", 0, 10'000).rangeNs("B", 2'000, 10'001);
  const CriticalPathReport report = criticalPathOf(t.take());
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_EQ(report.steps.front().lengthNs, 10'001);
  EXPECT_EQ(report.steps.front().backwardEdges, 1u);
  EXPECT_EQ(leftOutMatching(report, "runs backwards"), 1u);
}

TEST(CriticalPathHostileTest, EventsOfNoDurationAreLeftOutAndCounted) {
  PathTraceBuilder t;
  t.range("A", 0, 10).range("instant", 5, 5).range("B", 20, 30);
  const CriticalPathReport report = criticalPathOf(t.take());
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_EQ(report.steps.front().lengthNs, us(30));
  EXPECT_EQ(leftOutMatching(report, "of no duration"), 1u);
}

TEST(CriticalPathHostileTest, OperationsWithoutTheirLaunchCallAreCounted) {
  PathTraceBuilder t;
  t.range("A", 0, 10).launch(2, 4, "K", 5, 50);
  t.gpu(999, "orphan", 60, 70);  // a correlation no call has
  const CriticalPathReport report = criticalPathOf(t.take());
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_EQ(report.steps.front().lengthNs, us(2 + 3 + 45));
  EXPECT_EQ(leftOutMatching(report, "call is not in the trace"), 1u);
}

TEST(CriticalPathHostileTest, AStreamWaitWithinOneStreamDrawsNoEdge) {
  // The event is recorded and waited on on stream 7 itself: HTA refuses such a graph;
  // kinetrace leaves the wait out (stream order says it) and counts it.
  PathTraceBuilder t;
  t.range("A", 0, 10).launch(1, 2, "K1", 5, 50);
  const uint64_t record = t.call("cudaEventRecord", 3, 4);
  t.sync("cudaStreamWaitEvent", 4, 5, "Stream Wait Event", 5, 6, 7, record, 7)
      .launch(6, 7, "K2", 51, 61);
  const CriticalPathReport report = criticalPathOf(t.take());
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_EQ(report.steps.front().sameStreamWaits, 1u);
  EXPECT_EQ(report.steps.front().lengthNs, us(1 + 4 + 45 + 1 + 10));
}

TEST(CriticalPathHostileTest, AStepTooLargeForTheMemoryAllowedIsSkippedAndSaid) {
  // 16 MB allowed; one step of 40,000 operators (a graph of about 17 MB), one of a few.
  ReadBudget& budget = budgetOf(std::size_t{16} << 20);
  PathTraceBuilder t(budget, std::size_t{16} << 20);
  t.step("ProfilerStep#1", 0, 100).range("A", 10, 30);
  t.step("ProfilerStep#2", 100, 102 + 2 * 40'000);
  for (int64_t i = 0; i < 40'000; ++i) t.range("op", 101 + 2 * i, 102 + 2 * i);
  const CriticalPathReport report = criticalPathOf(t.take());
  ASSERT_TRUE(report.failed.empty()) << report.failed;
  ASSERT_EQ(report.steps.size(), 2u);
  EXPECT_TRUE(report.steps[0].skipped.empty());
  EXPECT_EQ(report.steps[0].htaLengthNs, us(20));
  EXPECT_NE(report.steps[1].skipped.find("raise --memory-mb"), std::string::npos)
      << report.steps[1].skipped;
  EXPECT_EQ(report.steps[1].events, 40'001u);
}

TEST(CriticalPathHostileTest, AStepOfManyEventsIsSolvedWhole) {
  // 100,000 operators of 1 us with gaps of 1 us, each launching a kernel of 1 us: the host
  // chain is the path, 199,999 us.
  PathTraceBuilder t;
  constexpr int64_t kOps = 100'000;
  for (int64_t i = 0; i < kOps; ++i) t.range("op", 2 * i, 2 * i + 1);
  const CriticalPathReport report = criticalPathOf(t.take());
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_EQ(report.steps.front().lengthNs, us(2 * kOps - 1));
  EXPECT_EQ(report.steps.front().htaLengthNs, us(kOps));
  EXPECT_EQ(report.steps.front().events, static_cast<uint64_t>(kOps));
}

TEST(CriticalPathHostileTest, RangesNestedAHundredThousandDeepAreWalkedWhole) {
  // Each operator inside the one before: no walk may recurse, nor climb the stack per edge.
  PathTraceBuilder t;
  constexpr int64_t kDepth = 100'000;
  for (int64_t i = 0; i < kDepth; ++i) t.range("op", i, 2 * kDepth - i);
  const CriticalPathReport report = criticalPathOf(t.take());
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_EQ(report.steps.front().lengthNs, us(2 * kDepth));
}

TEST(CriticalPathHostileTest, RandomTracesKeepThePathsInvariants) {
  // Operators, calls, kernels, syncs and event waits at random times, nested or crossing,
  // on random threads and streams, joined to random records: whatever the graph, kinetrace's
  // length is at least HTA's (it weighs more, never less), and each contributor saves no
  // more than its bound, which is no more than its time on the path.
  std::mt19937_64 random(20261207);
  auto at = [&random](int64_t most) { return static_cast<int64_t>(random() % most); };
  const char* calls[] = {"cudaLaunchKernel", "cudaMemcpyAsync",       "cudaStreamSynchronize",
                         "cudaEventRecord",  "cudaDeviceSynchronize", "cuLaunchKernel"};
  const char* syncs[] = {"Stream Sync", "Context Sync", "Event Sync", "Stream Wait Event"};
  for (int trace = 0; trace < 30; ++trace) {
    PathTraceBuilder t;
    t.step("ProfilerStep#1", 0, 500).step("ProfilerStep#2", 400, 1000);
    std::vector<uint64_t> records;
    for (int i = 0; i < 120; ++i) {
      const int64_t start = at(1000);
      const int64_t end = start + at(60) - 5;  // some of no duration, some negative
      const int64_t tid = 1 + at(3);
      switch (at(4)) {
        case 0:
          t.range(i % 2 ? "forward op" : "autograd op", start, end, tid);
          break;
        case 1:
          records.push_back(t.call(calls[at(6)], start, end, tid));
          break;
        case 2:
          t.launch(start, end, "kernel", start + at(200) - 20, start + at(300), 7 + 13 * at(2), tid,
                   calls[at(2) == 0 ? 0 : 5]);
          break;
        default:
          t.sync(calls[2 + at(3)], start, end, syncs[at(4)], start + at(50), end + at(50),
                 at(3) == 0 ? -1 : 7 + 13 * at(2),
                 records.empty() ? 0 : records[at(records.size())], 7 + 13 * at(2), tid);
      }
    }
    const CriticalPathReport report = criticalPathOf(t.take());
    ASSERT_TRUE(report.failed.empty()) << report.failed;
    ASSERT_EQ(report.steps.size(), 2u);
    for (const CriticalPathStep& step : report.steps) {
      ASSERT_TRUE(step.skipped.empty());
      EXPECT_GE(step.lengthNs, step.htaLengthNs);
      EXPECT_GE(step.htaLengthNs, 0);
      int64_t parts = 0;
      for (int64_t ns : step.parts) parts += ns;
      EXPECT_EQ(parts, step.lengthNs);
      for (const PathContributor& c : step.contributors) {
        EXPECT_GE(c.savingNs, 0);
        EXPECT_LE(c.savingNs, c.savingBoundNs);
        EXPECT_LE(c.savingBoundNs, c.onPathNs);
      }
    }
  }
}

TEST(CriticalPathHostileTest, ListsThatSpillGiveTheSamePaths) {
  // Each list keeping 4 kB in memory (the rest in temporary files): the same figures.
  auto build = [](PathTraceBuilder& t) {
    for (int64_t s = 0; s < 20; ++s) {
      const int64_t at = 1000 * s;
      t.step("ProfilerStep#" + std::to_string(s), at, at + 900);
      for (int64_t i = 0; i < 40; ++i) {
        t.range("aten::mm", at + 20 * i, at + 20 * i + 10)
            .launch(at + 20 * i + 2, at + 20 * i + 4, "gemm", at + 20 * i + 6, at + 20 * i + 25);
      }
    }
  };
  PathTraceBuilder inMemory;
  build(inMemory);
  PathTraceBuilder spilled(budgetOf(), 4096 * 32);
  build(spilled);
  const CriticalPathReport a = criticalPathOf(inMemory.take());
  const CriticalPathReport b = criticalPathOf(spilled.take());
  ASSERT_EQ(a.steps.size(), 20u);
  ASSERT_EQ(b.steps.size(), 20u);
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].lengthNs, b.steps[i].lengthNs);
    EXPECT_EQ(a.steps[i].parts, b.steps[i].parts);
    EXPECT_GT(a.steps[i].lengthNs, 0);
  }
}

}  // namespace
}  // namespace kinetrace::detail
