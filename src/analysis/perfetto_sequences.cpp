#include "analysis/perfetto_sequences.h"

#include <fmt/format.h>

#include <limits>
#include <vector>

#include "kinetrace/error.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"

namespace kinetrace::detail {

using proto::ProtoField;
using proto::ProtoReader;
using namespace pftrace;

int64_t addTimes(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    throw Error(fmt::format("a time out of the range of nanoseconds ({} + {})", a, b));
  }
  return sum;
}

int64_t scaledTime(uint64_t timestamp, uint64_t unitNs) {
  uint64_t ns = 0;
  if (__builtin_mul_overflow(timestamp, unitNs, &ns) ||
      ns > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw Error(fmt::format("a time out of the range of nanoseconds ({} units of {} ns)", timestamp,
                            unitNs));
  }
  return static_cast<int64_t>(ns);
}

SequenceState::SequenceState(ReadBudget& budget)
    : names(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
            BudgetAllocator<char>(budget, kInternedStringsGrowth)),
      categories(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
                 BudgetAllocator<char>(budget, kInternedStringsGrowth)),
      annotationNames(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
                      BudgetAllocator<char>(budget, kInternedStringsGrowth)),
      stringValues(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
                   BudgetAllocator<char>(budget, kInternedStringsGrowth)),
      clocks_(0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
              BudgetAllocator<char>(budget, kSequencesGrowth)) {}

void SequenceState::clearIncrementalState() {
  names.clear();
  categories.clear();
  annotationNames.clear();
  stringValues.clear();
  hasDefaultTrack = false;
  defaultTrack = 0;
  defaultClock = 0;
}

void SequenceState::applyDefaults(std::string_view bytes) {
  hasDefaultTrack = false;
  defaultClock = 0;
  ProtoReader reader(bytes);
  ProtoField field;
  while (reader.next(field)) {
    if (field.number == kDefaultsTimestampClockId) {
      defaultClock = static_cast<uint32_t>(field.value);
    } else if (field.number == kDefaultsTrackEvent) {
      ProtoReader eventDefaults(field.bytes);
      ProtoField part;
      while (eventDefaults.next(part)) {
        if (part.number == kTrackEventDefaultsTrackUuid) {
          hasDefaultTrack = true;
          defaultTrack = part.value;
        }
      }
    }
  }
}

void SequenceState::addInterned(std::string_view bytes) {
  ReadBudget& budget = names.get_allocator().budget();
  ProtoReader reader(bytes);
  ProtoField field;
  while (reader.next(field)) {
    InternTable* table = nullptr;
    if (field.number == kInternedEventNames) table = &names;
    if (field.number == kInternedCategories) table = &categories;
    if (field.number == kInternedAnnotationNames) table = &annotationNames;
    if (field.number == kInternedStringValues) table = &stringValues;
    if (table == nullptr) continue;
    ProtoReader entry(field.bytes);
    ProtoField part;
    uint64_t iid = 0;
    std::string_view name;
    while (entry.next(part)) {
      if (part.number == kInternedIid) iid = part.value;
      if (part.number == kInternedName) name = part.bytes;
    }
    BudgetString& slot =
        table->try_emplace(iid, BudgetAllocator<char>(budget, kInternedStringsGrowth))
            .first->second;
    slot.assign(name.data(), name.size());
    if (slot.capacity() > 2 * slot.size() + 15) slot.shrink_to_fit();  // a long one replaced
  }
}

void SequenceState::applyClockSnapshot(std::string_view bytes) {
  struct Reading {
    uint32_t id = 0;
    uint64_t timestamp = 0;
    bool incremental = false;
    uint64_t unitNs = 1;
  };
  std::vector<Reading> readings;
  bool hasBoottime = false;
  int64_t bootNs = 0;
  ProtoReader reader(bytes);
  ProtoField field;
  while (reader.next(field)) {
    if (field.number != kSnapshotClocks) continue;
    Reading r;
    ProtoReader clock(field.bytes);
    ProtoField part;
    while (clock.next(part)) {
      if (part.number == kClockId) r.id = static_cast<uint32_t>(part.value);
      if (part.number == kClockTimestamp) r.timestamp = part.value;
      if (part.number == kClockIsIncremental) r.incremental = part.value != 0;
      if (part.number == kClockUnitMultiplierNs && part.value != 0) r.unitNs = part.value;
    }
    if (r.id == kClockBoottime) {
      hasBoottime = true;
      bootNs = scaledTime(r.timestamp, r.unitNs);
    } else {
      readings.push_back(r);
    }
  }
  for (const Reading& r : readings) {
    if (r.id < kFirstSequenceClock || r.id > kLastSequenceClock) continue;  // not used
    if (!hasBoottime) {
      throw Error(
          fmt::format("a clock snapshot of clock {} without BOOTTIME, which kinetrace's "
                      "times are on",
                      r.id));
    }
    SequenceClock& clock = clocks_[r.id];
    clock.incremental = r.incremental;
    clock.unitNs = r.unitNs;
    clock.atSnapshotNs = scaledTime(r.timestamp, r.unitNs);
    clock.bootNs = bootNs;
    clock.lastNs = clock.atSnapshotNs;
  }
}

int64_t SequenceState::packetTime(uint32_t clockId, uint64_t timestamp) {
  if (clockId == 0) clockId = defaultClock;
  if (clockId == 0 || clockId == kClockBoottime) return scaledTime(timestamp, 1);
  auto found = clocks_.find(clockId);
  if (found == clocks_.end()) {
    throw Error(
        fmt::format("a timestamp on clock {}, which no clock snapshot on its sequence "
                    "defines",
                    clockId));
  }
  SequenceClock& clock = found->second;
  const int64_t ns = scaledTime(timestamp, clock.unitNs);
  if (clock.incremental) {
    clock.lastNs = addTimes(clock.lastNs, ns);
    return addTimes(addTimes(clock.lastNs, -clock.atSnapshotNs), clock.bootNs);
  }
  return addTimes(addTimes(ns, -clock.atSnapshotNs), clock.bootNs);
}

std::string_view SequenceState::interned(const InternTable& table, uint64_t iid, const char* what) {
  auto found = table.find(iid);
  if (found == table.end()) throw Error(fmt::format("{} id {} was never interned", what, iid));
  return viewOf(found->second);
}

PacketSequences::PacketSequences(ReadBudget& budget)
    : budget_(budget),
      sequences_(0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
                 BudgetAllocator<char>(budget, kSequencesGrowth)) {}

SequenceState& PacketSequences::operator[](uint32_t id) {
  if (last_ == nullptr || id != lastId_) {
    // unordered_map references survive rehashing
    last_ = &sequences_.try_emplace(id, budget_).first->second;
    lastId_ = id;
  }
  return *last_;
}

}  // namespace kinetrace::detail
