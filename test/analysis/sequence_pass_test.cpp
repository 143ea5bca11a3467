// The kernel-sequence pass: chains of kernels that ran back to back on a stream, what issued
// them and what fusing each would save; and HTA's exact mode (--sequence-op), the kernel
// sequences of the shallowest operators of a name, as HTA's get_frequent_cuda_kernel_sequences.

#include "analysis/passes/sequence_pass.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

using Names = std::vector<std::string>;

KernelSequenceReport sequencesOf(CollectedTrace trace, std::size_t length = 3,
                                 const std::string& op = "", std::size_t top = 10) {
  AnalysisOptions options;
  options.sequenceLength = length;
  options.sequenceOperator = op;
  options.top = top;
  PassFixture f(std::move(trace), options);
  SequencePass pass(f.context());
  f.addOperations(pass);
  RankReport report;
  pass.finish(report);
  return report.kernelSequences;
}

const KernelSequenceRow* row(const KernelSequenceReport& s, const Names& kernels) {
  for (const KernelSequenceRow& r : s.rows) {
    if (r.kernels == kernels) return &r;
  }
  return nullptr;
}

// a, b, c three times on stream 7, every launch call 1 us long and made well before its
// kernel (queued), kernels 10 us long and 2 us apart; all inside "## forward ##".
CollectedTrace repeated() {
  TraceBuilder b;
  b.range("## forward ##", 0, 500);
  const char* names[] = {"a", "b", "c"};
  for (int i = 0; i < 9; ++i) {
    const int64_t start = 100 + 12 * i;
    b.op(names[i % 3], 10 + 2 * i, 11 + 2 * i, start, start + 10);
  }
  return b.take();
}

TEST(SequencePassTest, AChainIsCountedWhereItsOccurrencesDoNotOverlap) {
  const KernelSequenceReport s = sequencesOf(repeated());
  EXPECT_EQ(s.mode, "windows");
  EXPECT_EQ(s.length, 3u);
  EXPECT_EQ(s.chains, 3u) << "a>b>c, b>c>a, c>a>b";
  const KernelSequenceRow* abc = row(s, {"a", "b", "c"});
  ASSERT_NE(abc, nullptr);
  EXPECT_EQ(abc->count, 3u);
  EXPECT_EQ(abc->issuer, "## forward ##");
  const KernelSequenceRow* bca = row(s, {"b", "c", "a"});
  ASSERT_NE(bca, nullptr);
  EXPECT_EQ(bca->count, 2u) << "at kernels 1 and 4; the one at 7 would need a tenth";
  EXPECT_EQ(s.counted, 3u + 2 + 2);
}

TEST(SequencePassTest, FusingSavesTheLaunchesAfterTheFirstAndTheGapsBetweenQueuedKernels) {
  const KernelSequenceReport s = sequencesOf(repeated());
  const KernelSequenceRow* abc = row(s, {"a", "b", "c"});
  ASSERT_NE(abc, nullptr);
  EXPECT_EQ(abc->gpuNs, 90 * kUs);
  EXPECT_EQ(abc->launchNs, 9 * kUs);
  EXPECT_EQ(abc->gapNs, 12 * kUs) << "two 2 us gaps, three times";
  EXPECT_EQ(abc->savedNs, (6 + 12) * kUs) << "two launches of 1 us and two gaps, three times";
  EXPECT_EQ(s.rows[0].kernels, (Names{"a", "b", "c"})) << "the most saved first";
}

TEST(SequencePassTest, AGapTheGpuSpentWaitingForTheHostIsNotSaved) {
  TraceBuilder b;
  for (int64_t t : {0, 1000}) {
    b.op("a", t, t + 1, t + 5, t + 10);
    b.op("b", t + 60, t + 61, t + 65, t + 70);  // launched 50 us after a ended: the host's
    b.op("c", t + 62, t + 63, t + 72, t + 80);  // queued before b ended: its 2 us gap counts
  }
  const KernelSequenceReport s = sequencesOf(b.take());
  const KernelSequenceRow* abc = row(s, {"a", "b", "c"});
  ASSERT_NE(abc, nullptr);
  EXPECT_EQ(abc->count, 2u);
  EXPECT_EQ(abc->gapNs, 2 * 2 * kUs);
  EXPECT_EQ(abc->savedNs, 2 * 4 * kUs);
  EXPECT_EQ(abc->issuer, "") << "no host range around the launches";
}

TEST(SequencePassTest, KernelsOfOneGraphLaunchShareItsCallWhichCountsOnce) {
  TraceBuilder b;
  for (int64_t t : {0, 1000}) {
    // One cudaGraphLaunch (correlation 7 + t) of 10 us running a, b, c back to back.
    for (const auto& [name, start] : {std::pair{"a", 20}, {"b", 30}, {"c", 40}}) {
      b.graphNode(name, 7 + t, t, t + 10, t + start, t + start + 8);
    }
  }
  const KernelSequenceReport s = sequencesOf(b.take());
  const KernelSequenceRow* abc = row(s, {"a", "b", "c"});
  ASSERT_NE(abc, nullptr);
  EXPECT_EQ(abc->launchNs, 2 * 10 * kUs) << "the graph launch's call, once each time";
  EXPECT_EQ(abc->savedNs, 2 * 2 * 2 * kUs) << "no launch saved; two 2 us gaps each time";
}

TEST(SequencePassTest, AChainThatRanOnceIsCountedButIsNoRow) {
  TraceBuilder b;
  b.op("a", 0, 1, 5, 10);
  b.op("b", 1, 2, 12, 15);
  b.op("c", 2, 3, 16, 20);
  const KernelSequenceReport s = sequencesOf(b.take());
  EXPECT_EQ(s.chains, 1u);
  EXPECT_EQ(s.counted, 1u);
  EXPECT_TRUE(s.rows.empty());
}

// a b, a copy, c d, a kernel of no known launch call, e, f (launched by thread 2), g.
// Twice.
CollectedTrace broken() {
  TraceBuilder b;
  for (int64_t t : {0, 100}) {
    b.op("a", t, t + 1, t + 10, t + 11);
    b.op("b", t + 1, t + 2, t + 12, t + 13);
    b.op("Memcpy HtoD", t + 2, t + 3, t + 14, t + 15, "gpu_memcpy");
    b.op("c", t + 3, t + 4, t + 16, t + 17);
    b.op("d", t + 4, t + 5, t + 18, t + 19);
    b.kernel("no call", t + 20, t + 21);
    b.op("e", t + 6, t + 7, t + 22, t + 23);
    b.op("f", t + 7, t + 8, t + 24, t + 25, "kernel", 7, 0, 0, 2);
    b.op("g", t + 8, t + 9, t + 26, t + 27);
  }
  return b.take();
}

TEST(SequencePassTest, ACopyAnUnlaunchedKernelOrAnotherThreadBreaksAChain) {
  const KernelSequenceReport threes = sequencesOf(broken());
  EXPECT_EQ(threes.chains, 1u) << "only g a b, across the repeat";
  EXPECT_TRUE(threes.rows.empty());
  const KernelSequenceReport pairs = sequencesOf(broken(), 2);
  EXPECT_EQ(pairs.chains, 3u) << "a b, c d, and g a across the two";
  EXPECT_NE(row(pairs, {"a", "b"}), nullptr);
  EXPECT_NE(row(pairs, {"c", "d"}), nullptr);
}

TEST(SequencePassTest, TheIssuerIsTheInnermostRangeAroundEveryLaunchCall) {
  TraceBuilder b;
  for (int64_t t : {0, 1000}) {
    b.range("step", t, t + 100);
    b.range("block", t, t + 50);
    b.range("aten::linear", t + 1, t + 5, 0, "cpu_op");
    b.op("a", t + 2, t + 3, t + 60, t + 61);
    b.op("b", t + 3, t + 4, t + 62, t + 63);
    b.op("c", t + 6, t + 7, t + 64, t + 65);    // outside aten::linear, inside block
    b.op("d", t + 60, t + 61, t + 66, t + 67);  // outside block
  }
  const KernelSequenceReport s = sequencesOf(b.take());
  ASSERT_EQ(s.rows.size(), 2u) << "c d a and d a b ran once";
  EXPECT_EQ(row(s, {"a", "b", "c"})->issuer, "block");
  EXPECT_EQ(row(s, {"b", "c", "d"})->issuer, "step");
  EXPECT_FALSE(row(s, {"b", "c", "d"})->acrossRanges);
}

TEST(SequencePassTest, AChainAcrossOperatorsHasNoIssuerButSaysSo) {
  TraceBuilder b;
  for (int64_t t : {0, 100}) {
    for (int k = 0; k < 3; ++k) {
      const int64_t op = t + 10 * k;
      b.range("autograd::op" + std::to_string(k), op, op + 8, 0, "cpu_op");
      b.op("k" + std::to_string(k), op + 1, op + 2, 1000 + op, 1005 + op);
    }
  }
  const KernelSequenceReport s = sequencesOf(b.take());
  const KernelSequenceRow* chain = row(s, {"k0", "k1", "k2"});
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(chain->issuer, "");
  EXPECT_TRUE(chain->acrossRanges);
}

TEST(SequencePassTest, TheLengthIsTheOptions) {
  const KernelSequenceReport s = sequencesOf(repeated(), 2);
  EXPECT_EQ(s.length, 2u);
  EXPECT_EQ(row(s, {"a", "b"})->count, 3u);
  EXPECT_EQ(row(s, {"c", "a"})->count, 2u);
}

TEST(SequencePassTest, TheTableIsBoundedByTop) {
  TraceBuilder b;
  for (int i = 0; i < 80; ++i) {
    b.op("k" + std::to_string(i % 40), i, i + 1, 100 + i, 101 + i);
  }
  const KernelSequenceReport s = sequencesOf(b.take(), 3, "", 5);
  EXPECT_EQ(s.chains, 40u) << "38 twice, and the two across the repeat once";
  EXPECT_EQ(s.rows.size(), 5u);
}

TEST(SequencePassTest, SpilledListsGiveTheSameFigures) {
  TraceBuilder inMemory;
  TraceBuilder spilled(-1, 4096);
  for (TraceBuilder* b : {&inMemory, &spilled}) {
    b->range("loop", 0, 100'000);
    for (int i = 0; i < 3000; ++i) {
      b->op(i % 4 == 3 ? "d" : "k" + std::to_string(i % 4), 3 * i, 3 * i + 1, 10 + 3 * i,
            12 + 3 * i);
    }
  }
  const KernelSequenceReport a = sequencesOf(inMemory.take());
  const KernelSequenceReport s = sequencesOf(spilled.take());
  ASSERT_EQ(a.rows.size(), s.rows.size());
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(a.rows[i].kernels, s.rows[i].kernels);
    EXPECT_EQ(a.rows[i].count, s.rows[i].count);
    EXPECT_EQ(a.rows[i].savedNs, s.rows[i].savedNs);
  }
  EXPECT_EQ(a.rows[0].count, 750u);
}

// ---- HTA's exact mode ----

// Two steps: "## forward ##" holding two aten::linear (gemm, bias, relu each) and one
// aten::linear of two kernels; "## backward ##" on the main thread while the autograd
// thread (tid 2) runs aten::mm (gemm_bwd, sum_bwd, scale_bwd).
CollectedTrace training() {
  TraceBuilder b;
  int64_t gpu = 1000;
  for (int step = 0; step < 2; ++step) {
    const int64_t t = step * 500;
    b.range("ProfilerStep#" + std::to_string(step), t, t + 400);
    b.range("## forward ##", t + 10, t + 200);
    for (int layer = 0; layer < 3; ++layer) {
      const int64_t op = t + 20 + 50 * layer;
      b.range("aten::linear", op, op + 40, 0, "cpu_op");
      b.range("aten::addmm", op + 1, op + 35, 0, "cpu_op");
      const char* kernels[] = {"gemm", "bias", "relu"};
      for (int k = 0; k < (layer < 2 ? 3 : 2); ++k, gpu += 10) {
        b.op(kernels[k], op + 2 + 5 * k, op + 3 + 5 * k, gpu, gpu + 4);
      }
    }
    b.range("## backward ##", t + 210, t + 390);
    b.range("autograd::engine::evaluate_function: MmBackward0", t + 220, t + 300, 0, "cpu_op", 2);
    b.range("aten::mm", t + 221, t + 290, 0, "cpu_op", 2);
    const char* backward[] = {"gemm_bwd", "sum_bwd", "scale_bwd"};
    for (int k = 0; k < 3; ++k, gpu += 10) {
      b.op(backward[k], t + 222 + 5 * k, t + 223 + 5 * k, gpu, gpu + 6, "kernel", 7, 0, 0, 2);
    }
  }
  return b.take();
}

TEST(SequencePassTest, HtasModeTakesTheShallowestOperatorsOfTheNameWithEnoughOperations) {
  const KernelSequenceReport s = sequencesOf(training(), 3, "aten::");
  EXPECT_EQ(s.mode, "operator");
  EXPECT_EQ(s.operatorName, "aten::");
  ASSERT_EQ(s.rows.size(), 1u)
      << "aten::linear (depth 2); not aten::addmm (3), nor the backward thread's aten::mm, "
         "which hangs under ## backward ## at depth 3; the linear of two kernels too few";
  const KernelSequenceRow& r = s.rows[0];
  EXPECT_EQ(r.issuer, "aten::linear");
  EXPECT_EQ(r.kernels, (Names{"gemm", "bias", "relu"}));
  EXPECT_EQ(r.count, 4u);
  EXPECT_EQ(r.gpuNs, 4 * 12 * kUs);
  EXPECT_EQ(r.operatorNs, 4 * 40 * kUs);
}

TEST(SequencePassTest, HtasModeHangsTheBackwardThreadUnderTheBackwardAnnotation) {
  const KernelSequenceReport s = sequencesOf(training(), 3, "## backward ##");
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].kernels, (Names{"gemm_bwd", "sum_bwd", "scale_bwd"}));
  EXPECT_EQ(s.rows[0].count, 2u);
  EXPECT_EQ(s.rows[0].operatorNs, 2 * 180 * kUs);
  const KernelSequenceReport steps = sequencesOf(training(), 3, "ProfilerStep");
  ASSERT_EQ(steps.rows.size(), 2u) << "each step's name is its own";
  EXPECT_EQ(steps.rows[0].issuer, "ProfilerStep#0");
  EXPECT_EQ(steps.rows[0].length, 11u) << "the forward's 8 kernels and the backward's 3";
}

TEST(SequencePassTest, HtasModeFindsNoneWhereAGpuAnnotationBearsTheName) {
  TraceBuilder b;
  b.range("aten::linear", 0, 40, 0, "cpu_op");
  for (int k = 0; k < 3; ++k) b.op("k", 1 + k, 2 + k, 100 + 10 * k, 105 + 10 * k);
  b.gpuAnnotation("aten::linear", 100, 125);
  const KernelSequenceReport s = sequencesOf(b.take(), 3, "aten::");
  EXPECT_TRUE(s.rows.empty());
  EXPECT_NE(s.noneBecause.find("HTA's least"), std::string::npos) << s.noneBecause;
}

TEST(SequencePassTest, HtasModeKeepsAFewDozenNamesOfALongSequenceAndCountsTheRest) {
  TraceBuilder b;
  b.range("ProfilerStep#0", 0, 1000);
  for (int k = 0; k < 50; ++k) b.op("k", 1 + k, 2 + k, 100 + 10 * k, 105 + 10 * k);
  const KernelSequenceReport s = sequencesOf(b.take(), 3, "ProfilerStep");
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].length, 50u);
  EXPECT_EQ(s.rows[0].kernels.size(), 32u);
}

}  // namespace
}  // namespace kinetrace::detail::passes
