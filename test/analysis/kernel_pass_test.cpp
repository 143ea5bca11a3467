// The kernel pass: the kernel table by total time, one row per kind, the counts, and the
// tiny kernels with the host ranges that issued them.

#include "analysis/passes/kernel_pass.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

RankReport kernelsOf(CollectedTrace trace, AnalysisOptions options = {}) {
  PassFixture f(std::move(trace), options);
  RankReport report;
  KernelPass kernels(f.context());
  f.addOperations(kernels);
  kernels.finish(report);
  return report;
}

// gemm 30 + 20 us, relu 5 us (tiny), a 5 us copy, an NCCL kernel 20 us.
CollectedTrace mixed() {
  TraceBuilder b;
  b.op("gemm", 0, 1, 10, 40);
  b.op("gemm", 2, 3, 40, 60);
  b.op("relu", 4, 5, 60, 65);
  b.op("Memcpy HtoD", 6, 7, 65, 70, "gpu_memcpy");
  b.op("ncclKernel_AllReduce", 8, 9, 70, 90);
  return b.take();
}

TEST(KernelPassTest, TheTableKeepsTheTopNamesByTotalTimeWithTheirDistributions) {
  AnalysisOptions options;
  options.top = 2;
  const RankReport r = kernelsOf(mixed(), options);
  ASSERT_EQ(r.kernels.size(), 2u);
  const KernelRow& gemm = r.kernels[0];
  EXPECT_EQ(gemm.name, "gemm");
  EXPECT_EQ(gemm.kind, "compute");
  EXPECT_EQ(gemm.duration.count, 2u);
  EXPECT_EQ(gemm.duration.totalNs, 50 * kUs);
  EXPECT_EQ(gemm.duration.meanNs, 25 * kUs);
  EXPECT_EQ(gemm.duration.p50Ns, 30 * kUs);
  EXPECT_EQ(gemm.duration.maxNs, 30 * kUs);
  EXPECT_DOUBLE_EQ(gemm.share, 50.0 / 80.0) << "of every operation's time, copies included";
  EXPECT_EQ(r.kernels[1].name, "ncclKernel_AllReduce");
  EXPECT_EQ(r.kernels[1].kind, "communication");
}

TEST(KernelPassTest, EachKindHasARowAndTheCountsLeaveCopiesOutOfTheKernels) {
  const RankReport r = kernelsOf(mixed());
  ASSERT_EQ(r.kinds.size(), 3u);
  EXPECT_EQ(r.kinds[0].name, "compute");
  EXPECT_EQ(r.kinds[0].duration.count, 3u);
  EXPECT_EQ(r.kinds[0].duration.totalNs, 55 * kUs);
  EXPECT_EQ(r.kinds[1].name, "communication");
  EXPECT_EQ(r.kinds[2].name, "memory");
  EXPECT_DOUBLE_EQ(r.kinds[2].share, 5.0 / 80.0);
  EXPECT_EQ(r.gpuOps, 5u);
  EXPECT_EQ(r.kernelCount, 4u);
  EXPECT_EQ(r.kernelNs, 75 * kUs);
  EXPECT_EQ(r.kernels.size(), 4u) << "every name, under the default top";
}

TEST(KernelPassTest, TinyKernelsAreCountedWithTheirLaunchTimeButCopiesAreNeverTiny) {
  const RankReport r = kernelsOf(mixed());
  EXPECT_EQ(r.tiny.thresholdNs, 10 * kUs);
  EXPECT_EQ(r.tiny.count, 1u) << "relu; the 5 us copy is not a kernel";
  EXPECT_EQ(r.tiny.kernelNs, 5 * kUs);
  EXPECT_EQ(r.tiny.launchNs, 1 * kUs);
  EXPECT_EQ(r.tiny.launchLongerCount, 0u);
  EXPECT_DOUBLE_EQ(r.tiny.shareOfKernels, 0.25);

  AnalysisOptions options;
  options.tinyKernelNs = 25 * kUs;
  const RankReport wider = kernelsOf(mixed(), options);
  EXPECT_EQ(wider.tiny.count, 3u) << "relu, a 20 us gemm, the NCCL kernel";
}

TEST(KernelPassTest, TinyKernelsAreTracedToTheHostRangesThatIssuedThemMostFirst) {
  TraceBuilder b;
  b.range("aten::add", 0, 100, 1, "cpu_op");
  b.range("aten::relu", 0, 100, 2, "cpu_op");
  for (int i = 0; i < 3; ++i) b.op("add_kernel", 1, 2, 3, 5, "kernel", 7, 1);
  b.op("relu_kernel", 11, 12, 13, 15, "kernel", 7, 2);
  b.op("big_kernel", 11, 12, 20, 80, "kernel", 7, 2);  // not tiny, but in a range
  b.op("orphan", 20, 25, 30, 32);                      // no External id; launch 5 us
  b.op("lost", 26, 27, 33, 35, "kernel", 7, 99);       // an id no range has
  const RankReport r = kernelsOf(b.take());
  EXPECT_EQ(r.tiny.count, 6u);
  EXPECT_EQ(r.tiny.launchLongerCount, 1u) << "orphan took 5 us to launch and 2 us to run";
  EXPECT_EQ(r.opsWithHostRange, 5u);
  EXPECT_EQ(r.tiny.issuers, (std::vector<std::pair<std::string, uint64_t>>{
                                {"aten::add", 3}, {"(no host range)", 2}, {"aten::relu", 1}}));

  TraceBuilder c;
  c.range("aten::add", 0, 100, 1, "cpu_op");
  c.op("add_kernel", 1, 2, 3, 5, "kernel", 7, 1);
  c.op("orphan", 20, 25, 30, 32);
  c.op("orphan", 20, 25, 33, 35);
  AnalysisOptions options;
  options.top = 1;
  EXPECT_EQ(kernelsOf(c.take(), options).tiny.issuers,
            (std::vector<std::pair<std::string, uint64_t>>{{"(no host range)", 2}}));
}

TEST(KernelPassTest, OnlyTheRowsKeptCopyTheirNamesIntoTheReport) {
  TraceBuilder b;
  b.op("gemm", 0, 1, 10, 40);
  b.op(std::string(100, 'k'), 2, 3, 40, 41);
  PassFixture f(b.take(), [] {
    AnalysisOptions options;
    options.top = 1;
    return options;
  }());
  RankReport report;
  KernelPass kernels(f.context());
  f.addOperations(kernels);
  kernels.finish(report);
  ASSERT_EQ(report.kernels.size(), 1u);
  EXPECT_EQ(report.kernels[0].name, "gemm");
  // The long name is the tiny kernel's, and no host range issued it: nothing copied.
  EXPECT_EQ(f.context().reportHold->bytes(), 0u);
}

}  // namespace
}  // namespace kinetrace::detail::passes
