#pragma once

// The state a .pftrace's packet sequences carry from packet to packet, followed as Perfetto's
// trace processor follows it: strings interned by id, the default track and clock (the
// sequence's incremental state, cleared when a packet says so), and the clocks its clock
// snapshots define, by which a packet's timestamp becomes a time on BOOTTIME.
//
// Separate from the reader because it is the one part of the format whose meaning depends on
// earlier packets: kept apart, its rules (what a clear forgets, how an incremental clock
// advances) can be checked packet by packet. Every table draws from the read budget.
// Malformed content throws kinetrace::Error saying what is wrong; the reader adds where.

#include <cstdint>
#include <string_view>

#include "analysis/read_budget.h"

namespace kinetrace::detail {

// What each part grows as, in the budget's refusals.
inline constexpr const char* kInternedStringsGrowth = ".pftrace interned strings";
inline constexpr const char* kSequencesGrowth = ".pftrace packet sequences";

// a + b in nanoseconds; throws kinetrace::Error when the sum leaves int64.
int64_t addTimes(int64_t a, int64_t b);
// `timestamp` units of `unitNs` nanoseconds, in nanoseconds; throws kinetrace::Error when
// the product leaves int64.
int64_t scaledTime(uint64_t timestamp, uint64_t unitNs);

// An incremental or offset clock of one packet sequence, as its last ClockSnapshot set it.
struct SequenceClock {
  bool incremental = false;
  uint64_t unitNs = 1;
  int64_t atSnapshotNs = 0;  // the clock's reading in the snapshot, in ns
  int64_t bootNs = 0;        // BOOTTIME's reading in the same snapshot
  int64_t lastNs = 0;        // an incremental clock's last reading
};

using InternTable = BudgetUnorderedMap<uint64_t, BudgetString>;

// What one packet sequence defined.
class SequenceState {
 public:
  explicit SequenceState(ReadBudget& budget);

  // SEQ_INCREMENTAL_STATE_CLEARED: interned strings and defaults are forgotten; the clocks
  // (set by snapshots, not incremental state) stay.
  void clearIncrementalState();
  // A TracePacketDefaults message: replaces the default clock and track.
  void applyDefaults(std::string_view bytes);
  // An InternedData message: its event names, categories, annotation names and string
  // values, each by its iid (a later entry of an iid replaces the earlier).
  void addInterned(std::string_view bytes);
  // A ClockSnapshot message: sequence clocks (ids 64 to 127) against BOOTTIME, the clock
  // kinetrace's times are on. A sequence clock without BOOTTIME beside it is an error.
  void applyClockSnapshot(std::string_view bytes);
  // A packet's time on BOOTTIME, which for kinetrace is nanoseconds after the timebase.
  // `clockId` 0 means the sequence's default clock; an incremental clock advances by it.
  int64_t packetTime(uint32_t clockId, uint64_t timestamp);

  // The string interned as `iid` in `table` (one of the four below); an id never interned
  // is an error naming `what` ("event name").
  static std::string_view interned(const InternTable& table, uint64_t iid, const char* what);

  InternTable names;
  InternTable categories;
  InternTable annotationNames;
  InternTable stringValues;  // odd ids: JSON texts
  bool hasDefaultTrack = false;
  uint64_t defaultTrack = 0;
  uint32_t defaultClock = 0;  // 0: none

 private:
  BudgetUnorderedMap<uint32_t, SequenceClock> clocks_;
};

// Every sequence of the file by its trusted_packet_sequence_id, made when first seen.
class PacketSequences {
 public:
  explicit PacketSequences(ReadBudget& budget);
  SequenceState& operator[](uint32_t id);

 private:
  ReadBudget& budget_;
  BudgetUnorderedMap<uint32_t, SequenceState> sequences_;
  // Packets come in runs of one sequence: the last one found is asked first.
  SequenceState* last_ = nullptr;
  uint32_t lastId_ = 0;
};

}  // namespace kinetrace::detail
