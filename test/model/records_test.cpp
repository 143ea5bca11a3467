#include "model/records.h"

#include <gtest/gtest.h>

namespace kinetrace::detail {
namespace {

TEST(TraceRecordsTest, AppendingKeepsMetricIndexesPointingAtTheirValues) {
  TraceRecords a;
  a.metricValues = {1, 2};
  a.metricSamples.push_back(GpuMetricSampleRecord{10, 20, 0, 0});
  TraceRecords b;
  b.metricValues = {3, 4, 5, 6};
  b.metricSamples.push_back(GpuMetricSampleRecord{20, 30, 0, 0});
  KernelRecord k;
  k.metricAverages = 3;  // b's values 5 and 6
  b.kernels.push_back(k);
  a.append(std::move(b));
  ASSERT_EQ(a.metricValues.size(), 6u);
  EXPECT_EQ(a.metricValues[a.metricSamples[1].values], 3);
  EXPECT_EQ(a.metricValues[a.kernels[0].metricAverages - 1], 5);
  EXPECT_EQ(a.bytes(),
            2 * sizeof(GpuMetricSampleRecord) + sizeof(KernelRecord) + 6 * sizeof(double));
}

}  // namespace
}  // namespace kinetrace::detail
