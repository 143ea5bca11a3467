// The host pass: a trace's host ranges by name and the threads that ran them, and why the
// trace has no GPU activity: the view of a trace recorded without a GPU.

#include "analysis/passes/host_pass.h"

#include <gtest/gtest.h>

#include <utility>

#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

// The host pass alone over `trace`, keeping `top` rows per table.
HostReport hostOf(CollectedTrace trace, std::size_t top) {
  AnalysisOptions options;
  options.top = top;
  PassFixture f(std::move(trace), options);
  RankReport report;
  HostPass(f.context()).finish(report);
  return report.host;
}

TEST(HostPassTest, RangesByNameLongestTotalFirstWithCountAndLongest) {
  TraceBuilder b;
  b.range("forward", 0, 30);
  b.range("forward", 40, 50);
  b.range("load batch", 0, 35, 0, "user_annotation", 2);
  b.range("tiny", 60, 61);
  const HostReport host = hostOf(b.take(), /*top=*/2);
  EXPECT_EQ(host.ranges, 4u);
  EXPECT_EQ(host.windowNs, 61 * kUs);
  ASSERT_EQ(host.top.size(), 2u) << "the top options.top";
  EXPECT_EQ(host.top[0].name, "forward");
  EXPECT_EQ(host.top[0].count, 2u);
  EXPECT_EQ(host.top[0].totalNs, 40 * kUs);
  EXPECT_EQ(host.top[0].maxNs, 30 * kUs);
  EXPECT_EQ(host.top[1].name, "load batch");
}

TEST(HostPassTest, AThreadIsBusyWhileInsideAnyRangeNestedOrOverlappingCountedOnce) {
  TraceBuilder b;
  b.threadName(1, "main").threadName(2, "old name").threadName(2, "data loader");
  b.range("step", 0, 100, 0, "user_annotation", 1);
  b.range("forward", 10, 60, 0, "user_annotation", 1);  // nested: no more busy time
  b.range("a", 0, 20, 0, "user_annotation", 2);
  b.range("b", 10, 30, 0, "user_annotation", 2);  // overlaps a: 0..30 once
  b.range("c", 50, 60, 0, "user_annotation", 2);
  b.range("d", 0, 5, 0, "user_annotation", 3);
  const HostReport host = hostOf(b.take(), /*top=*/2);
  EXPECT_EQ(host.threadCount, 3u);
  ASSERT_EQ(host.threads.size(), 2u) << "the busiest options.top";
  EXPECT_EQ(host.threads[0].tid, 1);
  EXPECT_EQ(host.threads[0].name, "main");
  EXPECT_EQ(host.threads[0].ranges, 2u);
  EXPECT_EQ(host.threads[0].busyNs, 100 * kUs);
  EXPECT_EQ(host.threads[1].tid, 2);
  EXPECT_EQ(host.threads[1].name, "data loader") << "its last name";
  EXPECT_EQ(host.threads[1].ranges, 3u);
  EXPECT_EQ(host.threads[1].busyNs, 40 * kUs);
}

TEST(HostPassTest, TheRecordersReasonForNoGpuActivityIsKeptFromEitherEnd) {
  TraceBuilder b;
  b.range("run", 0, 10);
  PassFixture f(b.take({{"kinetrace_gpu_status", "no NVIDIA driver: libcuda.so.1 missing"}}));
  RankReport report;
  HostPass(f.context()).finish(report);
  EXPECT_EQ(report.host.gpuStatus, "no NVIDIA driver: libcuda.so.1 missing");

  // A trace whose recorder did record GPU activity (CUPTI's version in it): its status says
  // how it recorded, not why there is nothing; no kernel ran in the window.
  TraceBuilder recorded;
  recorded.range("run", 0, 10);
  PassFixture quiet(
      recorded.take({{"cupti_version", 130001},
                     {"kinetrace_gpu_status", "CUPTI 130001 active; GPU timestamps"}}));
  RankReport idle;
  HostPass(quiet.context()).finish(idle);
  EXPECT_TRUE(idle.host.gpuRecorded);
  EXPECT_EQ(idle.host.gpuStatus, "") << "not given as the reason";

  TraceBuilder plain;
  PassFixture none(plain.take());
  RankReport empty;
  HostPass(none.context()).finish(empty);
  EXPECT_EQ(empty.host.gpuStatus, "");
  EXPECT_EQ(empty.host.ranges, 0u);
  EXPECT_TRUE(empty.host.threads.empty());
}

}  // namespace
}  // namespace kinetrace::detail::passes
