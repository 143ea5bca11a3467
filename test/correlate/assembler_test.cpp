#include "correlate/assembler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

// The assembler fed by hand: host events as the recorder's drain delivers them, GPU records
// as CUPTI's decoding delivers them, in either order.

namespace kinetrace::detail {
namespace {

constexpr int64_t kStart = 1'000'000'000;
constexpr int64_t kSecond = 1'000'000'000;
constexpr uint32_t kThread = 1;  // a thread instance

class AssemblerTest : public ::testing::Test {
 protected:
  AssemblerTest() { tables.pid = 42; }

  Assembler& make(bool launchCalls = true) {
    AssemblerOptions options;
    options.startNs = kStart;
    options.launchCallsRecorded = launchCalls;
    options.gpuActivities.add(Activity::Kernel).add(Activity::Memcpy).add(Activity::Memset);
    options.gpuActivities.add(Activity::Sync).add(Activity::Memory);
    options.apiName = [](ApiDomain, uint32_t cbid) { return "api" + std::to_string(cbid); };
    assembler = std::make_unique<Assembler>(tables, options);
    assembler->onThread(kThread, 1001, "main");
    return *assembler;
  }
  void call(uint32_t correlation, int64_t start, int64_t end, CallEffect effect, uint64_t external = 0) {
    ApiCallRecord c;
    c.startNs = start;
    c.endNs = end;
    c.correlationId = correlation;
    c.callbackId = 13;
    c.thread = kThread;
    c.effect = effect;
    c.externalId = external;
    assembler->onApiCall(c);
  }
  static KernelRecord kernel(uint32_t correlation, int64_t start, int64_t end, uint32_t stream = 7) {
    KernelRecord k;
    k.at.correlationId = correlation;
    k.at.startNs = start;
    k.at.endNs = end;
    k.at.streamId = stream;
    return k;
  }
  // `allRecordsBefore`: the source's word that every record written before then has come
  // (GpuBatch::allRecordsBeforeNs); by default it cannot tell.
  void gpu(std::vector<KernelRecord> kernels, int64_t allRecordsBefore = INT64_MAX) {
    GpuBatch batch;
    batch.records.kernels = std::move(kernels);
    batch.allRecordsBeforeNs = allRecordsBefore;
    assembler->addGpu(batch);
  }
  void assemble(int64_t horizon) { assembler->assemble(horizon, out); }
  void finish(int64_t stop, int64_t syncReturn = 0) {
    assembler->setStop(stop);
    assembler->finish(syncReturn, out);
  }
  std::string name(StringId id) const { return std::string(tables.strings.get(id)); }
  HostName copied(const std::string& text) {
    names.push_back(text);
    return HostName{names.back(), nullptr, {}};
  }

  TraceTables tables;
  std::unique_ptr<Assembler> assembler;
  TraceRecords out;
  std::deque<std::string> names;
};

TEST_F(AssemblerTest, AKernelJoinsItsLaunchCallAndTheRangeOpenAtTheLaunch) {
  make();
  assembler->onRangeBegin(kThread, kStart + 10, 500, copied("step"));
  call(9, kStart + 20, kStart + 30, CallEffect::Kernel, /*external=*/500);
  assembler->onRangeEnd(kThread, kStart + 40, 500);
  gpu({kernel(9, kStart + 50, kStart + 90)});
  assemble(kStart + 10 * kSecond);

  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_TRUE(out.kernels[0].at.hasLaunchCall);
  EXPECT_EQ(out.kernels[0].at.externalId, 500u);
  ASSERT_EQ(out.flows.size(), 1u) << "the arrow's start, at the call";
  EXPECT_EQ(out.flows[0].correlationId, 9u);
  EXPECT_EQ(out.flows[0].startNs, kStart + 20);
  ASSERT_EQ(out.apiCalls.size(), 1u);
  EXPECT_EQ(name(out.apiCalls[0].name), "api13");
  ASSERT_EQ(out.ranges.size(), 1u);
  EXPECT_EQ(name(out.ranges[0].name), "step");
  ASSERT_EQ(out.gpuSpans.size(), 1u) << "the range's GPU time on stream 7";
  EXPECT_EQ(out.gpuSpans[0].startNs, kStart + 50);
  EXPECT_EQ(out.gpuSpans[0].endNs, kStart + 90);
  EXPECT_EQ(out.gpuSpans[0].externalId, 500u);
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 0u);
}

TEST_F(AssemblerTest, AKernelThatArrivesBeforeItsCallWaitsForIt) {
  make();
  gpu({kernel(9, kStart + 50, kStart + 90)});
  assemble(kStart + 100);
  EXPECT_TRUE(out.kernels.empty()) << "held while its call may still be on its way";
  call(9, kStart + 20, kStart + 30, CallEffect::Kernel);
  assemble(kStart + 200);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_TRUE(out.kernels[0].at.hasLaunchCall);
  EXPECT_EQ(out.flows.size(), 1u);
}

TEST_F(AssemblerTest, AKernelWhoseCallNeverComesIsWrittenAfterTheGraceAndCounted) {
  make();
  gpu({kernel(9, kStart + 50, kStart + 90)});
  assemble(kStart + 100);
  assemble(kStart + 2 * kSecond);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_FALSE(out.kernels[0].at.hasLaunchCall);
  EXPECT_TRUE(out.flows.empty()) << "no arrow without its start";
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 1u);
}

TEST_F(AssemblerTest, WithoutLaunchCallsOperationsAreWrittenAtOnceAndNotCounted) {
  make(/*launchCalls=*/false);
  gpu({kernel(9, kStart + 50, kStart + 90)});
  assemble(kStart + 100);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 0u);
}

TEST_F(AssemblerTest, AGraphLaunchJoinsEveryOperationItRan) {
  make();
  call(9, kStart + 20, kStart + 30, CallEffect::Graph);
  gpu({kernel(9, kStart + 50, kStart + 60), kernel(9, kStart + 60, kStart + 70), kernel(9, kStart + 70, kStart + 80)});
  assemble(kStart + 100);
  ASSERT_EQ(out.kernels.size(), 3u);
  for (const auto& k : out.kernels) EXPECT_TRUE(k.at.hasLaunchCall);
  EXPECT_EQ(out.flows.size(), 1u) << "one arrow start per call";
}

// Graph-level tracing: each launch's one record joins it (arrow, External id, range's GPU
// time), and the call is done with at once, as no node records will follow.
TEST_F(AssemblerTest, AWholeGraphRunJoinsItsLaunchAndEndsTheWaitForIt) {
  AssemblerOptions options;
  options.startNs = kStart;
  options.launchCallsRecorded = true;
  options.graphs = true;  // graph level: no kernel, copy or memset kinds needed
  options.apiName = [](ApiDomain, uint32_t cbid) { return "api" + std::to_string(cbid); };
  assembler = std::make_unique<Assembler>(tables, options);
  assembler->onThread(kThread, 1001, "main");
  assembler->onRangeBegin(kThread, kStart + 10, 500, copied("step"));
  call(9, kStart + 20, kStart + 30, CallEffect::Graph, /*external=*/500);
  call(10, kStart + 40, kStart + 50, CallEffect::Graph, /*external=*/500);
  assembler->onRangeEnd(kThread, kStart + 60, 500);
  auto run = [](uint32_t correlation, int64_t start, int64_t end) {
    GraphRecord g;
    g.at.correlationId = correlation;
    g.at.startNs = start;
    g.at.endNs = end;
    g.at.streamId = 7;
    g.graphId = 3;
    return g;
  };
  GpuBatch batch;
  batch.records.graphs = {run(9, kStart + 100, kStart + 200), run(10, kStart + 200, kStart + 350)};
  assembler->addGpu(batch);
  assemble(kStart + 10 * kSecond);

  ASSERT_EQ(out.graphs.size(), 2u);
  for (const GraphRecord& g : out.graphs) {
    EXPECT_TRUE(g.at.hasLaunchCall);
    EXPECT_EQ(g.at.externalId, 500u);
  }
  EXPECT_EQ(out.flows.size(), 2u) << "an arrow per launch";
  ASSERT_EQ(out.gpuSpans.size(), 1u);
  EXPECT_EQ(out.gpuSpans[0].startNs, kStart + 100);
  EXPECT_EQ(out.gpuSpans[0].endNs, kStart + 350);
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 0u);

  // A second record for the same launch is not what graph level gives: it finds no call.
  GpuBatch again;
  again.records.graphs = {run(9, kStart + 400, kStart + 500)};
  assembler->addGpu(again);
  finish(kStart + 20 * kSecond);
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 1u);
}

// Where a graph node was created: the launch that stream capture turned into the node (its
// record comes after the node's, when the call returns) inside a range, or a call kinetrace
// does not record; replays name the node's clone, which instantiation made.
TEST_F(AssemblerTest, ReplayedWorkNamesTheCallAndRangeThatCreatedItsNode) {
  make();
  constexpr uint64_t kCaptured = 0x100000000;  // graph 1's node 0
  constexpr uint64_t kAdded = 0x100000001;
  constexpr uint64_t kCapturedClone = 0x200000000;  // instantiated: graph 2
  constexpr uint64_t kAddedClone = 0x200000001;
  assembler->onRangeBegin(kThread, kStart + 10, 500, copied("attention"));
  assembler->onGraphNode(kThread, kStart + 25, kCaptured, /*externalId=*/500, 0);
  call(9, kStart + 20, kStart + 30, CallEffect::Kernel, /*external=*/500);  // captured
  assembler->onRangeEnd(kThread, kStart + 40, 500);
  assembler->onGraphNode(kThread, kStart + 50, kAdded, 0, 0);  // by an unrecorded call
  call(10, kStart + 60, kStart + 70, CallEffect::None);
  // Instantiation: CUPTI announces each clone as created, then as cloned.
  assembler->onGraphNode(kThread, kStart + 80, kCapturedClone, 0, 0);
  assembler->onGraphNode(kThread, kStart + 80, kCapturedClone, 0, kCaptured);
  assembler->onGraphNode(kThread, kStart + 81, kAddedClone, 0, 0);
  assembler->onGraphNode(kThread, kStart + 81, kAddedClone, 0, kAdded);
  call(12, kStart + 75, kStart + 90, CallEffect::None);  // the instantiating call
  call(11, kStart + 100, kStart + 110, CallEffect::Graph);
  auto replayed = [](uint64_t node, int64_t start) {
    KernelRecord k = kernel(11, start, start + 10);
    k.graphId = 2;
    k.graphNodeId = node;
    return k;
  };
  gpu({replayed(kCapturedClone, kStart + 200), replayed(kAddedClone, kStart + 220)});
  assemble(kStart + 2 * kSecond);

  ASSERT_EQ(out.kernels.size(), 2u);
  ASSERT_NE(out.kernels[0].graphNodeSite, 0u);
  const GraphNodeSite& captured = tables.graphNodeSites.at(out.kernels[0].graphNodeSite - 1);
  EXPECT_EQ(captured.correlationId, 9u);
  EXPECT_EQ(name(captured.call), "api13");
  EXPECT_EQ(name(captured.range), "attention");
  EXPECT_EQ(captured.externalId, 500u);
  ASSERT_NE(out.kernels[1].graphNodeSite, 0u);
  const GraphNodeSite& added = tables.graphNodeSites.at(out.kernels[1].graphNodeSite - 1);
  EXPECT_EQ(added.correlationId, 0u) << "its call was not recorded: call 10 began after it";
  EXPECT_EQ(added.call, StringTable::kEmpty);
  EXPECT_EQ(added.range, StringTable::kEmpty);
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 0u);
}

// A launch into a stream being captured runs nothing: it is not kept waiting for GPU work,
// which would hold back, for as long as a call is kept, the GPU time of every range after it.
TEST_F(AssemblerTest, ACapturedLaunchDoesNotHoldBackLaterRanges) {
  make();
  assembler->onGraphNode(kThread, kStart + 25, 0x100000000, 0, 0);
  call(9, kStart + 20, kStart + 30, CallEffect::Kernel);
  assembler->onRangeBegin(kThread, kStart + 40, 600, copied("step"));
  call(10, kStart + 50, kStart + 60, CallEffect::Kernel, /*external=*/600);
  assembler->onRangeEnd(kThread, kStart + 70, 600);
  gpu({kernel(10, kStart + 80, kStart + 90)});
  assemble(kStart + 2 * kSecond);
  ASSERT_EQ(out.gpuSpans.size(), 1u) << "the step's GPU time is out, not held for call 9";
  EXPECT_EQ(out.gpuSpans[0].externalId, 600u);
}

// Nodes of a conditional's body (WHILE, IF, SWITCH) come with correlation id 0, as CUPTI
// reports them, and the graph id of the graph that ran them: each joins the launch whose
// first node started last before it, launch after launch of the same graph.
TEST_F(AssemblerTest, ConditionalBodyNodesJoinTheGraphLaunchThatRanThem) {
  make();
  call(9, kStart + 10, kStart + 20, CallEffect::Graph, /*external=*/700);
  call(10, kStart + 21, kStart + 30, CallEffect::Graph, /*external=*/701);  // queued behind 9
  call(11, kStart + 31, kStart + 35, CallEffect::Graph);                    // another graph
  auto node = [](uint32_t correlation, int64_t start, uint32_t graph) {
    KernelRecord k = kernel(correlation, start, start + 10);
    k.graphId = graph;
    k.graphNodeId = uint64_t{graph} << 32 | 1;
    return k;
  };
  gpu({node(9, kStart + 100, 45),  // launch 9's first node
       node(0, kStart + 120, 45), node(0, kStart + 140, 45),
       node(10, kStart + 200, 45),  // launch 10's, after launch 9's body
       node(0, kStart + 220, 45), node(11, kStart + 300, 49), node(0, kStart + 320, 49)});
  GpuBatch batch;  // a memset in a body of graph 45, during launch 10
  MemsetRecord set;
  set.at.startNs = kStart + 230;
  set.at.endNs = kStart + 240;
  set.graphId = 45;
  batch.records.memsets.push_back(set);
  assembler->addGpu(batch);
  assemble(kStart + 1'000);

  ASSERT_EQ(out.kernels.size(), 7u);
  std::vector<uint32_t> correlations;
  for (const auto& k : out.kernels) {
    EXPECT_TRUE(k.at.hasLaunchCall);
    correlations.push_back(k.at.correlationId);
  }
  EXPECT_EQ(correlations, (std::vector<uint32_t>{9, 9, 9, 10, 10, 11, 11}));
  EXPECT_EQ(out.kernels[1].at.externalId, 700u) << "the launch's range";
  EXPECT_EQ(out.kernels[4].at.externalId, 701u);
  ASSERT_EQ(out.memsets.size(), 1u);
  EXPECT_EQ(out.memsets[0].at.correlationId, 10u);
  EXPECT_EQ(out.flows.size(), 3u) << "one arrow per launch";
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 0u);
}

// A body node of a graph none of whose launches was joined (a graph whose only top-level
// node is a conditional) still has no launch: written after the grace, counted.
TEST_F(AssemblerTest, ABodyNodeOfAGraphWithNoJoinedLaunchIsCountedWithoutItsLaunch) {
  make();
  call(9, kStart + 10, kStart + 20, CallEffect::Graph);
  KernelRecord body = kernel(0, kStart + 100, kStart + 110);
  body.graphId = 11;
  KernelRecord loose = kernel(0, kStart + 100, kStart + 110);  // no graph: no guess either
  gpu({body, loose});
  assemble(kStart + 2 * kSecond);
  ASSERT_EQ(out.kernels.size(), 2u);
  EXPECT_FALSE(out.kernels[0].at.hasLaunchCall);
  EXPECT_FALSE(out.kernels[1].at.hasLaunchCall);
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 2u);
}

TEST_F(AssemblerTest, ACopyJoinsTheRuntimeCallThroughItsSecondCorrelationId) {
  make();
  call(30, kStart + 20, kStart + 30, CallEffect::Copy);
  GpuBatch batch;
  MemcpyRecord m;
  m.at.correlationId = 31;  // the driver call's
  m.runtimeCorrelationId = 30;
  m.at.startNs = kStart + 40;
  m.at.endNs = kStart + 50;
  batch.records.memcpys.push_back(m);
  assembler->addGpu(batch);
  assemble(kStart + 100);
  ASSERT_EQ(out.memcpys.size(), 1u);
  EXPECT_TRUE(out.memcpys[0].at.hasLaunchCall);
  EXPECT_EQ(out.memcpys[0].at.correlationId, 30u) << "both ends of the arrow share the call's id";
  ASSERT_EQ(out.flows.size(), 1u);
  EXPECT_EQ(out.flows[0].correlationId, 30u);
}

TEST_F(AssemblerTest, TheWindowKeepsWorkQueuedAtStopButNotWorkLaunchedOutsideIt) {
  make();
  call(1, kStart + 20, kStart + 30, CallEffect::Kernel);
  gpu({kernel(1, kStart + 2 * kSecond, kStart + 3 * kSecond),      // launched inside, ran after the stop
       kernel(2, kStart + 2 * kSecond, kStart + 3 * kSecond),      // launched by nobody we saw
       kernel(3, kStart - 100, kStart - 50)});                     // before the start
  finish(kStart + kSecond);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(out.kernels[0].at.correlationId, 1u);
  EXPECT_EQ(assembler->losses().outOfWindowEvents, 2u);
}

// A memory pool's operations join no launch: they are kept in the window, and counted out of
// it, as they come.
TEST_F(AssemblerTest, MemoryPoolOperationsAreKeptInTheWindowAndCountedOutsideIt) {
  make();
  GpuBatch batch;
  MemoryPoolRecord pool;
  pool.operation = PoolOperation::Created;
  pool.timeNs = kStart - 10;  // before the start
  batch.records.memoryPools.push_back(pool);
  pool.timeNs = kStart + 10;
  batch.records.memoryPools.push_back(pool);
  pool.operation = PoolOperation::Destroyed;
  pool.timeNs = kStart + 2 * kSecond;  // after the stop
  batch.records.memoryPools.push_back(pool);
  assembler->setStop(kStart + kSecond);
  assembler->addGpu(batch);
  finish(kStart + kSecond);
  ASSERT_EQ(out.memoryPools.size(), 1u);
  EXPECT_EQ(out.memoryPools[0].timeNs, kStart + 10);
  EXPECT_EQ(assembler->losses().outOfWindowEvents, 2u);
}

TEST_F(AssemblerTest, RangesStillOpenAtStopEndThereMarkedUnfinished) {
  make();
  assembler->onRangeBegin(kThread, kStart + 10, 500, copied("open"));
  assembler->setStop(kStart + 100);
  assembler->onRangeEnd(kThread, kStart + 200, 500);  // drained late, after the stop
  assembler->finish(0, out);
  ASSERT_EQ(out.ranges.size(), 1u);
  EXPECT_TRUE(out.ranges[0].unfinished);
  EXPECT_EQ(out.ranges[0].endNs, kStart + 100);
  EXPECT_EQ(assembler->losses().unfinishedRanges, 1u);
}

// The memory cap dropped the inner range's end: the outer end closes both, and the inner
// one says it is unfinished rather than claiming the outer's end as its own.
TEST_F(AssemblerTest, AnEndWhoseInnerRangeLostItsEndClosesBoth) {
  make();
  assembler->onRangeBegin(kThread, kStart + 10, 500, copied("outer"));
  assembler->onRangeBegin(kThread, kStart + 20, 501, copied("inner"));
  assembler->onRangeEnd(kThread, kStart + 40, 500);
  assemble(kStart + 100);
  ASSERT_EQ(out.ranges.size(), 2u);
  EXPECT_EQ(name(out.ranges[0].name), "inner");
  EXPECT_TRUE(out.ranges[0].unfinished);
  EXPECT_EQ(name(out.ranges[1].name), "outer");
  EXPECT_FALSE(out.ranges[1].unfinished);
  EXPECT_EQ(out.ranges[0].parentId, 500u);
}

TEST_F(AssemblerTest, AnEndForARangeWhoseBeginWasDroppedClosesNothing) {
  make();
  assembler->onRangeBegin(kThread, kStart + 10, 500, copied("outer"));
  assembler->onRangeEnd(kThread, kStart + 20, 501);  // its begin never came
  assembler->onRangeEnd(kThread, kStart + 40, 500);
  assemble(kStart + 100);
  ASSERT_EQ(out.ranges.size(), 1u);
  EXPECT_EQ(out.ranges[0].endNs, kStart + 40);
  EXPECT_FALSE(out.ranges[0].unfinished);
}

TEST_F(AssemblerTest, OverlappingKernelsOnOneStreamGoOnSeparateLanes) {
  make(false);
  gpu({kernel(1, kStart + 10, kStart + 100), kernel(2, kStart + 50, kStart + 150),
       kernel(3, kStart + 200, kStart + 300)});
  assemble(kStart + 1000);
  ASSERT_EQ(out.kernels.size(), 3u);
  EXPECT_EQ(out.kernels[0].at.lane, 0);
  EXPECT_EQ(out.kernels[1].at.lane, 1) << "programmatic dependent launch overlaps";
  EXPECT_EQ(out.kernels[2].at.lane, 0);
}

TEST_F(AssemblerTest, SyncsJoinTheirCallAndBoundTheClockOffset) {
  make();
  call(1, kStart + 20, kStart + 30, CallEffect::Kernel);
  call(2, kStart + 40, kStart + 500, CallEffect::Sync);
  gpu({kernel(1, kStart + 100, kStart + 480)});
  GpuBatch batch;
  SyncRecord s;
  s.kind = SyncKind::StreamSync;
  s.at.correlationId = 2;
  s.at.streamId = 7;
  s.at.startNs = kStart + 45;
  s.at.endNs = kStart + 490;
  batch.records.syncs.push_back(s);
  assembler->addGpu(batch);
  finish(kStart + kSecond);
  ASSERT_EQ(out.syncs.size(), 1u);
  EXPECT_FALSE(out.syncs[0].at.hasLaunchCall) << "a sync is no GPU work: no arrow";
  const ClockOffsetBounds& b = assembler->clockBounds();
  ASSERT_TRUE(b.hasHigh);
  EXPECT_EQ(b.highNs, 80) << "the kernel started 80 ns after its call began";
  ASSERT_TRUE(b.hasLow);
  EXPECT_EQ(b.lowNs, -20) << "it ended 20 ns before the sync returned";
}

TEST_F(AssemblerTest, AsyncRangesPairAcrossThreadsAndEitherDrainOrder) {
  make();
  assembler->onThread(2, 1002, "other");
  assembler->onAsyncEnd(2, kStart + 90, 700);  // the ending thread was drained first
  assembler->onAsyncBegin(kThread, kStart + 10, 700, copied("request"));
  assembler->onAsyncBegin(kThread, kStart + 20, 701, copied("overlapping"));
  assembler->onAsyncEnd(kThread, kStart + 95, 701);
  assemble(kStart + 1000);
  ASSERT_EQ(out.ranges.size(), 2u);
  EXPECT_TRUE(out.ranges[0].async);
  EXPECT_EQ(out.ranges[0].startNs, kStart + 10);
  EXPECT_EQ(out.ranges[0].endNs, kStart + 90);
  EXPECT_NE(out.ranges[0].lane, out.ranges[1].lane) << "overlapping async ranges on separate lanes";
}

TEST_F(AssemblerTest, MemoryRecordsTakeTheThreadOfTheirCall) {
  make();
  assembler->onThread(2, 1002, "allocator");
  ApiCallRecord c;
  c.startNs = kStart + 10;
  c.endNs = kStart + 20;
  c.correlationId = 5;
  c.thread = 2;
  c.effect = CallEffect::Memory;
  assembler->onApiCall(c);
  GpuBatch batch;
  MemoryRecord m;
  m.timeNs = kStart + 15;
  m.correlationId = 5;
  m.bytes = 4096;
  batch.records.memory.push_back(m);
  assembler->addGpu(batch);
  assemble(kStart + 100);
  ASSERT_EQ(out.memory.size(), 1u);
  EXPECT_EQ(tables.threads[out.memory[0].thread].tid, 1002);
}

// What the assembler holds is set by what is in flight: calls whose records never come are
// given up after a while, so a long window does not grow it.
TEST_F(AssemblerTest, CallsWhoseRecordsNeverComeAreForgottenAfterAWhile) {
  make();
  for (uint32_t i = 1; i <= 10000; ++i) call(i, kStart + i, kStart + i + 1, CallEffect::Kernel);
  assemble(kStart + kSecond);
  const std::size_t held = assembler->heldBytes();
  out.clear();
  assemble(kStart + 60 * kSecond);
  EXPECT_LT(assembler->heldBytes(), held / 4);
  gpu({kernel(5, kStart + 61 * kSecond, kStart + 62 * kSecond)});
  assemble(kStart + 63 * kSecond);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_FALSE(out.kernels[0].at.hasLaunchCall);
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 1u) << "a late record is counted, not lost";
}

// CUPTI hands a buffer back when it is full or flushed, and a flush leaves a buffer out
// while one of its records is incomplete: a kernel's record can come minutes after its
// launch. Its call waits as long as CUPTI holds a buffer lent before the record was due.
TEST_F(AssemblerTest, ACallIsKeptPast30sWhileCuptiHoldsABufferItsRecordMayBeIn) {
  make();
  call(5, kStart + kSecond, kStart + kSecond + 10, CallEffect::Kernel);
  gpu({}, /*allRecordsBefore=*/kStart + kSecond - 1000);  // lent just before the call, still out
  assemble(kStart + 100 * kSecond);
  EXPECT_TRUE(out.kernels.empty());
  gpu({kernel(5, kStart + kSecond + 100, kStart + kSecond + 200)}, kStart + 100 * kSecond);
  assemble(kStart + 100 * kSecond);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_TRUE(out.kernels[0].at.hasLaunchCall) << "joined 99 s after its launch";
  EXPECT_EQ(out.flows.size(), 1u);
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 0u);
}

TEST_F(AssemblerTest, OnceEveryBufferLentBeforeItIsBackACallIsGivenUpAsBefore) {
  make();
  call(5, kStart + kSecond, kStart + kSecond + 10, CallEffect::Kernel);
  call(6, kStart + 80 * kSecond, kStart + 80 * kSecond + 10, CallEffect::Kernel);
  gpu({}, kStart + kSecond - 1000);
  assemble(kStart + 100 * kSecond);
  gpu({}, kStart + 100 * kSecond);  // back, without call 5's record: it never comes
  assemble(kStart + 100 * kSecond);
  gpu({kernel(5, kStart + 101 * kSecond, kStart + 102 * kSecond),
       kernel(6, kStart + 101 * kSecond, kStart + 102 * kSecond)},
      kStart + 103 * kSecond);
  assemble(kStart + 103 * kSecond);
  ASSERT_EQ(out.kernels.size(), 2u);
  for (const KernelRecord& k : out.kernels) {
    EXPECT_EQ(k.at.hasLaunchCall, k.at.correlationId == 6)
        << "call 6 is under 30 s old, call 5 was given up; kernel " << k.at.correlationId;
  }
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 1u);
}

TEST_F(AssemblerTest, ABufferCuptiNeverHandsBackHoldsNoCallPastTenMinutes) {
  make();
  call(5, kStart + kSecond, kStart + kSecond + 10, CallEffect::Kernel);
  gpu({}, kStart);
  assemble(kStart + 590 * kSecond);
  const std::size_t holding = assembler->heldBytes();
  assemble(kStart + 620 * kSecond);
  EXPECT_LT(assembler->heldBytes(), holding);
  gpu({kernel(5, kStart + 2 * kSecond, kStart + 3 * kSecond)}, kStart);
  assemble(kStart + 621 * kSecond);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_FALSE(out.kernels[0].at.hasLaunchCall);
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 1u);
}

TEST_F(AssemblerTest, CallsKeptPast30sAreBoundedInNumberOldestGivenUpFirst) {
  make();
  constexpr uint32_t kCalls = 70'000;  // more than the 65,536 kept past their 30 s
  for (uint32_t i = 1; i <= kCalls; ++i) call(i, kStart + i, kStart + i + 1, CallEffect::Kernel);
  gpu({}, kStart);
  assemble(kStart + 60 * kSecond);
  gpu({kernel(1, kStart + 61 * kSecond, kStart + 62 * kSecond),
       kernel(kCalls, kStart + 61 * kSecond, kStart + 62 * kSecond)},
      kStart);
  assemble(kStart + 63 * kSecond);
  ASSERT_EQ(out.kernels.size(), 2u);
  for (const KernelRecord& k : out.kernels) {
    EXPECT_EQ(k.at.hasLaunchCall, k.at.correlationId == kCalls)
        << "the oldest went, the newest stayed; kernel " << k.at.correlationId;
  }
}

TEST_F(AssemblerTest, SheddingGivesUpOnTheOldestCallsFirstAndLateRecordsAreCounted) {
  make();
  for (uint32_t i = 1; i <= 1000; ++i) call(i, kStart + i, kStart + i + 1, CallEffect::Kernel);
  const std::size_t held = assembler->heldBytes();
  assembler->shed(held / 2);
  EXPECT_LT(assembler->heldBytes(), held * 3 / 4);
  gpu({kernel(1, kStart + 2000, kStart + 2100), kernel(1000, kStart + 2000, kStart + 2100)});
  assemble(kStart + 10 * kSecond);
  ASSERT_EQ(out.kernels.size(), 2u);
  for (const KernelRecord& k : out.kernels) {
    if (k.at.correlationId == 1) {
      EXPECT_FALSE(k.at.hasLaunchCall) << "the oldest call was given up";
    }
    if (k.at.correlationId == 1000) {
      EXPECT_TRUE(k.at.hasLaunchCall) << "the newest is still waited for";
    }
  }
  EXPECT_EQ(assembler->losses().gpuOpsWithoutLaunch, 1u);
}

TEST_F(AssemblerTest, SpansWaitUntilEveryLaunchBeforeTheRangeEndHasJoined) {
  make();
  assembler->onRangeBegin(kThread, kStart + 10, 500, copied("step"));
  call(1, kStart + 20, kStart + 30, CallEffect::Kernel, 500);
  call(2, kStart + 31, kStart + 35, CallEffect::Kernel, 500);
  assembler->onRangeEnd(kThread, kStart + 40, 500);
  gpu({kernel(1, kStart + 50, kStart + 60)});
  assemble(kStart + 10 * kSecond);
  EXPECT_TRUE(out.gpuSpans.empty()) << "kernel 2 may still come";
  gpu({kernel(2, kStart + 70, kStart + 80)});
  assemble(kStart + 10 * kSecond);
  ASSERT_EQ(out.gpuSpans.size(), 1u);
  EXPECT_EQ(out.gpuSpans[0].startNs, kStart + 50);
  EXPECT_EQ(out.gpuSpans[0].endNs, kStart + 80);
}

}  // namespace
}  // namespace kinetrace::detail
