// Kernel sequences, GPU time per annotation, time at a full launch queue and copy bandwidth
// in the reports: the findings they warrant with their figures, the JSON's stable keys, the
// text's and the page's sections.

#include "analysis/workload_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/trace_analysis.h"
#include "analysis_trace_builder.h"

namespace kinetrace::detail {
namespace {

// 150 kernels a, b, c over and over on stream 7, launched 3 us apart and run 8 us apart (the
// queue grows past 4), the first half in a "## forward ##" span, the second in "## backward
// ##"; and a pageable copy of 300 us at 1 GB/s.
AnalysisReport workload() {
  TraceBuilder b;
  b.range("train", 0, 1400);
  const char* names[] = {"a", "b", "c"};
  for (int i = 0; i < 150; ++i) {
    b.op(names[i % 3], 3 * i, 3 * i + 2, 100 + 8 * i, 105 + 8 * i);
  }
  b.gpuAnnotation("## forward ##", 100, 100 + 8 * 75);
  b.gpuAnnotation("## backward ##", 100 + 8 * 75, 100 + 8 * 150);
  b.copy("Memcpy HtoD (Pageable -> Device)", 1300, 1310, 1610, 300'000, 1.0, 13);
  AnalysisOptions options;
  options.maxQueueLength = 4;
  return analyzeTraces(one(b.take()), options);
}

const Finding* findingOf(const AnalysisReport& report, const std::string& id) {
  for (const Finding& f : report.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

double evidenceOf(const Finding& f, const std::string& key) {
  for (const auto& [name, value] : f.evidence) {
    if (name == key) return value;
  }
  ADD_FAILURE() << f.id << " has no " << key;
  return -1;
}

TEST(WorkloadReportTest, ARepeatedChainIsAFusionCandidateWithWhatItWouldSave) {
  const AnalysisReport report = workload();
  const Finding* f = findingOf(report, "fusable-kernel-sequence");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->text.find("a > b > c ran back to back 50 times, issued under train"),
            std::string::npos)
      << f->text;
  // Each time: the launches of b and c (2 us each) and two gaps of 3 us.
  EXPECT_EQ(evidenceOf(*f, "saved_ns"), 50 * 10 * kUs);
  EXPECT_EQ(evidenceOf(*f, "count"), 50);
  EXPECT_EQ(evidenceOf(*f, "gap_ns"), 50 * 6 * kUs);
}

TEST(WorkloadReportTest, AFullQueueIsAFindingWithItsStreamAndTime) {
  const AnalysisReport report = workload();
  const Finding* f = findingOf(report, "launch-queue-full");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(evidenceOf(*f, "stream"), 7);
  EXPECT_EQ(evidenceOf(*f, "max_queue_length"), 4);
  EXPECT_EQ(evidenceOf(*f, "full_ns"), report.ranks[0].fullQueue.streams[0].fullNs);
  EXPECT_GT(evidenceOf(*f, "full_share"), 0.5);
}

TEST(WorkloadReportTest, TheAnnotationsWithTheMostGpuTimeAreAFinding) {
  const AnalysisReport report = workload();
  const Finding* f = findingOf(report, "gpu-time-by-annotation");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->text.find("## forward ##"), std::string::npos) << f->text;
  EXPECT_NEAR(evidenceOf(*f, "attributed_share"), 750.0 / 1050, 1e-9)
      << "the kernels, not the copy, on stream 13";
}

TEST(WorkloadReportTest, SlowPageableCopiesAreAFinding) {
  const AnalysisReport report = workload();
  const Finding* f = findingOf(report, "slow-host-copies");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(evidenceOf(*f, "mean_gbps"), 1.0);
  EXPECT_EQ(evidenceOf(*f, "gpu_ns"), 300 * kUs);
}

TEST(WorkloadReportTest, ABusyLoopWithoutTheseWarrantsNoneOfTheFindings) {
  TraceBuilder b;
  b.op("one", 0, 1, 5, 500);
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  for (const char* id : {"fusable-kernel-sequence", "launch-queue-full", "gpu-time-by-annotation",
                         "slow-host-copies"}) {
    EXPECT_EQ(findingOf(report, id), nullptr) << id;
  }
}

TEST(WorkloadReportTest, TheJsonHoldsEachFigureUnderItsStableKeys) {
  const nlohmann::json rank = nlohmann::json::parse(reportJson(workload()))["ranks"][0];
  const nlohmann::json& sequences = rank["kernel_sequences"];
  EXPECT_EQ(sequences["mode"], "windows");
  EXPECT_EQ(sequences["length"], 3);
  EXPECT_EQ(sequences["rows"][0]["kernels"], nlohmann::json::array({"a", "b", "c"}));
  EXPECT_EQ(sequences["rows"][0]["issuer"], "train");
  for (const char* key : {"count", "gpu_ns", "launch_ns", "gap_ns", "saved_ns", "operator_ns"})
    EXPECT_TRUE(sequences["rows"][0].contains(key)) << key;
  const nlohmann::json& annotations = rank["annotations"];
  EXPECT_EQ(annotations["attributed_by"], "gpu_user_annotation");
  EXPECT_EQ(annotations["rows"][0]["name"], "## backward ##") << "as much time: by name";
  EXPECT_EQ(annotations["rows"][0]["operations"], 75);
  EXPECT_EQ(annotations["rows"][0]["spans"], 1);
  const nlohmann::json& queue = rank["launch_queue_full"];
  EXPECT_EQ(queue["max_queue_length"], 4);
  EXPECT_EQ(queue["streams"][0]["stream"], 7);
  const nlohmann::json& copies = rank["copy_bandwidth"]["kinds"][0];
  EXPECT_EQ(copies["kind"], "Memcpy HtoD");
  EXPECT_EQ(copies["samples"], 1);
  EXPECT_EQ(copies["p50_gbps"], 1.0);
  EXPECT_EQ(copies["timeline"].size(),
            static_cast<std::size_t>(CopyBandwidthReport::kTimelineBins));
}

TEST(WorkloadReportTest, TheTextAndThePageHaveASectionForEachFigure) {
  const AnalysisReport report = workload();
  const std::string text = formatReport(report, {});
  for (const char* heading : {"Kernel sequences (3 kernels", "GPU time per annotation",
                              "Launch queue full (4 or more", "Copy bandwidth, GB/s"}) {
    EXPECT_NE(text.find(heading), std::string::npos) << heading;
  }
  const std::string page = reportHtml(report, {});
  for (const char* heading :
       {"<h3>Kernel sequences</h3>", "<h3>GPU time per annotation</h3>",
        "<h3>Launch queue full</h3>", "<h3>Copy bandwidth</h3>", "data-chart=\"copy-bandwidth\""}) {
    EXPECT_NE(page.find(heading), std::string::npos) << heading;
  }
}

// A hostile trace within a small budget: tens of thousands of distinct kernel and annotation
// names, every annotation open over every kernel after it, ranges nested 1,000 deep, absurd
// bandwidths. The analysis finishes within the cap, its tables bounded, what it left out
// counted.
TEST(WorkloadReportTest, AHostileTraceStaysWithinASmallBudgetAndSaysWhatItLeftOut) {
  constexpr std::size_t kCap = std::size_t{24} << 20;
  constexpr int kNames = 40'000;
  TraceBuilder b(-1, kCap, kCap);
  for (int d = 0; d < 1000; ++d) b.range("nest" + std::to_string(d), d, 1'000'000 - d);
  for (int i = 0; i < kNames; ++i) {
    const std::string n = std::to_string(i);
    b.op("kernel " + n, 1000 + i, 1001 + i, 2000 + 3 * i, 2002 + 3 * i);
    b.gpuAnnotation("span " + n, 2000 + 3 * i, 900'000);
    if (i % 100 == 0)
      b.copy("Memcpy HtoD (Pageable)", 1000 + i, 2000 + 3 * i, 2001 + 3 * i, 10, 1e300, 13);
  }
  CollectedTrace trace = b.take();
  EXPECT_EQ(trace.leftOut.begin()->second, 400u) << trace.leftOut.begin()->first;
  const RankReport r = analyze(std::move(trace));
  EXPECT_LE(budgetOf(kCap).peak(), kCap);
  EXPECT_EQ(r.kernelSequences.chains, static_cast<uint64_t>(kNames - 2));
  EXPECT_TRUE(r.kernelSequences.rows.empty()) << "none repeats";
  EXPECT_EQ(r.kernelSequences.leftOut.begin()->second, 1000u - 256)
      << "ranges past 256 deep, as issuers";
  EXPECT_EQ(r.annotations.rows.size(), 10u);
  EXPECT_GT(r.annotations.leftOut.size(), 0u);
  ASSERT_EQ(r.copyBandwidth.kinds.size(), 1u);
  EXPECT_DOUBLE_EQ(r.copyBandwidth.kinds[0].maxGbps, 0.01) << "its bytes over its duration";
}

TEST(WorkloadReportTest, HtasModeSaysWhyItFoundNone) {
  TraceBuilder b;
  b.range("aten::linear", 0, 40, 0, "cpu_op");
  for (int k = 0; k < 3; ++k) b.op("k", 1 + k, 2 + k, 100 + 10 * k, 105 + 10 * k);
  b.gpuAnnotation("aten::linear", 100, 125);
  AnalysisOptions options;
  options.sequenceOperator = "aten::";
  const AnalysisReport report = analyzeTraces(one(b.take()), options);
  EXPECT_NE(formatReport(report, options).find("none, as in HTA: a GPU annotation"),
            std::string::npos);
  const nlohmann::json sequences =
      nlohmann::json::parse(reportJson(report))["ranks"][0]["kernel_sequences"];
  EXPECT_EQ(sequences["mode"], "operator");
  EXPECT_EQ(sequences["operator"], "aten::");
  EXPECT_NE(sequences["none_because"], "");
}

}  // namespace
}  // namespace kinetrace::detail
