// Merging one job's traces: NCCL collectives recognised by their kernels' names, the clock
// shift that makes them end together found even when one trace starts later, and the merged
// trace keeping each rank's processes, arrows and metadata apart.

#include "analysis/trace_merge.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "kinetrace/error.h"
#include "kinetrace/sink.h"
#include "support/temp_dir.h"
#include "test_budget.h"

namespace kinetrace::detail {
namespace {

TEST(NcclCollectiveKindTest, CollectivesAreNamedByTheirKernelsAndPointToPointIsNot) {
  EXPECT_EQ(ncclCollectiveKind(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "AllReduce");
  EXPECT_EQ(
      ncclCollectiveKind("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long)"),
      "AllReduce");
  EXPECT_EQ(ncclCollectiveKind("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), "ReduceScatter");
  EXPECT_EQ(ncclCollectiveKind("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "AllGather");
  EXPECT_EQ(ncclCollectiveKind("ncclDevKernel_Broadcast_RING_LL"), "Broadcast");
  EXPECT_EQ(ncclCollectiveKind("ncclDevKernel_Reduce_Sum_f32_RING_LL"), "Reduce");
  EXPECT_FALSE(ncclCollectiveKind("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_FALSE(ncclCollectiveKind("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_FALSE(ncclCollectiveKind("void at::native::vectorized_elementwise_kernel<4>(int)"));
  EXPECT_FALSE(ncclCollectiveKind("my_ncclDevKernel_AllReduce"));
}

// Steps 10 ms apart, each with three all-reduces 700 us apart (evenly spaced within the
// step, as DDP's buckets often are), the steps' starts irregular.
std::vector<CollectiveEnd> steps(int first, int last, int64_t clockNs) {
  std::vector<CollectiveEnd> out;
  for (int step = first; step < last; ++step) {
    const int64_t start = step * 10'000'000 + (step * 7919 % 13) * 100'000;
    for (int bucket = 0; bucket < 3; ++bucket) {
      out.push_back({"AllReduce", start + bucket * 700'000 + clockNs});
    }
  }
  return out;
}

TEST(AlignCollectivesTest, ATraceThatStartsLaterIsPairedCollectiveForCollective) {
  // The other rank's clock reads 5 ms late and its trace starts two steps later.
  const auto alignment = alignCollectives(steps(0, 20, 0), steps(2, 20, 5'000'000));
  ASSERT_TRUE(alignment);
  EXPECT_EQ(alignment->offsetNs, -5'000'000);
  EXPECT_EQ(alignment->matched, 54u);
  EXPECT_EQ(alignment->residualMaxNs, 0);
  // And the other way round: the reference starts later.
  const auto reverse = alignCollectives(steps(3, 20, 0), steps(0, 18, -2'000'000));
  ASSERT_TRUE(reverse);
  EXPECT_EQ(reverse->offsetNs, 2'000'000);
  EXPECT_EQ(reverse->matched, 45u);
}

TEST(AlignCollectivesTest, ResidualSkewIsReportedAndKindsPairOnlyWithTheirKind) {
  std::vector<CollectiveEnd> reference = steps(0, 10, 0);
  std::vector<CollectiveEnd> other = steps(0, 10, 1'000'000);
  other[4].endNs += 3'000;  // one collective ends 3 us later than the rest agree
  reference[7].kind = other[7].kind = "AllGather";
  const auto alignment = alignCollectives(reference, other);
  ASSERT_TRUE(alignment);
  EXPECT_EQ(alignment->offsetNs, -1'000'000);
  EXPECT_EQ(alignment->matched, 30u);
  EXPECT_EQ(alignment->residualMedianNs, 0);
  EXPECT_EQ(alignment->residualMaxNs, 3'000);
}

TEST(AlignCollectivesTest, AStrictlyPeriodicJobIsShiftedByTheLeast) {
  // Every millisecond: any pairing agrees; the clocks are taken to be closest.
  std::vector<CollectiveEnd> reference;
  std::vector<CollectiveEnd> other;
  for (int i = 0; i < 50; ++i) {
    reference.push_back({"AllReduce", i * 1'000'000});
    other.push_back({"AllReduce", i * 1'000'000 + 300'000});
  }
  const auto alignment = alignCollectives(reference, other);
  ASSERT_TRUE(alignment);
  EXPECT_EQ(alignment->offsetNs, -300'000);
  EXPECT_FALSE(alignCollectives(reference, {}));
  EXPECT_FALSE(alignCollectives({}, other));
}

// A rank's trace as kinetrace writes it: its process and GPU named, a launch with its arrow
// to an all-reduce kernel per collective; times in microseconds on the rank's clock.
std::string rankTrace(int64_t rank, int64_t clockUs, int firstStep, bool withRank = true,
                      bool withCollectives = true) {
  std::string events;
  const auto add = [&events](const std::string& event) {
    events += (events.empty() ? "" : ",\n") + event;
  };
  const int64_t pid = 4000 + rank;
  add(R"({"ph":"M","name":"process_name","pid":)" + std::to_string(pid) +
      R"(,"tid":0,"ts":0,"args":{"name":"python"}})");
  for (const CollectiveEnd& c : steps(firstStep, 6, 0)) {
    const int64_t endUs = c.endNs / 1000 + clockUs;
    const int64_t id = endUs;  // unique within the rank, as correlation ids are
    const std::string start = std::to_string(endUs - 300);
    add(R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":)" + std::to_string(pid) +
        R"(,"tid":)" + std::to_string(pid) + R"(,"ts":)" + std::to_string(endUs - 350) +
        R"(,"dur":10})");
    add(R"({"ph":"s","cat":"ac2g","name":"ac2g","id":)" + std::to_string(id) + R"(,"pid":)" +
        std::to_string(pid) + R"(,"tid":)" + std::to_string(pid) + R"(,"ts":)" +
        std::to_string(endUs - 350) + "}");
    add(std::string(R"({"ph":"X","cat":"kernel","name":")") +
        (withCollectives ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL" : "gemm") +
        R"(","pid":0,"tid":7,"ts":)" + start + R"(,"dur":300})");
    add(R"({"ph":"f","cat":"ac2g","name":"ac2g","id":)" + std::to_string(id) +
        R"(,"pid":0,"tid":7,"ts":)" + start + R"(,"bp":"e"})");
  }
  std::string header = R"("schemaVersion": 1, "kinetrace_version": "test-)" + std::to_string(rank) +
                       "\", " + R"("deviceProperties": [{"id": 0, "name": "GPU of rank )" +
                       std::to_string(rank) + R"(", "numSms": 132}], )";
  if (withRank) {
    header += R"("distributedInfo": {"rank": )" + std::to_string(rank) + R"(, "world_size": 2}, )";
  }
  return "{" + header + "\"traceEvents\": [\n" + events + "\n]}";
}

class MergeTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  testing::TempDir dir_;
};

TEST_F(MergeTest, RanksBecomeProcessesOfTheirOwnOnOneClockWithTheirArrowsAndMetadata) {
  // Rank 1's clock reads 2 ms late, and its trace starts a step later.
  const std::string rank0 = write("rank0.json", rankTrace(0, 0, 0));
  const std::string rank1 = write("rank1.json", rankTrace(1, 2'000, 1));
  const std::vector<RankPlacement> plan = planMerge({rank1, rank0}, {}, budgetOf());
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].rank, 0);
  EXPECT_EQ(plan[1].rank, 1);
  EXPECT_EQ(plan[1].offsetNs, -2'000'000);
  EXPECT_EQ(plan[1].collectivesMatched, 15u);

  MemorySink merged;
  const MergeReport report = writeMerged(plan, merged, "job.json", budgetOf());
  // And a name for each rank's GPU process, which had none.
  EXPECT_EQ(report.events + 2, merged.events().size());

  std::set<int64_t> pids;
  std::vector<std::string> names;
  std::vector<int64_t> kernelEnds[2];
  std::multiset<uint64_t> flowIds;
  for (const OwnedEvent& e : merged.events()) {
    pids.insert(e.pid);
    if (e.name == "process_name") names.push_back(std::get<std::string>(e.arg("name")->value));
    if (e.category == "kernel")
      kernelEnds[e.pid / kMergedPidStride].push_back(e.timestampNs + e.durationNs);
    if (e.phase == Phase::FlowStart || e.phase == Phase::FlowEnd) flowIds.insert(e.flowId);
  }
  EXPECT_EQ(pids, (std::set<int64_t>{0, 4000, 10'000'000, 10'004'001}));
  EXPECT_EQ(names, (std::vector<std::string>{"rank 0: python", "rank 0: pid 0", "rank 1: python",
                                             "rank 1: pid 0"}));
  // Rank 1's collectives end with rank 0's.
  ASSERT_EQ(kernelEnds[0].size(), 18u);
  ASSERT_EQ(kernelEnds[1].size(), 15u);
  for (std::size_t i = 0; i < 15; ++i) EXPECT_EQ(kernelEnds[1][i], kernelEnds[0][i + 3]) << i;
  // Every arrow keeps its two ends, and no id is shared across ranks.
  for (uint64_t id : flowIds) EXPECT_EQ(flowIds.count(id), 2u) << id;
  EXPECT_EQ(flowIds.size(), 2u * 33u);

  const Value* info = merged.metadata("distributedInfo");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(*info->find("world_size"), Value(2));
  const Value* ranks = merged.metadata("kinetrace_merge");
  ASSERT_NE(ranks, nullptr);
  ASSERT_EQ(ranks->asArray().size(), 2u);
  const Value& second = ranks->asArray()[1];
  EXPECT_EQ(*second.find("rank"), Value(1));
  EXPECT_EQ(*second.find("offset_ns"), Value(-2'000'000));
  EXPECT_EQ(*second.find("path"), Value(rank1));
  EXPECT_EQ(*second.find("header")->find("kinetrace_version"), Value("test-1"));

  // Each rank's GPUs, in the header where tools look for them.
  const Value* devices = merged.metadata("deviceProperties");
  ASSERT_NE(devices, nullptr);
  ASSERT_EQ(devices->asArray().size(), 2u);
  for (int64_t rank = 0; rank < 2; ++rank) {
    const Value& device = devices->asArray()[static_cast<std::size_t>(rank)];
    EXPECT_EQ(*device.find("rank"), Value(rank));
    EXPECT_EQ(*device.find("name"), Value("GPU of rank " + std::to_string(rank)));
    EXPECT_EQ(*device.find("numSms"), Value(132));
  }
}

TEST_F(MergeTest, TracesWithoutRanksOrCollectivesAreMergedAsTheyAreAndSaySo) {
  const std::string a = write("a.json", rankTrace(0, 0, 0, /*withRank=*/false));
  const std::string b = write("b.json", rankTrace(1, 2'000, 0, /*withRank=*/false, false));
  const std::vector<RankPlacement> plan = planMerge({a, b}, {}, budgetOf());
  EXPECT_EQ(plan[0].rank, 0);
  EXPECT_FALSE(plan[0].rankFromTrace);
  EXPECT_EQ(plan[1].rank, 1);
  EXPECT_EQ(plan[1].offsetNs, 0);
  EXPECT_EQ(plan[1].collectivesMatched, 0u);
  EXPECT_NE(plan[1].note.find("no NCCL collectives"), std::string::npos) << plan[1].note;

  MergeOptions asRecorded;
  asRecorded.alignOnCollectives = false;
  const std::string c = write("c.json", rankTrace(1, 2'000, 0));
  const std::vector<RankPlacement> unaligned = planMerge({a, c}, asRecorded, budgetOf());
  EXPECT_EQ(unaligned[1].offsetNs, 0);
}

TEST_F(MergeTest, ARankGivenAtTheEndOfATraceIsTheOneThatCounts) {
  // As torch.profiler's distributedInfo comes: after the events, over the header's.
  std::string late = rankTrace(0, 0, 0);
  late.insert(late.size() - 1, R"(, "distributedInfo": {"rank": 5, "world_size": 8})");
  const std::string a = write("a.json", late);
  const std::string b = write("b.json", rankTrace(1, 0, 0));
  const std::vector<RankPlacement> plan = planMerge({a, b}, {}, budgetOf());
  EXPECT_EQ(plan[0].rank, 1);
  EXPECT_EQ(plan[1].rank, 5);
  EXPECT_EQ(plan[1].path, a);
}

TEST_F(MergeTest, TwoTracesOfOneRankOrAnUnreadableOneAreErrorsNamingTheFiles) {
  const std::string a = write("a.json", rankTrace(1, 0, 0));
  const std::string b = write("b.json", rankTrace(1, 0, 0));
  try {
    planMerge({a, b}, {}, budgetOf());
    FAIL() << "two traces of rank 1 were merged";
  } catch (const Error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find(a), std::string::npos) << what;
    EXPECT_NE(what.find(b), std::string::npos) << what;
    EXPECT_NE(what.find("rank 1"), std::string::npos) << what;
  }
  const std::string bad = write("bad.json", "{\"traceEvents\": [");
  try {
    planMerge({a, bad}, {}, budgetOf());
    FAIL() << "a truncated trace was merged";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(bad), std::string::npos) << error.what();
  }
  EXPECT_THROW(planMerge({}, {}, budgetOf()), Error);
}

}  // namespace
}  // namespace kinetrace::detail
