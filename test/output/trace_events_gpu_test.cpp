// writeTrace + ChromeJsonSink, GPU side: kernels, copies, memsets, syncs, GPU spans,
// overheads, ac2g flows and the naming of devices and streams. Each test writes a real
// file through openSink() and parses it back.

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kinetrace/sink.h"
#include "model/trace_data.h"
#include "output/trace_events.h"
#include "support/temp_dir.h"
#include "support/trace_json.h"

namespace kinetrace::detail {
namespace {

using kinetrace::testing::eventsWith;
using kinetrace::testing::nsOf;
using nlohmann::json;

constexpr int64_t kStart = 1'750'000'000'000'000'000;
constexpr int64_t kPid = 777;

json onlyEvent(const json& root, const std::string& ph, const std::string& cat) {
  const auto found = eventsWith(root, ph, cat);
  EXPECT_EQ(found.size(), 1u) << cat;
  return found.empty() ? json::object() : found[0];
}

GpuPlacement placement(int64_t start, int64_t end, uint32_t device, uint32_t stream,
                       uint32_t correlation, bool hasLaunchCall = false) {
  GpuPlacement at;
  at.startNs = start;
  at.endNs = end;
  at.deviceId = device;
  at.streamId = stream;
  at.contextId = 1;
  at.correlationId = correlation;
  at.hasLaunchCall = hasLaunchCall;
  return at;
}

class TraceEventsGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    trace_.tables.pid = kPid;
    trace_.startNs = kStart;
    trace_.stopNs = kStart + 1'000'000'000;
    trace_.tables.threads.push_back(ThreadInfo{kPid, 800, StringTable::kEmpty});
  }

  json save() {
    const std::string path = (dir_ / "trace.json").string();
    auto sink = openSink(path);
    writeTrace(trace_, path, {}, *sink);
    return json::parse(kinetrace::testing::fileContents(path));
  }
  KernelRecord kernel(GpuPlacement at) {
    KernelRecord k;
    k.at = at;
    k.name = trace_.tables.strings.intern("void gemm<float, 128>(Params)");
    return k;
  }
  ApiCallRecord launch(int64_t start, uint32_t correlation) {
    ApiCallRecord call;
    call.startNs = start;
    call.endNs = start + 3'000;
    call.correlationId = correlation;
    call.callbackId = 211;
    call.thread = thread_;
    call.name = trace_.tables.strings.intern("cudaLaunchKernel");
    call.effect = CallEffect::Kernel;
    return call;
  }

  kinetrace::testing::TempDir dir_{"kinetrace_gpu_events"};
  TraceData trace_;
  uint32_t thread_ = 0;
};

TEST_F(TraceEventsGpuTest, WritesKernelsWithTheArgsOfTheTraceFormat) {
  KernelRecord k = kernel(placement(kStart + 10'123, kStart + 25'000, 1, 7, 99));
  k.at.externalId = 42;
  k.queuedNs = kStart + 9'000;
  k.grid[0] = 256;
  k.grid[1] = 4;
  k.grid[2] = 1;
  k.block[0] = 128;
  k.block[1] = 1;
  k.block[2] = 1;
  k.registersPerThread = 64;
  k.staticSharedBytes = 1024;
  k.dynamicSharedBytes = 49152;
  k.blocksPerSm = 7.75f;
  k.warpsPerSm = 31.0f;
  k.occupancyPercent = 37.5f;
  k.graphId = 3;
  k.graphNodeId = 0x100000002;
  trace_.records.kernels.push_back(k);
  const json e = onlyEvent(save(), "X", "kernel");

  EXPECT_EQ(e["name"], "void gemm<float, 128>(Params)");
  EXPECT_EQ(e["pid"], 1);
  EXPECT_EQ(e["tid"], 7);
  EXPECT_EQ(nsOf(e["ts"]), 10'123);
  EXPECT_EQ(nsOf(e["dur"]), 14'877);
  const json expected = {
      {"External id", 42},
      {"queued", 1'123},
      {"device", 1},
      {"context", 1},
      {"stream", 7},
      {"correlation", 99},
      {"registers per thread", 64},
      {"shared memory", 50176},
      {"blocks per SM", 7.75},
      {"warps per SM", 31.0},
      {"grid", {256, 4, 1}},
      {"block", {128, 1, 1}},
      {"est. achieved occupancy %", 37.5},
      {"graph id", 3},
      {"graph node id", 0x100000002},
  };
  EXPECT_EQ(e["args"], expected);
}

TEST_F(TraceEventsGpuTest, LeavesOutKernelArgsThatAreUnknown) {
  KernelRecord k = kernel(placement(kStart, kStart + 10, 0, 7, 5));
  k.blocksPerSm = 0.1f;  // a float that prints badly as a double
  trace_.records.kernels.push_back(k);
  const json args = onlyEvent(save(), "X", "kernel")["args"];
  EXPECT_FALSE(args.contains("External id"));
  EXPECT_FALSE(args.contains("est. achieved occupancy %"));
  EXPECT_FALSE(args.contains("graph id"));
  EXPECT_FALSE(args.contains("graph node id"));
  EXPECT_EQ(args["queued"], 0);
  EXPECT_EQ(args["blocks per SM"].get<double>(), 0.1);
}

TEST_F(TraceEventsGpuTest, NcclKernelsSayWhatTheirNameSays) {
  KernelRecord nccl = kernel(placement(kStart, kStart + 10, 0, 9, 5));
  nccl.name = trace_.tables.strings.intern(
      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  // Every other arg a kernel can have too: replayed from a graph, with occupancy and a range.
  nccl.at.externalId = 9;
  nccl.occupancyPercent = 50;
  nccl.graphId = 3;
  nccl.graphNodeId = 4;
  trace_.records.kernels.push_back(nccl);
  trace_.records.kernels.push_back(kernel(placement(kStart + 20, kStart + 30, 0, 7, 6)));
  const json root = save();
  const auto kernels = eventsWith(root, "X", "kernel");
  ASSERT_EQ(kernels.size(), 2u);
  const json& args = kernels[0]["args"];
  EXPECT_EQ(args["nccl operation"], "AllReduce");
  EXPECT_EQ(args["nccl collective"], true);
  EXPECT_EQ(args["nccl reduction"], "Sum");
  EXPECT_EQ(args["nccl datatype"], "bf16");
  EXPECT_EQ(args["nccl algorithm"], "RING");
  EXPECT_EQ(args["nccl protocol"], "LL");
  EXPECT_EQ(args["graph node id"], 4);
  EXPECT_EQ(args["External id"], 9);
  EXPECT_EQ(args.size(), 21u);
  EXPECT_FALSE(kernels[1]["args"].contains("nccl operation"));
}

// What NCCL's NVTX payload said about a call (its range's arguments) reaches the GPU work
// launched inside it; a user's range with a payload keeps its arguments to itself.
TEST_F(TraceEventsGpuTest, GpuWorkInsideAnNcclCallCarriesItsSizeCommunicatorAndPeer) {
  StringTable& strings = trace_.tables.strings;
  auto arg = [&](const char* key, ArgType type, uint64_t number, const char* text = nullptr) {
    StoredArg a;
    a.key = strings.intern(key);
    a.type = type;
    a.number = number;
    if (text != nullptr) a.text = strings.intern(text);
    return a;
  };
  const uint64_t communicator = 0xb07a5c1e00000001ull;  // past 2^53
  StoredArgs allReduce;
  allReduce.event = strings.intern("NCCL: ncclAllReduce");
  allReduce.nccl = true;
  allReduce.values = {arg("NCCL communicator ID", ArgType::Unsigned, communicator),
                      arg("Message size [bytes]", ArgType::Unsigned, 4u << 20),
                      arg("Reduction operation", ArgType::Text, 0, "Sum"),
                      // given again at the range's end: the first stays, written once
                      arg("Message size [bytes]", ArgType::Unsigned, 1)};
  StoredArgs send;
  send.event = strings.intern("NCCL: ncclSend");
  send.nccl = true;
  send.values = {arg("NCCL communicator ID", ArgType::Unsigned, 7),
                 arg("Message size [bytes]", ArgType::Unsigned, 256),
                 arg("Peer rank", ArgType::Signed, 1)};
  StoredArgs user;
  user.event = strings.intern("load batch");
  user.values = {arg("Message size [bytes]", ArgType::Unsigned, 9)};
  StoredArgs group;  // what the assembler gives an ncclGroupEnd
  group.event = strings.intern("NCCL: ncclGroupEnd");
  group.nccl = true;
  group.values = {arg("Calls in the group", ArgType::Text, 0, "ncclSend, ncclRecv x2"),
                  arg("Message size [bytes]", ArgType::Unsigned, 900)};
  trace_.tables.eventArgs = {allReduce, send, user, group};
  trace_.tables.argsOfRange = {{100, 1}, {101, 2}, {102, 3}, {103, 4}};
  RangeRecord range;
  range.startNs = kStart;
  range.endNs = kStart + 5;
  range.externalId = 100;
  range.name = allReduce.event;
  trace_.records.ranges.push_back(range);

  KernelRecord reduce = kernel(placement(kStart + 10, kStart + 20, 0, 9, 5));
  reduce.name =
      strings.intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  reduce.at.externalId = 100;
  KernelRecord sendKernel = kernel(placement(kStart + 30, kStart + 40, 0, 9, 6));
  sendKernel.name = strings.intern("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
  sendKernel.at.externalId = 101;
  KernelRecord userKernel = kernel(placement(kStart + 50, kStart + 60, 0, 9, 7));
  userKernel.at.externalId = 102;
  KernelRecord grouped = kernel(placement(kStart + 90, kStart + 95, 0, 9, 9));
  grouped.name = strings.intern("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
  grouped.at.externalId = 103;
  trace_.records.kernels = {reduce, sendKernel, userKernel, grouped};
  MemcpyRecord copy;  // a one-rank communicator's all-reduce is a copy
  copy.at = placement(kStart + 70, kStart + 80, 0, 9, 8);
  copy.at.externalId = 100;
  copy.bytes = 4u << 20;
  copy.copyKind = CopyKind::DtoD;
  trace_.records.memcpys = {copy};

  const json root = save();
  const json call = onlyEvent(root, "X", "user_annotation");
  EXPECT_EQ(call["args"]["NCCL communicator ID"], std::to_string(communicator))
      << "a 64-bit id is written as text, which JSON readers keep exact";
  EXPECT_EQ(call["args"]["Message size [bytes]"], 4u << 20);
  EXPECT_EQ(call["args"]["Reduction operation"], "Sum");

  const auto kernels = eventsWith(root, "X", "kernel");
  ASSERT_EQ(kernels.size(), 4u);
  EXPECT_EQ(kernels[3]["args"]["nccl call"], "ncclGroupEnd");
  EXPECT_EQ(kernels[3]["args"]["nccl group calls"], "ncclSend, ncclRecv x2");
  EXPECT_EQ(kernels[3]["args"]["nccl bytes"], 900);
  EXPECT_EQ(kernels[0]["args"]["nccl call"], "ncclAllReduce");
  EXPECT_EQ(kernels[0]["args"]["nccl bytes"], 4u << 20);
  EXPECT_EQ(kernels[0]["args"]["nccl communicator"], std::to_string(communicator));
  EXPECT_EQ(kernels[0]["args"]["nccl reduction"], "Sum");
  EXPECT_EQ(kernels[0]["args"]["nccl operation"], "AllReduce") << "and what its name says";
  EXPECT_EQ(kernels[1]["args"]["nccl call"], "ncclSend");
  EXPECT_EQ(kernels[1]["args"]["nccl peer"], 1);
  EXPECT_EQ(kernels[1]["args"]["nccl communicator"], 7);
  EXPECT_FALSE(kernels[2]["args"].contains("nccl call")) << "not NCCL's range";
  EXPECT_FALSE(kernels[2]["args"].contains("nccl bytes"));
  const json copied = onlyEvent(root, "X", "gpu_memcpy");
  EXPECT_EQ(copied["args"]["nccl call"], "ncclAllReduce");
  EXPECT_EQ(copied["args"]["nccl bytes"], 4u << 20);

  // Each event has a key once (a repeated key would be ambiguous to readers), though the
  // kernel's name and its call both give the reduction, and the call's size came twice.
  const std::string text = kinetrace::testing::fileContents((dir_ / "trace.json").string());
  auto occurrences = [&](const std::string& key) {
    std::size_t count = 0;
    for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
      ++count;
    }
    return count;
  };
  EXPECT_EQ(occurrences("\"nccl reduction\""), 2u) << "the kernel and the copy";
  EXPECT_EQ(occurrences("\"Message size [bytes]\""), 1u) << "the call's range";
}

TEST_F(TraceEventsGpuTest, WritesMemcpysNamedByKindWithBandwidthAndPeerDevices) {
  MemcpyRecord copy;
  copy.at = placement(kStart + 100, kStart + 2'100, 0, 13, 50);
  copy.bytes = 1'000'000;
  copy.copyKind = CopyKind::PtoP;
  copy.srcKind = MemoryKind::Device;
  copy.dstKind = MemoryKind::Device;
  copy.peer = true;
  copy.srcDeviceId = 0;
  copy.dstDeviceId = 3;
  MemcpyRecord local = copy;
  local.peer = false;
  local.copyKind = CopyKind::HtoD;
  local.srcKind = MemoryKind::Pinned;
  trace_.records.memcpys = {copy, local};
  const auto copies = eventsWith(save(), "X", "gpu_memcpy");
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0]["name"], "Memcpy PtoP (Device -> Device)");
  EXPECT_EQ(copies[0]["pid"], 0);
  EXPECT_EQ(copies[0]["tid"], 13);
  EXPECT_EQ(nsOf(copies[0]["dur"]), 2'000);
  EXPECT_EQ(copies[0]["args"], json({{"device", 0},
                                     {"context", 1},
                                     {"stream", 13},
                                     {"correlation", 50},
                                     {"bytes", 1'000'000},
                                     {"memory bandwidth (GB/s)", 500.0},
                                     {"src device", 0},
                                     {"dst device", 3}}));
  EXPECT_EQ(copies[1]["name"], "Memcpy HtoD (Pinned -> Device)");
  EXPECT_FALSE(copies[1]["args"].contains("src device"));
}

TEST_F(TraceEventsGpuTest, CopiesAndMemsetsFromAGraphNameTheGraphAndNode) {
  MemcpyRecord copy;
  copy.at = placement(kStart + 100, kStart + 200, 0, 13, 50);
  copy.copyKind = CopyKind::DtoD;
  copy.graphId = 43;
  copy.graphNodeId = 0x2b00000003;
  MemsetRecord set;
  set.at = placement(kStart + 300, kStart + 400, 0, 13, 50);
  set.graphId = 43;
  set.graphNodeId = 0x2b00000004;
  MemsetRecord loose;
  loose.at = placement(kStart + 500, kStart + 600, 0, 13, 51);
  trace_.records.memcpys = {copy};
  trace_.records.memsets = {set, loose};
  const json root = save();
  const json copyArgs = onlyEvent(root, "X", "gpu_memcpy")["args"];
  EXPECT_EQ(copyArgs["graph id"], 43);
  EXPECT_EQ(copyArgs["graph node id"], 0x2b00000003);
  const auto sets = eventsWith(root, "X", "gpu_memset");
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0]["args"]["graph id"], 43);
  EXPECT_EQ(sets[0]["args"]["graph node id"], 0x2b00000004);
  EXPECT_FALSE(sets[1]["args"].contains("graph id"));
  EXPECT_FALSE(sets[1]["args"].contains("graph node id"));
}

// Graph-level tracing: a launch's whole run is one slice on its stream, in a category of its
// own (it is no kernel), with the arrow from its launch.
TEST_F(TraceEventsGpuTest, AWholeGraphRunIsOneSliceWithItsLaunchArrow) {
  GraphRecord run;
  run.at = placement(kStart + 100, kStart + 900, 0, 13, 50, /*hasLaunchCall=*/true);
  run.at.externalId = 77;
  run.graphId = 4;
  run.name = trace_.tables.strings.intern("CUDA graph 4");
  trace_.records.graphs = {run};
  ApiCallRecord call = launch(kStart + 10, 50);
  call.name = trace_.tables.strings.intern("cudaGraphLaunch");
  call.effect = CallEffect::Graph;
  trace_.records.apiCalls = {call};
  trace_.records.flows = {FlowRecord{kStart + 10, 50, thread_}};
  const json root = save();
  const json slice = onlyEvent(root, "X", "cuda_graph");
  EXPECT_EQ(slice["name"], "CUDA graph 4");
  EXPECT_EQ(slice["pid"], 0);
  EXPECT_EQ(nsOf(slice["dur"]), 800);
  EXPECT_EQ(slice["args"]["graph id"], 4);
  EXPECT_EQ(slice["args"]["correlation"], 50);
  EXPECT_EQ(slice["args"]["External id"], 77);
  EXPECT_EQ(slice["args"]["stream"], 13);
  const json arrowEnd = onlyEvent(root, "f", "ac2g");
  EXPECT_EQ(arrowEnd["id"], 50);
  EXPECT_EQ(arrowEnd["tid"], slice["tid"]);
  EXPECT_TRUE(eventsWith(root, "X", "kernel").empty());
}

// A kernel replayed from a graph names where its node was created: the call (by name and
// correlation id) and the range; a node whose range kinetrace did not record gives the
// range's External id instead.
TEST_F(TraceEventsGpuTest, ReplayedKernelsNameWhereTheirGraphNodeWasCreated) {
  GraphNodeSite captured;
  captured.externalId = 500;
  captured.correlationId = 9;
  captured.call = trace_.tables.strings.intern("cudaLaunchKernel");
  captured.range = trace_.tables.strings.intern("attention");
  GraphNodeSite pushed;
  pushed.externalId = 42;
  trace_.tables.graphNodeSites = {captured, pushed};
  KernelRecord first = kernel(placement(kStart + 100, kStart + 200, 0, 13, 50));
  first.graphId = 2;
  first.graphNodeId = 0x200000000;
  first.graphNodeSite = 1;
  KernelRecord second = kernel(placement(kStart + 300, kStart + 400, 0, 13, 50));
  second.graphId = 2;
  second.graphNodeId = 0x200000001;
  second.graphNodeSite = 2;
  KernelRecord unknown = kernel(placement(kStart + 500, kStart + 600, 0, 13, 50));
  unknown.graphId = 2;
  unknown.graphNodeId = 0x200000002;
  trace_.records.kernels = {first, second, unknown};
  const json root = save();
  const auto kernels = eventsWith(root, "X", "kernel");
  ASSERT_EQ(kernels.size(), 3u);
  const json& a = kernels[0]["args"];
  EXPECT_EQ(a["graph node created by"], "cudaLaunchKernel");
  EXPECT_EQ(a["graph node creation correlation"], 9);
  EXPECT_EQ(a["graph node created in"], "attention");
  EXPECT_FALSE(a.contains("graph node creation External id"));
  const json& b = kernels[1]["args"];
  EXPECT_FALSE(b.contains("graph node created by"));
  EXPECT_FALSE(b.contains("graph node created in"));
  EXPECT_EQ(b["graph node creation External id"], 42);
  const json& c = kernels[2]["args"];
  EXPECT_EQ(c["graph node id"], 0x200000002);
  EXPECT_FALSE(c.contains("graph node created by"));
  EXPECT_FALSE(c.contains("graph node creation External id"));
}

TEST_F(TraceEventsGpuTest, WritesMemsetsAndSyncsNamedByKind) {
  MemsetRecord set;
  set.at = placement(kStart + 10, kStart + 1'010, 0, 7, 60);
  set.at.externalId = 11;
  set.bytes = 4096;
  set.memoryKind = MemoryKind::Device;
  trace_.records.memsets.push_back(set);
  SyncRecord sync;
  sync.at = placement(kStart + 2'000, kStart + 9'000, 0, 7, 61);
  sync.at.externalId = 12;  // the range the waiting call was made in
  sync.kind = SyncKind::EventSync;
  sync.eventId = 17;
  trace_.records.syncs.push_back(sync);
  const json root = save();

  const json memset = onlyEvent(root, "X", "gpu_memset");
  EXPECT_EQ(memset["name"], "Memset (Device)");
  EXPECT_EQ(memset["tid"], 7);
  EXPECT_EQ(memset["args"], json({{"External id", 11},
                                  {"device", 0},
                                  {"context", 1},
                                  {"stream", 7},
                                  {"correlation", 60},
                                  {"bytes", 4096},
                                  {"memory bandwidth (GB/s)", 4.096}}));
  const json syncEvent = onlyEvent(root, "X", "cuda_sync");
  EXPECT_EQ(syncEvent["name"], "Event Sync");
  EXPECT_EQ(syncEvent["pid"], 0);
  EXPECT_EQ(syncEvent["tid"], gpuTrackTid(7, kGpuSyncTrack, 0)) << "a sync track of its own";
  EXPECT_EQ(nsOf(syncEvent["dur"]), 7'000);
  EXPECT_EQ(syncEvent["args"], json({{"External id", 12},
                                     {"stream", 7},
                                     {"correlation", 61},
                                     {"device", 0},
                                     {"context", 1},
                                     {"event", 17}}));
}

TEST_F(TraceEventsGpuTest, WritesGpuSpansOnAnnotationTracks) {
  GpuSpanRecord span;
  span.startNs = kStart + 5;
  span.endNs = kStart + 905;
  span.externalId = 42;
  span.name = trace_.tables.strings.intern("ProfilerStep#3");
  span.deviceId = 2;
  span.streamId = 9;
  trace_.records.gpuSpans.push_back(span);
  const json root = save();
  const json e = onlyEvent(root, "X", "gpu_user_annotation");
  EXPECT_EQ(e["name"], "ProfilerStep#3");
  EXPECT_EQ(e["pid"], 2);
  EXPECT_EQ(e["tid"], gpuTrackTid(9, kGpuSpanTrack, 0));
  EXPECT_EQ(nsOf(e["ts"]), 5);
  EXPECT_EQ(nsOf(e["dur"]), 900);
  EXPECT_EQ(e["args"], json({{"External id", 42}}));
}

TEST_F(TraceEventsGpuTest, WritesOverheadsOnTheTrackOfTheirThreadOrDevice) {
  OverheadRecord flush;
  flush.startNs = kStart + 1;
  flush.endNs = kStart + 301;
  flush.kind = OverheadKind::CuptiBufferFlush;
  flush.object = OverheadObject::Thread;
  flush.objectId = 4711;
  OverheadRecord compile = flush;
  compile.kind = OverheadKind::DriverCompiler;
  compile.object = OverheadObject::Device;
  compile.objectId = 1;
  trace_.records.overheads = {flush, compile};
  const json root = save();
  const auto overheads = eventsWith(root, "X", "overhead");
  ASSERT_EQ(overheads.size(), 2u);
  EXPECT_EQ(overheads[0]["name"], "CUPTI buffer flush");
  EXPECT_EQ(overheads[0]["pid"], -1);
  EXPECT_EQ(overheads[0]["tid"], 4711);
  EXPECT_EQ(nsOf(overheads[0]["dur"]), 300);
  EXPECT_FALSE(overheads[0].contains("args"));
  EXPECT_EQ(overheads[1]["name"], "Driver compiler");
  EXPECT_EQ(overheads[1]["tid"], (int64_t{1} << 30) + 1) << "device tracks above every thread track";
}

TEST_F(TraceEventsGpuTest, PairsEveryFlowStartWithAnEndOnTheGpuOp) {
  trace_.records.apiCalls = {launch(kStart + 1'000, 10), launch(kStart + 5'000, 11),
                             launch(kStart + 9'000, 12)};
  trace_.records.flows = {FlowRecord{kStart + 1'000, 10, thread_},
                          FlowRecord{kStart + 5'000, 11, thread_}};
  trace_.records.kernels.push_back(
      kernel(placement(kStart + 2'500, kStart + 3'000, 0, 7, 10, true)));
  trace_.records.kernels.push_back(
      kernel(placement(kStart + 40'000, kStart + 41'000, 0, 8, 13, false)));
  MemcpyRecord copy;
  copy.at = placement(kStart + 6'000, kStart + 7'000, 1, 3, 11, true);
  copy.at.lane = 2;
  trace_.records.memcpys.push_back(copy);
  const json root = save();

  std::map<uint64_t, json> starts;
  for (const json& s : eventsWith(root, "s")) {
    EXPECT_EQ(s["cat"], "ac2g");
    EXPECT_EQ(s["name"], "ac2g");
    EXPECT_EQ(s["pid"], kPid);
    EXPECT_EQ(s["tid"], 800);
    EXPECT_FALSE(s.contains("bp"));
    EXPECT_TRUE(starts.emplace(s["id"].get<uint64_t>(), s).second) << "duplicate start";
  }
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(nsOf(starts.at(10)["ts"]), 1'000);
  EXPECT_EQ(nsOf(starts.at(11)["ts"]), 5'000);

  const auto ends = eventsWith(root, "f");
  ASSERT_EQ(ends.size(), 2u);
  for (const json& f : ends) {
    EXPECT_EQ(f["cat"], "ac2g");
    EXPECT_EQ(f["name"], "ac2g");
    EXPECT_EQ(f["bp"], "e");
    EXPECT_EQ(starts.count(f["id"].get<uint64_t>()), 1u) << "an f without its s";
  }
  EXPECT_EQ(ends[0]["id"], 10);
  EXPECT_EQ(nsOf(ends[0]["ts"]), 2'500);
  EXPECT_EQ(ends[0]["pid"], 0);
  EXPECT_EQ(ends[0]["tid"], 7);
  EXPECT_EQ(ends[1]["id"], 11);
  EXPECT_EQ(nsOf(ends[1]["ts"]), 6'000);
  EXPECT_EQ(ends[1]["pid"], 1);
  EXPECT_EQ(ends[1]["tid"], gpuTrackTid(3, kGpuOpsTrack, 2)) << "the copy's own lane";
  EXPECT_EQ(eventsWith(root, "X", "gpu_memcpy")[0]["tid"], ends[1]["tid"]);
}

TEST_F(TraceEventsGpuTest, NamesOnlyTheDevicesAndStreamsThatAppear) {
  trace_.records.kernels.push_back(kernel(placement(kStart, kStart + 1, 0, 7, 1)));
  trace_.records.kernels.push_back(kernel(placement(kStart, kStart + 1, 2, 13, 2)));
  trace_.records.kernels.push_back(kernel(placement(kStart, kStart + 1, 0, 21, 3)));
  trace_.records.kernels.push_back(kernel(placement(kStart, kStart + 1, 0, 7, 4)));
  const json root = save();

  std::map<std::pair<int64_t, std::string>, std::vector<json>> byProcess;
  std::map<std::pair<int64_t, int64_t>, std::string> threadNames;
  for (const json& m : eventsWith(root, "M")) {
    if (m["name"] == "thread_name") {
      threadNames[{m["pid"], m["tid"]}] = m["args"]["name"];
    } else if (m["name"] == "thread_sort_index") {
      EXPECT_EQ(m["args"]["sort_index"], m["tid"]);
    } else {
      byProcess[{m["pid"], m["name"]}].push_back(m["args"]);
    }
  }
  EXPECT_EQ(byProcess.size(), 6u) << "3 entries for each of GPU 0 and GPU 2, none for the host";
  auto processArg = [&byProcess](int64_t pid, const std::string& name, const std::string& key) {
    const auto& found = byProcess[std::make_pair(pid, name)];
    return found.empty() ? json() : found[0][key];
  };
  EXPECT_EQ(processArg(0, "process_name", "name"), "GPU 0");
  EXPECT_EQ(processArg(0, "process_labels", "labels"), "GPU 0");
  EXPECT_EQ(processArg(2, "process_name", "name"), "GPU 2");
  const int64_t sort0 = processArg(0, "process_sort_index", "sort_index").get<int64_t>();
  const int64_t sort2 = processArg(2, "process_sort_index", "sort_index").get<int64_t>();
  EXPECT_GT(sort2, sort0);
  EXPECT_GT(sort0, 4'194'304) << "GPUs sort after any host pid";
  const std::map<std::pair<int64_t, int64_t>, std::string> expectedThreads = {
      {{0, 7}, "stream 7"}, {{0, 21}, "stream 21"}, {{2, 13}, "stream 13"}};
  EXPECT_EQ(threadNames, expectedThreads);
  EXPECT_EQ(eventsWith(root, "M").size(), 6u + 2 * 3u);
}

// Two metrics sampled on GPU 1; two samples of 1 ms from 100 us into the window.
void addMetricSamples(TraceData& trace) {
  trace.tables.gpuMetrics.metrics = {
      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput", MetricUnit::Percent},
      {"dram__bytes_read.sum.per_second", "DRAM read", MetricUnit::BytesPerSecond}};
  trace.tables.gpuMetrics.intervalNs = 1'000'000;
  trace.tables.gpuMetrics.devices = {1};
  trace.records.metricValues = {12.5, 3.0e11, 80.0, 1.5e12};
  trace.records.metricSamples.push_back(
      GpuMetricSampleRecord{kStart + 100'000, kStart + 1'100'000, 1, 0});
  trace.records.metricSamples.push_back(
      GpuMetricSampleRecord{kStart + 1'100'000, kStart + 2'100'000, 1, 2});
}

TEST_F(TraceEventsGpuTest, MetricSamplesAreCountersOnTheirGpuOnePerMetricWithItsUnit) {
  addMetricSamples(trace_);
  const json root = save();
  const auto counters = eventsWith(root, "C", "gpu_metric");
  ASSERT_EQ(counters.size(), 4u);
  std::map<std::string, std::vector<std::pair<int64_t, json>>> series;  // by name
  for (const json& c : counters) {
    EXPECT_EQ(c["pid"], 1);
    EXPECT_EQ(c["tid"], kGpuMetricsTid);
    ASSERT_EQ(c["args"].size(), 1u);
    series[c["name"]].emplace_back(nsOf(c["ts"]), c["args"]);
  }
  using Points = std::vector<std::pair<int64_t, json>>;
  EXPECT_EQ(series["SM throughput"],
            (Points{{100'000, {{"%", 12.5}}}, {1'100'000, {{"%", 80.0}}}}));
  EXPECT_EQ(series["DRAM read"],
            (Points{{100'000, {{"bytes/s", 3.0e11}}}, {1'100'000, {{"bytes/s", 1.5e12}}}}));
  // The GPU is named even with no work on it, and so is its metrics track.
  bool gpuNamed = false, trackNamed = false;
  for (const json& m : eventsWith(root, "M")) {
    if (m["pid"] == 1 && m["name"] == "process_name") gpuNamed = m["args"]["name"] == "GPU 1";
    if (m["pid"] == 1 && m["name"] == "thread_name" && m["tid"] == kGpuMetricsTid) {
      trackNamed = m["args"]["name"] == "GPU metrics";
    }
  }
  EXPECT_TRUE(gpuNamed);
  EXPECT_TRUE(trackNamed);
}

// A pool's operations are instants on its GPU's "memory pools" thread, saying what the pool
// held; the GPU and the thread are named even with no work on the GPU.
TEST_F(TraceEventsGpuTest, MemoryPoolEventsAreInstantsOnTheirGpusPoolThread) {
  MemoryPoolRecord created;
  created.timeNs = kStart + 1'000;
  created.address = 0x7000;
  created.deviceId = 2;
  created.correlationId = 41;
  created.operation = PoolOperation::Created;
  created.releaseThresholdBytes = 1 << 20;
  MemoryPoolRecord trimmed = created;
  trimmed.timeNs = kStart + 2'000;
  trimmed.operation = PoolOperation::Trimmed;
  trimmed.sizeBytes = 4 << 20;
  trimmed.utilizedBytes = 1 << 20;
  trimmed.minBytesToKeep = 4096;
  MemoryPoolRecord imported = created;
  imported.timeNs = kStart + 3'000;
  imported.operation = PoolOperation::Destroyed;
  imported.imported = true;
  imported.managed = true;
  trace_.records.memoryPools = {created, trimmed, imported};
  const json root = save();
  const auto pools = eventsWith(root, "i", "gpu_memory_pool");
  ASSERT_EQ(pools.size(), 3u);
  for (const json& e : pools) {
    EXPECT_EQ(e["pid"], 2);
    EXPECT_EQ(e["tid"], kGpuMetricsTid + 1);
    EXPECT_EQ(e["args"]["device"], 2);
    EXPECT_EQ(e["args"]["correlation"], 41);
  }
  EXPECT_EQ(pools[0]["name"], "Memory pool created");
  EXPECT_EQ(pools[0]["args"]["pool type"], "local");
  EXPECT_EQ(pools[0]["args"]["release threshold"], 1 << 20);
  EXPECT_FALSE(pools[0]["args"].contains("min bytes to keep"));
  EXPECT_EQ(pools[1]["name"], "Memory pool trimmed");
  EXPECT_EQ(pools[1]["args"]["pool bytes"], 4 << 20);
  EXPECT_EQ(pools[1]["args"]["utilized bytes"], 1 << 20);
  EXPECT_EQ(pools[1]["args"]["min bytes to keep"], 4096);
  EXPECT_EQ(pools[2]["name"], "Memory pool destroyed");
  EXPECT_EQ(pools[2]["args"]["pool type"], "imported");
  EXPECT_EQ(pools[2]["args"]["pool memory"], "managed");
  EXPECT_FALSE(pools[2]["args"].contains("pool bytes")) << "an imported pool's are not its own";
  bool gpuNamed = false, trackNamed = false;
  for (const json& m : eventsWith(root, "M")) {
    if (m["pid"] == 2 && m["name"] == "process_name") gpuNamed = m["args"]["name"] == "GPU 2";
    if (m["pid"] == 2 && m["name"] == "thread_name" && m["tid"] == kGpuMetricsTid + 1) {
      trackNamed = m["args"]["name"] == "memory pools";
    }
  }
  EXPECT_TRUE(gpuNamed);
  EXPECT_TRUE(trackNamed);
}

TEST_F(TraceEventsGpuTest, AKernelCarriesItsMetricAveragesKeyedByNameAndUnit) {
  addMetricSamples(trace_);
  trace_.records.metricValues.push_back(46.25);
  trace_.records.metricValues.push_back(9.0e11);
  KernelRecord averaged = kernel(placement(kStart + 600'000, kStart + 1'600'000, 1, 7, 5));
  averaged.metricAverages = 5;  // the two values just added
  KernelRecord without = kernel(placement(kStart + 3'000'000, kStart + 3'100'000, 1, 7, 6));
  trace_.records.kernels = {averaged, without};
  const auto kernels = eventsWith(save(), "X", "kernel");
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0]["args"]["SM throughput (%)"], 46.25);
  EXPECT_EQ(kernels[0]["args"]["DRAM read (bytes/s)"], 9.0e11);
  EXPECT_FALSE(kernels[1]["args"].contains("SM throughput (%)"));
  EXPECT_FALSE(kernels[1]["args"].contains("DRAM read (bytes/s)"));
}

}  // namespace
}  // namespace kinetrace::detail
