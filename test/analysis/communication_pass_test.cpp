// The communication pass: NCCL kernels, what NCCL's calls moved, the starts of a rank's
// collectives; and the stragglers they show across ranks.

#include "analysis/passes/communication_pass.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "pass_fixture.h"

namespace kinetrace::detail::passes {
namespace {

// Two all-reduces of 3 MB (10 us each), a broadcast of 4 MB (40 us), a communicator's
// set-up, a compute kernel, and torch.distributed's all-reduce call.
CollectedTrace collectives() {
  TraceBuilder b(3);
  b.ncclOp("ncclDevKernel_AllReduce", "kernel", "ncclAllReduce", 3'000'000, 0, 10);
  b.ncclOp("ncclDevKernel_AllReduce", "kernel", "ncclAllReduce", 3'000'000, 20, 30);
  b.ncclOp("ncclDevKernel_Broadcast", "kernel", "ncclBroadcast", 4'000'000, 40, 80);
  b.ncclOp("ncclDevKernel_Init", "kernel", "ncclCommInitRank", 0, 1, 2);
  b.op("gemm", 0, 1, 90, 95);
  b.range("c10d::allreduce_", 5, 6);
  return b.take();
}

TEST(CommunicationPassTest, NcclCallsAreSummedByCallLongestFirstWithTheirBandwidth) {
  PassFixture f(collectives());
  RankReport report;
  CommunicationPass communication(f.context());
  f.addOperations(communication);
  communication.finish(report);
  EXPECT_EQ(report.communicationKernels, 4u) << "every NCCL kernel, set-up included";
  ASSERT_EQ(report.ncclCalls.size(), 2u) << "a communicator's set-up moves nothing";
  const NcclCallRow& broadcast = report.ncclCalls[0];
  EXPECT_EQ(broadcast.call, "ncclBroadcast");
  EXPECT_EQ(broadcast.operations, 1u);
  EXPECT_EQ(broadcast.gpuNs, 40 * kUs);
  EXPECT_DOUBLE_EQ(broadcast.gigabytesPerSecond, 100.0);
  const NcclCallRow& allReduce = report.ncclCalls[1];
  EXPECT_EQ(allReduce.call, "ncclAllReduce");
  EXPECT_EQ(allReduce.operations, 2u);
  EXPECT_EQ(allReduce.bytes, 6'000'000u);
  EXPECT_DOUBLE_EQ(allReduce.gigabytesPerSecond, 300.0);
}

TEST(CommunicationPassTest, ARanksCollectivesAreItsNcclKernelsAndItsCallsStartsByName) {
  PassFixture f(collectives());
  CommunicationPass communication(f.context());
  f.addOperations(communication);
  const RankCollectives c = communication.collectives();
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.kernelStarts, (std::map<std::string, std::vector<int64_t>>{
                                {"ncclDevKernel_AllReduce", {kBase, kBase + 20 * kUs}},
                                {"ncclDevKernel_Broadcast", {kBase + 40 * kUs}},
                                {"ncclDevKernel_Init", {kBase + 1 * kUs}}}));
  EXPECT_EQ(c.callStarts,
            (std::map<std::string, std::vector<int64_t>>{{"c10d::allreduce_", {kBase + 5 * kUs}}}));
  ASSERT_NE(c.held, nullptr);
  EXPECT_GT(c.held->bytes(), 0u) << "the starts wait for the other ranks in the budget";
}

RankCollectives rank(int64_t id, std::map<std::string, std::vector<int64_t>> kernels,
                     std::map<std::string, std::vector<int64_t>> calls = {}) {
  RankCollectives r;
  r.rank = id;
  r.kernelStarts = std::move(kernels);
  r.callStarts = std::move(calls);
  return r;
}

TEST(CommunicationPassTest, AStragglerIsTheRankThatStartedTheNthCollectiveLastWorstFirst) {
  const std::vector<RankCollectives> ranks = {rank(0, {{"allreduce", {100, 200}}}),
                                              rank(1, {{"allreduce", {150, 190}}})};
  const std::vector<StragglerReport> s = stragglers(ranks, {});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].collective, "allreduce");
  EXPECT_EQ(s[0].occurrence, 1u);
  EXPECT_EQ(s[0].slowRank, 1);
  EXPECT_EQ(s[0].lateByNs, 50);
  EXPECT_EQ(s[0].source, StragglerReport::Source::Kernel);
  EXPECT_EQ(s[1].occurrence, 2u);
  EXPECT_EQ(s[1].slowRank, 0);
  EXPECT_EQ(s[1].lateByNs, 10);

  AnalysisOptions options;
  options.top = 1;
  ASSERT_EQ(stragglers(ranks, options).size(), 1u);
  EXPECT_EQ(stragglers(ranks, options)[0].lateByNs, 50);
}

TEST(CommunicationPassTest, HostCallsStandInWhenARankHasNoNcclKernels) {
  const std::vector<RankCollectives> ranks = {
      rank(-1, {{"allreduce", {100}}}, {{"c10d::allreduce_", {90}}}),
      rank(-1, {}, {{"c10d::allreduce_", {130}}})};
  const std::vector<StragglerReport> s = stragglers(ranks, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].collective, "c10d::allreduce_");
  EXPECT_EQ(s[0].source, StragglerReport::Source::HostCall);
  EXPECT_EQ(s[0].slowRank, 1) << "a trace without a rank is named by its place";
  EXPECT_EQ(s[0].lateByNs, 40);
}

TEST(CommunicationPassTest, NoStragglerWithoutSeveralRanksALateStartOrTheSameCollective) {
  EXPECT_TRUE(stragglers({rank(0, {{"allreduce", {100}}})}, {}).empty());
  EXPECT_TRUE(
      stragglers({rank(0, {{"allreduce", {100}}}), rank(1, {{"allreduce", {100}}})}, {}).empty())
      << "started together";
  EXPECT_TRUE(
      stragglers({rank(0, {{"allreduce", {100}}}), rank(1, {{"broadcast", {300}}})}, {}).empty())
      << "no collective on every rank";
  EXPECT_TRUE(stragglers({rank(0, {{"allreduce", {100}}}), rank(1, {})}, {}).empty())
      << "neither kernels nor calls on every rank";
}

}  // namespace
}  // namespace kinetrace::detail::passes
