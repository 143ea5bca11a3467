#include "correlate/graph_launches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "correlate/assembler.h"

// Launches of CUDA graphs learnt from the nodes that joined them, asked for by the nodes of
// conditional bodies, which carry their graph's id but no correlation id.

namespace kinetrace::detail {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(GraphLaunchesTest, ABodyNodeBelongsToTheLaunchWhoseFirstNodeStartedLastBeforeIt) {
  GraphLaunches launches(16, 30 * kSecond);
  launches.onJoined(2, 1000, 11);
  launches.onJoined(2, 1100, 11);  // the same launch's later node
  launches.onJoined(2, 2000, 12);
  EXPECT_EQ(launches.launchAt(2, 999), 0u) << "before the first launch";
  EXPECT_EQ(launches.launchAt(2, 1000), 11u);
  EXPECT_EQ(launches.launchAt(2, 1500), 11u);
  EXPECT_EQ(launches.launchAt(2, 2500), 12u);
  EXPECT_EQ(launches.launchAt(3, 2500), 0u) << "another graph's launches are not its";
}

TEST(GraphLaunchesTest, ALaunchStartsAtItsEarliestNodeWhateverTheOrderTheyArrive) {
  GraphLaunches launches(16, 30 * kSecond);
  launches.onJoined(2, 2000, 12);
  launches.onJoined(2, 1200, 11);  // arrived late: placed before launch 12
  launches.onJoined(2, 1000, 11);  // an earlier node of launch 11
  EXPECT_EQ(launches.launchAt(2, 1100), 11u);
  EXPECT_EQ(launches.launchAt(2, 1999), 11u);
  EXPECT_EQ(launches.launchAt(2, 2000), 12u);
}

TEST(GraphLaunchesTest, OnlyTheLastLaunchesOfAGraphAreKept) {
  GraphLaunches launches(2, 30 * kSecond);
  launches.onJoined(2, 1000, 11);
  launches.onJoined(2, 2000, 12);
  launches.onJoined(2, 3000, 13);
  EXPECT_EQ(launches.launchAt(2, 1500), 0u) << "launch 11 was let go";
  EXPECT_EQ(launches.launchAt(2, 2500), 12u);
}

TEST(GraphLaunchesTest, LaunchesLongBeforeTheNewestAreLetGo) {
  GraphLaunches launches(16, kSecond);
  launches.onJoined(2, 1000, 11);
  launches.onJoined(2, 1000 + 2 * kSecond, 12);
  EXPECT_EQ(launches.launchAt(2, 1500), 0u);
  EXPECT_EQ(launches.launchAt(2, 1500 + 2 * kSecond), 12u);
  EXPECT_GT(launches.heldBytes(), 0u);
  launches.clear();
  EXPECT_EQ(launches.launchAt(2, 1500 + 2 * kSecond), 0u);
  EXPECT_EQ(launches.heldBytes(), 0u);
}

}  // namespace
}  // namespace kinetrace::detail

// ---- launches found by elimination, through the assembler ----------------------------------
//
// Graphs whose nodes are all conditional: none of their kernels carries a correlation id, so
// nothing joins their launches. What the launch callback saw of each call (the executable
// graph, the stream, the context) and the calls' order rule launches out.

namespace kinetrace::detail {
namespace {

constexpr int64_t kStart = 1'000'000'000;
constexpr uint32_t kThread = 1;
constexpr uint32_t kContext = 1;
constexpr uint32_t kStream = 7;
constexpr uint32_t kAllConditional = 45;  // an executable graph of conditional nodes only
constexpr uint32_t kWithTopLevel = 46;    // one whose first node is a kernel

class GraphEliminationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AssemblerOptions options;
    options.startNs = kStart;
    options.launchCallsRecorded = true;
    options.gpuActivities.add(Activity::Kernel).add(Activity::Memcpy).add(Activity::Memset);
    assembler_ = std::make_unique<Assembler>(tables_, options);
    assembler_->onThread(kThread, 1001, "main");
  }
  void call(uint32_t correlation, int64_t start, int64_t end, CallEffect effect,
            const LaunchTarget* target) {
    if (target != nullptr) {
      LaunchTarget t = *target;
      t.correlationId = correlation;
      assembler_->onLaunchTarget(kThread, t);
    }
    ApiCallRecord c;
    c.startNs = start;
    c.endNs = end;
    c.correlationId = correlation;
    c.thread = kThread;
    c.effect = effect;
    assembler_->onApiCall(c);
  }
  void instantiate(uint32_t correlation, int64_t at, uint32_t graph) {
    LaunchTarget t;
    t.graphExecId = graph;
    t.graphInstantiated = true;
    call(correlation, at, at + 5, CallEffect::None, &t);
  }
  void launch(uint32_t correlation, int64_t at, uint32_t graph, uint32_t stream = kStream) {
    LaunchTarget t;
    t.graphExecId = graph;
    t.graphLaunched = true;
    t.contextId = kContext;
    t.contextKnown = true;
    t.streamId = stream;
    t.streamKnown = true;
    call(correlation, at, at + 5, CallEffect::Graph, &t);
  }
  void syncStream(uint32_t correlation, int64_t start, int64_t end) {
    LaunchTarget t;
    t.contextId = kContext;
    t.contextKnown = true;
    t.streamId = kStream;
    t.streamKnown = true;
    call(correlation, start, end, CallEffect::Sync, &t);
  }
  static KernelRecord node(uint32_t correlation, int64_t start, uint32_t graph) {
    KernelRecord k;
    k.at.correlationId = correlation;
    k.at.startNs = start;
    k.at.endNs = start + 10;
    k.at.streamId = 20;  // graphs run their nodes on streams of their own
    k.at.contextId = kContext;
    k.graphId = graph;
    k.graphNodeId = uint64_t{graph} << 32 | 1;
    return k;
  }
  void gpu(std::vector<KernelRecord> kernels) {
    GpuBatch batch;
    batch.records.kernels = std::move(kernels);
    assembler_->addGpu(batch);
  }
  // Past the grace for every operation: each is decided.
  void settle() { assembler_->assemble(kStart + 10'000'000'000, out_); }
  std::vector<uint32_t> correlationsOf(uint32_t graph) const {
    std::vector<uint32_t> ids;
    for (const KernelRecord& k : out_.kernels) {
      if (k.graphId == graph) ids.push_back(k.at.correlationId);
    }
    return ids;
  }

  TraceTables tables_;
  std::unique_ptr<Assembler> assembler_;
  TraceRecords out_;
};

// The graphConditionalNodes pattern: launch, synchronise, launch again. The next launch is
// called after the previous one's work ended; the synchronisation proves each done.
TEST_F(GraphEliminationTest, EveryNodeOfAnAllConditionalGraphSynchronisedAfterEachLaunchIsLinked) {
  instantiate(1, kStart + 1, kAllConditional);
  std::vector<KernelRecord> nodes;
  std::vector<uint32_t> expected;
  for (uint32_t i = 0; i < 4; ++i) {
    const int64_t t = kStart + 1'000 + 1'000 * int64_t{i};
    launch(100 + i, t, kAllConditional);
    for (int64_t n = 0; n < 3; ++n) {  // a WHILE body run three times
      nodes.push_back(node(0, t + 100 + 20 * n, kAllConditional));
      expected.push_back(100 + i);
    }
    syncStream(200 + i, t + 10, t + 500);
  }
  gpu(nodes);
  settle();

  EXPECT_EQ(correlationsOf(kAllConditional), expected);
  for (const KernelRecord& k : out_.kernels) {
    EXPECT_TRUE(k.at.hasLaunchCall);
    EXPECT_EQ(k.at.launchFoundBy, LaunchFoundBy::OnlyLaunch);
  }
  EXPECT_EQ(out_.flows.size(), 4u) << "one arrow per launch";
  EXPECT_EQ(assembler_->losses().gpuOpsWithoutLaunch, 0u);
  EXPECT_EQ(assembler_->losses().gpuOpsAmbiguousGraphLaunch, 0u);
}

// The same without knowing the graph was made in the window: a launch before the recording
// may have run the first nodes; the synchronisations settle every later launch.
TEST_F(GraphEliminationTest, AGraphMadeBeforeTheRecordingLeavesOnlyItsFirstLaunchInDoubt) {
  std::vector<KernelRecord> nodes;
  for (uint32_t i = 0; i < 3; ++i) {
    const int64_t t = kStart + 1'000 + 1'000 * int64_t{i};
    launch(100 + i, t, kAllConditional);
    nodes.push_back(node(0, t + 100, kAllConditional));
    syncStream(200 + i, t + 10, t + 500);
  }
  gpu(nodes);
  settle();
  EXPECT_EQ(correlationsOf(kAllConditional), (std::vector<uint32_t>{0, 101, 102}));
  EXPECT_EQ(assembler_->losses().gpuOpsAmbiguousGraphLaunch, 1u);
  EXPECT_EQ(assembler_->losses().gpuOpsWithoutLaunch, 1u);
}

// graph_replay's pattern: launches queued on one stream, an all-conditional graph's between
// those of a graph with a top-level node; no synchronisation between them. Stream order puts
// each body node between the launches of the other graph around it.
TEST_F(GraphEliminationTest, QueuedLaunchesInterleavedWithAnotherGraphsOnOneStreamAreEachLinked) {
  instantiate(1, kStart + 1, kAllConditional);
  instantiate(2, kStart + 2, kWithTopLevel);
  for (uint32_t i = 0; i < 4; ++i) {
    launch(100 + 2 * i, kStart + 100 + 20 * int64_t{i}, kWithTopLevel);
    launch(101 + 2 * i, kStart + 110 + 20 * int64_t{i}, kAllConditional);
  }
  std::vector<KernelRecord> nodes;
  std::vector<uint32_t> expected;
  for (uint32_t i = 0; i < 4; ++i) {  // run long after every call was made
    const int64_t t = kStart + 10'000 + 1'000 * int64_t{i};
    nodes.push_back(node(100 + 2 * i, t, kWithTopLevel));
    nodes.push_back(node(0, t + 200, kAllConditional));
    nodes.push_back(node(0, t + 400, kAllConditional));
    expected.insert(expected.end(), {101 + 2 * i, 101 + 2 * i});
  }
  std::reverse(nodes.begin(), nodes.end());  // in any order they come
  gpu(nodes);
  settle();

  std::vector<uint32_t> found = correlationsOf(kAllConditional);
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, expected);
  EXPECT_EQ(assembler_->losses().gpuOpsWithoutLaunch, 0u);
  EXPECT_EQ(assembler_->losses().gpuOpsAmbiguousGraphLaunch, 0u);
}

// Launches of one graph queued back to back with nothing between them: any of them may have
// run any body node. None is guessed; each is counted.
TEST_F(GraphEliminationTest, QueuedLaunchesOfOneGraphAloneAreAmbiguousAndCountedNotGuessed) {
  instantiate(1, kStart + 1, kAllConditional);
  for (uint32_t i = 0; i < 3; ++i) launch(100 + i, kStart + 100 + 10 * int64_t{i}, kAllConditional);
  gpu({node(0, kStart + 1'000, kAllConditional), node(0, kStart + 2'000, kAllConditional),
       node(0, kStart + 3'000, kAllConditional)});
  settle();
  EXPECT_EQ(correlationsOf(kAllConditional), (std::vector<uint32_t>{0, 0, 0}));
  for (const KernelRecord& k : out_.kernels) EXPECT_FALSE(k.at.hasLaunchCall);
  EXPECT_TRUE(out_.flows.empty());
  EXPECT_EQ(assembler_->losses().gpuOpsAmbiguousGraphLaunch, 3u);
  EXPECT_EQ(assembler_->losses().gpuOpsWithoutLaunch, 3u);
}

// A node that started before the second launch was even called can only be the first's.
TEST_F(GraphEliminationTest, ANodeThatStartedBeforeTheNextLaunchWasCalledIsTheFirstLaunchs) {
  instantiate(1, kStart + 1, kAllConditional);
  launch(100, kStart + 100, kAllConditional);
  launch(101, kStart + 1'000, kAllConditional);
  gpu({node(0, kStart + 500, kAllConditional), node(0, kStart + 2'000, kAllConditional)});
  settle();
  EXPECT_EQ(correlationsOf(kAllConditional), (std::vector<uint32_t>{100, 0}))
      << "the second node may be a late one of launch 100";
  EXPECT_EQ(assembler_->losses().gpuOpsAmbiguousGraphLaunch, 1u);
}

// Where a graph has a top-level node, its body nodes keep today's rule, at once.
TEST_F(GraphEliminationTest, BodyNodesOfAGraphWithATopLevelNodeFollowTheirLaunchsEarlierNode) {
  launch(100, kStart + 100, kWithTopLevel);
  gpu({node(100, kStart + 1'000, kWithTopLevel), node(0, kStart + 1'100, kWithTopLevel)});
  assembler_->assemble(kStart + 2'000, out_);  // within the grace: no waiting needed
  ASSERT_EQ(out_.kernels.size(), 2u);
  EXPECT_EQ(out_.kernels[1].at.correlationId, 100u);
  EXPECT_EQ(out_.kernels[1].at.launchFoundBy, LaunchFoundBy::EarlierNode);
  EXPECT_EQ(out_.kernels[0].at.launchFoundBy, LaunchFoundBy::Correlation);
}

}  // namespace
}  // namespace kinetrace::detail
