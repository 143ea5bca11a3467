// What `kinetrace analyze` concludes, on hand-made traces: the ranges named for tiny
// kernels, traces without host ranges or steps, and what each finding says to do next.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/finding_texts.h"
#include "analysis/trace_analysis.h"
#include "analysis_trace_builder.h"

namespace kinetrace::detail {
namespace {

// The tiny kernels' issuers named in the finding cover 80% of them, or the sentence says
// what share they cover.
TEST(TraceAnalysisFindingsTest, TheRangesNamedForTinyKernelsCoverMostOfThemOrSayTheirShare) {
  auto tinyFinding = [](const std::vector<std::pair<std::string, int>>& issuers) {
    TraceBuilder b;
    int64_t id = 0, at = 0;
    for (const auto& [name, n] : issuers) {
      for (int i = 0; i < n; ++i, at += 10) {
        if (!name.empty()) b.range(name, at, at + 5, ++id, "cpu_op");  // "": outside any
        // A Triton range's kernel has its name, as torch.compile's do.
        const std::string kernel = name.rfind("triton_", 0) == 0 ? name : "tiny";
        b.op(kernel, at + 1, at + 2, at + 3, at + 5, "kernel", 7, name.empty() ? 0 : id);
      }
    }
    const AnalysisReport report = analyzeTraces(one(b.take()), {});
    for (const std::string& f : testing::findingTexts(report.findings)) {
      if (f.find("kernels under") != std::string::npos) return f;
    }
    return std::string("no tiny-kernel finding");
  };
  const std::string spread = tinyFinding({{"aten::add", 40},
                                          {"aten::mul", 30},
                                          {"aten::div", 10},
                                          {"aten::sub", 10},
                                          {"aten::neg", 10}});
  EXPECT_NE(spread.find("most were issued from aten::add (40%), aten::mul (30%), aten::div "
                        "(10%)."),
            std::string::npos)
      << spread;
  const std::string wide = tinyFinding({{"a", 30}, {"b", 25}, {"c", 15}, {"d", 15}, {"e", 15}});
  EXPECT_NE(wide.find("the ranges that issued the most were a (30%), b (25%), c (15%): 70% of "
                      "them together"),
            std::string::npos)
      << wide;
  const std::string outside = tinyFinding({{"", 50}, {"a", 20}, {"b", 20}, {"c", 10}});
  EXPECT_NE(outside.find("50% ran outside any host range (NVTX ranges"), std::string::npos)
      << outside;
  EXPECT_NE(outside.find("the ranges that issued the most were a (20%), b (20%), c (10%): 50% "
                         "of them together"),
            std::string::npos)
      << outside;
  const std::string some = tinyFinding({{"", 10}, {"a", 50}, {"b", 20}, {"c", 20}});
  EXPECT_NE(some.find("10% ran outside any host range; most were issued from a (50%), b (20%), "
                      "c (20%)."),
            std::string::npos)
      << some;
  const std::string compiled = tinyFinding({{"triton_poi_fused_add_0", 100}});
  EXPECT_NE(compiled.find("The trace runs torch.compile's Triton kernels already: replay the "
                          "step as a CUDA graph (torch.compile's mode=\"reduce-overhead\")"),
            std::string::npos)
      << compiled;
  const std::string few = tinyFinding({{"aten::add", 85}, {"aten::mul", 15}});
  EXPECT_NE(few.find("most were issued from aten::add (85%)."), std::string::npos) << few;
  EXPECT_NE(few.find("Fuse them (torch.compile)"), std::string::npos) << few;
}

// GPU work no host range can be tied to: the finding says what would name it.
TEST(TraceAnalysisFindingsTest, ATraceWithoutHostRangesSaysWhatWouldNameTheWork) {
  TraceBuilder b;
  for (int i = 0; i < 120; ++i) b.op("tiny", i * 10, i * 10 + 1, i * 10 + 2, i * 10 + 4);
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  EXPECT_EQ(report.ranks[0].opsWithHostRange, 0u);
  const std::string findings = ::testing::PrintToString(report.findings);
  EXPECT_NE(findings.find("none of the 120 GPU operations can be tied to the host code that "
                          "issued them"),
            std::string::npos)
      << findings;
  EXPECT_NE(findings.find("NVTX ranges"), std::string::npos);
  EXPECT_NE(findings.find("`kinetrace run --torch`"), std::string::npos);
  EXPECT_NE(findings.find("none ran inside a host range the trace holds"), std::string::npos)
      << findings;
  EXPECT_EQ(findings.find("(no host range)"), std::string::npos) << findings;
}

// Without step ranges there is no per-step view: the finding says so and how to add them;
// a trace with them says nothing of it.
TEST(TraceAnalysisFindingsTest, ATraceWithoutStepRangesSaysHowToAddThem) {
  TraceBuilder b;
  b.range("forward", 0, 10, 1);
  b.op("gemm", 1, 2, 3, 9, "kernel", 7, 1);
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  std::string findings;
  for (const std::string& f : testing::findingTexts(report.findings)) findings += f + "\n";
  EXPECT_NE(findings.find("the trace has no step ranges, so there is no per-step view"),
            std::string::npos)
      << findings;
  EXPECT_NE(findings.find("prof.step()"), std::string::npos);
  EXPECT_NE(findings.find("an NVTX range named \"step N\""), std::string::npos) << findings;
  EXPECT_NE(findings.find("kinetrace::step()"), std::string::npos);

  for (const char* step : {"ProfilerStep#4", "step 4", "Step#4", "step_4"}) {
    TraceBuilder s;
    s.range(step, 0, 10);
    s.range("optimizer.step", 0, 5);
    s.range("step_begin", 0, 5);
    s.op("gemm", 1, 2, 3, 9);
    const AnalysisReport withSteps = analyzeTraces(one(s.take()), {});
    ASSERT_EQ(withSteps.ranks[0].steps.size(), 1u) << step;
    EXPECT_EQ(withSteps.ranks[0].steps[0].name, step);
    for (const std::string& f : testing::findingTexts(withSteps.findings)) {
      EXPECT_EQ(f.find("no step ranges"), std::string::npos) << f;
    }
  }
}

// Every finding ends with what to do next.
TEST(TraceAnalysisFindingsTest, EachFindingNamesWhatToDoNext) {
  TraceBuilder b;
  b.range("main", 0, 4'000);
  for (int i = 0; i < 200; ++i) b.op("tiny", i * 20, i * 20 + 1, i * 20 + 12, i * 20 + 14);
  for (int step = 0; step < 4; ++step) b.memory(step * 1'000 + 10, 1'000'000 * (step + 1));
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  ASSERT_GE(report.findings.size(), 4u);
  const char* kNext[] = {"see ",      "See ",         "Fuse ",      "replay ",
                         "Take ",     "Leave it out", "would name", "torch.profiler marks",
                         "look for",  "Look at",      "Overlap",    "Compare",
                         "say which", "Trace with",   "record "};
  for (const std::string& f : testing::findingTexts(report.findings)) {
    EXPECT_TRUE(std::any_of(std::begin(kNext), std::end(kNext), [&f](const char* next) {
      return f.find(next) != std::string::npos;
    })) << f;
  }
}

TEST(TraceAnalysisFindingsTest, ABusyGpuIsSentToItsKernels) {
  TraceBuilder b;
  b.range("ProfilerStep#1", 0, 100);
  b.op("gemm", 0, 1, 1, 99);
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  ASSERT_FALSE(report.findings.empty());
  EXPECT_NE(report.findings[0].text.find("busy 98.0%"), std::string::npos) << report.findings[0];
  EXPECT_NE(report.findings[0].text.find("see the kernel table below"), std::string::npos)
      << report.findings[0];
}

// A GPU waiting while the host loads the next batch is sent to the input pipeline, not told
// to launch faster.
TEST(TraceAnalysisFindingsTest, HostWaitDuringDataLoadingIsBlamedOnTheLoaderNotOnLaunching) {
  TraceBuilder b;
  for (int step = 0; step < 3; ++step) {
    const int64_t at = step * 100;
    b.range("ProfilerStep#" + std::to_string(step), at, at + 100);
    b.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", at, at + 90);
    b.op("k", at + 91, at + 92, at + 93, at + 99);
  }
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  bool loader = false;
  for (const std::string& f : testing::findingTexts(report.findings)) {
    EXPECT_EQ(f.find("does not launch work fast enough"), std::string::npos) << f;
    EXPECT_EQ(f.find("CUDA graph"), std::string::npos) << f;
    loader = loader || f.find("most of it while data loading ran") != std::string::npos;
  }
  EXPECT_TRUE(loader) << ::testing::PrintToString(report.findings);
}

// Every finding's id is one of the table's, which docs/ANALYSIS.md holds: a program keying
// on ids finds each documented.
TEST(TraceAnalysisFindingsTest, EveryIdIsInTheTableAndTheTableIsDocumented) {
  std::set<std::string> ids;
  for (const FindingKind& kind : kFindingKinds) {
    EXPECT_TRUE(ids.insert(kind.id).second) << "two rows for " << kind.id;
  }
  // A trace that draws many findings: tiny kernels without steps or host ranges around
  // them, memory growing, a loader idling the GPU.
  TraceBuilder b;
  b.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 1'000);
  for (int i = 0; i < 200; ++i) {
    b.op("tiny", 1'000 + i * 20, 1'000 + i * 20 + 1, 1'000 + i * 20 + 12, 1'000 + i * 20 + 14);
  }
  for (int step = 0; step < 4; ++step) b.memory(step * 1'000 + 10, 1'000'000 * (step + 1));
  TraceBuilder none;
  none.range("main", 0, 100);
  for (TraceBuilder* builder : {&b, &none}) {
    const AnalysisReport report = analyzeTraces(one(builder->take()), {});
    ASSERT_FALSE(report.findings.empty());
    for (const Finding& finding : report.findings) {
      EXPECT_EQ(ids.count(finding.id), 1u) << finding.id << ": " << finding.text;
      EXPECT_EQ(finding.rank, std::optional<std::size_t>(0)) << finding.id;
    }
  }
  std::ifstream file(std::string(KINETRACE_SOURCE_DIR) + "/docs/ANALYSIS.md");
  ASSERT_TRUE(file.good()) << "docs/ANALYSIS.md not found";
  std::stringstream text;
  text << file.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- finding kinds -->\n";
  const std::size_t from = doc.find(begin);
  const std::size_t to = doc.find("<!-- end of finding kinds -->");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(doc.substr(from + begin.size(), to - from - begin.size()), findingKindsMarkdown())
      << "docs/ANALYSIS.md's table is behind kFindingKinds";
}

}  // namespace
}  // namespace kinetrace::detail
