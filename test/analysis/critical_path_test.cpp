// The critical path's graph (HTA's rules), its longest path, the split of its length into
// parts, and what its contributors would save: on small traces whose paths are worked out by
// hand in each test's comment (times in microseconds).

#include <gtest/gtest.h>

#include "critical_path_builder.h"

namespace kinetrace::detail {
namespace {

constexpr int64_t us(int64_t n) {
  return n * kUs;
}

const CriticalPathStep& onlyStep(const CriticalPathReport& report) {
  EXPECT_TRUE(report.failed.empty()) << report.failed;
  EXPECT_EQ(report.steps.size(), 1u);
  return report.steps.front();
}

TEST(CriticalPathTest, NestedOperatorsChainInTimeOrder) {
  // A [0,100] holds B [10,30] and C [50,70]: A's start, B, the time between B and C (A's),
  // C, then A's end: 100, all of it CPU; A's own time is 60.
  PathTraceBuilder t;
  t.range("A", 0, 100).range("B", 10, 30).range("C", 50, 70);
  const CriticalPathReport report = criticalPathOf(t.take());
  const CriticalPathStep& step = onlyStep(report);
  EXPECT_EQ(step.name, "the window");
  EXPECT_EQ(step.lengthNs, us(100));
  EXPECT_EQ(step.htaLengthNs, us(100));
  EXPECT_EQ(partOf(step, PathPart::Cpu), us(100));
  const PathContributor* a = contributor(step, "A", PathPart::Cpu);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->onPathNs, us(60));
  EXPECT_EQ(a->savingNs, us(60));  // B and C then make the path: 40
  const PathContributor* b = contributor(step, "B", PathPart::Cpu);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->onPathNs, us(20));
  EXPECT_EQ(b->savingNs, us(20));
  EXPECT_EQ(b->savingBoundNs, us(20));
}

TEST(CriticalPathTest, AGapBetweenOperatorsIsWaitingThatHtaWeighsAsNothing) {
  PathTraceBuilder t;
  t.range("X", 0, 10).range("Y", 30, 40);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(40));
  EXPECT_EQ(step.htaLengthNs, us(20));
  EXPECT_EQ(partOf(step, PathPart::Cpu), us(20));
  EXPECT_EQ(partOf(step, PathPart::HostGap), us(20));
}

TEST(CriticalPathTest, AKernelLaunchedOnAnEmptyQueueFollowsItsLaunchCall) {
  // aten::mm [0,30] launches at [10,15] a kernel [20,120]: mm's start to the call (10), the
  // call to the kernel (10), the kernel (100).
  PathTraceBuilder t;
  t.range("aten::mm", 0, 30).launch(10, 15, "gemm", 20, 120);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(120));
  EXPECT_EQ(step.htaLengthNs, us(120));
  EXPECT_EQ(partOf(step, PathPart::Cpu), us(10));
  EXPECT_EQ(partOf(step, PathPart::Launch), us(10));
  EXPECT_EQ(partOf(step, PathPart::Compute), us(100));
}

TEST(CriticalPathTest, AQueuedKernelFollowsTheStreamsPreviousOne) {
  // The second kernel is launched while the first runs: stream order (a gap of 1), not its
  // launch.
  PathTraceBuilder t;
  t.range("A", 0, 30).launch(5, 8, "first", 10, 110).launch(12, 15, "second", 111, 131);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(131));
  EXPECT_EQ(partOf(step, PathPart::Launch), us(5));
  EXPECT_EQ(partOf(step, PathPart::Compute), us(120));
  EXPECT_EQ(partOf(step, PathPart::GpuGap), us(1));
}

TEST(CriticalPathTest, AGapOfOverOneAndAHalfMillisecondsBreaksStreamOrder) {
  // The second kernel was queued (launched while the first ran) and starts 2 ms after it:
  // HTA draws no edge into it, so the path is the first kernel's alone.
  PathTraceBuilder t;
  t.range("A", 0, 30).launch(5, 8, "first", 10, 110).launch(12, 15, "second", 2110, 2120);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(110));
  EXPECT_EQ(partOf(step, PathPart::GpuGap), 0);
}

TEST(CriticalPathTest, AStreamSyncWaitsForTheStreamsLastOperation) {
  // item [0,260] launches [10,15] a kernel [20,220] and syncs [30,230]: the path runs
  // through the kernel, then the sync's wake-up (230 - 220), then the rest of item (30).
  // HTA weighs the wake-up as nothing.
  PathTraceBuilder t;
  t.range("aten::item", 0, 260)
      .launch(10, 15, "gemm", 20, 220)
      .sync("cudaStreamSynchronize", 30, 230, "Stream Sync", 20, 225, 7);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(260));
  EXPECT_EQ(step.htaLengthNs, us(250));
  EXPECT_EQ(partOf(step, PathPart::Cpu), us(40));
  EXPECT_EQ(partOf(step, PathPart::Launch), us(10));
  EXPECT_EQ(partOf(step, PathPart::Compute), us(200));
  EXPECT_EQ(partOf(step, PathPart::Sync), us(10));
  // The path itself, stretch by stretch.
  ASSERT_EQ(step.stretches.size(), 5u);
  EXPECT_EQ(step.stretches[0].name, "aten::item");
  EXPECT_EQ(step.stretches[1].part, PathPart::Launch);
  EXPECT_EQ(step.stretches[2].name, "gemm");
  EXPECT_EQ(step.stretches[2].startNs - step.startNs, us(20));
  EXPECT_EQ(step.stretches[2].ns, us(200));
  EXPECT_EQ(step.stretches[3].name, "cudaStreamSynchronize");
  EXPECT_EQ(step.stretches[4].ns, us(30));
}

TEST(CriticalPathTest, AStreamWaitsForAnEventRecordedOnAnother) {
  // K1 on stream 7 [10,60]; an event recorded after its launch, waited on by stream 20,
  // whose next kernel K2 [62,80] waits for K1's end: 5 + 5 + 50 + 2 (the wait) + 18.
  PathTraceBuilder t;
  t.range("A", 0, 40).launch(5, 7, "K1", 10, 60);
  const uint64_t record = t.call("cudaEventRecord", 20, 22);
  t.sync("cudaStreamWaitEvent", 25, 27, "Stream Wait Event", 28, 29, 20, record, 7)
      .launch(30, 32, "K2", 62, 80, 20);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(80));
  EXPECT_EQ(step.htaLengthNs, us(78));
  EXPECT_EQ(partOf(step, PathPart::Compute), us(68));
  EXPECT_EQ(partOf(step, PathPart::Sync), us(2));
  EXPECT_NE(contributor(step, "K2", PathPart::Compute), nullptr);
}

TEST(CriticalPathTest, AnEventSyncWaitsForTheOperationLaunchedBeforeTheRecord) {
  // The record follows K's launch on stream 7; cudaEventSynchronize [30,100] returns 5
  // after K [10,95] ends; then B [110,120].
  PathTraceBuilder t;
  t.range("A", 0, 20).launch(2, 4, "K", 10, 95);
  const uint64_t record = t.call("cudaEventRecord", 6, 8);
  t.sync("cudaEventSynchronize", 30, 100, "Event Sync", 31, 99, -1, record, 7).range("B", 110, 120);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  // 2 (A to the launch) + 8 (launch) + 85 (K) + 5 (wake-up) + 10 (gap) + 10 (B).
  EXPECT_EQ(step.lengthNs, us(120));
  EXPECT_EQ(step.htaLengthNs, us(105));
}

TEST(CriticalPathTest, AContextSyncWaitsForEveryStreamOfTheDevice) {
  // Two kernels on two streams; the device sync returns after the later (stream 20's).
  PathTraceBuilder t;
  t.range("A", 0, 20).launch(2, 4, "short", 10, 30).launch(5, 7, "long", 12, 90, 20);
  t.sync("cudaDeviceSynchronize", 25, 95, "Context Sync", 26, 92, -1);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  // 5 + 7 (launch) + 78 (long) + 5 (wake-up).
  EXPECT_EQ(step.lengthNs, us(95));
  EXPECT_EQ(partOf(step, PathPart::Sync), us(5));
}

TEST(CriticalPathTest, ABlockingCallWithNoRecordOfItsWaitWeighsItsDuration) {
  PathTraceBuilder t;
  t.call("cudaDeviceSynchronize", 10, 50);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(40));
  EXPECT_EQ(partOf(step, PathPart::Sync), us(40));
  EXPECT_EQ(step.htaLengthNs, 0);  // HTA: what it waited for takes its time, and nothing does
}

TEST(CriticalPathTest, TheBackwardThreadIsWalkedAsPartOfTheForwardThread) {
  // "forward" on thread 1, "autograd" on thread 2: one thread, so the backward operator
  // follows the forward one after a gap of 20.
  PathTraceBuilder t;
  t.range("## forward ##", 0, 50, 1, "user_annotation").range("aten::linear", 10, 40);
  t.range("autograd::engine::evaluate_function: AddmmBackward0", 60, 100, 2);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(90));
  EXPECT_EQ(step.htaLengthNs, us(70));
}

TEST(CriticalPathTest, ThreadsOfNeitherPassAreWalkedApart) {
  PathTraceBuilder t;
  t.range("aten::linear", 10, 40, 1).range("aten::add", 60, 100, 2);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(40));
}

TEST(CriticalPathTest, CallsHoldingTheRuntimeLockEndInTheOrderTheyFinish) {
  // Two threads' launches overlap: the second's end follows the first's end (the lock),
  // and (as in HTA) the second's own time is not an edge.
  PathTraceBuilder t;
  t.call("cudaLaunchKernel", 0, 10, 1);
  t.call("cudaLaunchKernel", 5, 20, 2);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(10));
  EXPECT_EQ(step.htaLengthNs, us(10));
  EXPECT_EQ(partOf(step, PathPart::Launch), us(10));
}

TEST(CriticalPathTest, TimeInAndAroundADataLoadingRangeIsDataLoading) {
  // zero_grad [0,5]; the loader's range [0,100] holds stack [80,90]; mm [120,150]. The gap
  // into the loader (75), stack (10) and the gap out of it (30) are data loading; the step's
  // end 50 after mm a host gap.
  PathTraceBuilder t;
  t.step("ProfilerStep#1", 0, 200)
      .range("aten::zero_grad", 0, 5)
      .range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 6, 100, 1,
             "user_annotation")
      .range("aten::stack", 80, 90)
      .range("aten::mm", 120, 150);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.name, "ProfilerStep#1");
  EXPECT_EQ(step.lengthNs, us(200));
  EXPECT_EQ(step.htaLengthNs, us(45));
  EXPECT_EQ(partOf(step, PathPart::DataLoading), us(115));
  EXPECT_EQ(partOf(step, PathPart::Cpu), us(35));
  EXPECT_EQ(partOf(step, PathPart::HostGap), us(50));
}

TEST(CriticalPathTest, EachStepHasItsOwnPathFromItsStartToItsEnd) {
  // Step 1: the host from its start to A, A, the host to its end. Step 2: the same around B
  // (its kernel ends before B does). HTA's lengths: A's, B's.
  PathTraceBuilder t;
  t.step("ProfilerStep#1", 0, 100).range("A", 10, 30);
  t.step("ProfilerStep#2", 100, 200).range("B", 110, 190).launch(120, 125, "K", 130, 140);
  const CriticalPathReport report = criticalPathOf(t.take());
  ASSERT_EQ(report.steps.size(), 2u);
  EXPECT_EQ(report.steps[0].lengthNs, us(100));
  EXPECT_EQ(report.steps[0].htaLengthNs, us(20));
  EXPECT_EQ(report.steps[1].lengthNs, us(100));
  EXPECT_EQ(report.steps[1].htaLengthNs, us(80));
  EXPECT_EQ(report.steps[1].name, "ProfilerStep#2");
}

TEST(CriticalPathTest, AKernelBelongsToTheStepItsLaunchCallStartedIn) {
  // Launched at the end of step 1, running in step 2: step 1's (80 before A, A to the
  // launch, the launch, the kernel).
  PathTraceBuilder t;
  t.step("ProfilerStep#1", 0, 100).range("A", 80, 99).launch(90, 95, "K", 150, 250);
  t.step("ProfilerStep#2", 100, 200).range("B", 110, 120);
  const CriticalPathReport report = criticalPathOf(t.take());
  ASSERT_EQ(report.steps.size(), 2u);
  EXPECT_EQ(report.steps[0].lengthNs, us(80 + 10 + 60 + 100));
  EXPECT_EQ(report.steps[0].htaLengthNs, us(10 + 60 + 100));
  EXPECT_EQ(report.steps[1].lengthNs, us(100));
}

TEST(CriticalPathTest, SavingIsWhatThePathLosesBoundedByTheLongestPathAvoidingIt) {
  // A [0,50] launches [10,12] K [15,95]; the host then syncs [60,100] on K's stream. Path:
  // 10 + 5 (launch) + 80 (K) + 5 (wake-up) = 100. Without K's time the host's path (A 50,
  // gap 10, the sync's 5 once K was done) is the longest: 65, so K saves 35 of its 80.
  PathTraceBuilder t;
  t.range("aten::launcher", 0, 50)
      .launch(10, 12, "K", 15, 95)
      .sync("cudaStreamSynchronize", 60, 100, "Stream Sync", 16, 96, 7);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(100));
  EXPECT_EQ(step.htaLengthNs, us(95));
  const PathContributor* k = contributor(step, "K", PathPart::Compute);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->onPathNs, us(80));
  EXPECT_EQ(k->savingNs, us(35));
  EXPECT_EQ(k->savingBoundNs, us(35));
}

TEST(CriticalPathTest, TheSavingOfANameOnSeveralPathsIsExactAndUnderItsBound) {
  // gemm runs twice on stream 7 (K1 [5,55], K2 [56,106]) before tail [107,207]: 207. Stream
  // 20's side [57,197] waits for K1: 1 + 4 + 50 + 2 + 140 = 197. Without gemm's time the side
  // path is longest (147): saves 60. The longest path using no gemm is side's from K1's end
  // (142), so the bound is 207 - 142 = 65.
  PathTraceBuilder t;
  t.range("A", 0, 10).launch(1, 2, "gemm", 5, 55);
  const uint64_t record = t.call("cudaEventRecord", 3, 4);
  t.sync("cudaStreamWaitEvent", 4, 5, "Stream Wait Event", 5, 6, 20, record, 7)
      .launch(6, 7, "side", 57, 197, 20)
      .launch(7, 8, "gemm", 56, 106)
      .launch(8, 9, "tail", 107, 207);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  EXPECT_EQ(step.lengthNs, us(207));
  const PathContributor* gemm = contributor(step, "gemm", PathPart::Compute);
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->events, 2u);
  EXPECT_EQ(gemm->onPathNs, us(100));
  EXPECT_EQ(gemm->savingNs, us(60));
  EXPECT_EQ(gemm->savingBoundNs, us(65));
}

TEST(CriticalPathTest, ContributorsAreTheLongestOnThePathFirstAndAtMostTop) {
  PathTraceBuilder t;
  for (int i = 0; i < 12; ++i) t.range("op" + std::to_string(i), 20 * i, 20 * i + i + 1);
  AnalysisOptions options;
  options.top = 3;
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take(), options));
  ASSERT_EQ(step.contributors.size(), 3u);
  EXPECT_EQ(step.contributors[0].part, PathPart::HostGap);  // the gaps: 19 + 18 + ... + 9
  EXPECT_EQ(step.contributors[1].name, "op11");
  EXPECT_EQ(step.contributors[2].name, "op10");
}

TEST(CriticalPathTest, EveryOperationOfAGraphLaunchIsOnItsStream) {
  // One cudaGraphLaunch, three kernels of 800 us sharing its correlation id (HTA keeps the
  // last only): queued behind one another, the chain is prologue, the three, the sync.
  PathTraceBuilder t;
  t.range("replay", 0, 20).launch(1, 3, "prologue", 4, 19);
  const uint64_t graph = t.call("cudaGraphLaunch", 5, 13);
  t.gpu(graph, "k0", 25, 825).gpu(graph, "k1", 826, 1626).gpu(graph, "k2", 1627, 2427);
  t.sync("cudaStreamSynchronize", 30, 2430, "Stream Sync", 2420, 2428, 7);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  // 1 (replay to the launch) + 3 (launch) + 15 + 6 (gap) + 3 * 800 + 2 (gaps) + 3 (wake-up).
  EXPECT_EQ(step.lengthNs, us(1 + 3 + 15 + 6 + 2400 + 2 + 3));
  EXPECT_EQ(partOf(step, PathPart::Compute), us(2415));
}

TEST(CriticalPathTest, ThePathKeepsItsLongestStretchesInOrder) {
  // Twenty operators of 1..20 us with gaps of 1 us: the twelve longest stretches are the
  // last twelve operators, in the path's order.
  PathTraceBuilder t;
  int64_t at = 0;
  for (int64_t i = 1; i <= 20; ++i) {
    t.range("op" + std::to_string(i), at, at + i);
    at += i + 1;
  }
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  ASSERT_EQ(step.stretches.size(), CriticalPathStep::kStretches);
  EXPECT_EQ(step.stretches.front().name, "op9");
  EXPECT_EQ(step.stretches.back().name, "op20");
  EXPECT_EQ(step.stretches.back().ns, us(20));
}

TEST(CriticalPathTest, ThePathOverTheStepSaysWhereItWas) {
  // Host [0,50], then the GPU [60,200] (the kernel launched at 45), past the step's end at
  // 180: the timeline's first bins are CPU, its last compute.
  PathTraceBuilder t;
  t.step("ProfilerStep#1", 0, 180).range("A", 0, 50).launch(45, 48, "K", 60, 200);
  const CriticalPathStep step = onlyStep(criticalPathOf(t.take()));
  ASSERT_EQ(step.timeline.size(), CriticalPathStep::kTimelineBins);
  EXPECT_EQ(step.timeline.front(), static_cast<uint8_t>(PathPart::Cpu));
  EXPECT_EQ(step.timeline.back(), static_cast<uint8_t>(PathPart::Compute));
}

TEST(CriticalPathTest, NotAskedForMeansNotComputed) {
  PathTraceBuilder t;
  t.range("A", 0, 10);
  const RankReport report = analyzeTrace(t.take(), AnalysisOptions{});
  EXPECT_FALSE(report.criticalPath.asked);
  EXPECT_TRUE(report.criticalPath.steps.empty());
}

TEST(CriticalPathTest, ATraceReadWithoutItsEventsSaysSo) {
  TraceBuilder t;  // its collector keeps no critical-path events
  t.range("A", 0, 10);
  const CriticalPathReport report = criticalPathOf(t.take());
  EXPECT_TRUE(report.asked);
  EXPECT_NE(report.failed.find("without the events"), std::string::npos);
}

}  // namespace
}  // namespace kinetrace::detail
