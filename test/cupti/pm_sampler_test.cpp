// The GPU metric sampler's rules, against a stand-in for CUPTI's PM sampling: the set-up
// sample dropped, gaps counted as lost, implausible samples counted as corrupted, a hardware
// overflow recovered, a refusing GPU said once with tracing going on.

#include "cupti/pm_sampler.h"

#include <gtest/gtest.h>

#include <deque>

namespace kinetrace::detail {
namespace {

constexpr int64_t kInterval = 1'000'000;

struct Script {
  std::string refusePrepare;
  // What each decode() returns, in order; empty: nothing decoded.
  struct Decode {
    std::vector<PmSampleSpan> spans;
    std::vector<double> values;
    PmDecodeResult::Outcome outcome = PmDecodeResult::Decoded;
    bool moreWaiting = false;
  };
  std::deque<Decode> decodes;
  int starts = 0;
  int stops = 0;
  int restarts = 0;
  std::vector<std::string> preparedWith;
  std::size_t preparedHardwareBufferBytes = 0;
  std::size_t restartedHardwareBufferBytes = 0;
  std::size_t hostBytes = 1024;
  bool imagesFollowTheBuffer = false;  // hostBytes becomes half the buffer, as CUPTI's grow
};

class StandInDevice final : public PmDevice {
 public:
  explicit StandInDevice(Script& script) : script_(script) {}
  Status prepare(const std::vector<std::string>& names, uint64_t, std::size_t hardwareBufferBytes,
                 uint32_t) override {
    script_.preparedWith = names;
    script_.preparedHardwareBufferBytes = hardwareBufferBytes;
    if (!script_.refusePrepare.empty()) return Failure{script_.refusePrepare};
    return {};
  }
  Status start() override {
    ++script_.starts;
    return {};
  }
  void stop() noexcept override { ++script_.stops; }
  PmDecodeResult decode(std::vector<PmSampleSpan>& spans, std::vector<double>& values) override {
    PmDecodeResult result;
    if (script_.decodes.empty()) return result;
    Script::Decode next = script_.decodes.front();
    script_.decodes.pop_front();
    spans = next.spans;
    values = next.values;
    result.outcome = next.outcome;
    result.moreWaiting = next.moreWaiting;
    return result;
  }
  Status restart(std::size_t hardwareBufferBytes) override {
    ++script_.restarts;
    script_.restartedHardwareBufferBytes = hardwareBufferBytes;
    if (script_.imagesFollowTheBuffer) script_.hostBytes = hardwareBufferBytes / 2;
    return {};
  }
  std::size_t hostBytes() const override { return script_.hostBytes; }

 private:
  Script& script_;
};

std::vector<GpuMetric> twoMetrics() {
  return {GpuMetric{"dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput",
                    MetricUnit::Percent},
          GpuMetric{"dram__bytes_read.sum.per_second", "DRAM read", MetricUnit::BytesPerSecond}};
}

// Samples [from, from + interval) ... each with values (pct, rate).
Script::Decode contiguous(int64_t fromNs, int count, double pct = 50) {
  Script::Decode decode;
  for (int i = 0; i < count; ++i) {
    const auto start = static_cast<uint64_t>(fromNs + i * kInterval);
    decode.spans.push_back({start, start + kInterval});
    decode.values.push_back(pct);
    decode.values.push_back(1e9);
  }
  return decode;
}

class PmSamplerTest : public ::testing::Test {
 protected:
  std::unique_ptr<PmSampler> make(std::vector<uint32_t> devices = {0},
                                  std::size_t hardwareBufferBytes = 0) {
    PmSampler::Environment env;
    env.makeDevice = [this](uint32_t) { return std::make_unique<StandInDevice>(script_); };
    env.devicesInUse = [devices] { return devices; };
    env.toTraceClock = [](uint64_t ns) { return static_cast<int64_t>(ns) + 5; };
    env.decodePeriodNs = 0;  // driven by the test
    return std::make_unique<PmSampler>(std::move(env), twoMetrics(), kInterval, hardwareBufferBytes,
                                       budget_);
  }

  MemoryBudget budget_{std::size_t{1} << 30};
  Script script_;
};

TEST_F(PmSamplerTest, DropsTheSetUpSampleAndHandsOverTheRestInTheTraceClock) {
  script_.decodes.push_back(contiguous(1'000'000, 4));
  auto sampler = make();
  sampler->start();  // starts device 0, decodes the first batch
  GpuBatch batch;
  sampler->drain(batch);
  ASSERT_TRUE(batch.metricSet.has_value());
  EXPECT_EQ(batch.metricSet->metrics.size(), 2u);
  EXPECT_EQ(batch.metricSet->devices, std::vector<uint32_t>{0});
  EXPECT_EQ(batch.metricSet->intervalNs, kInterval);
  EXPECT_EQ(batch.metricLosses.setupDropped, 1u);
  EXPECT_EQ(batch.metricLosses.lost, 0u);
  ASSERT_EQ(batch.records.metricSamples.size(), 3u);
  EXPECT_EQ(batch.records.metricSamples[0].startNs, 2'000'005);
  EXPECT_EQ(batch.records.metricSamples[2].endNs, 5'000'005);
  ASSERT_EQ(batch.records.metricValues.size(), 6u);
  EXPECT_EQ(batch.records.metricValues[batch.records.metricSamples[1].values + 1], 1e9);
  EXPECT_EQ(script_.preparedWith.front(), "dram__throughput.avg.pct_of_peak_sustained_elapsed");
}

TEST_F(PmSamplerTest, ADeviceInUseBeforeAWindowIsSetUpThenAndStartsWithTheWindow) {
  auto sampler = make();
  sampler->runOnce();  // no window: the device is set up, not started
  EXPECT_FALSE(script_.preparedWith.empty());
  EXPECT_EQ(script_.starts, 0);
  GpuBatch idle;
  sampler->drain(idle);
  EXPECT_FALSE(idle.metricSet.has_value());  // nothing sampled yet, so no set to say
  script_.preparedWith.clear();
  script_.decodes.push_back(contiguous(1'000'000, 3));
  sampler->start();
  EXPECT_EQ(script_.starts, 1);
  EXPECT_TRUE(script_.preparedWith.empty());  // not set up a second time
  GpuBatch batch;
  sampler->drain(batch);
  ASSERT_TRUE(batch.metricSet.has_value());
  EXPECT_EQ(batch.metricSet->devices, std::vector<uint32_t>{0});
  EXPECT_EQ(batch.records.metricSamples.size(), 2u);
}

TEST_F(PmSamplerTest, AGapBetweenSamplesIsCountedAsTheSamplesItSpans) {
  Script::Decode first = contiguous(0, 3);
  Script::Decode later = contiguous(6 * kInterval, 2);  // samples 3, 4 and 5 missing
  first.spans.insert(first.spans.end(), later.spans.begin(), later.spans.end());
  first.values.insert(first.values.end(), later.values.begin(), later.values.end());
  script_.decodes.push_back(first);
  auto sampler = make();
  sampler->start();
  GpuBatch batch;
  sampler->drain(batch);
  EXPECT_EQ(batch.metricLosses.lost, 3u);
  EXPECT_EQ(batch.records.metricSamples.size(), 4u);
}

TEST_F(PmSamplerTest, ImplausibleSamplesAreCountedAsCorruptedNotKept) {
  Script::Decode decode = contiguous(0, 5);
  decode.values[2 * 2] = 900.0;                     // a share of peak of 900%
  decode.values[3 * 2 + 1] = -1.0;                  // a negative rate
  decode.spans[4].endNs = decode.spans[4].startNs;  // an empty span
  script_.decodes.push_back(decode);
  auto sampler = make();
  sampler->start();
  GpuBatch batch;
  sampler->drain(batch);
  EXPECT_EQ(batch.metricLosses.corrupted, 3u);
  EXPECT_EQ(batch.records.metricSamples.size(), 1u);
}

TEST_F(PmSamplerTest, AHardwareOverflowRestartsSamplingAndCountsWhatWasLost) {
  script_.decodes.push_back(contiguous(0, 3));
  Script::Decode overflow;
  overflow.outcome = PmDecodeResult::HardwareOverflow;
  script_.decodes.push_back(overflow);
  // After the restart: a set-up sample ending at 11 ms, stamped from the first start as
  // CUPTI does, then normal ones.
  Script::Decode afterRestart = contiguous(11 * kInterval, 2);
  afterRestart.spans.insert(afterRestart.spans.begin(), PmSampleSpan{0, 11 * kInterval});
  afterRestart.values.insert(afterRestart.values.begin(), {50, 1e9});
  script_.decodes.push_back(afterRestart);
  auto sampler = make();
  sampler->start();    // decodes samples 0..2
  sampler->runOnce();  // overflow: restart
  sampler->runOnce();  // the set-up sample and two more
  GpuBatch batch;
  sampler->drain(batch);
  EXPECT_EQ(script_.restarts, 1);
  EXPECT_EQ(script_.restartedHardwareBufferBytes, 2 * script_.preparedHardwareBufferBytes)
      << "the buffer that filled is doubled";
  EXPECT_EQ(batch.metricLosses.setupDropped, 2u);
  EXPECT_EQ(batch.metricLosses.lost, 7u);  // 3 ms to 11 ms: 8 intervals, one the set-up
  EXPECT_EQ(batch.records.metricSamples.size(), 4u);
}

TEST_F(PmSamplerTest, AnOverflowGrowsTheHardwareBufferOnlyAsFarAsTheMemoryCapAllows) {
  budget_.setCap(std::size_t{100} << 20);
  for (int i = 0; i < 3; ++i) {
    Script::Decode overflow;
    overflow.outcome = PmDecodeResult::HardwareOverflow;
    script_.decodes.push_back(overflow);
  }
  auto sampler = make({0}, std::size_t{32} << 20);
  sampler->start();  // 32 MiB fills: 64 MiB
  EXPECT_EQ(script_.restartedHardwareBufferBytes, std::size_t{64} << 20);
  const std::size_t heldAt64 = budget_.used();
  sampler->runOnce();  // 128 MiB would pass the 100 MiB cap: the same 64 MiB again
  EXPECT_EQ(script_.restarts, 2);
  EXPECT_EQ(script_.restartedHardwareBufferBytes, std::size_t{64} << 20);
  EXPECT_EQ(budget_.used(), heldAt64);
  sampler.reset();
  EXPECT_EQ(budget_.used(), 0u) << "everything the sampler held is given back";
}

TEST_F(PmSamplerTest, TheImagesThatGrowWithTheBufferAreCountedInTheCapToo) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  for (const std::size_t cap : {90 * kMiB, 200 * kMiB}) {
    SCOPED_TRACE(cap);
    budget_.setCap(cap);
    script_ = Script{};
    script_.hostBytes = 16 * kMiB;  // half the 32 MiB buffer
    script_.imagesFollowTheBuffer = true;
    Script::Decode overflow;
    overflow.outcome = PmDecodeResult::HardwareOverflow;
    script_.decodes.push_back(overflow);
    auto sampler = make({0}, 32 * kMiB);
    sampler->start();  // set up (buffer and images: 48 MiB, and a small queue), overflows
    // What the budget holds besides the buffer and the images: the hand-over queue, < 1 MiB.
    if (cap == 90 * kMiB) {
      // A 64 MiB buffer alone would fit (+32 MiB); with its images (+16 MiB) it does not.
      EXPECT_EQ(script_.restartedHardwareBufferBytes, 32 * kMiB);
      EXPECT_GE(budget_.used(), 48 * kMiB);
      EXPECT_LT(budget_.used(), 49 * kMiB);
    } else {
      EXPECT_EQ(script_.restartedHardwareBufferBytes, 64 * kMiB);
      EXPECT_GE(budget_.used(), 96 * kMiB);
      EXPECT_LT(budget_.used(), 97 * kMiB);
    }
    sampler.reset();
    EXPECT_EQ(budget_.used(), 0u);
  }
}

TEST_F(PmSamplerTest, AFullHostImageIsDecodedAgainAtOnce) {
  Script::Decode first = contiguous(0, 2);
  first.moreWaiting = true;
  script_.decodes.push_back(first);
  script_.decodes.push_back(contiguous(2 * kInterval, 2));
  auto sampler = make();
  sampler->start();
  GpuBatch batch;
  sampler->drain(batch);
  EXPECT_EQ(batch.records.metricSamples.size(), 3u);
  EXPECT_EQ(batch.metricLosses.lost, 0u);
}

TEST_F(PmSamplerTest, FinishStopsSamplingDecodesTheRestAndMarksTheDevicesComplete) {
  auto sampler = make();
  sampler->start();
  script_.decodes.push_back(contiguous(0, 3));
  sampler->finish();
  GpuBatch batch;
  sampler->drain(batch);
  EXPECT_EQ(script_.stops, 1);
  EXPECT_EQ(batch.records.metricSamples.size(), 2u);
  ASSERT_FALSE(batch.metricsCompleteUntil.empty());
  EXPECT_EQ(batch.metricsCompleteUntil.back(), (std::pair<uint32_t, int64_t>{0, INT64_MAX}));
  // The next window starts sampling again, with a set-up sample to drop.
  script_.decodes.push_back(contiguous(100 * kInterval, 2));
  sampler->start();
  GpuBatch next;
  sampler->drain(next);
  EXPECT_EQ(script_.starts, 2);
  EXPECT_EQ(next.metricLosses.setupDropped, 1u);
  EXPECT_EQ(next.metricLosses.lost, 0u);  // the gap between windows is no loss
  EXPECT_EQ(next.records.metricSamples.size(), 1u);
}

TEST_F(PmSamplerTest, AGpuThatRefusesIsSaidOnceInTheMetricSetAndNothingIsSampled) {
  script_.refusePrepare = "metric \"x\" is not one GH100 samples";
  auto sampler = make();
  sampler->start();
  sampler->runOnce();
  GpuBatch batch;
  sampler->drain(batch);
  ASSERT_TRUE(batch.metricSet.has_value());
  EXPECT_TRUE(batch.metricSet->metrics.empty());
  EXPECT_EQ(batch.metricSet->refused, "GPU 0: metric \"x\" is not one GH100 samples");
  GpuBatch again;
  sampler->drain(again);
  EXPECT_FALSE(again.metricSet.has_value());
  EXPECT_EQ(script_.starts, 0);
}

TEST_F(PmSamplerTest, SamplingThatDoesNotFitTheMemoryCapIsRefusedWithTheReason) {
  budget_.setCap(4096);
  auto sampler = make();
  sampler->start();
  GpuBatch batch;
  sampler->drain(batch);
  ASSERT_TRUE(batch.metricSet.has_value());
  EXPECT_NE(batch.metricSet->refused.find("memory_mb"), std::string::npos);
  EXPECT_EQ(budget_.used(), 0u);
}

TEST_F(PmSamplerTest, AHardwareBufferSizeAskedForIsTheOneUsedAndCounted) {
  auto sampler = make({0}, std::size_t{40} << 20);
  sampler->start();
  EXPECT_EQ(script_.preparedHardwareBufferBytes, std::size_t{40} << 20);
  EXPECT_GE(budget_.used(), std::size_t{40} << 20);
  EXPECT_LT(budget_.used(), PmSampler::hardwareBufferBytes(kInterval));
}

TEST_F(PmSamplerTest, WithoutASizeTheHardwareBufferIsSizedFromTheInterval) {
  auto sampler = make();
  sampler->start();
  EXPECT_EQ(script_.preparedHardwareBufferBytes, PmSampler::hardwareBufferBytes(kInterval));
}

TEST(PmSamplerSizes, BuffersHoldTheSameSpanOfSamplesAtEveryInterval) {
  EXPECT_EQ(PmSampler::queueSamples(1'000'000), 4000u);
  EXPECT_EQ(PmSampler::queueSamples(1'000'000'000), 256u);  // at least a few hundred
  // The host image as many samples as the hardware buffer holds of a busy GPU's.
  EXPECT_EQ(PmSampler::imageSamples(1'000'000), 256u);
  EXPECT_EQ(PmSampler::imageSamples(10'000'000), 256u);
  EXPECT_LE(PmSampler::hardwareBufferBytes(1'000), std::size_t{512} << 20);
  // A quarter of a second of a busy GPU's raw samples (about 175 KB each on an H100) at the
  // default 1 ms: five decodes' worth.
  EXPECT_GE(PmSampler::hardwareBufferBytes(1'000'000), std::size_t{250} * 175'000);
  EXPECT_GE(PmSampler::hardwareBufferBytes(1'000'000'000), std::size_t{32} << 20);
}

}  // namespace
}  // namespace kinetrace::detail
