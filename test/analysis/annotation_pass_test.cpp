// The annotation pass: each GPU operation to its innermost annotation (by the annotations'
// GPU spans, as HTA's get_gpu_kernels_with_user_annotations; else by the annotation range
// around its launch call), and each annotation's spans (HTA's get_gpu_user_annotation_breakdown).

#include "analysis/passes/annotation_pass.h"

#include <gtest/gtest.h>

#include <string>

#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

AnnotationReport annotationsOf(CollectedTrace trace, std::size_t top = 10) {
  AnalysisOptions options;
  options.top = top;
  PassFixture f(std::move(trace), options);
  AnnotationPass pass(f.context());
  f.addOperations(pass);
  RankReport report;
  pass.finish(report);
  return report.annotations;
}

const AnnotationRow* row(const AnnotationReport& a, const std::string& name) {
  for (const AnnotationRow& r : a.rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

// A step's span (0-100 us) holding a forward span (10-40 us) on stream 7: a kernel inside
// forward, one in the step only, one overlapping forward's end, and one on stream 9, where
// no span is.
CollectedTrace spans() {
  TraceBuilder b;
  b.gpuAnnotation("ProfilerStep#1", 0, 100);
  b.gpuAnnotation("## forward ##", 10, 40);
  b.gpuAnnotation("## forward ##", 110, 120);
  b.op("gemm", 0, 1, 12, 20);
  b.op("relu", 1, 2, 35, 45);
  b.op("add", 2, 3, 60, 64);
  b.op("other", 3, 4, 12, 30, "kernel", 9);
  return b.take();
}

TEST(AnnotationPassTest, AnOperationGoesToTheShortestSpanOverlappingItOnItsStream) {
  const AnnotationReport a = annotationsOf(spans());
  EXPECT_EQ(a.attributedBy, "gpu_user_annotation");
  EXPECT_EQ(a.operations, 4u);
  EXPECT_EQ(a.gpuNs, 40 * kUs);
  EXPECT_EQ(a.attributedOperations, 3u) << "not the one on stream 9";
  EXPECT_EQ(a.attributedNs, 22 * kUs);
  ASSERT_EQ(a.rows.size(), 2u);
  EXPECT_EQ(a.rows[0].name, "## forward ##") << "the most GPU time first";
  EXPECT_EQ(a.rows[0].operations, 2u) << "gemm, and relu, which overlaps its end";
  EXPECT_EQ(a.rows[0].gpuNs, 18 * kUs);
  EXPECT_EQ(a.rows[1].name, "ProfilerStep#1");
  EXPECT_EQ(a.rows[1].operations, 1u);
  EXPECT_EQ(a.rows[1].gpuNs, 4 * kUs);
}

TEST(AnnotationPassTest, EachNamesSpansAreCountedWithTheirTotalShortestAndLongest) {
  const AnnotationReport a = annotationsOf(spans());
  const AnnotationRow* forward = row(a, "## forward ##");
  ASSERT_NE(forward, nullptr);
  EXPECT_EQ(forward->spans, 2u);
  EXPECT_EQ(forward->spanNs, 40 * kUs);
  EXPECT_EQ(forward->spanMinNs, 10 * kUs);
  EXPECT_EQ(forward->spanMaxNs, 30 * kUs);
  EXPECT_EQ(a.annotations, 2u);
}

TEST(AnnotationPassTest, WithoutSpansTheInnermostAnnotationRangeAroundTheLaunchTakesIt) {
  TraceBuilder b;
  b.range("## forward ##", 0, 100);
  b.range("layer", 10, 50);
  b.range("aten::linear", 20, 30, 0, "cpu_op");  // an operator, not an annotation
  b.range("nn.Module: Block_0", 60, 90, 0, "python_function");
  b.op("gemm", 21, 22, 200, 210);    // in layer (aten::linear is no annotation)
  b.op("relu", 40, 41, 210, 215);    // in layer
  b.op("add", 70, 71, 215, 225);     // in the module
  b.op("copy", 95, 96, 225, 226);    // in ## forward ## only
  b.op("late", 150, 151, 230, 240);  // in none
  b.op("elsewhere", 20, 21, 240, 250, "kernel", 7, 0, 0, 2);  // another thread
  const AnnotationReport a = annotationsOf(b.take());
  EXPECT_EQ(a.attributedBy, "host ranges");
  EXPECT_EQ(a.attributedOperations, 4u);
  ASSERT_EQ(a.rows.size(), 3u);
  EXPECT_EQ(a.rows[0].name, "layer");
  EXPECT_EQ(a.rows[0].gpuNs, 15 * kUs);
  EXPECT_EQ(a.rows[1].name, "nn.Module: Block_0");
  EXPECT_EQ(a.rows[1].gpuNs, 10 * kUs);
  EXPECT_EQ(a.rows[2].name, "## forward ##");
  EXPECT_EQ(a.rows[2].operations, 1u);
  EXPECT_EQ(a.rows[2].spans, 0u);
}

TEST(AnnotationPassTest, ModulesGetTheOperationsLaunchedInsideThemWhateverTookThem) {
  TraceBuilder b;
  b.gpuAnnotation("## forward ##", 100, 200);
  b.range("## forward ##", 0, 90);
  b.range("nn.Module: Model_0", 1, 80, 0, "python_function");
  b.range("nn.Module: Linear_0", 2, 30, 0, "python_function");
  b.range("aten::linear", 3, 20, 0, "cpu_op");
  b.op("gemm", 4, 5, 110, 130);    // in Linear_0
  b.op("relu", 40, 41, 130, 135);  // in Model_0 only
  b.op("loss", 85, 86, 140, 141);  // in no module
  const AnnotationReport a = annotationsOf(b.take());
  EXPECT_EQ(a.attributedBy, "gpu_user_annotation");
  ASSERT_EQ(a.rows.size(), 1u);
  EXPECT_EQ(a.rows[0].operations, 3u) << "the span took them all";
  EXPECT_EQ(a.moduleCount, 2u);
  ASSERT_EQ(a.modules.size(), 2u);
  EXPECT_EQ(a.modules[0].name, "nn.Module: Linear_0");
  EXPECT_EQ(a.modules[0].gpuNs, 20 * kUs);
  EXPECT_EQ(a.modules[1].name, "nn.Module: Model_0");
  EXPECT_EQ(a.modules[1].operations, 1u);
  EXPECT_EQ(a.modules[1].gpuNs, 5 * kUs);
}

TEST(AnnotationPassTest, ATraceWithoutAnnotationsAttributesNothing) {
  TraceBuilder b;
  b.range("aten::mm", 0, 10, 0, "cpu_op");
  b.op("gemm", 1, 2, 5, 8);
  const AnnotationReport a = annotationsOf(b.take());
  EXPECT_EQ(a.attributedBy, "");
  EXPECT_TRUE(a.rows.empty());
  EXPECT_EQ(a.operations, 1u);
}

TEST(AnnotationPassTest, TheTableIsBoundedAndCountsTheNamesItLeavesOut) {
  TraceBuilder b;
  for (int i = 0; i < 50; ++i) {
    b.gpuAnnotation("span " + std::to_string(i), 10 * i, 10 * i + 5);
    b.op("k", 10 * i, 10 * i + 1, 10 * i + 1, 10 * i + 2 + i % 3);
  }
  const AnnotationReport a = annotationsOf(b.take(), 5);
  EXPECT_EQ(a.rows.size(), 5u);
  EXPECT_EQ(a.annotations, 50u);
  EXPECT_EQ(a.rows[0].gpuNs, 3 * kUs);
}

TEST(AnnotationPassTest, OverlappingNonsensePastTheMostOpenIsLeftOutAndCounted) {
  TraceBuilder b;
  // 300 spans all open over one kernel: the first kMostOpen are kept.
  for (int i = 0; i < 300; ++i) b.gpuAnnotation("s" + std::to_string(i), i, 1000 - i);
  b.op("k", 0, 1, 400, 410);
  const AnnotationReport a = annotationsOf(b.take());
  ASSERT_EQ(a.leftOut.size(), 1u);
  EXPECT_EQ(a.leftOut.begin()->second, 300u - AnnotationPass::kMostOpen);
  EXPECT_EQ(a.attributedOperations, 1u);
  EXPECT_EQ(a.rows[0].name, "s255") << "the shortest of those kept";
}

TEST(AnnotationPassTest, SpilledListsGiveTheSameFigures) {
  TraceBuilder inMemory;
  TraceBuilder spilled(-1, 4096);
  for (TraceBuilder* b : {&inMemory, &spilled}) {
    for (int i = 0; i < 2000; ++i) {
      b->gpuAnnotation(i % 2 ? "odd" : "even", 10 * i, 10 * i + 8);
      b->range("host", 10 * i, 10 * i + 5);
      b->op("k", 10 * i + 1, 10 * i + 2, 10 * i + 3, 10 * i + 4 + i % 2);
    }
  }
  const AnnotationReport a = annotationsOf(inMemory.take());
  const AnnotationReport s = annotationsOf(spilled.take());
  ASSERT_EQ(a.rows.size(), 2u);
  ASSERT_EQ(s.rows.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a.rows[i].name, s.rows[i].name);
    EXPECT_EQ(a.rows[i].gpuNs, s.rows[i].gpuNs);
    EXPECT_EQ(a.rows[i].spanNs, s.rows[i].spanNs);
  }
  EXPECT_EQ(a.rows[0].name, "odd");
  EXPECT_EQ(a.rows[0].gpuNs, 1000 * 2 * kUs);
}

}  // namespace
}  // namespace kinetrace::detail::passes
