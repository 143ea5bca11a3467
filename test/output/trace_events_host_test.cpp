// emitTrace + ChromeJsonSink, host side: header, ranges, API calls, instants, counters,
// memory events, naming metadata, hostile names. Each test writes a real file and parses
// it back.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "kinetrace/sink.h"
#include "model/trace_data.h"
#include "output/trace_events.h"
#include "support/trace_json.h"

namespace kinetrace::detail {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using kinetrace::testing::eventsWith;
using kinetrace::testing::nsOf;

constexpr int64_t kStart = 1'750'000'000'000'000'000;
constexpr int64_t kPid = 4242;

// The metadata events of that name on that pid (and tid, unless -1).
std::vector<json> metadata(const json& root, const std::string& name, int64_t pid, int64_t tid = -1) {
  std::vector<json> found;
  for (const json& e : eventsWith(root, "M")) {
    if (e["name"] == name && e["pid"] == pid && (tid == -1 || e["tid"] == tid)) found.push_back(e);
  }
  return found;
}

class TraceEventsHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kinetrace_events_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    trace_.pid = kPid;
    trace_.startNs = kStart;
    trace_.stopNs = kStart + 50'000'000;
    mainThread_ = trace_.threadIndex(kPid, kPid);
    trace_.threads[mainThread_].name = trace_.strings.intern("main");
    workerThread_ = trace_.threadIndex(kPid, 4300);
    trace_.threadIndex(kPid, 4999);  // records nothing: must not be named
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Saves trace_ through openSink(), keeps the raw text and returns the parsed file.
  json save() {
    const std::string path = (dir_ / "trace.json").string();
    auto sink = openSink(path);
    emitTrace(trace_, path, *sink);
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    text_ = text.str();
    return json::parse(text_);
  }
  RangeRecord range(std::string_view name, int64_t start, int64_t end, uint64_t id, uint32_t thread) {
    RangeRecord r;
    r.name = trace_.strings.intern(name);
    r.startNs = start;
    r.endNs = end;
    r.externalId = id;
    r.thread = thread;
    return r;
  }

  fs::path dir_;
  TraceData trace_;
  uint32_t mainThread_ = 0;
  uint32_t workerThread_ = 0;
  std::string text_;
};

TEST_F(TraceEventsHostTest, PutsSchemaVersionThenDistributedInfoBeforeAllOtherMetadata) {
  trace_.metadataJson = {{"model", "\"resnet\""},
                         {"distributedInfo", R"({"rank":1,"world_size":8,"backend":"nccl"})"}};
  const json root = save();
  EXPECT_EQ(root["schemaVersion"], 1);
  EXPECT_EQ(root["distributedInfo"]["rank"], 1);
  EXPECT_EQ(root["model"], "resnet");
  const auto schema = text_.find("\"schemaVersion\"");
  const auto distributed = text_.find("\"distributedInfo\"");
  EXPECT_LT(schema, distributed);
  EXPECT_LT(distributed, text_.find("\"model\""));
  EXPECT_LT(distributed, text_.find("\"traceEvents\""));
}

TEST_F(TraceEventsHostTest, WritesEveryLossCounterAndTheWindowEvenWhenZero) {
  trace_.losses.droppedHostEvents = 3;
  trace_.losses.gpuOpsWithoutLaunch = 9;
  const json root = save();
  const std::pair<const char*, uint64_t> expected[] = {
      {"kinetrace_dropped_host_events", 3},     {"kinetrace_dropped_host_name_bytes", 0},
      {"kinetrace_cupti_dropped_records", 0},   {"kinetrace_cupti_buffers_refused", 0},
      {"kinetrace_cupti_records_undecoded", 0}, {"kinetrace_out_of_window_events", 0},
      {"kinetrace_gpu_ops_before_launch", 0},   {"kinetrace_gpu_ops_without_launch", 9},
      {"kinetrace_unfinished_ranges", 0},
  };
  for (const auto& [key, value] : expected) {
    ASSERT_TRUE(root.contains(key)) << key;
    EXPECT_EQ(root[key].get<uint64_t>(), value) << key;
    EXPECT_LT(text_.find(key), text_.find("\"traceEvents\"")) << key;
  }
  EXPECT_EQ(root["kinetrace_window_start_ns"].get<int64_t>(), kStart);
  EXPECT_EQ(root["kinetrace_window_stop_ns"].get<int64_t>(), kStart + 50'000'000);
}

TEST_F(TraceEventsHostTest, WritesDevicePropertiesFromTheDeviceTable) {
  DeviceInfo device;
  device.id = 0;
  device.name = trace_.strings.intern("NVIDIA H200");
  device.totalGlobalMem = 150'000'000'000;
  device.computeMajor = 9;
  device.numSms = 132;
  device.warpSize = 32;
  trace_.devices.push_back(device);
  const json properties = save()["deviceProperties"];
  ASSERT_EQ(properties.size(), 1u);
  EXPECT_EQ(properties[0]["name"], "NVIDIA H200");
  EXPECT_EQ(properties[0]["totalGlobalMem"].get<uint64_t>(), 150'000'000'000u);
  EXPECT_EQ(properties[0]["computeMajor"], 9);
  EXPECT_EQ(properties[0]["numSms"], 132);
  for (const char* key : {"id", "computeMinor", "maxThreadsPerBlock", "maxThreadsPerMultiprocessor",
                          "regsPerBlock", "warpSize", "sharedMemPerBlock", "regsPerMultiprocessor",
                          "sharedMemPerBlockOptin", "sharedMemPerMultiprocessor"}) {
    EXPECT_TRUE(properties[0].contains(key)) << key;
  }
}

TEST_F(TraceEventsHostTest, KeepsDevicePropertiesGivenInMetadata) {
  trace_.devices.push_back(DeviceInfo{});
  trace_.metadataJson = {{"deviceProperties", R"([{"id":5}])"}};
  save();
  EXPECT_EQ(text_.find("\"deviceProperties\""), text_.rfind("\"deviceProperties\""));
  EXPECT_EQ(json::parse(text_)["deviceProperties"][0]["id"], 5);
}

TEST_F(TraceEventsHostTest, UsesTheWindowStartAsBaseTimeUnlessAnEventIsEarlier) {
  trace_.ranges.push_back(range("late", kStart + 100, kStart + 200, 1, mainThread_));
  EXPECT_EQ(save()["baseTimeNanoseconds"].get<int64_t>(), kStart);
  trace_.instants.push_back(InstantRecord{kStart - 5'000, trace_.strings.intern("early"), mainThread_});
  const json root = save();
  EXPECT_EQ(root["baseTimeNanoseconds"].get<int64_t>(), kStart - 5'000);
  EXPECT_EQ(nsOf(eventsWith(root, "i")[0]["ts"]), 0);
  EXPECT_EQ(nsOf(eventsWith(root, "X")[0]["ts"]), 5'100);
}

TEST_F(TraceEventsHostTest, WritesRangesAsCompleteEventsOnTheirThreads) {
  trace_.ranges.push_back(range("ProfilerStep#1", kStart + 1'001, kStart + 2'000'333, 7, mainThread_));
  RangeRecord op = range("aten::mm", kStart + 2'000, kStart + 3'000, 8, workerThread_);
  op.category = RangeCategory::CpuOp;
  op.parentId = 7;
  op.unfinished = true;
  trace_.ranges.push_back(op);
  const json root = save();

  const auto annotations = eventsWith(root, "X", "user_annotation");
  ASSERT_EQ(annotations.size(), 1u);
  const json& step = annotations[0];
  EXPECT_EQ(step["name"], "ProfilerStep#1");
  EXPECT_EQ(step["pid"], kPid);
  EXPECT_EQ(step["tid"], kPid);
  EXPECT_EQ(nsOf(step["ts"]), 1'001);
  EXPECT_EQ(nsOf(step["dur"]), 1'999'332);
  EXPECT_EQ(step["args"]["External id"], 7);
  EXPECT_FALSE(step["args"].contains("unfinished"));

  const auto ops = eventsWith(root, "X", "cpu_op");
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0]["tid"], 4300);
  EXPECT_EQ(ops[0]["args"]["External id"], 8);
  EXPECT_EQ(ops[0]["args"]["unfinished"], true);
}

TEST_F(TraceEventsHostTest, WritesApiCallsWithTheirArgs) {
  ApiCallRecord launch;
  launch.startNs = kStart + 10'000;
  launch.endNs = kStart + 14'500;
  launch.externalId = 7;
  launch.correlationId = 99;
  launch.callbackId = 211;
  launch.thread = mainThread_;
  launch.name = trace_.strings.intern("cudaLaunchKernel");
  ApiCallRecord driver = launch;
  driver.domain = ApiDomain::Driver;
  driver.externalId = 0;
  driver.correlationId = 100;
  driver.name = trace_.strings.intern("cuLaunchKernel");
  trace_.apiCalls = {launch, driver};
  const json root = save();

  const auto runtime = eventsWith(root, "X", "cuda_runtime");
  ASSERT_EQ(runtime.size(), 1u);
  EXPECT_EQ(runtime[0]["name"], "cudaLaunchKernel");
  EXPECT_EQ(runtime[0]["tid"], kPid);
  EXPECT_EQ(nsOf(runtime[0]["ts"]), 10'000);
  EXPECT_EQ(nsOf(runtime[0]["dur"]), 4'500);
  EXPECT_EQ(runtime[0]["args"], json({{"cbid", 211}, {"correlation", 99}, {"External id", 7}}));
  const auto drivers = eventsWith(root, "X", "cuda_driver");
  ASSERT_EQ(drivers.size(), 1u);
  EXPECT_EQ(drivers[0]["args"], json({{"cbid", 211}, {"correlation", 100}}));
  EXPECT_TRUE(eventsWith(root, "s").empty()) << "no flow without a GPU op";
}

TEST_F(TraceEventsHostTest, WritesInstantsCountersAndMemoryEvents) {
  trace_.instants.push_back(InstantRecord{kStart + 1, trace_.strings.intern("checkpoint"), workerThread_});
  trace_.counters.push_back(CounterRecord{kStart + 2, 0.25, trace_.strings.intern("queue"), mainThread_});
  MemoryRecord alloc;
  alloc.timeNs = kStart + 3;
  alloc.address = 0x7f0000001000;
  alloc.bytes = -4096;
  alloc.totalAllocated = 1 << 20;
  alloc.totalReserved = 1 << 21;
  alloc.deviceId = 1;
  alloc.thread = workerThread_;
  trace_.memory.push_back(alloc);
  const json root = save();

  const auto instants = eventsWith(root, "i", "user_instant");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0]["name"], "checkpoint");
  EXPECT_EQ(instants[0]["s"], "t");
  EXPECT_EQ(instants[0]["tid"], 4300);
  EXPECT_EQ(nsOf(instants[0]["ts"]), 1);

  const auto counters = eventsWith(root, "C");
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0]["name"], "queue");
  EXPECT_EQ(counters[0]["pid"], kPid);
  EXPECT_EQ(counters[0]["args"], json({{"queue", 0.25}}));

  std::vector<json> memory;
  for (const json& e : eventsWith(root, "i")) {
    if (e["name"] == "[memory]") memory.push_back(e);
  }
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_EQ(memory[0]["s"], "t");
  EXPECT_EQ(memory[0]["pid"], kPid);
  EXPECT_EQ(memory[0]["tid"], 4300);
  EXPECT_EQ(nsOf(memory[0]["ts"]), 3);
  const json& args = memory[0]["args"];
  EXPECT_EQ(args["Total Allocated"], 1 << 20);
  EXPECT_EQ(args["Total Reserved"], 1 << 21);
  EXPECT_EQ(args["Bytes"], -4096);
  EXPECT_EQ(args["Addr"].get<uint64_t>(), 0x7f0000001000u);
  EXPECT_EQ(args["Device Type"], 1);
  EXPECT_EQ(args["Device Id"], 1);
}

TEST_F(TraceEventsHostTest, NamesTheHostProcessAndOnlyTheThreadsThatAppear) {
  trace_.ranges.push_back(range("a", kStart, kStart + 1, 1, mainThread_));
  trace_.instants.push_back(InstantRecord{kStart, trace_.strings.intern("b"), workerThread_});
  json root = save();
  ASSERT_EQ(metadata(root, "process_name", kPid).size(), 1u);
  EXPECT_EQ(metadata(root, "process_name", kPid)[0]["args"]["name"], "host");
  EXPECT_EQ(metadata(root, "process_labels", kPid)[0]["args"]["labels"], "CPU");
  EXPECT_EQ(metadata(root, "process_sort_index", kPid)[0]["args"]["sort_index"], kPid);
  EXPECT_EQ(metadata(root, "thread_name", kPid, kPid)[0]["args"]["name"], "thread 4242 (main)");
  EXPECT_EQ(metadata(root, "thread_name", kPid, 4300)[0]["args"]["name"], "thread 4300");
  EXPECT_EQ(metadata(root, "thread_sort_index", kPid, 4300)[0]["args"]["sort_index"], 4300);
  EXPECT_TRUE(metadata(root, "thread_name", kPid, 4999).empty());
  EXPECT_EQ(eventsWith(root, "M").size(), 7u) << "3 process + 2x2 thread entries";

  trace_.metadataJson = {{"kinetrace_process_name", "\"python3\""}};
  root = save();
  EXPECT_EQ(metadata(root, "process_name", kPid)[0]["args"]["name"], "python3");
}

TEST_F(TraceEventsHostTest, WritesNoNamingMetadataForAnEmptyTrace) {
  const json root = save();
  EXPECT_TRUE(root["traceEvents"].empty());
  EXPECT_EQ(root["traceName"], (dir_ / "trace.json").string());
}

TEST_F(TraceEventsHostTest, HostileNamesSurviveAsValidJson) {
  std::string controls;
  for (int c = 0; c < 0x20; ++c) controls += static_cast<char>(c);
  std::string veryLong;
  while (veryLong.size() < 1'000'000) veryLong += "void f<\"q\", '\\\\'>(int)::";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"say \"hi\" \\ back\\slash", "say \"hi\" \\ back\\slash"},
      {controls, controls},
      {"bad \xC0\xAF lead \xED\xA0\x80 surrogate \xE2\x82", "bad \xEF\xBF\xBD\xEF\xBF\xBD lead "
       "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD surrogate \xEF\xBF\xBD"},
      {"caf\xC3\xA9 \xF0\x9F\x9A\x80", "caf\xC3\xA9 \xF0\x9F\x9A\x80"},
      {veryLong, veryLong},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    trace_.ranges.push_back(range(cases[i].first, kStart + static_cast<int64_t>(i), kStart + 10,
                                  i + 1, mainThread_));
  }
  trace_.threads[mainThread_].name = trace_.strings.intern("w\"orker\n\xFF");
  trace_.metadataJson = {{"kinetrace_process_name", R"("py\"thon\u0001")"}};
  const json root = save();

  const auto ranges = eventsWith(root, "X", "user_annotation");
  ASSERT_EQ(ranges.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(ranges[i]["name"].get<std::string>(), cases[i].second) << "case " << i;
  }
  EXPECT_EQ(metadata(root, "thread_name", kPid, kPid)[0]["args"]["name"],
            "thread 4242 (w\"orker\n\xEF\xBF\xBD)");
  EXPECT_EQ(metadata(root, "process_name", kPid)[0]["args"]["name"], "py\"thon\x01");
}

}  // namespace
}  // namespace kinetrace::detail
