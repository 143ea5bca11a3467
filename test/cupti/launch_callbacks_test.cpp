#include "cupti/launch_callbacks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "fake_cupti_api.h"
#include "host_calls.h"
#include "kinetrace/host.h"

// The CUPTI callback on its own: which calls it records and with what effect, what it
// writes into the host recorder, the calls it skips, and the profiler-control handler.
// CUPTI's calls are simulated: the callback gets what CUPTI would pass it.

namespace kinetrace::detail {
namespace {

using synthetic::FakeCuptiApi;
using synthetic::HostCalls;
using synthetic::recordHost;
using synthetic::SimulatedCall;

constexpr CUpti_CallbackDomain kRuntime = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr CUpti_CallbackDomain kDriver = CUPTI_CB_DOMAIN_DRIVER_API;
constexpr uint32_t kLaunchKernel = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
constexpr uint32_t kMemcpyAsync = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
constexpr uint32_t kGetDevice = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020;
constexpr uint32_t kCuLaunchKernel = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
constexpr uint32_t kCuCtxGetDevice = CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice;
constexpr uint32_t kCuProfilerStart = CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
constexpr uint32_t kCuProfilerStop = CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;

TEST(LaunchCallbacksTest, DisplayNameDropsOnlyANumericVersionSuffix) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cudaLaunchKernel_v7000", "cudaLaunchKernel"},
      {"cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernel_ptsz"},
      {"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync"},
      {"cuLaunchKernel", "cuLaunchKernel"},
      {"cudaFoo_v", "cudaFoo_v"},
      {"cudaFoo_vX1", "cudaFoo_vX1"},
      {"", ""},
  };
  for (const auto& [cuptiName, display] : cases) {
    EXPECT_EQ(apiDisplayName(cuptiName), display) << cuptiName;
  }
}

TEST(LaunchCallbacksTest, LaunchSideCallsAreThoseThatStartOrWaitForGpuWork) {
  struct Case {
    const char* name;
    bool launchSide;
    CallEffect effect;
  };
  const std::vector<Case> cases = {
      {"cudaLaunchKernel_v7000", true, CallEffect::Kernel},
      {"cudaLaunchKernel_ptsz_v7000", true, CallEffect::Kernel},
      {"cudaLaunchKernelExC_v11060", true, CallEffect::Kernel},
      {"cudaLaunchCooperativeKernel_v9000", true, CallEffect::Kernel},
      {"cuLaunchKernel", true, CallEffect::Kernel},
      {"cuLaunchKernelEx", true, CallEffect::Kernel},
      {"cudaGraphLaunch_v10000", true, CallEffect::Graph},
      {"cuGraphLaunch", true, CallEffect::Graph},
      {"cudaMemcpyAsync_v3020", true, CallEffect::Copy},
      {"cuMemcpyHtoDAsync_v2", true, CallEffect::Copy},
      {"cudaMemsetAsync_v3020", true, CallEffect::Set},
      {"cuMemsetD8_v2", true, CallEffect::Set},
      {"cudaStreamSynchronize_v3020", true, CallEffect::Sync},
      {"cudaEventSynchronize_v3020", true, CallEffect::Sync},
      {"cudaDeviceSynchronize_v3020", true, CallEffect::Sync},
      {"cudaStreamWaitEvent_v3020", true, CallEffect::Sync},
      {"cuCtxSynchronize", true, CallEffect::Sync},
      {"cuStreamWaitEvent", true, CallEffect::Sync},
      {"cudaMalloc_v3020", true, CallEffect::Memory},
      {"cudaFree_v3020", true, CallEffect::Memory},
      {"cuMemAlloc_v2", true, CallEffect::Memory},
      {"cuMemFree_v2", true, CallEffect::Memory},
      // A host function runs on the CPU: recorded, but nothing to wait for on the GPU.
      {"cudaLaunchHostFunc_v10000", true, CallEffect::None},
      {"cuLaunchHostFunc", true, CallEffect::None},
      // Graph building: recorded (where nodes come from), nothing on the GPU.
      {"cudaGraphAddKernelNode_v10000", true, CallEffect::None},
      {"cudaGraphInstantiate_v12000", true, CallEffect::None},
      {"cuGraphAddMemsetNode", true, CallEffect::None},
      {"cuGraphInstantiateWithFlags", true, CallEffect::None},
      // Neither.
      {"cudaGetDevice_v3020", false, CallEffect::None},
      {"cudaEventRecord_v3020", false, CallEffect::None},
      {"cuCtxGetDevice", false, CallEffect::None},
      {"cuDeviceGetAttribute", false, CallEffect::None},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(isLaunchSideCall(c.name), c.launchSide) << c.name;
    EXPECT_EQ(callEffect(c.name), c.effect) << c.name;
  }
}

class OnCuptiCallbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    names_.callbackNames = {
        {{kRuntime, kLaunchKernel}, "cudaLaunchKernel_v7000"},
        {{kRuntime, kMemcpyAsync}, "cudaMemcpyAsync_v3020"},
        {{kRuntime, kGetDevice}, "cudaGetDevice_v3020"},
        {{kDriver, kCuLaunchKernel}, "cuLaunchKernel"},
        {{kDriver, kCuCtxGetDevice}, "cuCtxGetDevice"},
        {{kDriver, kCuProfilerStart}, "cuProfilerStart"},
        {{kDriver, kCuProfilerStop}, "cuProfilerStop"},
    };
    table_.selectLaunchEntryPoints(names_);
    controlCalls().clear();
  }
  // One call, entry and exit, through the callback CUPTI would call.
  void run(CUpti_CallbackDomain domain, uint32_t cbid, uint32_t correlationId, int result = 0) {
    SimulatedCall(domain, cbid, correlationId).run(&onCuptiCallback, &table_, result);
  }
  static std::vector<bool>& controlCalls() {
    static std::vector<bool> calls;
    return calls;
  }
  static void noteControl(bool start) { controlCalls().push_back(start); }

  FakeCuptiApi names_;
  CallbackTable table_;
};

TEST_F(OnCuptiCallbackTest, TheTableRecordsExactlyTheLaunchSideEntryPointsWithTheirEffects) {
  EXPECT_EQ(table_.recorded(kRuntime), (std::vector<uint32_t>{kMemcpyAsync, kLaunchKernel}));
  EXPECT_EQ(table_.recorded(kDriver), std::vector<uint32_t>{kCuLaunchKernel});
  EXPECT_EQ(CallbackTable::effectOf(table_.flags(kRuntime, kLaunchKernel)), CallEffect::Kernel);
  EXPECT_EQ(CallbackTable::effectOf(table_.flags(kRuntime, kMemcpyAsync)), CallEffect::Copy);
  EXPECT_EQ(table_.flags(kRuntime, kGetDevice), 0);
  EXPECT_EQ(table_.flags(kDriver, 1u << 20), 0) << "ids past the table are not recorded";
  EXPECT_TRUE(table_.control(kDriver).empty()) << "no profiler control unless selected";
}

TEST_F(OnCuptiCallbackTest, LaunchCarriesTheInnermostRangeAsExternalId) {
  HostCalls host = recordHost([&] {
    kinetrace::Range outer("outer");
    kinetrace::Range inner("inner");
    run(kRuntime, kLaunchKernel, 77);
  });

  ASSERT_EQ(host.calls.size(), 1u);
  const auto* inner = host.range("inner");
  ASSERT_NE(inner, nullptr);
  const ApiCallRecord& call = host.calls[0];
  EXPECT_EQ(call.correlationId, 77u);
  EXPECT_EQ(call.externalId, inner->id);
  EXPECT_EQ(call.callbackId, kLaunchKernel);
  EXPECT_EQ(call.domain, ApiDomain::Runtime);
  EXPECT_EQ(call.effect, CallEffect::Kernel);
  EXPECT_GE(call.startNs, inner->startNs);
  EXPECT_LE(call.startNs, call.endNs);
  EXPECT_LE(call.endNs, inner->endNs);
}

// CUPTI's resource callbacks for graph nodes: a created node is recorded with the range open
// on the thread, a cloned one with the node it was cloned from (node ids here are the
// handles' values: FakeCuptiApi::getGraphNodeId).
TEST_F(OnCuptiCallbackTest, GraphNodesAreRecordedWithTheRangeOpenOrTheNodeTheyCloned) {
  table_.graphNodeIds = &names_;
  auto node = [](uintptr_t id) { return reinterpret_cast<CUgraphNode>(id); };
  auto resource = [&](CUpti_CallbackId cbid, CUgraphNode created, CUgraphNode original) {
    CUpti_GraphData graph{};
    graph.node = created;
    graph.originalNode = original;
    CUpti_ResourceData data{};
    data.resourceDescriptor = &graph;
    onCuptiCallback(&table_, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
  };
  HostCalls host = recordHost([&] {
    kinetrace::Range capture("capture");
    resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node(0x100000000), nullptr);
    resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, node(0x200000000), node(0x100000000));
    resource(CUPTI_CBID_RESOURCE_GRAPH_CREATED, node(0x300000000), nullptr);     // not a node's
    resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, node(0x400000000), nullptr);  // no original
  });
  const auto* capture = host.range("capture");
  ASSERT_NE(capture, nullptr);
  ASSERT_EQ(host.graphNodes.size(), 2u);
  EXPECT_EQ(host.graphNodes[0].id, 0x100000000u);
  EXPECT_EQ(host.graphNodes[0].externalId, capture->id);
  EXPECT_EQ(host.graphNodes[0].clonedFrom, 0u);
  EXPECT_EQ(host.graphNodes[1].id, 0x200000000u);
  EXPECT_EQ(host.graphNodes[1].clonedFrom, 0x100000000u);

  table_.graphNodeIds = nullptr;
  HostCalls off = recordHost(
      [&] { resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node(0x100000000), nullptr); });
  EXPECT_TRUE(off.graphNodes.empty()) << "not asked for";
}

// A graph launch says which executable graph it launched, on which stream and context, from
// cudaGraphLaunch's parameters; a stream's synchronisation which stream; an instantiation
// which graph it made (the fake's ids are the handles' values).
TEST_F(OnCuptiCallbackTest, GraphLaunchesSynchronisationsAndInstantiationsRecordWhatTheyActedOn) {
  constexpr uint32_t kGraphLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000;
  constexpr uint32_t kStreamSync = CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
  constexpr uint32_t kInstantiate = CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000;
  constexpr uint32_t kCuGraphLaunchPtsz = CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
  names_.callbackNames[{kRuntime, kGraphLaunch}] = "cudaGraphLaunch_v10000";
  names_.callbackNames[{kRuntime, kStreamSync}] = "cudaStreamSynchronize_v3020";
  names_.callbackNames[{kRuntime, kInstantiate}] = "cudaGraphInstantiate_v12000";
  names_.callbackNames[{kDriver, kCuGraphLaunchPtsz}] = "cuGraphLaunch_ptsz";
  table_ = CallbackTable{};
  table_.selectLaunchEntryPoints(names_);
  table_.launchTargets = &names_;
  auto context = reinterpret_cast<CUcontext>(uintptr_t{3});
  auto exec = reinterpret_cast<cudaGraphExec_t>(uintptr_t{45});
  auto stream = reinterpret_cast<cudaStream_t>(uintptr_t{7});
  cudaGraphLaunch_v10000_params launch{exec, stream};
  cudaStreamSynchronize_v3020_params sync{stream};
  cudaGraphExec_t made = reinterpret_cast<cudaGraphExec_t>(uintptr_t{46});
  cudaGraphInstantiate_v12000_params instantiate{&made, nullptr, 0};
  cuGraphLaunch_ptsz_params driverLaunch{reinterpret_cast<CUgraphExec>(uintptr_t{47}), nullptr};
  HostCalls host = recordHost([&] {
    SimulatedCall(kRuntime, kInstantiate, 10, context, &instantiate).run(&onCuptiCallback, &table_);
    SimulatedCall(kRuntime, kGraphLaunch, 11, context, &launch).run(&onCuptiCallback, &table_);
    SimulatedCall(kRuntime, kStreamSync, 12, context, &sync).run(&onCuptiCallback, &table_);
    SimulatedCall(kDriver, kCuGraphLaunchPtsz, 13, context, &driverLaunch)
        .run(&onCuptiCallback, &table_);
    SimulatedCall(kRuntime, kGraphLaunch, 14, context, &launch)
        .run(&onCuptiCallback, &table_, /*result=*/1);  // failed: launched nothing
  });
  ASSERT_EQ(host.calls.size(), 5u);
  EXPECT_EQ(host.calls[1].effect, CallEffect::Graph);
  ASSERT_EQ(host.targets.size(), 4u) << "none for the failed launch";
  EXPECT_EQ(host.targets[0].correlationId, 10u);
  EXPECT_TRUE(host.targets[0].graphInstantiated);
  EXPECT_EQ(host.targets[0].graphExecId, 46u);
  EXPECT_EQ(host.targets[1].correlationId, 11u);
  EXPECT_TRUE(host.targets[1].graphLaunched);
  EXPECT_EQ(host.targets[1].graphExecId, 45u);
  EXPECT_TRUE(host.targets[1].streamKnown);
  EXPECT_EQ(host.targets[1].streamId, 7u);
  EXPECT_TRUE(host.targets[1].contextKnown);
  EXPECT_EQ(host.targets[1].contextId, 3u);
  EXPECT_EQ(host.targets[2].correlationId, 12u);
  EXPECT_FALSE(host.targets[2].graphLaunched);
  EXPECT_EQ(host.targets[2].streamId, 7u);
  EXPECT_EQ(host.targets[3].correlationId, 13u);
  EXPECT_EQ(host.targets[3].graphExecId, 47u);
  EXPECT_EQ(host.targets[3].streamId, 1000u) << "the per-thread default stream";

  table_.launchTargets = nullptr;
  HostCalls off = recordHost([&] {
    SimulatedCall(kRuntime, kGraphLaunch, 11, context, &launch).run(&onCuptiCallback, &table_);
  });
  EXPECT_EQ(off.calls.size(), 1u);
  EXPECT_TRUE(off.targets.empty()) << "not asked for";
}

TEST_F(OnCuptiCallbackTest, ACallOutsideAnyRangeHasNoExternalId) {
  HostCalls host = recordHost([&] { run(kRuntime, kMemcpyAsync, 5); });
  ASSERT_EQ(host.calls.size(), 1u);
  EXPECT_EQ(host.calls[0].externalId, 0u);
  EXPECT_EQ(host.calls[0].effect, CallEffect::Copy);
}

TEST_F(OnCuptiCallbackTest, NothingIsRecordedWhileTheHostRecorderIsOff) {
  run(kRuntime, kLaunchKernel, 1);
  HostCalls host = recordHost([] {});
  EXPECT_TRUE(host.calls.empty());
}

// A failed call started nothing on the GPU: the assembler must not keep it waiting for a
// record that will never come. The call itself is still in the trace.
TEST_F(OnCuptiCallbackTest, AFailedCallIsRecordedWithNoEffect) {
  constexpr int kCudaErrorInvalidValue = 1;
  HostCalls host = recordHost([&] {
    run(kRuntime, kLaunchKernel, 1, kCudaErrorInvalidValue);
    run(kRuntime, kLaunchKernel, 2);
  });
  ASSERT_EQ(host.calls.size(), 2u);
  EXPECT_EQ(host.calls[0].correlationId, 1u);
  EXPECT_EQ(host.calls[0].effect, CallEffect::None);
  EXPECT_EQ(host.calls[1].effect, CallEffect::Kernel);
}

TEST_F(OnCuptiCallbackTest, ADriverCallInsideARecordedRuntimeCallIsSkipped) {
  HostCalls host = recordHost([&] {
    SimulatedCall runtime(kRuntime, kLaunchKernel, 1);
    runtime.enter(&onCuptiCallback, &table_);
    run(kDriver, kCuLaunchKernel, 2);
    runtime.exit(&onCuptiCallback, &table_);
    run(kDriver, kCuLaunchKernel, 3);  // on its own: recorded
  });
  ASSERT_EQ(host.calls.size(), 2u);
  EXPECT_EQ(host.calls[0].correlationId, 1u);
  EXPECT_EQ(host.calls[0].domain, ApiDomain::Runtime);
  EXPECT_EQ(host.calls[1].correlationId, 3u);
  EXPECT_EQ(host.calls[1].domain, ApiDomain::Driver);
  EXPECT_EQ(host.calls[1].effect, CallEffect::Kernel);
}

// Collection stopped while a runtime call was inside it: its exit never comes. Once
// collection starts again, the thread's driver calls are recorded, not taken as nested.
TEST_F(OnCuptiCallbackTest, ARuntimeCallWhoseExitNeverCameDoesNotHideLaterDriverCalls) {
  std::atomic<uint32_t> collection{1};
  table_.collection = &collection;
  HostCalls host = recordHost([&] {
    SimulatedCall runtime(kRuntime, kLaunchKernel, 1);
    runtime.enter(&onCuptiCallback, &table_);  // no exit: callbacks were switched off
    collection.fetch_add(1);                   // collection starts again
    run(kDriver, kCuLaunchKernel, 2);
  });
  ASSERT_EQ(host.calls.size(), 1u);
  EXPECT_EQ(host.calls[0].correlationId, 2u);
  EXPECT_EQ(host.calls[0].domain, ApiDomain::Driver);
}

TEST_F(OnCuptiCallbackTest, ADriverCallInsideARuntimeCallIsRecordedWhenAllDriverCallsAreAsked) {
  table_.selectAll(kDriver, names_);
  ASSERT_TRUE(table_.recordsNestedDriverCalls());
  HostCalls host = recordHost([&] {
    SimulatedCall runtime(kRuntime, kLaunchKernel, 1);
    runtime.enter(&onCuptiCallback, &table_);
    run(kDriver, kCuLaunchKernel, 2);
    runtime.exit(&onCuptiCallback, &table_);
  });
  ASSERT_EQ(host.calls.size(), 2u);
  // Recorded at exit: the nested call first.
  EXPECT_EQ(host.calls[0].correlationId, 2u);
  EXPECT_EQ(host.calls[0].domain, ApiDomain::Driver);
  EXPECT_EQ(host.calls[1].correlationId, 1u);
  EXPECT_GE(host.calls[0].startNs, host.calls[1].startNs);
  EXPECT_LE(host.calls[0].endNs, host.calls[1].endNs);
}

TEST_F(OnCuptiCallbackTest, ProfilerControlHandlerRunsAfterCuProfilerStartAndBeforeCuProfilerStop) {
  table_.profilerControl = &noteControl;
  table_.selectProfilerControl();
  EXPECT_EQ(table_.control(kDriver), (std::vector<uint32_t>{kCuProfilerStart, kCuProfilerStop}));
  HostCalls host = recordHost([&] {
    SimulatedCall start(kDriver, kCuProfilerStart, 1);
    start.enter(&onCuptiCallback, &table_);
    EXPECT_TRUE(controlCalls().empty());
    start.exit(&onCuptiCallback, &table_);
    EXPECT_EQ(controlCalls(), std::vector<bool>{true});
    SimulatedCall stop(kDriver, kCuProfilerStop, 2);
    stop.enter(&onCuptiCallback, &table_);
    EXPECT_EQ(controlCalls(), (std::vector<bool>{true, false}));
    stop.exit(&onCuptiCallback, &table_);
  });
  EXPECT_EQ(controlCalls(), (std::vector<bool>{true, false}));
  EXPECT_TRUE(host.calls.empty()) << "watched, not recorded";
}

TEST_F(OnCuptiCallbackTest, ProfilerControlCallsAreAlsoRecordedWhenAllDriverCallsAreAsked) {
  table_.profilerControl = &noteControl;
  table_.selectAll(kDriver, names_);
  table_.selectProfilerControl();
  HostCalls host = recordHost([&] { run(kDriver, kCuProfilerStart, 1); });
  EXPECT_EQ(controlCalls(), std::vector<bool>{true});
  ASSERT_EQ(host.calls.size(), 1u);
  EXPECT_EQ(host.calls[0].callbackId, kCuProfilerStart);
  EXPECT_EQ(host.calls[0].effect, CallEffect::None);
}

}  // namespace
}  // namespace kinetrace::detail
