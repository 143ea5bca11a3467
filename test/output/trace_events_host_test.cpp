// writeTrace + ChromeJsonSink, host side: header and footer, ranges, API calls, instants,
// counters, memory events, naming metadata, hostile names. Each test writes a real file
// through openSink() and parses it back.

#include <gtest/gtest.h>

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
constexpr int64_t kPid = 4242;

// The metadata events of that name on that pid (and tid, unless -1).
std::vector<json> metadata(const json& root, const std::string& name, int64_t pid,
                           int64_t tid = -1) {
  std::vector<json> found;
  for (const json& e : eventsWith(root, "M")) {
    if (e["name"] == name && e["pid"] == pid && (tid == -1 || e["tid"] == tid)) {
      found.push_back(e);
    }
  }
  return found;
}

class TraceEventsHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    trace_.tables.pid = kPid;
    trace_.startNs = kStart;
    trace_.stopNs = kStart + 50'000'000;
    mainThread_ = addThread(kPid, "main");
    workerThread_ = addThread(4300, "");
    addThread(4999, "idle");  // records nothing: must not be named
  }

  uint32_t addThread(int64_t tid, std::string_view name) {
    trace_.tables.threads.push_back(ThreadInfo{kPid, tid, trace_.tables.strings.intern(name)});
    return static_cast<uint32_t>(trace_.tables.threads.size() - 1);
  }
  StringId intern(std::string_view text) { return trace_.tables.strings.intern(text); }

  // Saves trace_ through openSink(), keeps the raw text and returns the parsed file.
  json save(const Metadata& extraFooter = {}) {
    const std::string path = (dir_ / "trace.json").string();
    auto sink = openSink(path);
    writeTrace(trace_, path, extraFooter, *sink);
    text_ = kinetrace::testing::fileContents(path);
    return json::parse(text_);
  }
  RangeRecord range(std::string_view name, int64_t start, int64_t end, uint64_t id,
                    uint32_t thread) {
    RangeRecord r;
    r.name = intern(name);
    r.startNs = start;
    r.endNs = end;
    r.externalId = id;
    r.thread = thread;
    return r;
  }

  kinetrace::testing::TempDir dir_{"kinetrace_events"};
  TraceData trace_;
  uint32_t mainThread_ = 0;
  uint32_t workerThread_ = 0;
  std::string text_;
};

TEST_F(TraceEventsHostTest, WritesTheHeaderBeforeAndTheFooterAfterTheEvents) {
  trace_.header = {{"schemaVersion", 1},
                   {"distributedInfo", Value::object({{"rank", 1}, {"world_size", 8}})},
                   {"model", "resnet"}};
  trace_.footer = {{"kinetrace_cupti_dropped_records", 3}};
  trace_.records.ranges.push_back(range("step", kStart + 1, kStart + 2, 1, mainThread_));
  const json root = save({{"kinetrace_save_ms", 2.5}});
  EXPECT_EQ(root["schemaVersion"], 1);
  EXPECT_EQ(root["distributedInfo"]["rank"], 1);
  EXPECT_EQ(root["model"], "resnet");
  EXPECT_EQ(root["kinetrace_cupti_dropped_records"], 3);
  EXPECT_EQ(root["kinetrace_save_ms"], 2.5);
  const auto events = text_.find("\"traceEvents\"");
  EXPECT_LT(text_.find("\"schemaVersion\""), text_.find("\"distributedInfo\""));
  EXPECT_LT(text_.find("\"distributedInfo\""), text_.find("\"model\""));
  EXPECT_LT(text_.find("\"model\""), events);
  EXPECT_GT(text_.find("\"kinetrace_cupti_dropped_records\""), events);
  EXPECT_LT(text_.find("\"kinetrace_cupti_dropped_records\""), text_.find("\"kinetrace_save_ms\""))
      << "the trace's footer, then the extra footer";
}

TEST_F(TraceEventsHostTest, MeasuresTimesFromTheWindowStart) {
  trace_.records.ranges.push_back(range("late", kStart + 100, kStart + 200, 1, mainThread_));
  trace_.records.instants.push_back(InstantRecord{kStart - 5'000, intern("early"), mainThread_});
  const json root = save();
  EXPECT_EQ(root["baseTimeNanoseconds"].get<int64_t>(), kStart);
  EXPECT_EQ(nsOf(eventsWith(root, "X")[0]["ts"]), 100);
  EXPECT_EQ(nsOf(eventsWith(root, "i")[0]["ts"]), -5'000);
}

TEST_F(TraceEventsHostTest, WritesRangesAsCompleteEventsOnTheirThreads) {
  trace_.records.ranges.push_back(
      range("ProfilerStep#1", kStart + 1'001, kStart + 2'000'333, 7, mainThread_));
  RangeRecord op = range("aten::mm", kStart + 2'000, kStart + 3'000, 8, workerThread_);
  op.category = RangeCategory::CpuOp;
  op.parentId = 7;
  op.unfinished = true;
  trace_.records.ranges.push_back(op);
  const json root = save();

  const auto annotations = eventsWith(root, "X", "user_annotation");
  ASSERT_EQ(annotations.size(), 1u);
  const json& step = annotations[0];
  EXPECT_EQ(step["name"], "ProfilerStep#1");
  EXPECT_EQ(step["pid"], kPid);
  EXPECT_EQ(step["tid"], kPid);
  EXPECT_EQ(nsOf(step["ts"]), 1'001);
  EXPECT_EQ(nsOf(step["dur"]), 1'999'332);
  EXPECT_EQ(step["args"], json({{"External id", 7}}));

  const auto ops = eventsWith(root, "X", "cpu_op");
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0]["tid"], 4300);
  EXPECT_EQ(ops[0]["args"], json({{"External id", 8}, {"unfinished", true}}));
}

TEST_F(TraceEventsHostTest, WritesAsyncRangesOnTrackPerLaneNamedAfterIt) {
  RangeRecord first = range("load batch", kStart + 10, kStart + 500, 21, mainThread_);
  first.async = true;
  RangeRecord second = range("prefetch", kStart + 20, kStart + 400, 22, workerThread_);
  second.async = true;
  second.lane = 1;
  second.unfinished = true;
  trace_.records.ranges = {first, second};
  const json root = save();

  const auto ranges = eventsWith(root, "X", "user_annotation");
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0]["pid"], kPid);
  EXPECT_EQ(ranges[0]["tid"], kAsyncLaneTidBase);
  EXPECT_EQ(ranges[0]["args"], json({{"External id", 21}}));
  EXPECT_EQ(ranges[1]["tid"], kAsyncLaneTidBase + 1);
  EXPECT_EQ(ranges[1]["args"], json({{"External id", 22}, {"unfinished", true}}));
  EXPECT_EQ(metadata(root, "thread_name", kPid, kAsyncLaneTidBase)[0]["args"]["name"],
            "async ranges");
  EXPECT_EQ(metadata(root, "thread_name", kPid, kAsyncLaneTidBase + 1)[0]["args"]["name"],
            "async ranges 2");
  EXPECT_TRUE(metadata(root, "thread_name", kPid, kPid).empty())
      << "an async range does not make its thread a track";
  EXPECT_EQ(metadata(root, "process_name", kPid).size(), 1u);
}

TEST_F(TraceEventsHostTest, WritesApiCallsWithTheirArgs) {
  ApiCallRecord launch;
  launch.startNs = kStart + 10'000;
  launch.endNs = kStart + 14'500;
  launch.externalId = 7;
  launch.correlationId = 99;
  launch.callbackId = 211;
  launch.thread = mainThread_;
  launch.name = intern("cudaLaunchKernel");
  launch.effect = CallEffect::Kernel;
  ApiCallRecord driver = launch;
  driver.domain = ApiDomain::Driver;
  driver.externalId = 0;
  driver.correlationId = 100;
  driver.thread = workerThread_;
  driver.name = intern("cuLaunchKernel");
  trace_.records.apiCalls = {launch, driver};
  const json root = save();

  const auto runtime = eventsWith(root, "X", "cuda_runtime");
  ASSERT_EQ(runtime.size(), 1u);
  EXPECT_EQ(runtime[0]["name"], "cudaLaunchKernel");
  EXPECT_EQ(runtime[0]["pid"], kPid);
  EXPECT_EQ(runtime[0]["tid"], kPid);
  EXPECT_EQ(nsOf(runtime[0]["ts"]), 10'000);
  EXPECT_EQ(nsOf(runtime[0]["dur"]), 4'500);
  EXPECT_EQ(runtime[0]["args"], json({{"cbid", 211}, {"correlation", 99}, {"External id", 7}}));
  const auto drivers = eventsWith(root, "X", "cuda_driver");
  ASSERT_EQ(drivers.size(), 1u);
  EXPECT_EQ(drivers[0]["name"], "cuLaunchKernel");
  EXPECT_EQ(drivers[0]["tid"], 4300);
  EXPECT_EQ(drivers[0]["args"], json({{"cbid", 211}, {"correlation", 100}}));
  EXPECT_TRUE(eventsWith(root, "s").empty()) << "arrows come from flow records only";
}

TEST_F(TraceEventsHostTest, WritesInstantsCountersAndMemoryEvents) {
  trace_.records.instants.push_back(InstantRecord{kStart + 1, intern("checkpoint"), workerThread_});
  trace_.records.counters.push_back(CounterRecord{kStart + 2, 0.25, intern("queue"), mainThread_});
  MemoryRecord alloc;
  alloc.timeNs = kStart + 3;
  alloc.address = 0x7f0000001000;
  alloc.bytes = -4096;
  alloc.totalAllocated = 1 << 20;
  alloc.totalReserved = 1 << 21;
  alloc.deviceId = 1;
  alloc.thread = workerThread_;
  alloc.memoryKind = MemoryKind::Device;
  trace_.records.memory.push_back(alloc);
  const json root = save();

  const auto instants = eventsWith(root, "i", "user_instant");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0]["name"], "checkpoint");
  EXPECT_EQ(instants[0]["s"], "t");
  EXPECT_EQ(instants[0]["tid"], 4300);
  EXPECT_EQ(nsOf(instants[0]["ts"]), 1);

  const auto counters = eventsWith(root, "C", "counter");
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0]["name"], "queue");
  EXPECT_EQ(counters[0]["pid"], kPid);
  EXPECT_EQ(counters[0]["tid"], kPid);
  EXPECT_EQ(counters[0]["args"], json({{"queue", 0.25}}));

  const auto memory = eventsWith(root, "i", "cpu_instant_event");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_EQ(memory[0]["name"], "[memory]");
  EXPECT_EQ(memory[0]["s"], "t");
  EXPECT_EQ(memory[0]["pid"], kPid);
  EXPECT_EQ(memory[0]["tid"], 4300);
  EXPECT_EQ(nsOf(memory[0]["ts"]), 3);
  EXPECT_EQ(memory[0]["args"], json({{"Total Allocated", 1 << 20},
                                     {"Total Reserved", 1 << 21},
                                     {"Bytes", -4096},
                                     {"Addr", 0x7f0000001000},
                                     {"Device Type", 1},
                                     {"Device Id", 1}}));
}

TEST_F(TraceEventsHostTest, NamesTheHostProcessAndOnlyTheThreadsThatAppear) {
  trace_.records.ranges.push_back(range("a", kStart, kStart + 1, 1, mainThread_));
  trace_.records.instants.push_back(InstantRecord{kStart, intern("b"), workerThread_});
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

  trace_.tables.processName = "python3";
  root = save();
  EXPECT_EQ(metadata(root, "process_name", kPid)[0]["args"]["name"], "python3");
}

TEST_F(TraceEventsHostTest, NamesATidOnceWhenTwoThreadEntriesShareIt) {
  // Entries for one tid: unnamed, named, unnamed again. The name is kept whatever the order.
  const uint32_t named = addThread(4300, "worker");
  const uint32_t unnamed = addThread(4300, "");
  for (uint32_t thread : {workerThread_, named, unnamed}) {
    trace_.records.instants.push_back(InstantRecord{kStart, intern("a"), thread});
  }
  const json root = save();
  const auto names = metadata(root, "thread_name", kPid, 4300);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0]["args"]["name"], "thread 4300 (worker)");
}

TEST_F(TraceEventsHostTest, WritesNoNamingMetadataForAnEmptyTrace) {
  const json root = save();
  EXPECT_TRUE(root["traceEvents"].empty());
  EXPECT_EQ(root["traceName"], (dir_ / "trace.json").string());
}

TEST_F(TraceEventsHostTest, RecordsOfAThreadOutsideTheTableGoOnTidZero) {
  trace_.records.instants.push_back(InstantRecord{kStart, intern("lost"), 999});
  const json root = save();
  EXPECT_EQ(eventsWith(root, "i")[0]["tid"], 0);
}

TEST_F(TraceEventsHostTest, HostileNamesSurviveAsValidJson) {
  std::string controls;
  for (int c = 0; c < 0x20; ++c) controls += static_cast<char>(c);
  std::string veryLong;
  while (veryLong.size() < 1'000'000) veryLong += "void f<\"q\", '\\\\'>(int)::";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"say \"hi\" \\ back\\slash", "say \"hi\" \\ back\\slash"},
      {controls, controls},
      {"bad \xC0\xAF lead \xED\xA0\x80 surrogate \xE2\x82",
       "bad \xEF\xBF\xBD\xEF\xBF\xBD lead "
       "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD surrogate \xEF\xBF\xBD"},
      {"caf\xC3\xA9 \xF0\x9F\x9A\x80", "caf\xC3\xA9 \xF0\x9F\x9A\x80"},
      {veryLong, veryLong},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    trace_.records.ranges.push_back(
        range(cases[i].first, kStart + static_cast<int64_t>(i), kStart + 10, i + 1, mainThread_));
  }
  trace_.tables.threads[mainThread_].name = intern("w\"orker\n\xFF");
  trace_.tables.processName = "py\"thon\x01";
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
