#include "correlate/kernel_metrics.h"

#include <gtest/gtest.h>

#include <vector>

#include "correlate/assembler.h"

// GPU metric samples and kernels fed to the assembler as a PM-sampling source would hand
// them over, in either order: each kernel's averages, the samples that go to the trace, the
// losses counted, and how long samples are kept.

namespace kinetrace::detail {
namespace {

constexpr int64_t kStart = 1'000'000'000;
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kMs = 1'000'000;
constexpr uint32_t kDevice = 0;

GpuMetricSet twoMetrics() {
  GpuMetricSet set;
  set.metrics = {
      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput", MetricUnit::Percent},
      {"dram__bytes_read.sum.per_second", "DRAM read", MetricUnit::BytesPerSecond}};
  set.intervalNs = kMs;
  set.devices = {kDevice};
  return set;
}

class KernelMetricsTest : public ::testing::Test {
 protected:
  // Without launch calls, so that kernels go out as soon as their samples allow.
  void make(bool launchCalls = false) {
    AssemblerOptions options;
    options.startNs = kStart;
    options.launchCallsRecorded = launchCalls;
    options.gpuActivities.add(Activity::Kernel);
    options.apiName = [](ApiDomain, uint32_t) { return std::string("cudaLaunchKernel"); };
    assembler = std::make_unique<Assembler>(tables, options);
    GpuBatch first;
    first.metricSet = twoMetrics();
    assembler->addGpu(first);
  }
  // One sample of 1 ms from `start`, its two values.
  static void sample(GpuBatch& batch, int64_t start, double sm, double dram,
                     uint32_t device = kDevice, int64_t length = kMs) {
    GpuMetricSampleRecord s;
    s.startNs = start;
    s.endNs = start + length;
    s.deviceId = device;
    s.values = static_cast<uint32_t>(batch.records.metricValues.size());
    batch.records.metricValues.push_back(sm);
    batch.records.metricValues.push_back(dram);
    batch.records.metricSamples.push_back(s);
  }
  static KernelRecord kernel(int64_t start, int64_t end, uint32_t device = kDevice) {
    KernelRecord k;
    k.at.startNs = start;
    k.at.endNs = end;
    k.at.deviceId = device;
    k.at.streamId = 7;
    return k;
  }
  void kernels(std::vector<KernelRecord> list) {
    GpuBatch batch;
    batch.records.kernels = std::move(list);
    assembler->addGpu(batch);
  }
  // Four samples of 1 ms from kStart: SM 10, 20, 30, 40 %; DRAM 1000, 2000, 3000, 4000 B/s.
  void fourSamples() {
    GpuBatch batch;
    for (int i = 0; i < 4; ++i) sample(batch, kStart + i * kMs, 10.0 * (i + 1), 1000.0 * (i + 1));
    assembler->addGpu(batch);
  }
  // The kernel of `out` that started at `start`, and its averages (empty: none).
  std::vector<double> averagesOf(int64_t start) const {
    for (const KernelRecord& k : out.kernels) {
      if (k.at.startNs != start) continue;
      if (k.metricAverages == 0) return {};
      const auto first = out.metricValues.begin() + (k.metricAverages - 1);
      return std::vector<double>(first, first + 2);
    }
    ADD_FAILURE() << "no kernel written at " << start;
    return {};
  }

  TraceTables tables;
  std::unique_ptr<Assembler> assembler;
  TraceRecords out;
};

TEST_F(KernelMetricsTest, TheMetricSetReachesTheTablesFromTheFirstBatch) {
  make();
  ASSERT_EQ(tables.gpuMetrics.metrics.size(), 2u);
  EXPECT_EQ(tables.gpuMetrics.metrics[1].name, "dram__bytes_read.sum.per_second");
  EXPECT_EQ(tables.gpuMetrics.metrics[1].unit, MetricUnit::BytesPerSecond);
  EXPECT_EQ(tables.gpuMetrics.intervalNs, kMs);
}

TEST_F(KernelMetricsTest, AKernelInsideOneSampleGetsThatSamplesValues) {
  make();
  fourSamples();
  kernels({kernel(kStart + 100'000, kStart + 400'000)});
  assembler->assemble(kStart + 10 * kSecond, out);
  EXPECT_EQ(averagesOf(kStart + 100'000), (std::vector<double>{10.0, 1000.0}));
}

TEST_F(KernelMetricsTest, AKernelOverTwoSamplesGetsTheirMeanWeightedByOverlap) {
  make();
  fourSamples();
  // 250 us of the first sample, 750 us of the second.
  kernels({kernel(kStart + 750'000, kStart + 1'750'000)});
  assembler->assemble(kStart + 10 * kSecond, out);
  EXPECT_EQ(averagesOf(kStart + 750'000),
            (std::vector<double>{(250 * 10.0 + 750 * 20.0) / 1000,
                                 (250 * 1000.0 + 750 * 2000.0) / 1000}));
}

TEST_F(KernelMetricsTest, AKernelOverThreeSamplesGetsTheWeightedMeanOfEachPart) {
  make();
  fourSamples();
  // 500 us of the second sample, all of the third, 200 us of the fourth.
  kernels({kernel(kStart + 1'500'000, kStart + 3'200'000)});
  assembler->assemble(kStart + 10 * kSecond, out);
  EXPECT_EQ(averagesOf(kStart + 1'500'000),
            (std::vector<double>{(500 * 20.0 + 1000 * 30.0 + 200 * 40.0) / 1700,
                                 (500 * 2000.0 + 1000 * 3000.0 + 200 * 4000.0) / 1700}));
}

TEST_F(KernelMetricsTest, TheMeanIsOfTheCoveredPartsWhenSamplesAreMissingBetween) {
  make();
  GpuBatch batch;
  sample(batch, kStart, 10, 1000);
  sample(batch, kStart + 2 * kMs, 40, 4000);  // the sample between was lost
  assembler->addGpu(batch);
  kernels({kernel(kStart + 500'000, kStart + 2'250'000)});
  assembler->assemble(kStart + 10 * kSecond, out);
  EXPECT_EQ(
      averagesOf(kStart + 500'000),
      (std::vector<double>{(500 * 10.0 + 250 * 40.0) / 750, (500 * 1000.0 + 250 * 4000.0) / 750}));
}

TEST_F(KernelMetricsTest, AKernelThatOverlapsNoSampleGetsNone) {
  make();
  fourSamples();
  GpuBatch later;
  later.metricsCompleteUntil = {{kDevice, kStart + 10 * kMs}};  // the source lost the rest
  assembler->addGpu(later);
  kernels({kernel(kStart + 5 * kMs, kStart + 6 * kMs)});
  assembler->assemble(kStart + 10 * kSecond, out);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(out.kernels[0].metricAverages, 0u);
  EXPECT_EQ(assembler->losses().kernelsWithoutTheirSamples, 0u);
}

TEST_F(KernelMetricsTest, AKernelOfADeviceNotSampledGoesOutAtOnceWithNone) {
  make();
  kernels({kernel(kStart + 100, kStart + 200, /*device=*/3)});
  assembler->assemble(kStart + 100'000, out);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(out.kernels[0].metricAverages, 0u);
  EXPECT_EQ(assembler->kernelMetrics().kernelsHeld(), 0u);
}

TEST_F(KernelMetricsTest, AKernelWaitsForTheSamplesThatCoverItsEnd) {
  make();
  kernels({kernel(kStart + 500'000, kStart + 1'500'000)});
  assembler->assemble(kStart + 2 * kMs, out);
  EXPECT_TRUE(out.kernels.empty());
  EXPECT_EQ(assembler->kernelMetrics().kernelsHeld(), 1u);
  GpuBatch first;
  sample(first, kStart, 10, 1000);
  assembler->addGpu(first);
  assembler->assemble(kStart + 3 * kMs, out);
  EXPECT_TRUE(out.kernels.empty()) << "the samples are complete only to its middle";
  GpuBatch second;
  sample(second, kStart + kMs, 20, 2000);
  assembler->addGpu(second);
  assembler->assemble(kStart + 4 * kMs, out);
  EXPECT_EQ(averagesOf(kStart + 500'000), (std::vector<double>{15.0, 1500.0}));
  EXPECT_EQ(assembler->kernelMetrics().kernelsHeld(), 0u);
}

TEST_F(KernelMetricsTest, AKernelWhoseSamplesNeverComeGoesOutAfterTheGraceAndIsCounted) {
  make();
  kernels({kernel(kStart + 100, kStart + 200)});
  assembler->assemble(kStart + KernelMetrics::kSampleGraceNs, out);
  EXPECT_TRUE(out.kernels.empty());
  assembler->assemble(kStart + 201 + KernelMetrics::kSampleGraceNs, out);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(out.kernels[0].metricAverages, 0u);
  EXPECT_EQ(assembler->losses().kernelsWithoutTheirSamples, 1u);
  EXPECT_EQ(assembler->losses().kernelsWhoseSamplesCameLate, 1u);
  EXPECT_EQ(assembler->losses().kernelsWhoseSamplesWereLetGo, 0u);
}

TEST_F(KernelMetricsTest, AtFinishKernelsStillWaitingGetWhatSamplesThereAre) {
  make();
  GpuBatch batch;
  sample(batch, kStart, 10, 1000);
  assembler->addGpu(batch);
  kernels({kernel(kStart + 500'000, kStart + 1'500'000)});
  assembler->setStop(kStart + kSecond);
  assembler->finish(0, out);
  EXPECT_EQ(averagesOf(kStart + 500'000), (std::vector<double>{10.0, 1000.0}));
  EXPECT_EQ(assembler->kernelMetrics().samplesHeld(), 0u);
}

TEST_F(KernelMetricsTest, SamplesGoToTheTraceAndThoseOutsideTheWindowAreCounted) {
  make();
  GpuBatch batch;
  sample(batch, kStart - kMs, 1, 100);  // began before the start
  sample(batch, kStart, 10, 1000);
  sample(batch, kStart + 2 * kSecond, 99, 9900);  // after the stop
  assembler->setStop(kStart + kSecond);
  assembler->addGpu(batch);
  assembler->finish(0, out);
  ASSERT_EQ(out.metricSamples.size(), 1u);
  EXPECT_EQ(out.metricSamples[0].startNs, kStart);
  EXPECT_EQ(out.metricSamples[0].endNs, kStart + kMs);
  EXPECT_EQ(out.metricSamples[0].deviceId, kDevice);
  EXPECT_EQ(out.metricValues[out.metricSamples[0].values], 10.0);
  EXPECT_EQ(out.metricValues[out.metricSamples[0].values + 1], 1000.0);
  EXPECT_EQ(assembler->losses().outOfWindowEvents, 2u);
}

TEST_F(KernelMetricsTest, TheSourcesLossCountersAddUp) {
  make();
  for (int poll = 0; poll < 3; ++poll) {
    GpuBatch batch;
    batch.metricLosses.lost = 5;
    batch.metricLosses.corrupted = 2;
    batch.metricLosses.setupDropped = 1;
    assembler->addGpu(batch);
  }
  GpuBatch torn;  // a sample whose values were not all handed over
  sample(torn, kStart, 10, 1000);
  torn.records.metricValues.pop_back();
  assembler->addGpu(torn);
  EXPECT_EQ(assembler->losses().gpuMetricSamplesLost, 15u);
  EXPECT_EQ(assembler->losses().gpuMetricSamplesCorrupted, 7u);
  EXPECT_EQ(assembler->losses().gpuMetricSetupSamplesDropped, 3u);
}

TEST_F(KernelMetricsTest, SamplesAreKeptOnlyUntilTheCompletionMarkPassesThem) {
  make();
  // Twenty seconds of 1 ms samples and kernels, as a long window hands them over: what is
  // kept stays within the grace before the drain horizon, not the window.
  constexpr int64_t kGraceSamples = 500;  // the assembler's late-call grace, in samples
  std::size_t mostHeld = 0;
  for (int64_t ms = 0; ms < 20'000; ms += 10) {
    GpuBatch batch;
    for (int64_t i = 0; i < 10; ++i) sample(batch, kStart + (ms + i) * kMs, 50, 5000);
    batch.records.kernels.push_back(kernel(kStart + ms * kMs + 100, kStart + (ms + 3) * kMs));
    assembler->addGpu(batch);
    assembler->assemble(kStart + (ms + 10) * kMs, out);
    mostHeld = std::max(mostHeld, assembler->kernelMetrics().samplesHeld());
  }
  EXPECT_LE(mostHeld, static_cast<std::size_t>(kGraceSamples + 20));
  EXPECT_EQ(out.kernels.size(), 2'000u);
  for (const KernelRecord& k : out.kernels) {
    ASSERT_NE(k.metricAverages, 0u);
    EXPECT_EQ(out.metricValues[k.metricAverages - 1], 50.0);
  }
  EXPECT_EQ(assembler->losses().kernelsWithoutTheirSamples, 0u);
}

TEST_F(KernelMetricsTest, AKernelWhoseSamplesWereLetGoIsWrittenWithoutAndCounted) {
  make();
  GpuBatch batch;
  for (int64_t i = 0; i < 2000; ++i) sample(batch, kStart + i * kMs, 50, 5000);
  assembler->addGpu(batch);
  assembler->assemble(kStart + 2 * kSecond, out);  // lets go of what ended before 1.5 s
  EXPECT_LT(assembler->kernelMetrics().samplesHeld(), 2000u);
  kernels({kernel(kStart + 10 * kMs, kStart + 11 * kMs)});  // its record comes too late
  assembler->assemble(kStart + 2 * kSecond, out);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(out.kernels[0].metricAverages, 0u);
  EXPECT_EQ(assembler->losses().kernelsWithoutTheirSamples, 1u);
  EXPECT_EQ(assembler->losses().kernelsWhoseSamplesWereLetGo, 1u);
  EXPECT_EQ(assembler->losses().kernelsWhoseSamplesCameLate, 0u);
}

TEST_F(KernelMetricsTest, SheddingWritesTheWaitingKernelsAndLetsGoOfEverySample) {
  make();
  fourSamples();
  kernels({kernel(kStart + 3 * kMs, kStart + 5 * kMs)});
  assembler->shed(1 << 20);
  assembler->takeReady(out);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(out.kernels[0].metricAverages, 0u);
  EXPECT_EQ(assembler->losses().kernelsWithoutTheirSamples, 1u);
  EXPECT_EQ(assembler->losses().kernelsWhoseSamplesWereLetGo, 0u);  // the memory cap's
  EXPECT_EQ(assembler->losses().kernelsWhoseSamplesCameLate, 0u);
  EXPECT_EQ(assembler->kernelMetrics().samplesHeld(), 0u);
}

}  // namespace
}  // namespace kinetrace::detail
