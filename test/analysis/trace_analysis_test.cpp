// `kinetrace analyze` on small traces whose every figure is known by construction: busy and
// idle time and the idle causes, kernel tables, tiny kernels, launch latency and queue
// depth, steps and data loading, memory growth, communication overlap, stragglers.

#include "analysis/trace_analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "analysis/finding_texts.h"
#include "analysis/trace_collector.h"
#include "analysis/trace_reader.h"
#include "analysis_trace_builder.h"
#include "support/temp_dir.h"

namespace kinetrace::detail {
namespace {

// TraceBuilder, analyze() and one(): analysis_trace_builder.h.

// One GPU, 200 us, one of each idle cause: the time before the first kernel; a gap while
// the host was busy (host wait, then launch); a queued kernel 10 us after the one before
// it (kernel wait, under HTA's 30 us); a queued copy made to wait by a Stream Wait Event
// (waiting on other work); a queued kernel that waited 40 us for nothing the trace shows
// (other); the time after the last operation (other).
CollectedTrace idleCauses() {
  TraceBuilder b;
  b.range("ProfilerStep#1", 0, 200);
  b.op("gemm", 5, 8, 10, 20);                  // idle 0-10: before the first GPU operation
  b.op("ncclKernel_AllReduce", 8, 9, 20, 30);  // queued: no gap
  b.range("optimizer.step", 30, 45);
  b.op("gemm", 40, 42, 50, 60);                         // idle 30-50: host 30-40, launch 40-50
  b.op("relu", 45, 46, 70, 80);                         // idle 60-70, queued: kernel wait
  b.sync("Stream Wait Event", 47, 48, 7, 12);           // stream 7 waits for stream 12's event
  b.op("Memcpy HtoD", 55, 56, 120, 130, "gpu_memcpy");  // idle 80-120: other work
  b.op("softmax", 57, 58, 170, 180);                    // idle 130-170: other
  b.sync("Stream Wait Event", 150, 151, 12);            // on a stream with no work: no stream row
  return b.take();                                      // idle 180-200: other
}

TEST(TraceAnalysisTest, BusyTimeSplitsByWhatRanAndIdleTimeByWhyTheGpuWaited) {
  const RankReport r = analyze(idleCauses());
  ASSERT_EQ(r.devices.size(), 1u);
  const TimeBreakdown& t = r.devices[0].time;
  EXPECT_EQ(t.windowNs, 200 * kUs);
  EXPECT_EQ(t.busyNs, 60 * kUs);
  EXPECT_EQ(t.computeNs, 40 * kUs);
  EXPECT_EQ(t.communicationNs, 10 * kUs);
  EXPECT_EQ(t.memoryNs, 10 * kUs);
  EXPECT_EQ(t.idleNs, 140 * kUs);
  EXPECT_EQ(t.beforeFirstOpNs, 10 * kUs);
  EXPECT_EQ(t.hostWaitNs, 10 * kUs);
  EXPECT_EQ(t.launchNs, 10 * kUs);
  EXPECT_EQ(t.launchQueuedNs, 0);
  EXPECT_EQ(t.kernelWaitNs, 10 * kUs);
  EXPECT_EQ(t.otherWorkWaitNs, 40 * kUs);
  EXPECT_EQ(t.otherIdleNs, 60 * kUs);
  EXPECT_EQ(r.time.busyNs, t.busyNs) << "one device: the trace's total is the device's";
}

// HTA's split of a queued operation's gap: shorter than the consecutive-kernel delay, the
// GPU moving on to the next kernel ("kernel wait"). HTA compares its default, 30, with
// gaps in microseconds: 30 us is the default here too.
TEST(TraceAnalysisTest, AQueuedGapShorterThanThirtyMicrosecondsIsKernelWaitAsInHta) {
  TraceBuilder b;
  b.op("a", 0, 1, 10, 20);
  b.op("b", 2, 3, 22, 30);    // queued, 2 us after a: kernel wait
  b.op("c", 4, 5, 59, 70);    // queued, 29 us after b: kernel wait
  b.op("d", 6, 7, 100, 110);  // queued, 30 us after c: not (HTA's test is "shorter than")
  const TimeBreakdown t = analyze(b.take()).devices[0].time;
  EXPECT_EQ(t.kernelWaitNs, 31 * kUs);
  EXPECT_EQ(t.otherIdleNs, 30 * kUs) << "nothing in the trace says why d waited";
  EXPECT_EQ(t.otherWorkWaitNs, 0);

  AnalysisOptions options;
  options.consecutiveKernelNs = 5 * kUs;
  const TimeBreakdown narrow = analyze(idleCauses(), options).devices[0].time;
  EXPECT_EQ(narrow.kernelWaitNs, 0);
  EXPECT_EQ(narrow.otherIdleNs, 70 * kUs) << "relu's 10 us gap is no longer kernel wait";
  EXPECT_EQ(narrow.hostWaitNs, 10 * kUs) << "host wait does not depend on it";
}

// The time before the first GPU operation is the program starting or the profiler warming
// up, whatever launched that operation: never "host wait", never sent to tiny kernels.
TEST(TraceAnalysisTest, TheTimeBeforeTheFirstGpuOperationIsItsOwnCause) {
  TraceBuilder b;
  b.range("ProfilerStep#1", 0, 30'000);
  b.range("aten::copy_", 23'990, 24'010, 1, "cpu_op");
  b.op("Memcpy HtoD", 24'000, 24'005, 24'010, 24'100, "gpu_memcpy", 7, 1);
  for (int i = 0; i < 50; ++i) {
    b.op("gemm", 24'100 + i * 100, 24'101 + i * 100, 24'102 + i * 100, 24'200 + i * 100);
  }
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  const RankReport& r = report.ranks[0];
  EXPECT_EQ(r.time.beforeFirstOpNs, 24'010 * kUs);
  EXPECT_LT(r.time.hostWaitNs, 1'000 * kUs);
  ASSERT_FALSE(r.gaps.empty());
  EXPECT_EQ(r.gaps[0].cause, "before the first GPU operation");
  EXPECT_EQ(r.steps[0].time.beforeFirstOpNs, 24'010 * kUs) << "in the step's view too";
  const std::string text = ::testing::PrintToString(report.findings);
  EXPECT_NE(text.find("24.01 ms (80.0% of the window) passed before the first GPU operation"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("start tracing later"), std::string::npos) << text;
  EXPECT_EQ(text.find("host wait in"), std::string::npos) << text;
  EXPECT_EQ(text.find("tiny kernels"), std::string::npos) << "there are none: " << text;
  EXPECT_EQ(text.find("waits for the host"), std::string::npos) << text;
}

// A queued operation whose launch call had not returned when the GPU ran out of work was
// being launched (a first launch loading its module takes milliseconds).
TEST(TraceAnalysisTest, AGapWhileTheQueuedOperationsLaunchCallStillRanIsLaunchTime) {
  TraceBuilder b;
  b.op("a", 0, 1, 2, 10);
  b.op("first_use", 5, 2'000, 2'010, 2'020);  // the call began while a ran, ended long after
  const RankReport r = analyze(b.take());
  const TimeBreakdown& t = r.devices[0].time;
  EXPECT_EQ(t.launchNs, 2'000 * kUs);
  EXPECT_EQ(t.launchQueuedNs, 2'000 * kUs) << "HTA counts this as other";
  EXPECT_EQ(t.otherIdleNs + t.otherWorkWaitNs + t.hostWaitNs, 0);
  ASSERT_FALSE(r.gaps.empty());
  EXPECT_EQ(r.gaps[0].cause, "launch");
}

// The launching thread still inside an earlier launch call (a first launch loading its
// module) when the GPU ran out of work: launch time, not host wait, and said so.
TEST(TraceAnalysisTest, AGapWhileTheHostWasStillInAnEarlierLaunchCallIsLaunchTime) {
  TraceBuilder b;
  b.range("ProfilerStep#1", 0, 3'100);
  b.op("first", 0, 2'800, 10, 11);             // ran at once; its call returned at 2,800
  b.op("second", 2'810, 2'820, 2'830, 2'840);  // launched once the first call returned
  b.op("third", 2'850, 2'860, 3'000, 3'100);   // a host wait of its own, no call before it
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  const RankReport& r = report.ranks[0];
  const TimeBreakdown& t = r.devices[0].time;
  EXPECT_EQ(t.launchPreviousNs, (2'800 - 11) * kUs);
  EXPECT_EQ(t.hostWaitNs, 10 * kUs + 10 * kUs) << "2,800-2,810 and 2,840-2,850";
  EXPECT_EQ(t.launchNs, (2'800 - 11 + 20 + 150) * kUs);
  ASSERT_FALSE(r.gaps.empty());
  EXPECT_EQ(r.gaps[0].cause, "launch");
  EXPECT_EQ(r.gaps[0].evidence, "the host was still in the launch call of first (it took 2.80 ms)");
  EXPECT_EQ(r.slowestCallNs, 2'800 * kUs);
  const std::string findings = ::testing::PrintToString(report.findings);
  EXPECT_NE(findings.find("still inside a launch call (the slowest: 2.80 ms, first)"),
            std::string::npos)
      << findings;
  EXPECT_NE(findings.find("CUDA_MODULE_LOADING=EAGER"), std::string::npos);
}

// "Waiting on other work" only where the trace shows what: a Stream Wait Event on the
// operation's stream since the stream's previous launch, named in the gap and the finding.
TEST(TraceAnalysisTest, WaitingOnOtherWorkNamesTheStreamWaitEventFound) {
  const AnalysisReport report = analyzeTraces(one(idleCauses()), {});
  const RankReport& r = report.ranks[0];
  const auto copyGap = std::find_if(r.gaps.begin(), r.gaps.end(),
                                    [](const GapReport& g) { return g.endedBy == "Memcpy HtoD"; });
  ASSERT_NE(copyGap, r.gaps.end());
  EXPECT_EQ(copyGap->cause, "waiting on other work");
  EXPECT_EQ(copyGap->evidence, "Stream Wait Event on stream 7 (for stream 12's work)");
  const auto softmaxGap = std::find_if(r.gaps.begin(), r.gaps.end(),
                                       [](const GapReport& g) { return g.endedBy == "softmax"; });
  ASSERT_NE(softmaxGap, r.gaps.end());
  EXPECT_EQ(softmaxGap->cause, "other")
      << "the wait came between relu's launch and the copy's: the copy's to wait on";
  EXPECT_EQ(softmaxGap->evidence, "");
  ASSERT_EQ(r.devices[0].streams.size(), 1u) << "stream 12 has a wait, and no work: no row";
  ASSERT_EQ(r.otherWork.size(), 1u);
  EXPECT_EQ(r.otherWork[0].gaps, 1u);
  EXPECT_EQ(r.otherWork[0].ns, 40 * kUs);
  const std::string findings = ::testing::PrintToString(report.findings);
  EXPECT_NE(findings.find("20.0% waiting on other work (Stream Wait Event on stream 7 (for "
                          "stream 12's work))"),
            std::string::npos)
      << findings;
  const nlohmann::json json = nlohmann::json::parse(reportJson(report));
  EXPECT_EQ(json["ranks"][0]["other_work_waits"][0]["found"],
            "Stream Wait Event on stream 7 (for stream 12's work)");
}

// One stream, no events, two syncs of the host: the syncs made the host wait, not the
// queued kernels. Long gaps with nothing in the trace to say why are "other".
TEST(TraceAnalysisTest, ASingleStreamWithTwoSyncsAndNoEventsNeverWaitsOnOtherWork) {
  TraceBuilder b;
  b.range("ProfilerStep#1", 0, 1'000);
  for (int i = 0; i < 10; ++i) b.op("k", i * 3, i * 3 + 1, 100 + i * 10, 108 + i * 10);
  b.sync("Stream Sync", 31, 200, 7);       // waits for the kernels; ends as the GPU drains
  b.op("after_sync", 260, 262, 270, 300);  // host wait: launched after the sync returned
  b.op("queued", 263, 264, 400, 410);      // queued, waits 100 us for nothing shown
  b.sync("Context Sync", 265, 412, -1);
  b.op("last", 420, 422, 430, 440);
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  const RankReport& r = report.ranks[0];
  EXPECT_EQ(r.time.otherWorkWaitNs, 0);
  EXPECT_EQ(r.time.otherIdleNs, (100 + 560) * kUs);
  EXPECT_EQ(r.syncRecords, 2u);
  const std::string text = formatReport(report, {});
  EXPECT_EQ(text.find("waiting on other work"), std::string::npos) << text;
  // The host-wait gaps that opened while the host was in a sync say so.
  const auto afterSync = std::find_if(r.gaps.begin(), r.gaps.end(),
                                      [](const GapReport& g) { return g.endedBy == "after_sync"; });
  ASSERT_NE(afterSync, r.gaps.end());
  EXPECT_EQ(afterSync->cause, "host wait");
  EXPECT_EQ(afterSync->evidence, "the host was in Stream Sync on stream 7");
  const auto last = std::find_if(r.gaps.begin(), r.gaps.end(),
                                 [](const GapReport& g) { return g.endedBy == "last"; });
  ASSERT_NE(last, r.gaps.end());
  EXPECT_EQ(last->evidence, "the host was in Context Sync");
  ASSERT_EQ(r.hostWaitAfterSync.size(), 2u);
  const std::string findings = ::testing::PrintToString(report.findings);
  EXPECT_NE(findings.find("opened while the host was in a synchronisation"), std::string::npos)
      << findings;
  EXPECT_NE(findings.find("Take syncs out of the loop"), std::string::npos) << findings;
}

// A trace taken at graph level: each launch's run is one "cuda_graph" slice, busy computing
// for its whole length, listed with the kernels under its graph's name.
TEST(TraceAnalysisTest, WholeGraphRunsCountAsComputeTime) {
  TraceBuilder b;
  b.range("ProfilerStep#1", 0, 100);
  b.op("CUDA graph 3", 5, 8, 10, 40, "cuda_graph");
  b.op("CUDA graph 3", 9, 10, 40, 70, "cuda_graph");
  b.op("gemm", 60, 62, 80, 90);
  const RankReport r = analyze(b.take());
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].time.busyNs, 70 * kUs);
  EXPECT_EQ(r.devices[0].time.computeNs, 70 * kUs);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].name, "CUDA graph 3");
  EXPECT_EQ(r.kernels[0].kind, "compute");
  EXPECT_EQ(r.kernels[0].duration.count, 2u);
}

TEST(TraceAnalysisTest, TheLongestGapsSayWhatEndedThemAndWhatTheHostWasDoing) {
  const RankReport r = analyze(idleCauses());
  ASSERT_EQ(r.gaps.size(), 5u) << "the time after the last operation ends no gap";
  EXPECT_EQ(r.gaps[0].durationNs, 40 * kUs);
  EXPECT_EQ(r.gaps[0].endedBy, "Memcpy HtoD") << "of equal gaps, the earlier first";
  EXPECT_EQ(r.gaps[1].endedBy, "softmax");
  EXPECT_EQ(r.gaps[2].durationNs, 20 * kUs);
  EXPECT_EQ(r.gaps[2].cause, "host wait");
  EXPECT_EQ(r.gaps[2].endedBy, "gemm");
  EXPECT_EQ(r.gaps[2].hostWas, "optimizer.step")
      << "the innermost range open mid-gap on the launching thread";
  EXPECT_EQ(r.gaps[2].startNs, kBase + 30 * kUs);
  EXPECT_EQ(r.gaps[3].cause, "before the first GPU operation");
  EXPECT_EQ(r.gaps[4].cause, "kernel wait");
}

TEST(TraceAnalysisTest, KernelTablesByNameAndKind) {
  const RankReport r = analyze(idleCauses());
  EXPECT_EQ(r.kernelCount, 5u) << "kernels, not copies";
  EXPECT_EQ(r.kernelNs, 50 * kUs);
  EXPECT_EQ(r.communicationKernels, 1u);
  ASSERT_EQ(r.kernels.size(), 5u);
  EXPECT_EQ(r.kernels[0].name, "gemm");
  EXPECT_EQ(r.kernels[0].kind, "compute");
  EXPECT_EQ(r.kernels[0].duration.count, 2u);
  EXPECT_EQ(r.kernels[0].duration.totalNs, 20 * kUs);
  EXPECT_EQ(r.kernels[0].duration.p50Ns, 10 * kUs);
  EXPECT_DOUBLE_EQ(r.kernels[0].share, 20.0 / 60.0) << "of every operation's time";
  ASSERT_EQ(r.kinds.size(), 3u);
  EXPECT_EQ(r.kinds[1].kind, "communication");
  EXPECT_EQ(r.kinds[1].duration.totalNs, 10 * kUs);
}

TEST(TraceAnalysisTest, LaunchLatencyAndQueueDepth) {
  TraceBuilder b;
  b.op("a", 0, 1, 10, 20);  // latency 10
  b.op("b", 1, 2, 20, 30);  // 19
  b.op("c", 2, 3, 30, 40);  // 28: three launched before the first ran
  const RankReport r = analyze(b.take());
  EXPECT_EQ(r.launchLatency.count, 3u);
  EXPECT_EQ(r.launchLatency.p50Ns, 19 * kUs);
  EXPECT_EQ(r.launchLatency.maxNs, 28 * kUs);
  ASSERT_EQ(r.launchOutliers.size(), 3u);
  EXPECT_EQ(r.launchOutliers[0].name, "c");
  ASSERT_EQ(r.devices[0].streams.size(), 1u);
  EXPECT_EQ(r.devices[0].streams[0].maxQueueDepth, 3);
  EXPECT_EQ(r.devices[0].streams[0].operations, 3u);
}

// HTA's queue length: an operation leaves the queue when it starts, not when it ends.
TEST(TraceAnalysisTest, QueueDepthCountsOperationsLaunchedAndNotYetStarted) {
  TraceBuilder b;
  b.op("long", 0, 1, 5, 50);
  b.op("next", 10, 11, 50, 60);  // launched while "long" ran
  const RankReport r = analyze(b.take());
  ASSERT_EQ(r.devices[0].streams.size(), 1u);
  EXPECT_EQ(r.devices[0].streams[0].maxQueueDepth, 1);
}

TEST(TraceAnalysisTest, TinyKernelsAreCountedWithTheirLaunchCostAndWhoIssuedThem) {
  TraceBuilder b;
  b.range("aten::add", 0, 10'000, 5, "cpu_op");
  for (int i = 0; i < 120; ++i)
    b.op("add_kernel", i * 10, i * 10 + 5, i * 10 + 6, i * 10 + 8, "kernel", 7, 5);
  b.op("big_gemm", 2000, 2001, 2002, 2052);
  AnalysisOptions options;
  options.tinyKernelNs = 10 * kUs;
  const AnalysisReport report = analyzeTraces(one(b.take()), options);
  const TinyKernelReport& tiny = report.ranks[0].tiny;
  EXPECT_EQ(tiny.count, 120u);
  EXPECT_EQ(tiny.kernelNs, 240 * kUs);
  EXPECT_EQ(tiny.launchNs, 600 * kUs);
  EXPECT_EQ(tiny.launchLongerCount, 120u);
  EXPECT_DOUBLE_EQ(tiny.shareOfKernels, 120.0 / 121.0);
  ASSERT_EQ(tiny.issuers.size(), 1u);
  EXPECT_EQ(tiny.issuers[0], (std::pair<std::string, uint64_t>{"aten::add", 120}));
  bool said = false;
  for (const std::string& f : testing::findingTexts(report.findings)) {
    said = said || f.find("120 kernels under 10.0 us (99% of all kernels)") != std::string::npos;
  }
  EXPECT_TRUE(said) << ::testing::PrintToString(report.findings);
  // A program keys on the id, and reads the figures without parsing the sentence.
  const auto tinyFinding = std::find_if(report.findings.begin(), report.findings.end(),
                                        [](const Finding& f) { return f.id == "tiny-kernels"; });
  ASSERT_NE(tinyFinding, report.findings.end());
  EXPECT_EQ(tinyFinding->rank, std::optional<std::size_t>(0));
  const auto figure = [&](const std::string& name) {
    for (const auto& [key, value] : tinyFinding->evidence) {
      if (key == name) return value;
    }
    return -1.0;
  };
  EXPECT_EQ(figure("kernels"), 120.0);
  EXPECT_EQ(figure("gpu_ns"), static_cast<double>(240 * kUs));
  EXPECT_EQ(figure("launch_ns"), static_cast<double>(600 * kUs));
}

TEST(TraceAnalysisTest, StepsGetTheirOwnBreakdownAndDataLoadingStallsAreSeen) {
  TraceBuilder b;
  b.range("ProfilerStep#1", 0, 50);
  b.range("ProfilerStep#2", 50, 100);
  b.range("ProfilerStep#2", 50, 99, 0, "user_annotation", 9);  // marked on another thread too
  b.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 30, 50);
  b.op("k", 0, 1, 10, 30);
  b.op("k", 55, 56, 60, 90);
  const RankReport r = analyze(b.take());
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].name, "ProfilerStep#1");
  EXPECT_EQ(r.steps[0].time.windowNs, 50 * kUs);
  EXPECT_EQ(r.steps[0].time.busyNs, 20 * kUs);
  EXPECT_EQ(r.steps[0].time.dataLoadingIdleNs, 20 * kUs);
  EXPECT_EQ(r.steps[1].time.busyNs, 30 * kUs);
  EXPECT_EQ(r.steps[1].time.dataLoadingIdleNs, 0);
  EXPECT_EQ(r.time.dataLoadingIdleNs, 20 * kUs);
}

// A step may overlap others (an outer "ProfilerStep" around a loop's inner steps): each
// gets what ran and idled within its own bounds, the outer one the sum of the inner ones.
TEST(TraceAnalysisTest, AStepOverlappingManyOthersGetsItsOwnBreakdownAndSoDoEach) {
  TraceBuilder b;
  constexpr int kInner = 300;
  b.range("ProfilerStep#0", 0, kInner * 10);
  for (int i = 0; i < kInner; ++i) {
    b.range("ProfilerStep#" + std::to_string(i + 1), i * 10, i * 10 + 10);
    b.op("k", i * 10, i * 10 + 1, i * 10 + 2, i * 10 + 6);  // 4 us busy, 6 us idle a step
  }
  const RankReport r = analyze(b.take());
  ASSERT_EQ(r.steps.size(), std::size_t{kInner + 1});
  EXPECT_EQ(r.steps[0].name, "ProfilerStep#0");
  EXPECT_EQ(r.steps[0].time.busyNs, kInner * 4 * kUs);
  EXPECT_EQ(r.steps[0].time.windowNs, kInner * 10 * kUs);
  for (std::size_t i = 1; i < r.steps.size(); ++i) {
    EXPECT_EQ(r.steps[i].time.busyNs, 4 * kUs) << r.steps[i].name;
    EXPECT_EQ(r.steps[i].time.windowNs, 10 * kUs) << r.steps[i].name;
  }
  int64_t innerIdle = 0;
  for (std::size_t i = 1; i < r.steps.size(); ++i) {
    const TimeBreakdown& t = r.steps[i].time;
    innerIdle += t.hostWaitNs + t.launchNs + t.kernelWaitNs + t.otherWorkWaitNs + t.otherIdleNs;
  }
  const TimeBreakdown& outer = r.steps[0].time;
  EXPECT_EQ(outer.hostWaitNs + outer.launchNs + outer.kernelWaitNs + outer.otherWorkWaitNs +
                outer.otherIdleNs,
            innerIdle);
}

TEST(TraceAnalysisTest, MemoryThatGrowsEveryStepIsALeakSignature) {
  TraceBuilder b;
  for (int step = 0; step < 4; ++step) {
    b.range("ProfilerStep#" + std::to_string(step), step * 100, step * 100 + 100);
    b.memory(step * 100 + 10, 1'000'000 + step * 5'000'000);  // allocate
    b.memory(step * 100 + 90, 2'000'000 + step * 1'000'000);  // what stays
  }
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  const MemoryReport& m = report.ranks[0].memory;
  EXPECT_EQ(m.samples, 8u);
  EXPECT_EQ(m.peakBytes, 16'000'000);
  EXPECT_TRUE(m.growsEveryStep);
  EXPECT_EQ(m.growthPerStepBytes, 1'000'000);
  EXPECT_EQ(report.ranks[0].steps[3].allocatedAtEndBytes, 5'000'000);
  bool said = false;
  for (const std::string& f : testing::findingTexts(report.findings))
    said = said || f.find("a leak signature") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(TraceAnalysisTest, CommunicationOverlappingComputeIsMeasured) {
  TraceBuilder b;
  b.op("ncclDevKernel_AllReduce_Sum_f32", 0, 1, 0, 10, "kernel", 8);
  b.op("gemm", 0, 1, 5, 15, "kernel", 7);
  const RankReport r = analyze(b.take());
  EXPECT_EQ(r.devices[0].communicationOverlapNs, 5 * kUs);
  EXPECT_EQ(r.devices[0].time.communicationNs, 5 * kUs) << "only when no compute ran";
  EXPECT_EQ(r.devices[0].time.computeNs, 10 * kUs);
}

TEST(TraceAnalysisTest, NcclCallsAreSummedWithTheirSizesFromTheTrace) {
  TraceBuilder b;
  const std::string kernel =
      "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  b.ncclOp("memset", "gpu_memset", "ncclCommInitRankConfig", 0, 0, 5);  // set-up: left out
  b.ncclOp(kernel, "kernel", "ncclAllReduce", 4'000'000, 10, 20);
  b.ncclOp(kernel, "kernel", "ncclAllReduce", 4'000'000, 30, 40);
  b.ncclOp("Memcpy DtoD (Device -> Device)", "gpu_memcpy", "ncclAllGather", 8'000, 50, 51);
  b.op("gemm", 0, 1, 60, 70);
  const RankReport r = analyze(b.take());
  ASSERT_EQ(r.ncclCalls.size(), 2u);
  EXPECT_EQ(r.ncclCalls[0].call, "ncclAllReduce") << "longest first";
  EXPECT_EQ(r.ncclCalls[0].operations, 2u);
  EXPECT_EQ(r.ncclCalls[0].bytes, 8'000'000u);
  EXPECT_EQ(r.ncclCalls[0].gpuNs, 20 * kUs);
  EXPECT_DOUBLE_EQ(r.ncclCalls[0].gigabytesPerSecond, 400.0) << "8 MB in 20 us";
  EXPECT_EQ(r.ncclCalls[1].call, "ncclAllGather");
  EXPECT_DOUBLE_EQ(r.ncclCalls[1].gigabytesPerSecond, 8.0);

  AnalysisReport report;
  report.ranks.push_back(r);
  const std::string text = formatReport(report, {});
  EXPECT_NE(text.find("NCCL calls"), std::string::npos) << text;
  EXPECT_NE(text.find("400.0 GB/s"), std::string::npos) << text;
  const auto findings = findingsOf(report, {});
  EXPECT_TRUE(std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
    return f.text.find("ncclAllReduce: 2 operations") != std::string::npos;
  })) << ::testing::PrintToString(findings);
  EXPECT_NE(reportJson(report).find("\"nccl_calls\""), std::string::npos);
}

TEST(TraceAnalysisTest, ACollectiveStartedLateOnOneRankNamesThatRank) {
  std::vector<CollectedTrace> ranks;
  for (int64_t rank : {0, 1}) {
    TraceBuilder b(rank);
    b.op("ncclAllReduce", 90, 91, 100, 110);
    b.op("ncclAllReduce", 190, 191, rank == 1 ? 750 : 200, 760);
    b.op("ncclAllReduce", 990, 991, 1000, 1010);
    ranks.push_back(b.take());
  }
  const AnalysisReport report = analyzeTraces(std::move(ranks), {});
  ASSERT_EQ(report.stragglers.size(), 1u);
  EXPECT_EQ(report.stragglers[0].slowRank, 1);
  EXPECT_EQ(report.stragglers[0].occurrence, 2u);
  EXPECT_EQ(report.stragglers[0].lateByNs, 550 * kUs);
  bool said = false;
  for (const std::string& f : testing::findingTexts(report.findings))
    said = said || f.find("rank 1 started ncclAllReduce #2") != std::string::npos;
  EXPECT_TRUE(said);
}

// DDP over gloo: the gradients are reduced on the host, so no NCCL kernel shows the
// collectives; torch.distributed's calls (c10d::allreduce_) do.
TEST(TraceAnalysisTest, WithoutNcclKernelsTheLateRankIsTheOneThatCalledLate) {
  std::vector<CollectedTrace> ranks;
  for (int64_t rank : {0, 1}) {
    TraceBuilder b(rank);
    for (int64_t step = 0; step < 3; ++step) {
      const int64_t at = step * 1'000 + (rank == 1 && step == 1 ? 300 : 0);
      b.op("gemm", at, at + 5, at + 10, at + 100);
      b.range("c10d::allreduce_", at + 110, at + 112, 0, "cpu_op");
      b.range("gloo:all_reduce", at + 112, at + 400, 0, "user_annotation");
      b.op("Memcpy DtoH", at + 113, at + 114, at + 120, at + 130, "gpu_memcpy");
    }
    ranks.push_back(b.take());
  }
  const AnalysisReport report = analyzeTraces(std::move(ranks), {});
  ASSERT_EQ(report.stragglers.size(), 1u);
  EXPECT_EQ(report.stragglers[0].collective, "c10d::allreduce_");
  EXPECT_EQ(report.stragglers[0].source, StragglerReport::Source::HostCall);
  EXPECT_EQ(report.stragglers[0].slowRank, 1);
  EXPECT_EQ(report.stragglers[0].occurrence, 2u);
  EXPECT_EQ(report.stragglers[0].lateByNs, 300 * kUs);
  bool said = false;
  for (const std::string& f : testing::findingTexts(report.findings))
    said = said || f.find("rank 1 called c10d::allreduce_ #2 300.0 us after the first rank") !=
                       std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(report.findings);
  EXPECT_NE(reportJson(report).find("\"source\": \"host call\""), std::string::npos);
}

TEST(TraceAnalysisTest, NcclKernelsOnEveryRankAreTheCollectivesCompared) {
  std::vector<CollectedTrace> ranks;
  for (int64_t rank : {0, 1}) {
    TraceBuilder b(rank);
    // The calls say rank 0 was late; the kernels, which the ranks wait in, say rank 1.
    b.range("c10d::allreduce_", rank == 0 ? 500 : 0, rank == 0 ? 502 : 2, 0, "cpu_op");
    b.op("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 5, 6, rank == 1 ? 700 : 600, 800);
    ranks.push_back(b.take());
  }
  const AnalysisReport report = analyzeTraces(std::move(ranks), {});
  ASSERT_EQ(report.stragglers.size(), 1u);
  EXPECT_EQ(report.stragglers[0].source, StragglerReport::Source::Kernel);
  EXPECT_EQ(report.stragglers[0].slowRank, 1);
  EXPECT_EQ(report.stragglers[0].lateByNs, 100 * kUs);
}

TEST(TraceAnalysisTest, ATraceWithoutGpuWorkSaysSo) {
  TraceBuilder b;
  b.range("main", 0, 10);
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_NE(report.findings[0].text.find("no GPU operations in the trace"), std::string::npos);
}

// The first run on a machine without a GPU: the trace has steps and ranges on threads, and
// says why it has no GPU activity. The report shows the host's view and that reason, where
// it said only "no GPU operations".
TEST(TraceAnalysisTest, AHostOnlyTraceGetsTheHostsViewAndTheReasonGpuActivityIsMissing) {
  TraceBuilder b;
  b.threadName(1, "main").threadName(2, "data loader");
  for (int64_t step = 0; step < 3; ++step) {
    b.range("ProfilerStep#" + std::to_string(step), step * 100, step * 100 + 90);
    b.range("forward", step * 100 + 10, step * 100 + 60);
    b.range("load batch", step * 100, step * 100 + 80, 0, "user_annotation", 2);
  }
  const AnalysisReport report = analyzeTraces(
      one(b.take({{"kinetrace_gpu_status", "no NVIDIA driver: libcuda.so.1: cannot open"}})), {});
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].id, std::string("no-gpu-operations"));
  EXPECT_EQ(report.findings[0].text,
            "no GPU operations in the trace (kernels, copies, memsets); the recorder says why: "
            "no NVIDIA driver: libcuda.so.1: cannot open. The host's view: 9 ranges on 2 "
            "threads, 3 steps.");

  const std::string text = formatReport(report, {});
  EXPECT_NE(text.find("No GPU activity recorded: no NVIDIA driver: libcuda.so.1: cannot open\n"
                      "Host: 9 ranges on 2 threads over 290.0 us\n"
                      "Steps (3)\n"
                      "  ProfilerStep#0          90.0 us\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("        3    240.0 us    80.0 us    80.0 us  load batch\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("            1   93.1%    270.0 us         6 ranges  main\n"),
            std::string::npos)
      << text;

  const nlohmann::json json = nlohmann::json::parse(reportJson(report));
  const nlohmann::json& host = json["ranks"][0]["host"];
  EXPECT_EQ(host["ranges"], 9);
  EXPECT_EQ(host["thread_count"], 2);
  EXPECT_EQ(host["gpu_status"], "no NVIDIA driver: libcuda.so.1: cannot open");
  EXPECT_EQ(host["top_ranges"][0]["name"], "load batch");
  EXPECT_EQ(host["threads"][1]["name"], "data loader");
  EXPECT_EQ(host["threads"][1]["busy_ns"], 240 * kUs);
}

// A job of many steps on two GPUs: kernels on three streams, queued and not, tiny and not,
// copies, an all-reduce, data loading, memory samples; written in an order that is not
// the order of time.
CollectedTrace manySteps(std::size_t memoryBytes) {
  TraceBuilder b(-1, memoryBytes);
  std::mt19937 random(11);
  const std::vector<std::string> names = {"gemm", "add", "mul", "softmax", "layer_norm"};
  for (int64_t step = 39; step >= 0; --step) {
    const int64_t at = step * 1'000;
    b.range("ProfilerStep#" + std::to_string(step), at, at + 1'000);
    b.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", at, at + 40);
    for (int k = 0; k < 20; ++k) {
      const int64_t call = at + 50 + k * 40 + static_cast<int64_t>(random() % 10);
      const int64_t start = call + 5 + static_cast<int64_t>(random() % 60);
      const int64_t length = 1 + static_cast<int64_t>(random() % 30);
      b.range("aten::" + names[k % names.size()], call - 2, call + 4, step * 100 + k + 1);
      b.op(names[k % names.size()], call, call + 3, start, start + length, "kernel",
           static_cast<uint32_t>(k % 3), step * 100 + k + 1, k % 2);
    }
    b.sync("Stream Wait Event", at + 899, at + 900, 4, 5);
    b.op("Memcpy HtoD", at + 900, at + 901, at + 905, at + 930, "gpu_memcpy", 4);
    b.sync("Stream Sync", at + 902, at + 995, 5);
    b.op("ncclKernel_AllReduce", at + 910, at + 911, at + 940, at + 990, "kernel", 5);
    b.memory(at + 999, 1'000'000 + step * 1'000);
  }
  return b.take();
}

TEST(TraceAnalysisTest, ATraceAnalysedInTinyMemoryGivesTheSameReport) {
  const std::string inMemory = reportJson(analyzeTraces(one(manySteps(256 << 20)), {}));
  // 32 bytes a list: one record at a time in memory, the rest in temporary files.
  const std::string spilled = reportJson(analyzeTraces(one(manySteps(32 * 32)), {}));
  EXPECT_EQ(inMemory, spilled);
  const nlohmann::json json = nlohmann::json::parse(inMemory);
  EXPECT_EQ(json["ranks"][0]["steps"].size(), 40u);
  EXPECT_EQ(json["ranks"][0]["devices"].size(), 2u);
  EXPECT_GT(json["ranks"][0]["devices"][0]["time"]["host_wait_ns"].get<int64_t>(), 0);
  EXPECT_GT(json["ranks"][0]["tiny_kernels"]["count"].get<int64_t>(), 0);
  EXPECT_EQ(json["ranks"][0]["sync_records"], 80);
  EXPECT_EQ(json["ranks"][0]["host_wait_after_sync"][0]["found"], "Stream Sync on GPU 0 stream 5");
}

TEST(TraceAnalysisTest, TheJsonHoldsTheFiguresAndTheFindings) {
  const AnalysisReport report = analyzeTraces(one(idleCauses()), {});
  const nlohmann::json json = nlohmann::json::parse(reportJson(report));
  ASSERT_EQ(json["findings"].size(), report.findings.size());
  for (std::size_t i = 0; i < report.findings.size(); ++i) {
    const nlohmann::json& finding = json["findings"][i];
    EXPECT_EQ(finding["id"], report.findings[i].id);
    EXPECT_EQ(finding["text"], report.findings[i].text);
    EXPECT_EQ(finding["rank"], json["ranks"][0]["rank"]) << "each finding is this rank's";
    EXPECT_EQ(finding["evidence"].size(), report.findings[i].evidence.size());
  }
  EXPECT_EQ(json["findings"][0]["id"], "gpu-time");
  EXPECT_EQ(json["findings"][0]["evidence"]["host_wait_share"],
            report.findings[0].evidence[4].second);
  const nlohmann::json& time = json["ranks"][0]["devices"][0]["time"];
  EXPECT_EQ(time["host_wait_ns"], 10 * kUs);
  EXPECT_EQ(time["before_first_op_ns"], 10 * kUs);
  EXPECT_EQ(time["launch_queued_ns"], 0);
  EXPECT_EQ(json["ranks"][0]["kernels"][0]["name"], "gemm");
  EXPECT_EQ(json["ranks"][0]["longest_gaps"][0]["cause"], "waiting on other work");
  EXPECT_EQ(json["ranks"][0]["longest_gaps"][0]["evidence"],
            "Stream Wait Event on stream 7 (for stream 12's work)");
  EXPECT_EQ(json["ranks"][0]["gpu_operations"], 6);
  EXPECT_EQ(json["ranks"][0]["sync_records"], 2);
  const std::string text = formatReport(report, {});
  EXPECT_NE(text.find("idle  70.0% = before first op   5.0% + host wait   5.0% + launch   5.0% + "
                      "kernel wait   5.0% + other work  20.0% + other  30.0%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("before Memcpy HtoD; waited on Stream Wait Event on stream 7"),
            std::string::npos)
      << text;
}

TEST(TraceAnalysisTest, ATorchProfilerTraceIsAnalysedByItsCategoriesAndArguments) {
  testing::TempDir dir;
  const std::string path = (dir / "torch.json").string();
  std::ofstream(path) << R"({"baseTimeNanoseconds": 1700000000000000000,
    "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 4},
    "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 5, "tid": 5, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 5, "tid": 5, "ts": 1, "dur": 20, "args": {"External id": 9}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5, "ts": 2.5, "dur": 3,
     "args": {"External id": 9, "cbid": 211, "correlation": 44}},
    {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 40,
     "args": {"External id": 9, "device": 0, "stream": 7, "correlation": 44}},
    {"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 30, "cat": "ac2g", "name": "ac2g", "bp": "e"}
    ]})";
  TraceCollector collector(path, budgetOf());
  readTraceFile(path, collector, path, budgetOf());
  const RankReport r = analyze(collector.take());
  EXPECT_EQ(r.rank, 3);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].time.windowNs, 100 * kUs);
  EXPECT_EQ(r.devices[0].time.busyNs, 40 * kUs);
  EXPECT_EQ(r.devices[0].time.beforeFirstOpNs, 30 * kUs) << "the step's first kernel began at 30";
  EXPECT_EQ(r.devices[0].time.hostWaitNs, 0);
  EXPECT_EQ(r.launchLatency.maxNs, 27'500);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].name, "ProfilerStep#7");
}

// Ids are 64-bit end to end: a correlation id past 32 bits (another tracer's) joins the
// call of the same id, never one whose id shares its low 32 bits.
TEST(TraceAnalysisTest, ACorrelationBeyondThirtyTwoBitsJoinsItsOwnCall) {
  testing::TempDir dir;
  const std::string path = (dir / "wide.json").string();
  std::ofstream(path) << R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5, "ts": 1, "dur": 2,
     "args": {"correlation": 44}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5, "ts": 4, "dur": 2,
     "args": {"correlation": 4294967340}},
    {"ph": "X", "cat": "kernel", "name": "joined", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
     "args": {"device": 0, "stream": 7, "correlation": 44}},
    {"ph": "X", "cat": "kernel", "name": "wide", "pid": 0, "tid": 7, "ts": 20, "dur": 5,
     "args": {"device": 0, "stream": 7, "correlation": 4294967340}}
    ]})";
  TraceCollector collector(path, budgetOf());
  readTraceFile(path, collector, path, budgetOf());
  const RankReport r = analyze(collector.take());
  EXPECT_EQ(r.launchLatency.count, 2u);
  EXPECT_EQ(r.launchLatency.maxNs, 16 * kUs) << "from the call at 4 us, not the one at 1 us";
}

}  // namespace
}  // namespace kinetrace::detail
