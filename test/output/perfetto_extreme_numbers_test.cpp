// The .pftrace writer on the ends of int64 and on doubles JSON cannot hold: every time,
// id and argument is written (or counted in the footer when the format has no place for
// it), with no overflow and no crash.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "output/perfetto_decoder.h"
#include "output/perfetto_sink.h"

namespace kinetrace::detail {
namespace {

using namespace pftrace_test;
using A = std::pair<std::string, std::string>;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
// The base time of the hostile run: within a second of INT64_MIN.
constexpr int64_t kNegativeBase = -9'223'372'036'854'775'000;

// Nanoseconds after the timebase, as the file holds them.
uint64_t after(int64_t timebase, int64_t time) {
  return static_cast<uint64_t>(time) - static_cast<uint64_t>(timebase);
}

class PerfettoExtremeNumbersTest : public ::testing::Test {
 protected:
  void begin(int64_t base) {
    sink_ = std::make_unique<PerfettoSink>(std::make_unique<StringOutput>(&bytes_, &committed_));
    sink_->begin(TraceHeader{"out.pftrace", base, {}});
  }
  static Event event(Phase phase, int64_t ts, int64_t dur = 0) {
    Event e;
    e.phase = phase;
    e.name = "e";
    e.category = "c";
    e.pid = 1;
    e.tid = 2;
    e.timestampNs = ts;
    e.durationNs = dur;
    return e;
  }
  Decoded finish() {
    sink_->end({});
    EXPECT_TRUE(committed_);
    return decode(bytes_);
  }
  static std::string annotation(const DecodedEvent& event, const std::string& key) {
    for (const auto& [name, value] : event.annotations) {
      if (name == key) return value;
    }
    return "(none)";
  }

  std::string bytes_;
  bool committed_ = false;
  std::unique_ptr<PerfettoSink> sink_;
};

// The timebase, a second before the base time, used to be computed with a signed overflow;
// the header, then before the wrapped timebase, was dropped and its annotations written to
// no packet (a null dereference).
TEST_F(PerfettoExtremeNumbersTest, ABaseTimeNearInt64MinWithNoEventKeepsItsHeader) {
  begin(kNegativeBase);
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 2u);
  EXPECT_EQ(d.events[0].name, "trace header");
  EXPECT_EQ(annotation(d.events[0], "baseTimeNanoseconds"), "int:" + std::to_string(kNegativeBase));
  EXPECT_EQ(annotation(d.events[0], "timebaseNanoseconds"), "int:" + std::to_string(kMin));
  EXPECT_EQ(d.events[0].timestamp, after(kMin, kNegativeBase));
  EXPECT_EQ(d.events[1].name, "trace footer");
}

TEST_F(PerfettoExtremeNumbersTest, ABaseTimeNearInt64MinKeepsEveryEventAtItsTime) {
  begin(kNegativeBase);
  sink_->write(event(Phase::Complete, kMin, 5));
  sink_->write(event(Phase::Instant, kNegativeBase + 7));
  sink_->write(event(Phase::Instant, kMax));  // more than INT64_MAX after the timebase
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 6u);  // header, begin, end, two instants, footer
  EXPECT_EQ(d.events[1].timestamp, 0u);
  EXPECT_EQ(d.events[2].timestamp, 5u);
  EXPECT_EQ(d.events[3].timestamp, after(kMin, kNegativeBase + 7));
  EXPECT_EQ(d.events[4].timestamp, after(kMin, kMax));
  EXPECT_EQ(d.events[4].timestamp, ~uint64_t{0});
  EXPECT_EQ(d.events[5].annotations, std::vector<A>{}) << "nothing dropped";
}

TEST_F(PerfettoExtremeNumbersTest, ABaseTimeAtInt64MaxDropsOnlyEarlierEventsAndCountsThem) {
  begin(kMax);
  sink_->write(event(Phase::Instant, kMin));
  sink_->write(event(Phase::Complete, 0, kMax));
  sink_->write(event(Phase::Instant, kMax));
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 3u);  // header, the last instant, footer
  EXPECT_EQ(d.events[1].timestamp, static_cast<uint64_t>(1'000'000'000));
  EXPECT_EQ(d.events[2].annotations,
            (std::vector<A>{{"kinetrace_pftrace_dropped_early_events", "int:2"}}));
}

TEST_F(PerfettoExtremeNumbersTest, ASliceEndingPastInt64MaxEndsThereAndIsCounted) {
  begin(0);
  sink_->write(event(Phase::Complete, kMax - 10, kMax));
  sink_->write(event(Phase::Complete, kMax - 10, 10));  // ends at INT64_MAX exactly
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 6u);
  EXPECT_EQ(d.events[2].type, 2u);  // TYPE_SLICE_END
  EXPECT_EQ(d.events[2].timestamp, after(-1'000'000'000, kMax));
  EXPECT_EQ(d.events[5].annotations,
            (std::vector<A>{{"kinetrace_pftrace_clamped_slice_ends", "int:1"}}));
}

TEST_F(PerfettoExtremeNumbersTest, ANegativeDurationFromInt64MinIsWrittenWithoutOverflow) {
  begin(kMin);
  sink_->write(event(Phase::Complete, kMin + 5, kMin));
  const Decoded d = finish();
  ASSERT_GE(d.events.size(), 2u);
  EXPECT_EQ(d.events[1].timestamp, 5u);
}

TEST_F(PerfettoExtremeNumbersTest, IdsAtTheEndsOfTheirTypesAreKept) {
  begin(0);
  Event flow = event(Phase::FlowStart, 10);
  flow.pid = kMin;
  flow.tid = kMax;
  flow.flowId = ~uint64_t{0};
  sink_->write(flow);
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 3u);
  EXPECT_EQ(d.events[1].legacyId, ~uint64_t{0});
  bool thread = false;
  for (const Descriptor& descriptor : d.descriptors) {
    if (!descriptor.thread) continue;
    thread = true;
    EXPECT_EQ(descriptor.tid, kMax);
  }
  EXPECT_TRUE(thread);
}

TEST_F(PerfettoExtremeNumbersTest, ArgumentsAtTheEndsOfTheirTypesAreKept) {
  begin(0);
  const Arg args[] = {{"min", kMin},
                      {"max", kMax},
                      {"umax", ~uint64_t{0}},
                      {"big", 1e300},
                      {"negativeZero", -0.0},
                      {"infinity", std::numeric_limits<double>::infinity()},
                      {"dim", Dim3{kMin, kMax, 0}},
                      {"empty", std::string_view()}};
  Event e = event(Phase::Instant, 10);
  e.category = std::string_view();  // no category: an empty view, whose data() is null
  e.args = args;
  e.argCount = std::size(args);
  sink_->write(e);
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 3u);
  EXPECT_EQ(d.events[1].category, "");
  EXPECT_EQ(d.events[1].annotations,
            (std::vector<A>{{"min", "int:" + std::to_string(kMin)},
                            {"max", "int:" + std::to_string(kMax)},
                            {"umax", "uint:18446744073709551615"},
                            {"big", "double:" + std::to_string(1e300)},
                            {"negativeZero", "double:" + std::to_string(-0.0)},
                            {"infinity", "double:inf"},
                            {"dim", "array:int:" + std::to_string(kMin) +
                                        ";int:" + std::to_string(kMax) + ";int:0;"},
                            {"empty", "string:"}}));
}

TEST_F(PerfettoExtremeNumbersTest, CounterValuesAtTheEndsOfTheirTypesAreKept) {
  begin(0);
  const Arg args[] = {
      {"min", kMin}, {"umax", ~uint64_t{0}}, {"nan", std::numeric_limits<double>::quiet_NaN()}};
  Event e = event(Phase::Counter, 10);
  e.args = args;
  e.argCount = std::size(args);
  sink_->write(e);
  const Decoded d = finish();
  ASSERT_EQ(d.events.size(), 5u);
  EXPECT_EQ(d.events[1].counter, static_cast<double>(kMin));
  EXPECT_EQ(d.events[2].counter, 18446744073709551615.0);
  EXPECT_TRUE(std::isnan(d.events[3].counter));
}

}  // namespace
}  // namespace kinetrace::detail
