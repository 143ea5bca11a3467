// A .pftrace packet sequence's state: clocks placed on BOOTTIME by their snapshots, an
// incremental clock advancing, defaults, interned strings, and what a clear forgets.

#include "analysis/perfetto_sequences.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "kinetrace/error.h"
#include "output/perfetto_schema.h"
#include "proto_message.h"

namespace kinetrace::detail {
namespace {

using namespace pftrace;

struct ClockReading {
  uint32_t id;
  uint64_t timestamp;
  bool incremental = false;
  uint64_t unitNs = 0;  // 0: not written (1 ns)
};

std::string snapshotOf(std::initializer_list<ClockReading> clocks) {
  return protoMessage([&](proto::ProtoWriter& w) {
    for (const ClockReading& c : clocks) {
      const std::size_t clock = w.beginMessage(kSnapshotClocks);
      w.varint(kClockId, c.id);
      w.varint(kClockTimestamp, c.timestamp);
      if (c.incremental) w.boolean(kClockIsIncremental, true);
      if (c.unitNs != 0) w.varint(kClockUnitMultiplierNs, c.unitNs);
      w.endMessage(clock);
    }
  });
}

std::string internedNames(uint64_t iid, const std::string& name) {
  return protoMessage([&](proto::ProtoWriter& w) {
    const std::size_t entry = w.beginMessage(kInternedEventNames);
    w.varint(kInternedIid, iid);
    w.bytes(kInternedName, name);
    w.endMessage(entry);
  });
}

std::string defaultsOf(uint32_t clockId, uint64_t trackUuid) {
  return protoMessage([&](proto::ProtoWriter& w) {
    w.varint(kDefaultsTimestampClockId, clockId);
    const std::size_t track = w.beginMessage(kDefaultsTrackEvent);
    w.varint(kTrackEventDefaultsTrackUuid, trackUuid);
    w.endMessage(track);
  });
}

std::string errorOf(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PerfettoSequencesTest, ABoottimeTimestampIsTheTimeItself) {
  ReadBudget budget;
  SequenceState sequence(budget);
  EXPECT_EQ(sequence.packetTime(0, 123), 123);
  EXPECT_EQ(sequence.packetTime(kClockBoottime, 456), 456);
}

TEST(PerfettoSequencesTest, ASequenceClockIsPlacedOnBoottimeByItsSnapshot) {
  ReadBudget budget;
  SequenceState sequence(budget);
  // Clock 64 counts microseconds; it read 50 when BOOTTIME read 1,000 ns.
  sequence.applyClockSnapshot(snapshotOf({{kClockBoottime, 1'000}, {64, 50, false, 1'000}}));
  EXPECT_EQ(sequence.packetTime(64, 52), 3'000);
  EXPECT_EQ(sequence.packetTime(64, 52), 3'000);  // not incremental: the same reading
}

TEST(PerfettoSequencesTest, AnIncrementalClockAdvancesByEachTimestamp) {
  ReadBudget budget;
  SequenceState sequence(budget);
  sequence.applyClockSnapshot(snapshotOf({{kClockBoottime, 1'000}, {64, 0, true}}));
  EXPECT_EQ(sequence.packetTime(64, 10), 1'010);
  EXPECT_EQ(sequence.packetTime(64, 5), 1'015);
  // A new snapshot starts it again.
  sequence.applyClockSnapshot(snapshotOf({{kClockBoottime, 5'000}, {64, 0, true}}));
  EXPECT_EQ(sequence.packetTime(64, 1), 5'001);
}

TEST(PerfettoSequencesTest, TheDefaultClockTimesPacketsThatNameNone) {
  ReadBudget budget;
  SequenceState sequence(budget);
  sequence.applyClockSnapshot(snapshotOf({{kClockBoottime, 100}, {64, 0, true}}));
  sequence.applyDefaults(defaultsOf(64, 7));
  EXPECT_TRUE(sequence.hasDefaultTrack);
  EXPECT_EQ(sequence.defaultTrack, 7u);
  EXPECT_EQ(sequence.packetTime(0, 20), 120);
}

TEST(PerfettoSequencesTest, ClocksNoSnapshotDefinesAreErrors) {
  ReadBudget budget;
  SequenceState sequence(budget);
  EXPECT_EQ(errorOf([&] { sequence.packetTime(70, 1); }),
            "a timestamp on clock 70, which no clock snapshot on its sequence defines");
  EXPECT_EQ(errorOf([&] {
              sequence.applyClockSnapshot(snapshotOf({{64, 10}}));
            }),
            "a clock snapshot of clock 64 without BOOTTIME, which kinetrace's times are on");
}

TEST(PerfettoSequencesTest, AClearForgetsInternedStringsAndDefaultsButNotClocks) {
  ReadBudget budget;
  {
    SequenceState sequence(budget);
    sequence.applyClockSnapshot(snapshotOf({{kClockBoottime, 100}, {64, 0}}));
    sequence.applyDefaults(defaultsOf(64, 7));
    sequence.addInterned(internedNames(1, "step"));
    EXPECT_EQ(SequenceState::interned(sequence.names, 1, "event name"), "step");

    sequence.clearIncrementalState();
    EXPECT_FALSE(sequence.hasDefaultTrack);
    EXPECT_EQ(sequence.defaultClock, 0u);
    EXPECT_EQ(errorOf([&] { SequenceState::interned(sequence.names, 1, "event name"); }),
              "event name id 1 was never interned");
    EXPECT_EQ(sequence.packetTime(64, 5), 105);
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(PerfettoSequencesTest, ALaterEntryOfAnIidReplacesTheEarlier) {
  ReadBudget budget;
  SequenceState sequence(budget);
  sequence.addInterned(internedNames(3, std::string(200, 'x')));
  sequence.addInterned(internedNames(3, "short"));
  EXPECT_EQ(SequenceState::interned(sequence.names, 3, "event name"), "short");
}

TEST(PerfettoSequencesTest, EachSequenceIdHasItsOwnState) {
  ReadBudget budget;
  PacketSequences sequences(budget);
  sequences[1].addInterned(internedNames(1, "one"));
  sequences[2].addInterned(internedNames(1, "two"));
  EXPECT_EQ(SequenceState::interned(sequences[1].names, 1, "event name"), "one");
  EXPECT_EQ(SequenceState::interned(sequences[2].names, 1, "event name"), "two");
  EXPECT_EQ(&sequences[1], &sequences[1]);
}

TEST(PerfettoSequencesTest, TimesOutOfInt64AreErrorsNotWrapped) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(addTimes(kMax - 1, 1), kMax);
  EXPECT_EQ(errorOf([] { addTimes(kMax, 1); }),
            "a time out of the range of nanoseconds (9223372036854775807 + 1)");
  EXPECT_EQ(scaledTime(3, 1'000), 3'000);
  EXPECT_EQ(errorOf([] { scaledTime(uint64_t{1} << 62, 4); }),
            "a time out of the range of nanoseconds (4611686018427387904 units of 4 ns)");
}

}  // namespace
}  // namespace kinetrace::detail
