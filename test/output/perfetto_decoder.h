#pragma once

// A decoder of PerfettoSink's bytes for tests, with the field numbers of Perfetto's .proto
// files written as literals (trace_packet.proto, trace_packet_defaults.proto,
// clock_snapshot.proto, track_descriptor.proto, track_event.proto, debug_annotation.proto,
// interned_data.proto), independently of output/perfetto_schema.h: a wrong number there
// fails the tests. It resolves what Perfetto's trace processor resolves per packet
// sequence: interned strings, TracePacketDefaults (default track and clock) and incremental
// clocks.

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "output/atomic_file.h"
#include "output/protobuf.h"

namespace kinetrace::detail::pftrace_test {

using proto::ProtoField;
using proto::ProtoReader;

inline constexpr int64_t kBase = 1'750'000'000'000'000'000;
inline constexpr int64_t kLead = 1'000'000'000;  // packet times count from one second before kBase

class StringOutput : public ByteOutput {
 public:
  StringOutput(std::string* bytes, bool* committed) : bytes_(bytes), committed_(committed) {}
  void write(const char* data, std::size_t size) override { bytes_->append(data, size); }
  void commit() override { *committed_ = true; }

 private:
  std::string* bytes_;
  bool* committed_;
};

// All fields of a message by number, in order.
using Fields = std::multimap<uint32_t, ProtoField>;
inline Fields fieldsOf(std::string_view message) {
  Fields fields;
  ProtoReader reader(message);
  ProtoField field;
  while (reader.next(field)) fields.emplace(field.number, field);
  return fields;
}
inline const ProtoField* one(const Fields& fields, uint32_t number) {
  auto found = fields.find(number);
  return found == fields.end() ? nullptr : &found->second;
}

struct Descriptor {
  uint64_t uuid = 0;
  uint64_t parent = 0;
  std::string name;
  bool process = false, thread = false, counter = false;
  std::string counterUnit, counterCategory;  // CounterDescriptor's unit_name, categories
  int64_t pid = 0, tid = 0;
  std::string processOrThreadName;
};

struct DecodedEvent {
  uint64_t timestamp = 0;  // on BOOTTIME: nanoseconds after the timebase
  uint64_t type = 0;
  uint64_t track = 0;
  uint32_t sequence = 0;
  bool packetNamesTrack = false;  // track_uuid in the event, not from the defaults
  uint32_t clock = 0;             // the packet's timestamp_clock_id, 0 when absent
  uint64_t rawTimestamp = 0;      // the packet's timestamp field as written
  std::string name, category;
  std::vector<std::pair<std::string, std::string>> annotations;  // name, value as text
  std::vector<uint64_t> flowIds, terminatingFlowIds;
  int64_t legacyPhase = 0;  // TrackEvent.LegacyEvent: phase, unscoped_id, bind_to_enclosing
  uint64_t legacyId = 0;
  bool bindToEnclosing = false;
  double counter = 0;
};

// The file as Perfetto's trace processor sees it: descriptors and events, interned strings
// resolved, in file order.
struct Decoded {
  std::vector<Descriptor> descriptors;
  std::vector<DecodedEvent> events;
  int internedNames = 0;  // event names interned, over the whole file
  bool firstPacketClearsState = false;
  bool everyPacketHasASequence = true;
  bool everySequenceStartsCleared = true;  // its first packet clears its incremental state
  std::set<uint32_t> sequences;
};

// A packet sequence's state: interned strings and defaults (cleared with the incremental
// state) and its clocks (set by clock snapshots).
struct SequenceState {
  std::map<uint64_t, std::string> names, categories, annotationNames, stringValues;
  bool hasDefaultTrack = false;
  uint64_t defaultTrack = 0;
  uint32_t defaultClock = 0;
  struct Clock {
    bool incremental = false;
    // Modulo 2^64, as trace processor's unsigned times: a timebase at INT64_MIN puts
    // times past INT64_MAX.
    uint64_t atSnapshot = 0, boottime = 0, last = 0;
  };
  std::map<uint32_t, Clock> clocks;
};

inline std::string annotationValue(const Fields& a,
                                   const std::map<uint64_t, std::string>& stringValues) {
  if (auto* f = one(a, 4)) return "int:" + std::to_string(f->asInt64());
  if (auto* f = one(a, 3)) return "uint:" + std::to_string(f->value);
  if (auto* f = one(a, 5)) return "double:" + std::to_string(f->asDouble());
  if (auto* f = one(a, 2)) return f->value ? "bool:true" : "bool:false";
  if (auto* f = one(a, 6)) return "string:" + std::string(f->bytes);
  if (auto* f = one(a, 9)) return "json:" + std::string(f->bytes);
  if (auto* f = one(a, 17)) {  // interned: odd ids JSON, even ids strings
    return (f->value % 2 == 1 ? "json:" : "string:") + stringValues.at(f->value);
  }
  std::string array = "array:";
  for (auto [it, end] = a.equal_range(12); it != end; ++it) {
    array += annotationValue(fieldsOf(it->second.bytes), stringValues) + ";";
  }
  return array;
}

// TracePacketDefaults (59): timestamp_clock_id (58), track_event_defaults (11) with
// track_uuid (11).
inline void readDefaults(SequenceState& state, std::string_view bytes) {
  const Fields defaults = fieldsOf(bytes);
  state.defaultClock = one(defaults, 58) ? static_cast<uint32_t>(one(defaults, 58)->value) : 0;
  state.hasDefaultTrack = false;
  if (auto* eventDefaults = one(defaults, 11)) {
    const Fields e = fieldsOf(eventDefaults->bytes);
    if (auto* track = one(e, 11)) {
      state.hasDefaultTrack = true;
      state.defaultTrack = track->value;
    }
  }
}

// ClockSnapshot (6): clocks (1), each clock_id (1), timestamp (2), is_incremental (3).
inline void readSnapshot(SequenceState& state, std::string_view bytes) {
  std::map<uint32_t, std::pair<uint64_t, bool>> readings;
  for (const auto& [number, clock] : fieldsOf(bytes)) {
    if (number != 1) continue;
    const Fields c = fieldsOf(clock.bytes);
    const bool incremental = one(c, 3) != nullptr && one(c, 3)->value != 0;
    readings[static_cast<uint32_t>(one(c, 1)->value)] = {one(c, 2) ? one(c, 2)->value : 0,
                                                         incremental};
  }
  EXPECT_EQ(readings.count(6), 1u) << "a snapshot ties the sequence's clocks to BOOTTIME (6)";
  for (const auto& [id, reading] : readings) {
    if (id == 6) continue;
    EXPECT_GE(id, 64u) << "a clock of the sequence";
    EXPECT_LE(id, 127u) << "a clock of the sequence";
    state.clocks[id] = {reading.second, reading.first, readings[6].first, reading.first};
  }
}

// The packet's time on BOOTTIME, as trace processor converts it.
inline uint64_t packetTime(SequenceState& state, uint32_t clockId, uint64_t timestamp) {
  if (clockId == 0) clockId = state.defaultClock;
  if (clockId == 0 || clockId == 6) return timestamp;
  auto found = state.clocks.find(clockId);
  EXPECT_NE(found, state.clocks.end()) << "clock " << clockId << " has no snapshot";
  if (found == state.clocks.end()) return 0;
  SequenceState::Clock& clock = found->second;
  if (!clock.incremental) {
    return timestamp - clock.atSnapshot + clock.boottime;
  }
  clock.last += timestamp;
  return clock.last - clock.atSnapshot + clock.boottime;
}

inline Decoded decode(const std::string& file) {
  Decoded out;
  std::map<uint32_t, SequenceState> sequences;
  bool first = true;
  for (const auto& [number, packetField] : fieldsOf(file)) {
    EXPECT_EQ(number, 1u) << "a Trace holds only packets (field 1)";
    const Fields packet = fieldsOf(packetField.bytes);
    auto* flags = one(packet, 13);
    const bool cleared = flags != nullptr && (flags->value & 1) != 0;
    if (first) {
      out.firstPacketClearsState = cleared;
      first = false;
    }
    auto* sequenceField = one(packet, 10);
    if (sequenceField == nullptr) {
      out.everyPacketHasASequence = false;
      continue;
    }
    const auto sequenceId = static_cast<uint32_t>(sequenceField->value);
    if (out.sequences.insert(sequenceId).second && !cleared) {
      out.everySequenceStartsCleared = false;
    }
    SequenceState& state = sequences[sequenceId];
    if (cleared) {
      auto clocks = std::move(state.clocks);
      state = SequenceState{};
      state.clocks = std::move(clocks);
    }
    if (auto* defaults = one(packet, 59)) readDefaults(state, defaults->bytes);
    if (auto* interned = one(packet, 12)) {
      for (const auto& [kind, entry] : fieldsOf(interned->bytes)) {
        const Fields e = fieldsOf(entry.bytes);
        auto& table = kind == 1    ? state.categories
                      : kind == 2  ? state.names
                      : kind == 29 ? state.stringValues  // debug_annotation_string_values
                                   : state.annotationNames;
        table[one(e, 1)->value] = std::string(one(e, 2)->bytes);
        if (kind == 2) ++out.internedNames;
      }
    }
    if (auto* snapshot = one(packet, 6)) readSnapshot(state, snapshot->bytes);
    if (auto* track = one(packet, 60)) {
      const Fields t = fieldsOf(track->bytes);
      Descriptor d;
      d.uuid = one(t, 1)->value;
      if (auto* parent = one(t, 5)) d.parent = parent->value;
      if (auto* name = one(t, 2)) d.name = std::string(name->bytes);
      if (auto* process = one(t, 3)) {
        const Fields p = fieldsOf(process->bytes);
        d.process = true;
        d.pid = static_cast<int32_t>(one(p, 1)->value);
        if (auto* n = one(p, 6)) d.processOrThreadName = std::string(n->bytes);
      }
      if (auto* thread = one(t, 4)) {
        const Fields th = fieldsOf(thread->bytes);
        d.thread = true;
        d.pid = static_cast<int32_t>(one(th, 1)->value);
        d.tid = one(th, 2)->asInt64();
        if (auto* n = one(th, 5)) d.processOrThreadName = std::string(n->bytes);
      }
      if (auto* counter = one(t, 8)) {
        d.counter = true;
        const Fields c = fieldsOf(counter->bytes);
        if (auto* unit = one(c, 6)) d.counterUnit = std::string(unit->bytes);
        if (auto* category = one(c, 2)) d.counterCategory = std::string(category->bytes);
      }
      out.descriptors.push_back(d);
    }
    if (auto* event = one(packet, 11)) {
      const Fields e = fieldsOf(event->bytes);
      DecodedEvent d;
      d.sequence = sequenceId;
      d.rawTimestamp = one(packet, 8)->value;
      d.clock = one(packet, 58) ? static_cast<uint32_t>(one(packet, 58)->value) : 0;
      d.timestamp = packetTime(state, d.clock, d.rawTimestamp);
      if (auto* type = one(e, 9)) d.type = type->value;
      if (auto* legacy = one(e, 6)) {
        const Fields l = fieldsOf(legacy->bytes);
        if (auto* v = one(l, 2)) d.legacyPhase = v->asInt64();
        if (auto* v = one(l, 6)) d.legacyId = v->value;
        if (auto* v = one(l, 12)) d.bindToEnclosing = v->value != 0;
      }
      d.packetNamesTrack = one(e, 11) != nullptr;
      EXPECT_TRUE(d.packetNamesTrack || state.hasDefaultTrack) << "an event with no track";
      d.track = d.packetNamesTrack ? one(e, 11)->value : state.defaultTrack;
      if (auto* n = one(e, 10)) d.name = state.names.at(n->value);
      if (auto* n = one(e, 23)) d.name = std::string(n->bytes);
      if (auto* c = one(e, 3)) d.category = state.categories.at(c->value);
      if (auto* c = one(e, 22)) d.category = std::string(c->bytes);
      for (auto [it, end] = e.equal_range(4); it != end; ++it) {
        const Fields a = fieldsOf(it->second.bytes);
        std::string name =
            one(a, 1) ? state.annotationNames.at(one(a, 1)->value) : std::string(one(a, 10)->bytes);
        d.annotations.emplace_back(name, annotationValue(a, state.stringValues));
      }
      for (uint32_t field : {36u, 47u}) {  // flow_ids_old (varint), flow_ids (fixed64)
        for (auto [it, end] = e.equal_range(field); it != end; ++it) {
          d.flowIds.push_back(it->second.value);
        }
      }
      for (uint32_t field : {42u, 48u}) {  // terminating_flow_ids_old, terminating_flow_ids
        for (auto [it, end] = e.equal_range(field); it != end; ++it) {
          d.terminatingFlowIds.push_back(it->second.value);
        }
      }
      if (auto* v = one(e, 44)) d.counter = v->asDouble();
      if (auto* v = one(e, 30)) d.counter = static_cast<double>(v->asInt64());
      out.events.push_back(d);
    }
  }
  return out;
}

}  // namespace kinetrace::detail::pftrace_test
