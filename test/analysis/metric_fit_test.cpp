// Per-name GPU metrics of kernels shorter than a sample (analysis/metric_fit.h and the
// metric-fit pass): the non-negative least-squares solver, what the fit says of how well it
// explains the samples and of each value's error, and the analysis that uses it in place of
// the short kernels' averages, which are mostly their neighbours' and idle time's.

#include "analysis/metric_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "analysis/passes/metric_fit_pass.h"
#include "pass_fixture.h"

namespace kinetrace::detail {
namespace {

TEST(NonNegativeLeastSquaresTest, SolvesExactlyWhereTheSolutionIsPositive) {
  // A = [[1,0],[0,2],[1,1]], x = (3, 4): b = (3, 8, 7).
  const std::vector<double> gram = {2, 1, 1, 5};  // AᵀA
  const std::vector<double> moment = {10, 23};    // Aᵀb
  const std::vector<double> x = nonNegativeLeastSquares(gram, moment, 2);
  EXPECT_NEAR(x[0], 3, 1e-9);
  EXPECT_NEAR(x[1], 4, 1e-9);
}

TEST(NonNegativeLeastSquaresTest, AValueTheDataPullsBelowZeroIsZeroAndTheRestRefitted) {
  // b = (1, -1) on A = I: unconstrained (1, -1); constrained (1, 0).
  const std::vector<double> x = nonNegativeLeastSquares({1, 0, 0, 1}, {1, -1}, 2);
  EXPECT_NEAR(x[0], 1, 1e-12);
  EXPECT_EQ(x[1], 0);
  // Correlated columns: the unconstrained solution of A = [[1,1],[1,0.9]], b = (1, 1.2) is
  // (3, -2); with x >= 0, the best is along one column alone.
  const std::vector<double> y = nonNegativeLeastSquares({2, 1.9, 1.9, 1.81}, {2.2, 2.08}, 2);
  EXPECT_GE(y[0], 0);
  EXPECT_GE(y[1], 0);
  EXPECT_NEAR(y[0], 1.1, 1e-9);
  EXPECT_EQ(y[1], 0);
}

TEST(LinearFitTest, RecoversEachColumnsValueFromMixedSamplesAndSaysTheFitIsGood) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> share(0, 0.45);
  std::normal_distribution<double> noise(0, 0.2);
  LinearFit fit(3);
  for (int s = 0; s < 2000; ++s) {
    const double a = share(random);
    const double b = share(random);
    const std::vector<double> occupancy = {a, b, 1 - a - b};
    fit.add(occupancy, 80 * a + 15 * b + 2 * (1 - a - b) + noise(random));
  }
  const LinearFit::Result r = fit.solve();
  EXPECT_EQ(r.samples, 2000u);
  EXPECT_NEAR(r.values[0], 80, 0.5);
  EXPECT_NEAR(r.values[1], 15, 0.5);
  EXPECT_NEAR(r.values[2], 2, 0.5);
  EXPECT_GT(r.r2, 0.99);
  for (double error : r.standardError) EXPECT_LT(error, 0.5);
}

TEST(LinearFitTest, ColumnsThatNeverVaryApartCannotBeToldAndSaySo) {
  LinearFit fit(3);
  for (int s = 0; s < 500; ++s) {
    const double busy = (s % 10) / 10.0;
    // Columns 0 and 1 always together, in the same proportion.
    fit.add({busy * 0.5, busy * 0.5, 1 - busy}, 60 * busy);
  }
  const LinearFit::Result r = fit.solve();
  EXPECT_TRUE(std::isinf(r.standardError[0]));
  EXPECT_TRUE(std::isinf(r.standardError[1]));
  EXPECT_NEAR(r.values[0] + r.values[1], 120, 1e-6) << "their sum is what the data says";
  EXPECT_GT(r.r2, 0.999);
}

}  // namespace

namespace passes {
namespace {

constexpr int64_t kSampleUs = 1000;
// Enough samples that each name of the hand-made loops varies apart from the others by more
// than the 4 samples' worth a resolved value needs (kModelErrorPoints).
constexpr int64_t kSamples = 4000;

// A training loop's GPU: kernels of a few tens of microseconds, of three names, in changing
// proportions, with idle time, sampled every millisecond. Each kernel carries the
// overlap-weighted average of the samples it touched, as kinetrace's sampler writes it.
// `twins`: "attention" always runs right after an equal "gemm", so the two never vary apart.
// `engineNoise`: a "GR active" metric as well, of values no name explains (a whole-engine
// figure). `gemmSm`: gemm's SM throughput (past 100: what no sample could hold).
CollectedTrace shortKernels(bool twins, bool engineNoise = false, double gemmSm = 85) {
  struct Truth {
    double sm, dram;
  };
  const std::map<std::string, Truth> truth = {
      {"gemm", {gemmSm, 10}}, {"attention", {30, 75}}, {"layer_norm", {8, 40}}};
  const Truth idle{0, 0};
  std::mt19937 random(3);
  std::uniform_int_distribution<int> count(2, 12);
  std::uniform_int_distribution<int> pick(0, 2);
  const std::vector<std::string> names = {"gemm", "attention", "layer_norm"};
  struct Kernel {
    std::string name;
    int64_t startUs, endUs;
  };
  std::vector<Kernel> kernels;
  std::vector<std::pair<double, double>> samples;  // (sm, dram) per window
  for (int64_t s = 0; s < kSamples; ++s) {
    const int64_t windowStart = s * kSampleUs;
    int64_t at = windowStart + 5;
    double sm = 0, dram = 0;
    for (int k = count(random); k > 0 && at + 80 < windowStart + kSampleUs; --k) {
      const std::string& name =
          twins ? names[static_cast<std::size_t>(k % 2)] : names[pick(random)];
      const int64_t length = 20 + 10 * pick(random);
      kernels.push_back({name, at, at + length});
      sm += truth.at(name).sm * static_cast<double>(length) / kSampleUs;
      dram += truth.at(name).dram * static_cast<double>(length) / kSampleUs;
      if (twins) {
        const std::string& other = name == "gemm" ? names[1] : names[0];
        kernels.push_back({other, at + length, at + 2 * length});
        sm += truth.at(other).sm * static_cast<double>(length) / kSampleUs;
        dram += truth.at(other).dram * static_cast<double>(length) / kSampleUs;
        at += length;
      }
      at += length + 15 * pick(random);
    }
    samples.emplace_back(sm + idle.sm, dram + idle.dram);
  }
  TraceBuilder b;
  std::uniform_real_distribution<double> engine(0, 100);
  for (std::size_t s = 0; s < samples.size(); ++s) {
    std::vector<std::pair<std::string, double>> values = {{"SM throughput", samples[s].first},
                                                          {"DRAM throughput", samples[s].second}};
    if (engineNoise) values.emplace_back("GR active", engine(random));
    b.metricSample(static_cast<int64_t>(s) * kSampleUs, values);
  }
  for (const Kernel& k : kernels) {
    const auto& [sm, dram] = samples[static_cast<std::size_t>(k.startUs / kSampleUs)];
    b.kernel(k.name, k.startUs, k.endUs,
             {{"SM throughput (%)", sm}, {"DRAM throughput (%)", dram}});
  }
  return b.take({{"kinetrace_gpu_metrics",
                  Value::object({{"interval_ns", kSampleUs * 1000}, {"samples", kSamples}})}});
}

const KernelRow& rowOf(const RankReport& report, const std::string& name) {
  for (const KernelRow& row : report.kernels) {
    if (row.name == name) return row;
  }
  ADD_FAILURE() << "no row " << name;
  return report.kernels.front();
}

TEST(MetricFitPassTest, ShortKernelsGetTheirNamesFittedValuesAndTheirBoundFromThem) {
  const RankReport report = analyze(shortKernels(false));
  const MetricFitSummary& fit = report.gpuMetrics.fit;
  ASSERT_TRUE(fit.done);
  EXPECT_EQ(fit.samples, static_cast<uint64_t>(kSamples));
  ASSERT_EQ(report.gpuMetrics.metrics.size(), 2u);
  for (double r2 : fit.r2) EXPECT_GT(r2, 0.999);
  const struct {
    const char* name;
    double sm, dram;
    GpuBound bound;
  } expected[] = {{"gemm", 85, 10, GpuBound::Compute},
                  {"attention", 30, 75, GpuBound::Memory},
                  {"layer_norm", 8, 40, GpuBound::Neither}};
  for (const auto& e : expected) {
    const KernelRow& row = rowOf(report, e.name);
    EXPECT_TRUE(row.fit.fitted) << e.name;
    EXPECT_TRUE(row.fit.shorterThanSample) << e.name;
    EXPECT_TRUE(row.fit.resolved) << e.name;
    EXPECT_NEAR(row.fit.values[0], e.sm, 1) << e.name;
    EXPECT_NEAR(row.fit.values[1], e.dram, 1) << e.name;
    // Its own averages are its windows', a third of its own values or less: the bound comes
    // from the fit.
    EXPECT_EQ(row.bound.bound, e.bound) << e.name;
    EXPECT_NEAR(row.bound.averages[0], e.sm, 1) << e.name;
  }
}

TEST(MetricFitPassTest, NamesThatAlwaysRunTogetherAreUnresolvedNotGivenANumber) {
  const RankReport report = analyze(shortKernels(true));
  for (const char* name : {"gemm", "attention"}) {
    const KernelRow& row = rowOf(report, name);
    EXPECT_TRUE(row.fit.fitted) << name;
    EXPECT_FALSE(row.fit.resolved) << name;
    EXPECT_EQ(row.bound.bound, GpuBound::Unknown) << name << ": no number it cannot stand by";
  }
}

// What a real trace showed: "GR active", a whole-engine figure, fitted past 100% with errors
// above the bar for every name, made every name unresolved; only the metrics the classes
// read decide. A value past 100% of a peak, which no sample could hold, does.
TEST(MetricFitPassTest, OnlyTheMetricsTheClassesReadDecideAndNoneMayPassItsPeak) {
  const RankReport noisy = analyze(shortKernels(false, /*engineNoise=*/true));
  ASSERT_EQ(noisy.gpuMetrics.metrics.size(), 3u);
  EXPECT_TRUE(rowOf(noisy, "gemm").fit.resolved);
  EXPECT_GT(rowOf(noisy, "gemm").fit.standardError[2], kMostFitErrorPoints)
      << "GR active cannot be told, and does not count";

  const RankReport impossible = analyze(shortKernels(false, false, /*gemmSm=*/160));
  EXPECT_NEAR(rowOf(impossible, "gemm").fit.values[0], 160, 1);
  EXPECT_FALSE(rowOf(impossible, "gemm").fit.resolved);
  EXPECT_EQ(rowOf(impossible, "gemm").bound.bound, GpuBound::Unknown);
  EXPECT_TRUE(rowOf(impossible, "attention").fit.resolved);
}

// Kernels in the middle of the windows, and kernels across their edges; the samples' values
// are what the GPU did in [at + skew, at + skew + 1 ms) while the trace says [at, at + 1 ms):
// the samples' clock `skewUs` behind the kernels'.
CollectedTrace edgesAndMiddles(int64_t skewUs) {
  std::mt19937 random(5);
  std::bernoulli_distribution present(0.5);
  std::uniform_int_distribution<int> count(1, 3);
  struct Kernel {
    const char* name;
    int64_t startUs, endUs;
    double sm;
  };
  std::vector<Kernel> kernels;
  for (int64_t s = 0; s < kSamples; ++s) {
    const int64_t at = s * kSampleUs;
    for (int k = count(random); k > 0; --k) {
      kernels.push_back({"middle", at + 100 * k, at + 100 * k + 40, 20});
    }
    if (present(random)) kernels.push_back({"edge", at + kSampleUs - 40, at + kSampleUs + 160, 90});
  }
  TraceBuilder b;
  for (const Kernel& k : kernels) b.kernel(k.name, k.startUs, k.endUs);
  for (int64_t s = 0; s < kSamples; ++s) {
    const int64_t from = s * kSampleUs + skewUs;
    const int64_t to = from + kSampleUs;
    double sm = 0;
    for (const Kernel& k : kernels) {
      const int64_t overlap = std::min(k.endUs, to) - std::max(k.startUs, from);
      if (overlap > 0) sm += k.sm * static_cast<double>(overlap) / kSampleUs;
    }
    b.metricSample(s * kSampleUs, {{"SM throughput", sm}, {"DRAM throughput", 1.0}});
  }
  return b.take({{"kinetrace_gpu_metrics", Value::object({{"interval_ns", kSampleUs * 1000}})}});
}

// With the clocks aligned, a kernel across the windows' edges is solved as well as one in
// their middle. With the samples' clock 55 us behind, the sum no longer holds as recorded:
// the fit still gives the edge kernel a value (biased, with a small standard error over
// 4,000 samples), but the windows moved 50 us later explain the samples better, so the clocks
// are said to differ and no name is resolved. (Checking each name against moved windows
// instead would call the aligned edge kernel unresolved too: its share of each window moves
// with any shift, by construction.)
TEST(MetricFitPassTest, ANameWhoseValuesHangOnTheClocksAlignmentIsUnresolved) {
  const RankReport aligned = analyze(edgesAndMiddles(0));
  EXPECT_EQ(aligned.gpuMetrics.fit.misalignedNs, 0);
  ASSERT_TRUE(rowOf(aligned, "edge").fit.fitted);
  EXPECT_TRUE(rowOf(aligned, "edge").fit.resolved);
  EXPECT_NEAR(rowOf(aligned, "edge").fit.values[0], 90, 1);
  EXPECT_TRUE(rowOf(aligned, "middle").fit.resolved);
  EXPECT_NEAR(rowOf(aligned, "middle").fit.values[0], 20, 1);

  const RankReport skewed = analyze(edgesAndMiddles(55));
  EXPECT_EQ(skewed.gpuMetrics.fit.misalignedNs, 50'000) << "moved later";
  ASSERT_TRUE(rowOf(skewed, "edge").fit.fitted);
  EXPECT_FALSE(rowOf(skewed, "edge").fit.resolved)
      << "fitted SM " << rowOf(skewed, "edge").fit.values[0];
  EXPECT_FALSE(rowOf(skewed, "middle").fit.resolved);
  EXPECT_EQ(rowOf(skewed, "edge").bound.bound, GpuBound::Unknown);
  const std::string text = formatReport(analyzeTraces(one(edgesAndMiddles(55)), {}), {});
  EXPECT_NE(text.find("but the samples' windows moved 50.0 us later explain them better: the "
                      "samples' clock is not the kernels'"),
            std::string::npos)
      << text;
}

// What a ResNet-18 loop showed against Nsight Compute: a short layout transform that always
// runs right after the same GEMM, its share of a window varying apart from the GEMM's only
// by a little jitter, was given a value 20-40 points from the truth with a standard error of
// 1-3 points. Here the samples are exact and its value happens to be right, but its occupancy
// varies apart from the GEMM's by less than the 4 samples' worth a value needs: unresolved,
// its error at least kModelErrorPoints over the root of that; the GEMM, which also runs
// alone, is resolved.
TEST(MetricFitPassTest, ANameThatHardlyVariesApartFromItsNeighbourIsUnresolved) {
  std::mt19937 random(11);
  std::uniform_int_distribution<int> jitter(0, 2);
  std::bernoulli_distribution alone(0.3);
  TraceBuilder b;
  for (int64_t s = 0; s < kSamples; ++s) {
    const int64_t at = s * kSampleUs + 100;
    double sm = 0;
    // The GEMM, then (mostly) its transform: 30 to 32 us against a 150 us GEMM.
    b.kernel("gemm", at, at + 150);
    sm += 80 * 150.0 / kSampleUs;
    if (!alone(random)) {
      const int64_t length = 30 + jitter(random);
      b.kernel("transform", at + 150, at + 150 + length);
      sm += 30 * static_cast<double>(length) / kSampleUs;
    }
    if (alone(random)) {  // a second GEMM alone
      b.kernel("gemm", at + 400, at + 550);
      sm += 80 * 150.0 / kSampleUs;
    }
    b.metricSample(s * kSampleUs, {{"SM throughput", sm}, {"DRAM throughput", 5.0}});
  }
  const RankReport report = analyze(
      b.take({{"kinetrace_gpu_metrics", Value::object({{"interval_ns", kSampleUs * 1000}})}}));
  const KernelRow& transform = rowOf(report, "transform");
  ASSERT_TRUE(transform.fit.fitted);
  EXPECT_NEAR(transform.fit.values[0], 30, 1) << "exact samples: the value is right";
  EXPECT_LT(transform.fit.ownVariation, 4);
  EXPECT_GE(transform.fit.standardError[0], kModelErrorPoints / std::sqrt(4.0));
  EXPECT_FALSE(transform.fit.resolved);
  EXPECT_EQ(transform.bound.bound, GpuBound::Unknown);
  EXPECT_TRUE(rowOf(report, "gemm").fit.resolved);
  EXPECT_GE(rowOf(report, "gemm").fit.ownVariation, 4);
  EXPECT_EQ(report.gpuMetrics.fit.shortNames, 2u);
  EXPECT_EQ(report.gpuMetrics.fit.shortResolved, 1u);
}

TEST(MetricFitPassTest, TheReportsSayWhichValuesAreFittedAndWhichCannotBeTold) {
  const AnalysisReport fitted = analyzeTraces(one(shortKernels(false)), {});
  const std::string text = formatReport(fitted, {});
  EXPECT_NE(text.find("compute (SM 85%, DRAM 10%) (fitted)"), std::string::npos) << text;
  EXPECT_NE(text.find("kernels shorter than a sample: their names' metrics solved from 4,000 "
                      "samples (3 names, idle its own term); the fit explains SM throughput "
                      "100%, DRAM throughput 100% of the samples' variance"),
            std::string::npos)
      << text;
  const nlohmann::json json = nlohmann::json::parse(reportJson(fitted));
  const nlohmann::json& rank = json["ranks"][0];
  EXPECT_EQ(rank["gpu_metrics"]["fit"]["samples"], kSamples);
  EXPECT_GT(rank["gpu_metrics"]["fit"]["r2"]["SM throughput (%)"].get<double>(), 0.999);
  bool sawGemm = false;
  for (const nlohmann::json& kernel : rank["kernels"]) {
    if (kernel["name"] != "gemm") continue;
    sawGemm = true;
    EXPECT_EQ(kernel["metric_fit"]["resolved"], true);
    EXPECT_EQ(kernel["metric_fit"]["shorter_than_sample"], true);
    EXPECT_NEAR(kernel["metric_fit"]["values"]["SM throughput (%)"].get<double>(), 85, 1);
    EXPECT_LE(kernel["metric_fit"]["standard_error"]["SM throughput (%)"].get<double>(),
              kMostFitErrorPoints);
    EXPECT_GE(kernel["metric_fit"]["own_variation"].get<double>(), 4);
  }
  EXPECT_TRUE(sawGemm);

  const AnalysisReport twins = analyzeTraces(one(shortKernels(true)), {});
  const std::string said = formatReport(twins, {});
  EXPECT_NE(said.find("unresolved: shorter than a sample, not told apart from others"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("0 of the 2 names shorter than a sample resolved: the others' share of "
                      "the windows varies too little apart from the kernels beside them"),
            std::string::npos)
      << said;
  const nlohmann::json twinJson = nlohmann::json::parse(reportJson(twins));
  for (const nlohmann::json& kernel : twinJson["ranks"][0]["kernels"]) {
    if (kernel["name"] != "gemm") continue;
    EXPECT_EQ(kernel["metric_fit"]["resolved"], false);
    EXPECT_TRUE(kernel["metric_fit"]["standard_error"]["SM throughput (%)"].is_null());
  }
}

TEST(MetricFitPassTest, ATraceWithoutSamplesIsNotFittedAndKeepsItsAverages) {
  TraceBuilder b;
  b.kernel("gemm", 0, 5000, {{"SM throughput (%)", 90.0}, {"DRAM throughput (%)", 5.0}});
  const RankReport report = analyze(b.take());
  EXPECT_FALSE(report.gpuMetrics.fit.done);
  EXPECT_FALSE(report.kernels[0].fit.fitted);
  EXPECT_EQ(report.kernels[0].bound.bound, GpuBound::Compute);
}

}  // namespace
}  // namespace passes
}  // namespace kinetrace::detail
