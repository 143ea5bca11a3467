// The copy-bandwidth pass: each kind's bandwidth over time (the copies of that kind running
// at each moment, summed) and HTA's summary of its values above 0.

#include "analysis/passes/copy_bandwidth_pass.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

CopyBandwidthReport bandwidthOf(CollectedTrace trace) {
  PassFixture f(std::move(trace));
  RankReport report;
  CopyBandwidthPass(f.context()).finish(report);
  return report.copyBandwidth;
}

const CopyKindBandwidth& kind(const CopyBandwidthReport& r, const std::string& name) {
  for (const CopyKindBandwidth& k : r.kinds) {
    if (k.kind == name) return k;
  }
  throw std::runtime_error("no kind " + name);
}

TEST(CopyBandwidthPassTest, OverlappingCopiesOfAKindSumAndTheSummaryIsOverTheValues) {
  TraceBuilder b;
  // 5 GB/s from 0 to 10 us, 3 GB/s from 5 to 15 us: the sum is 5, 8, then 3.
  b.copy("Memcpy HtoD (Pageable -> Device)", 0, 0, 10, 50'000, 5.0);
  b.copy("Memcpy HtoD (Pinned -> Device)", 1, 5, 15, 30'000, 3.0);
  const CopyBandwidthReport r = bandwidthOf(b.take());
  ASSERT_EQ(r.kinds.size(), 1u) << "one kind: the name's first 11 letters";
  const CopyKindBandwidth& k = kind(r, "Memcpy HtoD");
  EXPECT_EQ(k.operations, 2u);
  EXPECT_EQ(k.bytes, 80'000);
  EXPECT_EQ(k.gpuNs, 20 * kUs);
  EXPECT_EQ(k.samples, 3u);
  EXPECT_DOUBLE_EQ(k.minGbps, 3.0);
  EXPECT_DOUBLE_EQ(k.maxGbps, 8.0);
  EXPECT_NEAR(k.meanGbps, 16.0 / 3, 1e-12);
  EXPECT_NEAR(k.stdGbps, std::sqrt(19.0 / 3), 1e-12) << "sample standard deviation";
  EXPECT_DOUBLE_EQ(k.p25Gbps, 4.0) << "interpolated between 3 and 5";
  EXPECT_DOUBLE_EQ(k.p50Gbps, 5.0);
  EXPECT_DOUBLE_EQ(k.p75Gbps, 6.5);
}

TEST(CopyBandwidthPassTest, CopiesBackToBackDoNotRunTogether) {
  TraceBuilder b;
  b.copy("Memcpy DtoD (Device -> Device)", 0, 0, 10, 1, 5.0);
  b.copy("Memcpy DtoD (Device -> Device)", 1, 10, 20, 1, 3.0);
  const CopyKindBandwidth k = kind(bandwidthOf(b.take()), "Memcpy DtoD");
  EXPECT_EQ(k.samples, 2u);
  EXPECT_DOUBLE_EQ(k.maxGbps, 5.0) << "not 8: the first ended as the second started";
}

TEST(CopyBandwidthPassTest, ASumThatComesBackToZeroIsZeroNotAFloatResidue) {
  TraceBuilder b;
  // 0.1 + 0.2 - 0.1 - 0.2 is not 0 in doubles.
  b.copy("Memcpy DtoH (Device -> Pageable)", 0, 0, 10, 1, 0.1);
  b.copy("Memcpy DtoH (Device -> Pageable)", 1, 2, 12, 1, 0.2);
  const CopyKindBandwidth k = kind(bandwidthOf(b.take()), "Memcpy DtoH");
  EXPECT_EQ(k.samples, 3u) << "0.1, 0.3, 0.2, then 0: no fourth value of 5.6e-17";
  EXPECT_NEAR(k.minGbps, 0.1, 1e-12);
}

TEST(CopyBandwidthPassTest, KindsAreHtasAndBandwidthComesFromBytesWhereTheTraceSaysNone) {
  TraceBuilder b;
  b.copy("Memset (Device)", 0, 0, 4, 8'000, -1);  // 8,000 bytes in 4 us: 2 GB/s
  b.copy("Memcpy PtoP (Device -> Device)", 1, 10, 11, 1'000, 1.0);
  const CopyBandwidthReport r = bandwidthOf(b.take());
  ASSERT_EQ(r.kinds.size(), 2u);
  EXPECT_EQ(r.kinds[0].kind, "Memcpy PtoP") << "by name";
  EXPECT_DOUBLE_EQ(kind(r, "Memset").meanGbps, 2.0);
}

TEST(CopyBandwidthPassTest, TheTimelineHoldsEachSlicesTimeWeightedMean) {
  TraceBuilder b;
  b.range("window", 0, 240);  // a 240 us window: 1 us slices
  b.copy("Memcpy HtoD (Pageable -> Device)", 0, 10, 20, 1, 6.0);
  const CopyBandwidthReport r = bandwidthOf(b.take());
  EXPECT_EQ(r.timelineBinNs, kUs);
  const std::vector<double>& t = kind(r, "Memcpy HtoD").timeline;
  ASSERT_EQ(t.size(), static_cast<std::size_t>(CopyBandwidthReport::kTimelineBins));
  EXPECT_DOUBLE_EQ(t[9], 0.0);
  EXPECT_DOUBLE_EQ(t[10], 6.0);
  EXPECT_DOUBLE_EQ(t[19], 6.0);
  EXPECT_DOUBLE_EQ(t[20], 0.0);
}

TEST(CopyBandwidthPassTest, KindsPastTheMostAreCountedAsLeftOut) {
  TraceBuilder b;
  for (int i = 0; i < 20; ++i) {
    b.copy(fmt::format("Memcpy K{:03}x", i), i, 10 * i, 10 * i + 5, 1, 1.0);
  }
  const CopyBandwidthReport r = bandwidthOf(b.take());
  EXPECT_EQ(r.kinds.size(), CopyBandwidthReport::kMaxKinds);
  ASSERT_EQ(r.leftOut.size(), 1u);
  EXPECT_EQ(r.leftOut.begin()->first, "copies of kinds past the first 16");
  EXPECT_EQ(r.leftOut.begin()->second, 4u);
}

}  // namespace
}  // namespace kinetrace::detail::passes
