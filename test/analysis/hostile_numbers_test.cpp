// No silent change of a number or an event: integers past int64 are refused naming the
// event (never wrapped), ids are 64-bit through the readers and the analysis, metadata
// events without a time are kept, and a merged trace that its output could not read back
// is refused before it is written.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"
#include "analysis/trace_merge.h"
#include "analysis/trace_reader.h"
#include "hostile_inputs.h"
#include "kinetrace/error.h"
#include "kinetrace/sink.h"
#include "output/perfetto_sink.h"
#include "output/sink_losses.h"
#include "test_budget.h"

namespace kinetrace::detail {
namespace {

class HostileNumbersTest : public HostileInputFixture {
 protected:
  std::vector<OwnedEvent> eventsOf(const std::string& file) {
    MemorySink sink;
    readTraceFile(file, sink, "out", budgetOf());
    return sink.events();
  }

  std::string json(const std::string& events) {
    static int files = 0;
    const std::string file = path("t" + std::to_string(files++) + ".json");
    writeFile(file, R"({"traceEvents": [)" + events + "]}");
    return file;
  }
};

// ---- integers past int64 ----

TEST_F(HostileNumbersTest, ATimestampOfTwoToTheSixtyFourMinusOneIsAnErrorNotMinusOne) {
  // nlohmann reads it as unsigned, which get<int64_t>() wrapped to -1.
  const std::string file =
      json(R"({"ph":"X","name":"far","pid":1,"tid":2,"ts":18446744073709551615,"dur":1})");
  const std::string error = errorReading(file);
  EXPECT_EQ(error.rfind(file + ": the event \"far\" ending before byte ", 0), 0u) << error;
  EXPECT_NE(error.find(" has ts 18446744073709551615, out of the range of times in nanoseconds"),
            std::string::npos)
      << error;
}

TEST_F(HostileNumbersTest, AHugeDurationIsAnErrorNotANegativeOneDroppedSilently) {
  const std::string file =
      json(R"({"ph":"X","name":"long","pid":1,"tid":2,"ts":1,"dur":18446744073709551615})");
  const std::string error = errorReading(file);
  EXPECT_NE(error.find("the event \"long\""), std::string::npos) << error;
  EXPECT_NE(error.find("has dur 18446744073709551615"), std::string::npos) << error;
}

TEST_F(HostileNumbersTest, APidOrTidPastInt64IsAnErrorNamingTheEvent) {
  for (const char* field :
       {R"("pid":9223372036854775808,"tid":2)", R"("pid":1,"tid":"99999999999999999999")"}) {
    const std::string file = json(std::string(R"({"ph":"i","name":"who","ts":1,)") + field + "}");
    const std::string error = errorReading(file);
    EXPECT_NE(error.find("the event \"who\""), std::string::npos) << field << ": " << error;
    EXPECT_NE(error.find("past the range of 64-bit signed integers"), std::string::npos)
        << field << ": " << error;
  }
}

TEST_F(HostileNumbersTest, ANegativeFlowIdIsAnErrorNotAWrappedOne) {
  const std::string file = json(R"({"ph":"s","name":"arrow","pid":1,"tid":2,"ts":1,"id":-1})");
  const std::string error = errorReading(file);
  EXPECT_NE(error.find("the event \"arrow\""), std::string::npos) << error;
  EXPECT_NE(error.find("has id -1, flow ids are unsigned 64-bit numbers"), std::string::npos)
      << error;
}

TEST_F(HostileNumbersTest, TimesReadBackToTheLastNanosecondOfInt64) {
  // 9223372036854775.807 us is INT64_MAX ns: it was refused one microsecond short of it.
  const std::string file =
      json(R"({"ph":"i","name":"edge","pid":1,"tid":2,"ts":9223372036854775.807})");
  const std::vector<OwnedEvent> events = eventsOf(file);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].timestampNs, std::numeric_limits<int64_t>::max());
}

// ---- 64-bit ids ----

TEST_F(HostileNumbersTest, APftracePidPastThirtyTwoBitsReadsBackWhole) {
  const std::string source = json(
      R"({"ph":"X","name":"wide","cat":"cpu_op","pid":5000000000,"tid":6000000000,"ts":1,"dur":2})");
  const std::string pftrace = path("wide.pftrace");
  {
    std::unique_ptr<Sink> sink = openSink(pftrace);
    readTraceFile(source, *sink, pftrace, budgetOf());
  }
  const std::vector<OwnedEvent> events = eventsOf(pftrace);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].pid, 5'000'000'000);
  EXPECT_EQ(events[0].tid, 6'000'000'000);
}

TEST_F(HostileNumbersTest, StreamsAndDevicesPastThirtyTwoBitsStayApart) {
  const std::string file =
      json(R"({"ph":"X","name":"a","cat":"kernel","pid":0,"tid":7,"ts":10,"dur":5,)"
           R"("args":{"device":0,"stream":7}},)"
           R"({"ph":"X","name":"b","cat":"kernel","pid":0,"tid":7,"ts":20,"dur":5,)"
           R"("args":{"device":0,"stream":4294967303}},)"
           R"({"ph":"X","name":"c","cat":"kernel","pid":0,"tid":7,"ts":30,"dur":5,)"
           R"("args":{"device":4294967296,"stream":7}},)"
           R"({"ph":"X","name":"d","cat":"kernel","pid":0,"tid":7,"ts":40,"dur":5,)"
           R"("args":{"device":0,"stream":18446744073709551615}})");
  TraceCollector collector(file, budgetOf());
  readTraceFile(file, collector, file, budgetOf());
  CollectedTrace trace = collector.take();
  EXPECT_EQ(trace.leftOut.at("GPU operations whose device or stream is not a 64-bit integer"), 1u)
      << "a stream of 2^64-1 is not made -1";
  const RankReport report = analyzeTrace(std::move(trace), {});
  ASSERT_EQ(report.devices.size(), 2u);
  EXPECT_EQ(report.devices[0].device, 0);
  EXPECT_EQ(report.devices[1].device, 4'294'967'296);
  ASSERT_EQ(report.devices[0].streams.size(), 2u) << "stream 4294967303 is not stream 7";
  EXPECT_EQ(report.devices[0].streams[0].stream, 7);
  EXPECT_EQ(report.devices[0].streams[1].stream, 4'294'967'303);
}

// ---- events kept or said ----

TEST_F(HostileNumbersTest, MetadataEventsWithoutATimestampAreKeptAtTheBaseTime) {
  const std::string file = path("names.json");
  writeFile(file, R"({"baseTimeNanoseconds": 5000, "traceEvents": [
    {"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"trainer"}},
    {"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"main"}},
    {"ph":"X","name":"work","pid":1,"tid":2,"ts":1,"dur":1}]})");
  const std::vector<OwnedEvent> events = eventsOf(file);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].name, "process_name");
  EXPECT_EQ(events[0].timestampNs, 5000);
  ASSERT_NE(events[0].arg("name"), nullptr);
  EXPECT_EQ(std::get<std::string>(events[0].arg("name")->value), "trainer");
  EXPECT_EQ(events[1].name, "thread_name");
}

TEST_F(HostileNumbersTest, PhasesThatAreNotOneLetterShareOneReasonSoTheReportStaysSmall) {
  std::string events;
  for (int i = 0; i < 100; ++i) {
    events += std::string(i > 0 ? "," : "") + R"({"ph":"phase)" + std::to_string(i) +
              R"(","name":"x","pid":1,"tid":1,"ts":1})";
  }
  events += R"(,{"ph":"B","name":"x","pid":1,"tid":1,"ts":1})";
  MemorySink sink;
  const ReadReport report = readTraceFile(json(events), sink, "out", budgetOf());
  EXPECT_EQ(report.skipped,
            (std::map<std::string, uint64_t>{{"events of phase 'B'", 1},
                                             {"events whose phase is not one letter", 100}}));
}

TEST_F(HostileNumbersTest, ThePftraceSinkCountsTheEventsItCannotPlace) {
  // More than a second before the base time: a .pftrace has no clock for it.
  const std::string file = path("early.json");
  writeFile(file, R"({"baseTimeNanoseconds": 10000000000, "traceEvents": [
    {"ph":"X","name":"early","pid":1,"tid":2,"ts":-2000000,"dur":1},
    {"ph":"X","name":"kept","pid":1,"tid":2,"ts":1,"dur":1}]})");
  const std::string out = path("early.pftrace");
  std::unique_ptr<Sink> sink = openSink(out);
  const ReadReport read = readTraceFile(file, *sink, out, budgetOf());
  EXPECT_EQ(read.events, 2u);
  const SinkLosses losses = lossesOf(*sink);
  ASSERT_EQ(losses.events.size(), 1u);
  EXPECT_EQ(losses.events.begin()->first,
            "events more than a second before the trace's base time, which a .pftrace cannot "
            "place");
  EXPECT_EQ(losses.events.begin()->second, 1u);
  sink.reset();
  EXPECT_EQ(eventsOf(out).size(), 1u);
}

// ---- merge ----

TEST_F(HostileNumbersTest, MergeRefusesRanksWhoseTimesItsOutputCannotReadBack) {
  const std::string early = path("early-rank.json");
  const std::string late = path("late-rank.json");
  writeFile(early, R"({"distributedInfo": {"rank": 0}, "baseTimeNanoseconds": -5000000000000000000,
    "traceEvents": [{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1}]})");
  writeFile(late, R"({"distributedInfo": {"rank": 1}, "baseTimeNanoseconds": 5000000000000000000,
    "traceEvents": [{"ph":"X","name":"b","pid":1,"tid":1,"ts":0,"dur":1}]})");
  MergeOptions asRecorded;
  asRecorded.alignOnCollectives = false;
  const std::vector<RankPlacement> plan = planMerge({early, late}, asRecorded, budgetOf());
  MemorySink merged;
  try {
    writeMerged(plan, merged, "job.json", budgetOf());
    FAIL() << "no error";
  } catch (const Error& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.rfind("cannot merge " + late + ": its events reach ", 0), 0u) << what;
    EXPECT_NE(
        what.find("after the merged trace's base time (-5000000000000000000 ns, " + early + "'s)"),
        std::string::npos)
        << what;
  }
  EXPECT_FALSE(merged.ended());
  EXPECT_TRUE(merged.events().empty()) << "refused before anything is written";
}

TEST_F(HostileNumbersTest, MergeWritesRanksAtTheEdgeOfWhatItsOutputReadsBack) {
  // The later rank's event ends exactly kMergedMaxAfterBaseNs after the earlier's base.
  const std::string early = path("edge0.json");
  const std::string late = path("edge1.json");
  writeFile(early, R"({"distributedInfo": {"rank": 0}, "baseTimeNanoseconds": 0,
    "traceEvents": [{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1}]})");
  const int64_t end = kMergedMaxAfterBaseNs;
  writeFile(late,
            R"({"distributedInfo": {"rank": 1}, "baseTimeNanoseconds": )" +
                std::to_string(end - 1000) +
                R"(, "traceEvents": [{"ph":"X","name":"b","pid":1,"tid":1,"ts":0,"dur":1}]})");
  MergeOptions asRecorded;
  asRecorded.alignOnCollectives = false;
  for (const char* name : {"edge.json", "edge.pftrace"}) {
    const std::string out = path(name);
    {
      std::unique_ptr<Sink> sink = openSink(out);
      writeMerged(planMerge({early, late}, asRecorded, budgetOf()), *sink, out, budgetOf());
    }
    std::vector<int64_t> ends;
    for (const OwnedEvent& e : eventsOf(out)) {
      if (e.phase == Phase::Complete) ends.push_back(e.timestampNs + e.durationNs);
    }
    EXPECT_EQ(ends, (std::vector<int64_t>{1000, end})) << name;
  }
}

}  // namespace
}  // namespace kinetrace::detail
