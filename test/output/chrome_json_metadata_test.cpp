// ChromeJsonSink's top-level metadata: typed values from the header before the events and
// from the footer after them, one grep-able line per key.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "output/chrome_json_sink.h"
#include "support/capture_output.h"

namespace kinetrace::detail {
namespace {

using kinetrace::testing::Captured;
using kinetrace::testing::CaptureOutput;
using nlohmann::json;

constexpr int64_t kBase = 1'700'000'000'123'456'789;

// The whole file for a trace of one event with that header and footer metadata.
std::string writeWith(Metadata header, const Metadata& footer = {}) {
  Captured captured;
  ChromeJsonSink sink(std::make_unique<CaptureOutput>(captured));
  TraceHeader h;
  h.traceName = "out/trace.json";
  h.baseTimeNs = kBase;
  h.metadata = std::move(header);
  sink.begin(h);
  Event event;
  event.name = "step";
  event.timestampNs = kBase;
  sink.write(event);
  sink.end(footer);
  EXPECT_TRUE(captured.committed);
  return captured.bytes;
}

bool hasLine(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(ChromeJsonMetadataTest, WritesTheWholeLayoutAroundTheEvents) {
  const std::string text = writeWith(
      {{"schemaVersion", 1},
       {"distributedInfo", Value::object({{"rank", 3}, {"world_size", 8}, {"backend", "nccl"}})}},
      {{"kinetrace_cupti_dropped_records", 0u}});
  EXPECT_EQ(text,
            "{\n"
            "  \"schemaVersion\": 1,\n"
            "  \"distributedInfo\": {\"rank\": 3, \"world_size\": 8, \"backend\": \"nccl\"},\n"
            "  \"baseTimeNanoseconds\": 1700000000123456789,\n"
            "  \"displayTimeUnit\": \"ms\",\n"
            "  \"traceEvents\": [\n"
            "{\"ph\":\"X\",\"name\":\"step\",\"pid\":0,\"tid\":0,\"ts\":0,\"dur\":0}\n"
            "  ],\n"
            "  \"kinetrace_cupti_dropped_records\": 0,\n"
            "  \"traceName\": \"out/trace.json\"\n"
            "}\n");
}

TEST(ChromeJsonMetadataTest, WritesEveryKindOfValueAsJson) {
  const std::string text = writeWith({
      {"none", nullptr},
      {"yes", true},
      {"no", false},
      {"min", std::numeric_limits<int64_t>::min()},
      {"max", std::numeric_limits<uint64_t>::max()},
      {"tenth", 0.1},
      {"huge", 1e300},
      {"text", "a \"b\" \\ c"},
      {"empties", Value::array({Value::array({}), Value(Value::Object{}), ""})},
  });
  const json parsed = json::parse(text);
  EXPECT_TRUE(parsed["none"].is_null());
  EXPECT_EQ(parsed["yes"], true);
  EXPECT_EQ(parsed["no"], false);
  EXPECT_EQ(parsed["min"].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(parsed["max"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(parsed["tenth"].get<double>(), 0.1);
  EXPECT_EQ(parsed["huge"].get<double>(), 1e300);
  EXPECT_EQ(parsed["text"], "a \"b\" \\ c");
  EXPECT_TRUE(hasLine(text, "  \"none\": null,")) << text;
  EXPECT_TRUE(hasLine(text, "  \"yes\": true,")) << text;
  EXPECT_TRUE(hasLine(text, "  \"tenth\": 0.1,")) << text;
  EXPECT_TRUE(hasLine(text, "  \"text\": \"a \\\"b\\\" \\\\ c\",")) << text;
  EXPECT_TRUE(hasLine(text, "  \"empties\": [[], {}, \"\"],")) << text;
}

TEST(ChromeJsonMetadataTest, WritesNanAndInfinityAsNull) {
  const std::string text = writeWith({
      {"nan", std::numeric_limits<double>::quiet_NaN()},
      {"inf", -std::numeric_limits<double>::infinity()},
      {"inside", Value::array({std::numeric_limits<double>::infinity(), 2.5})},
  });
  const json parsed = json::parse(text);
  EXPECT_TRUE(parsed["nan"].is_null());
  EXPECT_TRUE(parsed["inf"].is_null());
  EXPECT_EQ(parsed["inside"], json::array({nullptr, 2.5}));
  EXPECT_TRUE(hasLine(text, "  \"inside\": [null, 2.5],")) << text;
}

TEST(ChromeJsonMetadataTest, WritesNestedObjectsAndArraysOnOneLineInOrder) {
  Value devices = Value::array({
      Value::object({{"id", 0}, {"name", "NVIDIA H200"}, {"totalGlobalMem", 150'000'000'000ULL}}),
      Value::object(
          {{"id", 1}, {"limits", Value::object({{"z", 1}, {"a", Value::array({1, 2})}})}}),
  });
  const std::string text = writeWith({{"deviceProperties", devices}});
  EXPECT_TRUE(hasLine(text,
                      "  \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\", "
                      "\"totalGlobalMem\": 150000000000}, {\"id\": 1, \"limits\": {\"z\": 1, "
                      "\"a\": [1, 2]}}],"))
      << text;
  EXPECT_EQ(json::parse(text)["deviceProperties"][1]["limits"]["a"], json::array({1, 2}));
}

TEST(ChromeJsonMetadataTest, EscapesKeysAndStringsAndKeepsEachKeyOnOneLine) {
  std::string controls;
  for (int c = 1; c < 0x20; ++c) controls += static_cast<char>(c);
  const std::string text = writeWith({
      {"multi\nline \"key\"", "line 1\nline 2\r\n\ttab" + controls},
      {"nested", Value::object({{"k\n", Value::array({"a\nb"})}})},
      {"bad utf8", "caf\xC3\xA9 \xFF"},
  });
  const json parsed = json::parse(text);
  EXPECT_EQ(parsed["multi\nline \"key\""], "line 1\nline 2\r\n\ttab" + controls);
  EXPECT_EQ(parsed["nested"]["k\n"][0], "a\nb");
  EXPECT_EQ(parsed["bad utf8"], "caf\xC3\xA9 \xEF\xBF\xBD");
  // One line break before each of the three keys, baseTimeNanoseconds, displayTimeUnit and
  // traceEvents: nothing inside a value breaks its line.
  const std::size_t events = text.find("\"traceEvents\"");
  std::size_t lines = 0;
  for (std::size_t i = 0; i < events; ++i) lines += text[i] == '\n';
  EXPECT_EQ(lines, 1u + 3u + 2u);
}

TEST(ChromeJsonMetadataTest, KeepsTheHeaderOrderBeforeTraceEvents) {
  const std::string text = writeWith({{"schemaVersion", 1},
                                      {"distributedInfo", Value::object({{"rank", 3}})},
                                      {"model", "resnet"},
                                      {"a_last", 1}});
  const auto schema = text.find("\"schemaVersion\"");
  const auto distributed = text.find("\"distributedInfo\"");
  const auto model = text.find("\"model\"");
  const auto last = text.find("\"a_last\"");
  EXPECT_LT(schema, distributed);
  EXPECT_LT(distributed, model);
  EXPECT_LT(model, last);
  EXPECT_LT(last, text.find("\"traceEvents\""));
  const json parsed = json::parse(text);
  EXPECT_EQ(parsed["distributedInfo"]["rank"], 3);
  EXPECT_EQ(parsed["baseTimeNanoseconds"].get<int64_t>(), kBase);
  EXPECT_EQ(parsed["traceName"], "out/trace.json");
}

TEST(ChromeJsonMetadataTest, WritesFooterLinesAfterTheEventsInTheirExactShape) {
  const std::string text = writeWith(
      {}, {{"kinetrace_cupti_dropped_records", 12u},
           {"kinetrace_clock_skew_ns", -40},
           {"kinetrace_peak_memory_mb", 1.5},
           {"kinetrace_note", "done"},
           {"kinetrace_losses", Value::object({{"host", 0}, {"gpu", Value::array({1, 2})}})}});
  const std::string expectedTail =
      "\n  ],\n"
      "  \"kinetrace_cupti_dropped_records\": 12,\n"
      "  \"kinetrace_clock_skew_ns\": -40,\n"
      "  \"kinetrace_peak_memory_mb\": 1.5,\n"
      "  \"kinetrace_note\": \"done\",\n"
      "  \"kinetrace_losses\": {\"host\": 0, \"gpu\": [1, 2]},\n"
      "  \"traceName\": \"out/trace.json\"\n"
      "}\n";
  ASSERT_GE(text.size(), expectedTail.size());
  EXPECT_EQ(text.substr(text.size() - expectedTail.size()), expectedTail);
  EXPECT_GT(text.find("kinetrace_cupti_dropped_records"), text.find("\"traceEvents\""));
  EXPECT_EQ(json::parse(text)["kinetrace_losses"]["gpu"][1], 2);
}

TEST(ChromeJsonMetadataTest, AFooterKeyRepeatingAHeaderKeyIsTheLaterWord) {
  const std::string text = writeWith({{"rank", 0}}, {{"rank", 5}});
  EXPECT_LT(text.find("\"rank\": 0"), text.find("\"rank\": 5"));
  EXPECT_EQ(json::parse(text)["rank"], 5) << "JSON readers keep the last value of a key";
}

TEST(ChromeJsonMetadataTest, DefaultsDisplayTimeUnitToMillisecondsUnlessTheHeaderGivesOne) {
  EXPECT_EQ(json::parse(writeWith({}))["displayTimeUnit"], "ms");
  const std::string text = writeWith({{"displayTimeUnit", "ns"}});
  EXPECT_EQ(json::parse(text)["displayTimeUnit"], "ns");
  EXPECT_EQ(text.find("displayTimeUnit"), text.rfind("displayTimeUnit"));
  EXPECT_LT(text.find("displayTimeUnit"), text.find("\"traceEvents\""));
}

TEST(ChromeJsonMetadataTest, SkipsKeysTheSinkWritesItselfInHeaderAndFooter) {
  const Metadata ownKeys = {
      {"traceName", "other"}, {"baseTimeNanoseconds", 0}, {"traceEvents", Value::array({1})}};
  const std::string text = writeWith(ownKeys, ownKeys);
  EXPECT_EQ(text.find("\"traceName\""), text.rfind("\"traceName\""));
  EXPECT_EQ(text.find("\"traceEvents\""), text.rfind("\"traceEvents\""));
  EXPECT_EQ(text.find("\"baseTimeNanoseconds\""), text.rfind("\"baseTimeNanoseconds\""));
  const json parsed = json::parse(text);
  EXPECT_EQ(parsed["baseTimeNanoseconds"].get<int64_t>(), kBase);
  // A footer's traceName names the trace (a converted trace keeps its own, read after its
  // events); the header's metadata cannot rename it.
  EXPECT_EQ(parsed["traceName"], "other");
  EXPECT_EQ(parsed["traceEvents"].size(), 1u);
  EXPECT_EQ(json::parse(writeWith(ownKeys, {}))["traceName"], "out/trace.json");
}

TEST(ChromeJsonMetadataTest, WritesHugeValuesThroughTheBufferWhole) {
  std::string big;
  while (big.size() < 3'000'000) big += "\"q\" \xE2\x82\xAC\n";
  Value::Array many;
  for (int i = 0; i < 100'000; ++i) many.emplace_back(i);
  const std::string text = writeWith({{"big", big}}, {{"many", Value(many)}});
  const json parsed = json::parse(text);
  EXPECT_EQ(parsed["big"], big);
  ASSERT_EQ(parsed["many"].size(), 100'000u);
  EXPECT_EQ(parsed["many"][99'999], 99'999);
}

}  // namespace
}  // namespace kinetrace::detail
