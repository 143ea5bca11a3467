#include "output/chrome_json_sink.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "kinetrace/error.h"
#include "support/capture_output.h"
#include "support/test_support.h"

namespace kinetrace::detail {
namespace {

using kinetrace::testing::Captured;
using kinetrace::testing::CaptureOutput;
using nlohmann::json;

constexpr int64_t kBase = 1'700'000'000'123'456'789;

TraceHeader header(Metadata metadata = {}) {
  TraceHeader h;
  h.traceName = "out/trace.json";
  h.baseTimeNs = kBase;
  h.metadata = std::move(metadata);
  return h;
}

Event complete(std::string_view name, int64_t offsetNs, int64_t durationNs) {
  Event e;
  e.phase = Phase::Complete;
  e.category = "kernel";
  e.name = name;
  e.pid = 1;
  e.tid = 7;
  e.timestampNs = kBase + offsetNs;
  e.durationNs = durationNs;
  return e;
}

// Writes the events through a sink and returns the complete output.
std::string writeAll(const std::vector<Event>& events, const TraceHeader& h = header()) {
  Captured captured;
  ChromeJsonSink sink(std::make_unique<CaptureOutput>(captured));
  sink.begin(h);
  for (const Event& e : events) sink.write(e);
  sink.end({});
  EXPECT_TRUE(captured.committed);
  return captured.bytes;
}

json onlyEvent(const std::string& text) {
  json parsed = json::parse(text);
  EXPECT_EQ(parsed["traceEvents"].size(), 1u);
  return parsed["traceEvents"][0];
}

TEST(ChromeJsonSinkTest, WritesTimestampsAsMicrosecondsWithNanosecondPrecision) {
  const std::string text = writeAll({complete("k", 1'234'567, 1'500)});
  EXPECT_NE(text.find(R"("ts":1234.567,"dur":1.5)"), std::string::npos) << text;
  const json event = onlyEvent(text);
  EXPECT_TRUE(event["ts"].is_number());
  EXPECT_DOUBLE_EQ(event["ts"].get<double>(), 1234.567);
  EXPECT_DOUBLE_EQ(event["dur"].get<double>(), 1.5);
}

TEST(ChromeJsonSinkTest, WritesWholeMicrosecondsWithoutAFraction) {
  const std::string text = writeAll({complete("k", 5'000, 0)});
  EXPECT_NE(text.find(R"("ts":5,"dur":0)"), std::string::npos) << text;
}

TEST(ChromeJsonSinkTest, WritesTimesBeforeTheBaseAsExactNegativeNumbers) {
  EXPECT_NE(writeAll({complete("k", -1, -1'500)}).find(R"("ts":-0.001,"dur":-1.5)"),
            std::string::npos);
  EXPECT_NE(writeAll({complete("k", -2'000, 10)}).find(R"("ts":-2,"dur":0.01)"), std::string::npos);
}

// The difference of two int64 times needs 65 bits; it used to wrap (INT64_MAX after a base
// time near INT64_MIN was written "ts":-1.809).
TEST(ChromeJsonSinkTest, WritesTheExactTimeFromABaseAtTheOtherEndOfInt64) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  TraceHeader h = header();
  h.baseTimeNs = -9'223'372'036'854'775'000;
  Event e = complete("k", 0, kMax);
  e.timestampNs = kMax;
  EXPECT_NE(writeAll({e}, h).find(R"("ts":18446744073709550.807,"dur":9223372036854775.807)"),
            std::string::npos);
  h.baseTimeNs = kMax;
  e.timestampNs = kMin;
  e.durationNs = kMin;
  EXPECT_NE(writeAll({e}, h).find(R"("ts":-18446744073709551.615,"dur":-9223372036854775.808)"),
            std::string::npos);
  h.baseTimeNs = kMin;
  e.timestampNs = kMin;
  EXPECT_NE(writeAll({e}, h).find(R"("ts":0,)"), std::string::npos);
}

TEST(ChromeJsonSinkTest, KeepsTheLastNanosecondOfHoursLongTraces) {
  const int64_t threeHoursPlusOne = 3LL * 3600 * 1'000'000'000 + 1;
  const json event = onlyEvent(writeAll({complete("k", threeHoursPlusOne, 999'999'999'999)}));
  EXPECT_EQ(std::llround(event["ts"].get<double>() * 1000), threeHoursPlusOne);
  EXPECT_EQ(std::llround(event["dur"].get<double>() * 1000), 999'999'999'999);
}

TEST(ChromeJsonSinkTest, WritesEachPhaseWithItsOwnFields) {
  Event instant = complete("mark", 10, 0);
  instant.phase = Phase::Instant;
  Event counter = complete("queue depth", 20, 0);
  counter.phase = Phase::Counter;
  Event flowStart = complete("ac2g", 30, 0);
  flowStart.phase = Phase::FlowStart;
  flowStart.flowId = 42;
  Event flowEnd = flowStart;
  flowEnd.phase = Phase::FlowEnd;
  Event metadata = complete("process_name", 0, 0);
  metadata.phase = Phase::Metadata;
  metadata.category = {};

  const json events =
      json::parse(writeAll({instant, counter, flowStart, flowEnd, metadata}))["traceEvents"];
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0]["ph"], "i");
  EXPECT_EQ(events[0]["s"], "t");
  EXPECT_FALSE(events[0].contains("dur"));
  EXPECT_EQ(events[1]["ph"], "C");
  EXPECT_EQ(events[2]["ph"], "s");
  EXPECT_EQ(events[2]["id"], 42);
  EXPECT_FALSE(events[2].contains("bp"));
  EXPECT_EQ(events[3]["ph"], "f");
  EXPECT_EQ(events[3]["id"], 42);
  EXPECT_EQ(events[3]["bp"], "e");
  EXPECT_EQ(events[4]["ph"], "M");
  EXPECT_FALSE(events[4].contains("cat"));
  for (const json& e : events) {
    EXPECT_EQ(e["pid"], 1);
    EXPECT_EQ(e["tid"], 7);
    EXPECT_FALSE(e.contains("args"));
  }
}

TEST(ChromeJsonSinkTest, WritesEveryArgTypeAsJson) {
  const Arg args[] = {
      {"min", std::numeric_limits<int64_t>::min()},
      {"max", std::numeric_limits<uint64_t>::max()},
      {"tenth", 0.1},
      {"huge", 1e300},
      {"nan", std::numeric_limits<double>::quiet_NaN()},
      {"inf", -std::numeric_limits<double>::infinity()},
      {"yes", true},
      {"text", std::string_view("a \"b\"\n")},
      {"grid", Dim3{128, 2, 1}},
  };
  Event e = complete("k", 0, 1);
  e.args = args;
  e.argCount = std::size(args);
  const json a = onlyEvent(writeAll({e}))["args"];
  EXPECT_EQ(a["min"].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(a["max"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(a["tenth"].get<double>(), 0.1);
  EXPECT_EQ(a["huge"].get<double>(), 1e300);
  EXPECT_TRUE(a["nan"].is_null());
  EXPECT_TRUE(a["inf"].is_null());
  EXPECT_EQ(a["yes"], true);
  EXPECT_EQ(a["text"], "a \"b\"\n");
  EXPECT_EQ(a["grid"], json::array({128, 2, 1}));
  EXPECT_EQ(a.size(), std::size(args));
}

TEST(ChromeJsonSinkTest, WritesDoublesThatParseBackToExactlyTheSameValue) {
  std::vector<double> values = {0.0,
                                0.1,
                                -2.5,
                                4.096,
                                500.0,
                                1234567.125,
                                123456789.123456,
                                0.30000000000000004,
                                1e-7,
                                5e-324,
                                1e300,
                                -1.7976931348623157e308,
                                999999999.9999995,
                                0.000001,
                                -0.000001};
  std::mt19937_64 random(99);
  for (int i = 0; i < 2000; ++i) {
    values.push_back(static_cast<double>(static_cast<int64_t>(random() % 2'000'000'000'000) -
                                         1'000'000'000'000) /
                     1e6);
    double bits;
    const uint64_t raw = random();
    std::memcpy(&bits, &raw, sizeof bits);
    if (std::isfinite(bits)) values.push_back(bits);
  }
  std::vector<Arg> args;
  for (double v : values) args.push_back(Arg{"v", v});
  std::vector<Event> events;
  for (const Arg& arg : args) {
    Event e = complete("d", 0, 1);
    e.args = &arg;
    e.argCount = 1;
    events.push_back(e);
  }
  const json parsed = json::parse(writeAll(events))["traceEvents"];
  ASSERT_EQ(parsed.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(parsed[i]["args"]["v"].get<double>(), values[i]) << std::hexfloat << values[i];
    // A double reads back as a double, whole values included ("blocks per SM": 2.0).
    EXPECT_TRUE(parsed[i]["args"]["v"].is_number_float()) << std::hexfloat << values[i];
  }
  EXPECT_NE(writeAll({events[1]}).find(R"("v":0.1})"), std::string::npos);
}

TEST(ChromeJsonSinkTest, WritesWholeDoublesWithAFractionOrAnExponent) {
  for (const auto& [value, text] :
       std::vector<std::pair<double, std::string>>{{2.0, "2.0"},
                                                   {0.0, "0.0"},
                                                   {-500.0, "-500.0"},
                                                   {1e20, "1e+20"},
                                                   {1e15, "1000000000000000.0"}}) {
    const Arg arg{"v", value};
    Event e = complete("d", 0, 1);
    e.args = &arg;
    e.argCount = 1;
    const std::string written = writeAll({e});
    EXPECT_NE(written.find(R"("v":)" + text + "}"), std::string::npos) << written;
  }
}

TEST(ChromeJsonSinkTest, WritesOneEventPerLine) {
  const std::string text =
      writeAll({complete("a", 0, 1), complete("b", 1, 1), complete("c", 2, 1)});
  int eventLines = 0;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = text.substr(start, end - start);
    if (line.rfind("{\"ph\"", 0) == 0) {
      ++eventLines;
      const std::string event = line.back() == ',' ? line.substr(0, line.size() - 1) : line;
      EXPECT_TRUE(json::accept(event)) << event;
    }
  }
  EXPECT_EQ(eventLines, 3);
}

TEST(ChromeJsonSinkTest, StreamsThroughItsBufferAndKeepsHugeNamesWhole) {
  std::string hugeName;
  while (hugeName.size() < 2'000'000) hugeName += "x\xE2\x82\xAC\"\\\t";
  std::vector<Event> events;
  for (int i = 0; i < 50'000; ++i) events.push_back(complete("kernel", i, 1));
  events.push_back(complete(hugeName, 0, 1));

  Captured captured;
  ChromeJsonSink sink(std::make_unique<CaptureOutput>(captured), 64 * 1024);
  sink.begin(header());
  for (const Event& e : events) sink.write(e);
  sink.end({});
  EXPECT_GT(captured.writes, 10);
  const json parsed = json::parse(captured.bytes);
  ASSERT_EQ(parsed["traceEvents"].size(), events.size());
  EXPECT_EQ(parsed["traceEvents"].back()["name"], hugeName);
}

// Events are written into one reservation sized from the event; the sanitizer builds
// catch a bound that is too small once an event lands at the very end of the buffer.
TEST(ChromeJsonSinkTest, WorstCaseEventsStayWithinTheirReservation) {
  const std::string controls(40, '\x01');
  const int64_t low = std::numeric_limits<int64_t>::min();
  std::vector<Arg> args;
  for (int i = 0; i < 8; ++i) args.push_back(Arg{controls, Dim3{low, low, low}});
  for (int i = 0; i < 4; ++i) args.push_back(Arg{controls, std::string_view(controls)});
  args.push_back(Arg{controls, -1.7976931348623157e308});
  args.push_back(Arg{controls, std::numeric_limits<uint64_t>::max()});
  args.push_back(Arg{controls, low});
  args.push_back(Arg{controls, false});
  std::vector<Event> events;
  for (int i = 0; i < 3000; ++i) {
    Event e;
    e.phase = i % 2 ? Phase::FlowEnd : Phase::Complete;
    e.name = std::string_view(controls).substr(0, static_cast<std::size_t>(i % 40));
    e.category = controls;
    e.pid = low;
    e.tid = low;
    e.timestampNs = low;
    e.durationNs = low;
    e.flowId = std::numeric_limits<uint64_t>::max();
    e.args = args.data();
    e.argCount = args.size();
    events.push_back(e);
  }
  const json parsed = json::parse(writeAll(events));
  ASSERT_EQ(parsed["traceEvents"].size(), events.size());
  EXPECT_EQ(parsed["traceEvents"][1]["args"].size(), 1u) << "one key, repeated";
}

TEST(ChromeJsonSinkTest, WritesAValidFileForAnEmptyTrace) {
  const json parsed = json::parse(writeAll({}));
  EXPECT_TRUE(parsed["traceEvents"].is_array());
  EXPECT_TRUE(parsed["traceEvents"].empty());
}

TEST(ChromeJsonSinkTest, DoesNotCommitWhenDestroyedBeforeEnd) {
  Captured captured;
  {
    ChromeJsonSink sink(std::make_unique<CaptureOutput>(captured));
    sink.begin(header());
    sink.write(complete("k", 0, 1));
  }
  EXPECT_FALSE(captured.committed);
}

TEST(ChromeJsonSinkTest, PassesWriteErrorsOnAndRefusesLaterCalls) {
  Captured captured;
  ChromeJsonSink sink(std::make_unique<CaptureOutput>(captured, 1000));
  sink.begin(header());
  const std::string failure = kinetrace::testing::errorOf([&sink] {
    for (int i = 0; i < 100'000; ++i) sink.write(complete("k", i, 1));
    sink.end({});
  });
  EXPECT_EQ(failure, "disk full (test)");
  EXPECT_EQ(kinetrace::testing::errorOf([&sink] { sink.end({}); }),
            "Sink::end() called after a write error");
  EXPECT_FALSE(captured.committed);
}

TEST(ChromeJsonSinkTest, RefusesCallsOutOfOrder) {
  using kinetrace::testing::errorOf;
  Captured captured;
  ChromeJsonSink sink(std::make_unique<CaptureOutput>(captured));
  const std::string outOfOrder = "() called out of order (begin, write..., end)";
  EXPECT_EQ(errorOf([&sink] { sink.write(complete("k", 0, 1)); }), "Sink::write" + outOfOrder);
  EXPECT_EQ(errorOf([&sink] { sink.end({}); }), "Sink::end" + outOfOrder);
  sink.begin(header());
  EXPECT_EQ(errorOf([&sink] { sink.begin(header()); }), "Sink::begin" + outOfOrder);
  sink.end({});
  EXPECT_EQ(errorOf([&sink] { sink.write(complete("k", 0, 1)); }), "Sink::write" + outOfOrder);
  EXPECT_TRUE(captured.committed);
}

TEST(ChromeJsonSinkTest, RefusesAnEventWithAnUnknownPhase) {
  Captured captured;
  ChromeJsonSink sink(std::make_unique<CaptureOutput>(captured));
  sink.begin(header());
  Event bad = complete("odd", 0, 1);
  bad.phase = static_cast<Phase>('Q');
  EXPECT_EQ(kinetrace::testing::errorOf([&] { sink.write(bad); }),
            "event \"odd\" has an unknown phase 81");
}

}  // namespace
}  // namespace kinetrace::detail
