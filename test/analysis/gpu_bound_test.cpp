// What bounds a busy GPU: kernels classed by their GPU metric averages (memory, compute,
// tensor, neither, unknown), per top kernel, per step and overall, in the text, JSON and
// HTML reports; read back from JSON and .pftrace; losses said; nothing said without metrics.

#include "analysis/gpu_bound.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/finding_texts.h"
#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"
#include "analysis/trace_reader.h"
#include "analysis_trace_builder.h"
#include "kinetrace/sink.h"
#include "support/temp_dir.h"

namespace kinetrace::detail {
namespace {

using Metrics = std::vector<std::pair<std::string, double>>;

Metrics averages(double sm, double dram, double tensor) {
  return {{"SM throughput (%)", sm},
          {"DRAM throughput (%)", dram},
          {"Tensor pipe active (%)", tensor},
          {"GR active (%)", 99.0}};
}

TEST(GpuBoundTest, AUnitAtSixtyPercentOfItsPeakLimitsTheKernel) {
  EXPECT_EQ(classifyGpuBound({6.0, 82.0, 0.0}), GpuBound::Memory);
  EXPECT_EQ(classifyGpuBound({94.6, 3.0, 0.0}), GpuBound::Compute);
  EXPECT_EQ(classifyGpuBound({70.0, 20.0, 93.5}), GpuBound::Tensor);
  EXPECT_EQ(classifyGpuBound({20.0, 10.0, 0.0}), GpuBound::Neither);
  EXPECT_EQ(classifyGpuBound({59.9, 59.9, 59.9}), GpuBound::Neither) << "just under the limiter";
  EXPECT_EQ(classifyGpuBound({10.0, 60.0, 0.0}), GpuBound::Memory) << "at the limiter";
  EXPECT_EQ(classifyGpuBound({60.0, 10.0, std::nullopt}), GpuBound::Compute)
      << "no tensor metric: the rest is still classed";
  // DRAM busy, but the SMs busier: compute.
  EXPECT_EQ(classifyGpuBound({85.0, 80.0, 0.0}), GpuBound::Compute);
  // Tensor cores and DRAM both high: the busier one.
  EXPECT_EQ(classifyGpuBound({50.0, 90.0, 70.0}), GpuBound::Memory);
  EXPECT_EQ(classifyGpuBound({50.0, 70.0, 90.0}), GpuBound::Tensor);
  EXPECT_EQ(classifyGpuBound({std::nullopt, 90.0, 0.0}), GpuBound::Unknown);
  EXPECT_EQ(classifyGpuBound({}), GpuBound::Unknown);
}

TEST(GpuBoundTest, TheClassComesWithTheNumbersThatJustifyIt) {
  EXPECT_EQ(describeGpuBound(GpuBound::Memory, {6.0, 82.0, std::nullopt}),
            "memory (DRAM 82%, SM 6%)");
  EXPECT_EQ(describeGpuBound(GpuBound::Tensor, {70.0, 20.0, 93.4}),
            "tensor (tensor 93%, SM 70%, DRAM 20%)");
  EXPECT_EQ(describeGpuBound(GpuBound::Compute, {94.6, 3.0, 0.0}),
            "compute (SM 95%, DRAM 3%, tensor 0%)");
  EXPECT_EQ(describeGpuBound(GpuBound::Unknown, {}), "unknown (no SM or DRAM throughput)");
  EXPECT_EQ(describeGpuBound(GpuBound::Unknown, {5.0, std::nullopt, std::nullopt}),
            "unknown (no DRAM throughput)");
}

// Two steps: a copy, a bf16 GEMM and a kernel without metrics, then an FMA loop, a latency
// bound chain and the copy again; a kernel on another stream straddles the steps' border.
CollectedTrace phases(std::size_t memoryBytes = kDefaultReadBudgetBytes,
                      const Metadata& footer = {}) {
  TraceBuilder b(-1, memoryBytes);
  b.range("ProfilerStep#1", 0, 100);
  b.range("ProfilerStep#2", 100, 200);
  b.kernel("copy_kernel", 0, 40, averages(6, 82, 0));
  b.kernel("gemm_bf16", 40, 80, averages(70, 20, 93.4));
  b.kernel("early", 80, 90);  // ran before the first sample: no averages
  b.kernel("straddle", 95, 105, averages(90, 5, 0), 8);
  b.kernel("fma_kernel", 100, 150, averages(94.6, 3, 0));
  b.kernel("tiny_chain", 150, 170, averages(20, 10, 0));
  b.kernel("copy_kernel", 170, 200, averages(8, 80, 0));
  return b.take(footer);
}

const KernelRow& row(const RankReport& r, const std::string& name) {
  for (const KernelRow& k : r.kernels) {
    if (k.name == name) return k;
  }
  ADD_FAILURE() << "no kernel row " << name;
  return r.kernels.front();
}

int64_t nsOf(const BoundMix& mix, GpuBound bound) {
  return mix.ns[static_cast<std::size_t>(bound)];
}

TEST(GpuBoundTest, EachTopKernelIsClassedByItsTimeWeightedAverages) {
  const RankReport r = analyze(phases());
  const GpuMetricsReport& m = r.gpuMetrics;
  ASSERT_EQ(m.metrics.size(), 4u);
  EXPECT_EQ(m.metrics[0].key(), "SM throughput (%)");
  EXPECT_EQ(m.kernels, 7u);
  EXPECT_EQ(m.kernelsWithMetrics, 6u);

  const KernelRow& copy = row(r, "copy_kernel");
  EXPECT_EQ(copy.bound.bound, GpuBound::Memory);
  EXPECT_NEAR(copy.bound.averages[1], (82.0 * 40 + 80.0 * 30) / 70, 1e-9) << "weighted by time";
  EXPECT_EQ(describeMix(copy.bound, m.metrics), "memory (DRAM 81%, SM 7%)");
  EXPECT_EQ(describeMix(row(r, "gemm_bf16").bound, m.metrics),
            "tensor (tensor 93%, SM 70%, DRAM 20%)");
  EXPECT_EQ(row(r, "fma_kernel").bound.bound, GpuBound::Compute);
  EXPECT_EQ(row(r, "tiny_chain").bound.bound, GpuBound::Neither);
  EXPECT_EQ(row(r, "early").bound.bound, GpuBound::Unknown);
  EXPECT_TRUE(std::isnan(row(r, "early").bound.averages[0]));

  EXPECT_EQ(nsOf(m.all, GpuBound::Memory), 70 * kUs);
  EXPECT_EQ(nsOf(m.all, GpuBound::Compute), 60 * kUs);
  EXPECT_EQ(nsOf(m.all, GpuBound::Tensor), 40 * kUs);
  EXPECT_EQ(nsOf(m.all, GpuBound::Neither), 20 * kUs);
  EXPECT_EQ(nsOf(m.all, GpuBound::Unknown), 10 * kUs);
}

TEST(GpuBoundTest, AStepSharesItsKernelTimeByClassAndAveragesOverItsKernels) {
  const RankReport r = analyze(phases());
  ASSERT_EQ(r.steps.size(), 2u);
  const BoundMix& first = r.steps[0].bound;
  EXPECT_EQ(nsOf(first, GpuBound::Memory), 40 * kUs);
  EXPECT_EQ(nsOf(first, GpuBound::Tensor), 40 * kUs);
  EXPECT_EQ(nsOf(first, GpuBound::Unknown), 10 * kUs);
  EXPECT_EQ(nsOf(first, GpuBound::Compute), 5 * kUs) << "the straddling kernel's half";
  EXPECT_NEAR(first.averages[0], (6.0 * 40 + 70.0 * 40 + 90.0 * 5) / 85, 1e-9);
  const BoundMix& second = r.steps[1].bound;
  EXPECT_EQ(nsOf(second, GpuBound::Compute), 55 * kUs);
  EXPECT_EQ(nsOf(second, GpuBound::Neither), 20 * kUs);
  EXPECT_EQ(nsOf(second, GpuBound::Memory), 30 * kUs);
  EXPECT_EQ(nsOf(second, GpuBound::Unknown), 0);
  // A step is said by its leading class, not by its averages: step 1's averages (SM 41%,
  // DRAM 48%, tensor 44%) would blur a memory-bound copy and a GEMM into "neither".
  EXPECT_EQ(first.bound, GpuBound::Memory) << "memory and tensor tie at 40 us: the first";
  EXPECT_EQ(second.bound, GpuBound::Compute);
  EXPECT_EQ(describeMix(second, r.gpuMetrics.metrics),
            "compute 52% of kernel time (SM 55%, DRAM 26%, tensor 0%)");
}

TEST(GpuBoundTest, RecordsSpilledToFilesGiveTheSameClasses) {
  const RankReport inMemory = analyze(phases());
  const RankReport spilled = analyze(phases(64));  // a few records a list: every list spills
  ASSERT_EQ(spilled.steps.size(), inMemory.steps.size());
  for (std::size_t s = 0; s < spilled.steps.size(); ++s) {
    EXPECT_EQ(spilled.steps[s].bound.ns, inMemory.steps[s].bound.ns);
  }
  EXPECT_EQ(spilled.gpuMetrics.all.ns, inMemory.gpuMetrics.all.ns);
  EXPECT_EQ(describeMix(row(spilled, "copy_kernel").bound, spilled.gpuMetrics.metrics),
            "memory (DRAM 81%, SM 7%)");
}

Metadata lossyFooter() {
  Value metrics = Value::array({Value::object(
      {{"name", "dram__throughput"}, {"display_name", "DRAM throughput"}, {"unit", "%"}})});
  return {{"kinetrace_gpu_metrics", Value::object({{"metrics", metrics},
                                                   {"interval_ns", 1'000'000},
                                                   {"samples", 200},
                                                   {"lost", 5},
                                                   {"corrupted", 2},
                                                   {"setup_dropped", 1},
                                                   {"kernels_without_their_samples", 1}})}};
}

TEST(GpuBoundReportTest, TheTextReportHasABoundColumnStepLinesAndTheLosses) {
  const AnalysisReport report =
      analyzeTraces(one(phases(kDefaultReadBudgetBytes, lossyFooter())), {});
  const std::string text = formatReport(report, {});
  EXPECT_NE(text.find("memory (DRAM 81%, SM 7%)"), std::string::npos) << text;
  EXPECT_NE(text.find("kernels bound by memory 42% + compute 5% + tensor 42% + neither 0% + "
                      "unknown 11%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sampled every 1 ms: 200 samples kept, 5 lost, 2 corrupted, 1 set-up"),
            std::string::npos)
      << text;
  bool bound = false, lost = false;
  for (const std::string& f : testing::findingTexts(report.findings)) {
    bound |= f.find("bound by memory 35%, compute 30%, tensor 20%, neither 10%, unknown 5%") !=
             std::string::npos;
    lost |= f.find("lost 5 samples and 2 were corrupted (against 200 kept)") != std::string::npos;
  }
  EXPECT_TRUE(bound) << text;
  EXPECT_TRUE(lost) << text;
}

TEST(GpuBoundReportTest, TheJsonHasStableKeysPerKernelPerStepAndForTheTrace) {
  const AnalysisReport report =
      analyzeTraces(one(phases(kDefaultReadBudgetBytes, lossyFooter())), {});
  const nlohmann::json json = nlohmann::json::parse(reportJson(report));
  const nlohmann::json& rank = json["ranks"][0];
  const nlohmann::json& metrics = rank["gpu_metrics"];
  EXPECT_EQ(metrics["limiter_percent"], 60.0);
  EXPECT_EQ(metrics["metrics"][1]["key"], "DRAM throughput (%)");
  EXPECT_EQ(metrics["kernels_with_metrics"], 6);
  EXPECT_EQ(metrics["gpu_bound"]["ns_by_bound"]["memory"], 70 * kUs);
  EXPECT_EQ(metrics["sampling"]["lost"], 5);
  EXPECT_EQ(metrics["sampling"]["corrupted"], 2);
  EXPECT_EQ(metrics["sampling"]["interval_ns"], 1'000'000);
  const nlohmann::json& top = rank["kernels"][0];
  EXPECT_EQ(top["name"], "copy_kernel");
  EXPECT_EQ(top["gpu_bound"]["bound"], "memory");
  EXPECT_EQ(top["gpu_bound"]["described"], "memory (DRAM 81%, SM 7%)");
  EXPECT_NEAR(top["gpu_bound"]["averages"]["DRAM throughput (%)"].get<double>(),
              (82.0 * 40 + 80.0 * 30) / 70, 1e-9);
  const nlohmann::json& step = rank["steps"][1]["gpu_bound"];
  EXPECT_EQ(step["ns_by_bound"]["compute"], 55 * kUs);
  EXPECT_EQ(step["ns_by_bound"]["unknown"], 0);
}

TEST(GpuBoundReportTest, TheHtmlHasABoundColumnAndAStackedBarPerStep) {
  const AnalysisReport report =
      analyzeTraces(one(phases(kDefaultReadBudgetBytes, lossyFooter())), {});
  const std::string page = reportHtml(report, {});
  EXPECT_NE(page.find("<th>bound</th>"), std::string::npos);
  EXPECT_NE(page.find("<th>kernels bound by</th>"), std::string::npos);
  EXPECT_NE(page.find("memory (DRAM 81%, SM 7%)"), std::string::npos);
  EXPECT_NE(page.find("<span class=\"stack\"><i style=\"width:42.1%;background:#59a14f\" "
                      "title=\"memory 42%\"></i>"),
            std::string::npos)
      << "step 1's bar: memory first, 40 of its 95 us of kernel time";
  EXPECT_NE(page.find("5 lost, 2 corrupted"), std::string::npos);
}

TEST(GpuBoundReportTest, ATraceWithoutMetricsSaysNothingNew) {
  TraceBuilder b;
  b.range("ProfilerStep#1", 0, 100);
  b.op("gemm", 5, 8, 10, 20);
  b.op("relu", 9, 10, 30, 40);
  const AnalysisReport report = analyzeTraces(one(b.take()), {});
  EXPECT_FALSE(report.ranks[0].gpuMetrics.any());
  const std::string text = formatReport(report, {});
  EXPECT_EQ(text.find("bound"), std::string::npos) << text;
  EXPECT_EQ(text.find("GPU metrics"), std::string::npos) << text;
  const std::string json = reportJson(report);
  EXPECT_EQ(json.find("gpu_metrics"), std::string::npos);
  EXPECT_EQ(json.find("gpu_bound"), std::string::npos);
  const std::string page = reportHtml(report, {});
  EXPECT_EQ(page.find("<th>bound</th>"), std::string::npos);
  EXPECT_EQ(page.find("kernels bound by"), std::string::npos);
  EXPECT_EQ(page.find("GPU metrics"), std::string::npos);
}

// The same trace as JSON (metadata after the events, as kinetrace writes it) and as
// .pftrace (through `kinetrace convert`'s path): the same classes and losses.
TEST(GpuBoundReadTest, JsonAndPftraceTracesCarryTheAveragesAndTheMetadata) {
  testing::TempDir dir;
  const std::string json = (dir / "metrics.json").string();
  std::ofstream(json) << R"json({"baseTimeNanoseconds": 1700000000000000000, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 5, "tid": 5, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "kernel", "name": "copy", "pid": 0, "tid": 7, "ts": 0, "dur": 60,
     "args": {"device": 0, "stream": 7, "SM throughput (%)": 6.0, "DRAM throughput (%)": 82.0,
              "DRAM read (bytes/s)": 2.5e12}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 60, "dur": 40,
     "args": {"device": 0, "stream": 7, "SM throughput (%)": 71.0, "DRAM throughput (%)": 20.0,
              "Tensor pipe active (%)": 93.5, "est. achieved occupancy %": 50}},
    {"ph": "C", "cat": "gpu_metric", "name": "SM throughput", "pid": 0, "tid": 1073741824, "ts": 0,
     "args": {"%": 6.0}}
    ],
    "kinetrace_gpu_metrics": {"metrics": [{"name": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
      "display_name": "DRAM throughput", "unit": "%"}], "interval_ns": 100000, "samples": 1000,
      "lost": 3, "corrupted": 0, "setup_dropped": 1}})json";
  const std::string pftrace = (dir / "metrics.pftrace").string();
  {
    std::unique_ptr<Sink> sink = openSink(pftrace);
    readTraceFile(json, *sink, pftrace, budgetOf());
  }
  for (const std::string& path : {json, pftrace}) {
    SCOPED_TRACE(path);
    TraceCollector collector(path, budgetOf());
    readTraceFile(path, collector, path, budgetOf());
    const RankReport r = analyze(collector.take());
    const GpuMetricsReport& m = r.gpuMetrics;
    ASSERT_EQ(m.metrics.size(), 4u) << "SM, DRAM, DRAM read, tensor; not the occupancy";
    EXPECT_EQ(m.metrics[2].key(), "DRAM read (bytes/s)");
    EXPECT_EQ(nsOf(m.all, GpuBound::Memory), 60 * kUs);
    EXPECT_EQ(nsOf(m.all, GpuBound::Tensor), 40 * kUs);
    EXPECT_EQ(describeMix(row(r, "copy").bound, m.metrics), "memory (DRAM 82%, SM 6%)");
    EXPECT_TRUE(m.hasMetadata);
    EXPECT_EQ(m.lost, 3u);
    EXPECT_EQ(m.samples, 1000u);
    EXPECT_EQ(m.intervalNs, 100'000);
    ASSERT_EQ(r.steps.size(), 1u);
    EXPECT_EQ(nsOf(r.steps[0].bound, GpuBound::Memory), 60 * kUs);
  }
}

}  // namespace
}  // namespace kinetrace::detail
