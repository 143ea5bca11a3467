// Reads a .pftrace that PerfettoSink wrote back into the sink stream, event for event: the
// inverse of the mapping in output/perfetto_sink.h. Packet sequences are followed as
// Perfetto's trace processor follows them: interned strings and defaults per sequence,
// cleared with its incremental state; times on the sequence's clocks turned into BOOTTIME.
//
// What grows with the file draws from the read budget: the packet being read, the packets
// compressed_packets inflate to, the sequences and their interned strings, the tracks, the
// slices begun and not yet ended (those past half the budget are counted instead), and the
// header's and footer's metadata.

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/byte_source.h"
#include "analysis/trace_reader.h"
#include "kinetrace/error.h"
#include "output/perfetto_compression.h"
#include "output/perfetto_layout.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"
#include "output/value_json.h"

namespace kinetrace::detail {
namespace {

using proto::ProtoField;
using proto::ProtoReader;
using proto::WireType;
using namespace pftrace;

// A packet larger than this is not from PerfettoSink (its packets hold one event).
constexpr uint64_t kMaxPacketBytes = uint64_t{64} << 20;

constexpr const char* kInternedStrings = ".pftrace interned strings";
constexpr const char* kTracks = "tracks";
constexpr const char* kOpenSlices = "open slices";
constexpr const char* kSequences = ".pftrace packet sequences";
constexpr const char* kPackets = ".pftrace packets";
constexpr const char* kTopLevelMetadata = "top-level metadata";

struct TrackInfo {
  explicit TrackInfo(ReadBudget& budget)
      : name(BudgetAllocator<char>(budget, kTracks)),
        unit(BudgetAllocator<char>(budget, kTracks)),
        category(BudgetAllocator<char>(budget, kTracks)) {}
  enum class Kind { Other, Process, Thread, Counter } kind = Kind::Other;
  int64_t pid = 0;
  int64_t tid = 0;
  uint64_t parent = 0;
  BudgetString name;
  // A counter's unit and category, when its writer gave them (a GPU metric's): its values
  // are read back as a series keyed by the unit, as the JSON trace has them.
  BudgetString unit;
  BudgetString category;
};

std::string_view viewOf(const BudgetString& text) {
  return std::string_view(text.data(), text.size());
}

// A debug annotation, decoded.
struct Annotation {
  std::string name;
  enum class Kind { None, Int, Uint, Double, Bool, String, Json, Dim3 } kind = Kind::None;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  bool b = false;
  std::string text;  // String and Json
  Dim3 dim;
};

// A decoded TrackEvent with its strings owned (a BEGIN waits for its END).
struct DecodedEvent {
  uint64_t type = 0;
  uint64_t track = 0;
  int64_t timeNs = 0;
  std::string name;
  std::string category;
  std::vector<Annotation> annotations;
  std::vector<uint64_t> flowIds;
  std::vector<uint64_t> terminatingFlowIds;
  int64_t legacyPhase = 0;  // a flow event's 's' or 'f' (layout 3)
  uint64_t legacyId = 0;
  bool hasCounter = false;
  bool counterIsDouble = false;
  int64_t counterInt = 0;
  double counterDouble = 0;
};

// An incremental or offset clock of one packet sequence, as its last ClockSnapshot set it.
struct SequenceClock {
  bool incremental = false;
  uint64_t unitNs = 1;
  int64_t atSnapshotNs = 0;  // the clock's reading in the snapshot, in ns
  int64_t bootNs = 0;        // BOOTTIME's reading in the same snapshot
  int64_t lastNs = 0;        // an incremental clock's last reading
};

using InternTable = BudgetUnorderedMap<uint64_t, BudgetString>;

// What a packet sequence defined: interned strings and defaults (incremental state,
// cleared by SEQ_INCREMENTAL_STATE_CLEARED) and its clocks (set by clock snapshots).
struct SequenceState {
  explicit SequenceState(ReadBudget& budget)
      : names(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
              BudgetAllocator<char>(budget, kInternedStrings)),
        categories(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
                   BudgetAllocator<char>(budget, kInternedStrings)),
        annotationNames(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
                        BudgetAllocator<char>(budget, kInternedStrings)),
        stringValues(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
                     BudgetAllocator<char>(budget, kInternedStrings)),
        clocks(0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
               BudgetAllocator<char>(budget, kSequences)) {}
  InternTable names;
  InternTable categories;
  InternTable annotationNames;
  InternTable stringValues;  // odd ids: JSON texts
  bool hasDefaultTrack = false;
  uint64_t defaultTrack = 0;
  uint32_t defaultClock = 0;  // 0: none
  BudgetUnorderedMap<uint32_t, SequenceClock> clocks;

  void clearIncrementalState() {
    names.clear();
    categories.clear();
    annotationNames.clear();
    stringValues.clear();
    hasDefaultTrack = false;
    defaultTrack = 0;
    defaultClock = 0;
  }
};

class PerfettoReader {
 public:
  PerfettoReader(const std::string& path, Sink& sink, std::string traceName, ReadReport& report,
                 ByteSource& source, ReadBudget& budget)
      : path_(path),
        sink_(sink),
        report_(report),
        source_(source),
        budget_(budget),
        metadataHold_(budget),
        sequences_(0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
                   BudgetAllocator<char>(budget, kSequences)),
        tracks_(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
                BudgetAllocator<char>(budget, kTracks)),
        open_(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
              BudgetAllocator<char>(budget, kOpenSlices)),
        openBudgetBytes_(budget.cap() / 2) {
    header_.traceName = std::move(traceName);
  }
  ~PerfettoReader() { budget_.giveBack(openTaken_); }

  // One TracePacket's bytes; `offset` is where it starts in the file, for messages.
  void packet(std::string_view bytes, uint64_t offset) {
    offset_ = offset;
    try {
      decodePacket(bytes, 0);
    } catch (const BudgetRefusal& refusal) {
      throw BudgetRefusal(refusal.file(),
                          fmt::format("packet at byte {}: {}", offset_, refusal.whatGrew()),
                          refusal.capBytes());
    } catch (const Error& error) {
      throw Error(fmt::format("{}: packet at byte {}: {}", path_, offset_, error.what()));
    }
  }

  void finish() {
    if (!begun_) throw Error(fmt::format("{} holds no trace header: {}", path_, kNotOurs));
    if (!ended_) {
      throw Error(fmt::format("{} ends before the trace footer (is the file truncated?)", path_));
    }
    // Slices begun and never ended have no duration: counted, in the report and in the
    // trace written, never dropped silently.
    uint64_t unended = 0;
    for (const auto& [uuid, stack] : open_) {
      for (const OpenSlice& slice : stack) unended += slice.leftOut + (slice.kept ? 1 : 0);
    }
    if (unended > 0) {
      report_.skipped[kUnendedSlices] += unended;
      footer_.push_back({"kinetrace_unended_slices", Value(static_cast<int64_t>(unended))});
    }
    sink_.end(footer_);
  }

 private:
  static constexpr const char* kNotOurs =
      "kinetrace reads the .pftrace files kinetrace writes (a trace recorded by Perfetto "
      "itself opens in Perfetto's UI or trace processor)";

  static constexpr const char* kUnendedSlices = "slices that began and never ended";

  [[noreturn]] void fail(const std::string& what) const { throw Error(what); }

  int64_t addTimes(int64_t a, int64_t b) const {
    int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum)) {
      fail(fmt::format("a time out of the range of nanoseconds ({} + {})", a, b));
    }
    return sum;
  }
  int64_t scaledTime(uint64_t timestamp, uint64_t unitNs) const {
    uint64_t ns = 0;
    if (__builtin_mul_overflow(timestamp, unitNs, &ns) ||
        ns > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(fmt::format("a time out of the range of nanoseconds ({} units of {} ns)", timestamp,
                       unitNs));
    }
    return static_cast<int64_t>(ns);
  }

  // In Perfetto's order: a cleared state, then the defaults, the interned data and a clock
  // snapshot; then the packet's time, which may depend on all of them.
  void decodePacket(std::string_view bytes, std::size_t depth) {
    ProtoReader packet(bytes);
    ProtoField field;
    bool hasTimestamp = false;
    uint64_t timestamp = 0;
    uint32_t clockId = 0;
    uint32_t sequenceId = 0;
    bool cleared = false;
    std::string_view trackEvent;
    std::string_view descriptor;
    std::string_view interned;
    std::string_view defaults;
    std::string_view snapshot;
    std::string_view compressed;
    while (packet.next(field)) {
      switch (field.number) {
        case kPacketCompressedPackets:
          compressed = field.bytes;
          break;
        case kPacketTimestamp:
          hasTimestamp = true;
          timestamp = field.value;
          break;
        case kPacketTimestampClockId:
          clockId = static_cast<uint32_t>(field.value);
          break;
        case kPacketSequenceId:
          sequenceId = static_cast<uint32_t>(field.value);
          break;
        case kPacketSequenceFlags:
          cleared = cleared || (field.value & kSeqIncrementalStateCleared) != 0;
          break;
        case kPacketStateCleared:
          cleared = cleared || field.value != 0;
          break;
        case kPacketTrackEvent:
          trackEvent = field.bytes;
          break;
        case kPacketTrackDescriptor:
          descriptor = field.bytes;
          break;
        case kPacketInternedData:
          interned = field.bytes;
          break;
        case kPacketTracePacketDefaults:
          defaults = field.bytes;
          break;
        case kPacketClockSnapshot:
          snapshot = field.bytes;
          break;
        default:
          break;
      }
    }
    if (!compressed.empty()) {
      if (depth >= kMaxCompressedDepth) {
        fail(
            fmt::format("compressed packets nested more than {} levels deep", kMaxCompressedDepth));
      }
      compressedPackets(compressed, depth + 1);
      return;
    }
    SequenceState& sequence = sequenceState(sequenceId);
    if (cleared) sequence.clearIncrementalState();
    if (!defaults.empty()) packetDefaults(sequence, defaults);
    if (!interned.empty()) internedData(sequence, interned);
    if (!snapshot.empty()) clockSnapshot(sequence, snapshot);
    int64_t timeNs = 0;  // after the timebase
    if (hasTimestamp) timeNs = packetTime(sequence, clockId, timestamp);
    if (!descriptor.empty()) trackDescriptor(descriptor);
    if (!trackEvent.empty()) {
      if (!hasTimestamp) fail("a track event without a timestamp");
      event(sequence, trackEvent, timeNs);
    }
  }

  // The packets a compressed_packets field holds, read in order as if they stood here.
  // What they inflate to, at every level of nesting together, stays within
  // kMaxInflationRatio times the file read so far: nested, each level's packets could
  // inflate as much again, and the work would grow as the ratio to the power of the depth.
  // Each inflation counts as at least kMinInflationBytes: starting zlib costs that much.
  void compressedPackets(std::string_view compressed, std::size_t depth) {
    const uint64_t allowed =
        kInflationAllowanceBytes + kMaxInflationRatio * source_.consumedBytes();
    inflatedBytes_ += kMinInflationBytes;
    if (inflatedBytes_ > allowed) inflatedTooMuch();
    const uint64_t byRatio = allowed - inflatedBytes_ + kMinInflationBytes;
    // Growing, the inflated packets' buffer holds its old and new room at once: it may take
    // half of what the budget has left.
    const uint64_t byBudget = budget_.left() / 2;
    const uint64_t limit = std::min<uint64_t>({kMaxPacketBytes, byRatio, byBudget});
    std::optional<std::string> inflated =
        inflatePacketsUpTo(compressed, static_cast<std::size_t>(limit));
    if (!inflated) {
      if (limit == byRatio) inflatedTooMuch();
      if (limit == byBudget) budget_.refuse(kPackets);
      fail(
          fmt::format("compressed packets inflate to more than {} bytes, more than a kinetrace "
                      "trace's packets hold",
                      limit));
    }
    const std::string packets = std::move(*inflated);
    inflatedBytes_ += packets.size() > kMinInflationBytes ? packets.size() - kMinInflationBytes : 0;
    BudgetHold hold(budget_);
    hold.take(packets.capacity() + kAllocationOverheadBytes, kPackets);
    std::string_view rest = packets;
    while (!rest.empty()) {
      uint64_t key = 0;
      uint64_t length = 0;
      const std::size_t keyBytes = proto::readVarint(rest, &key);
      const std::size_t lengthBytes =
          keyBytes == 0 ? 0 : proto::readVarint(rest.substr(keyBytes), &length);
      if (keyBytes == 0 || lengthBytes == 0 || key != ((uint64_t{kTracePacket} << 3) | 2) ||
          length > rest.size() - keyBytes - lengthBytes) {
        fail("compressed packets that are not whole trace packets");
      }
      decodePacket(rest.substr(keyBytes + lengthBytes, static_cast<std::size_t>(length)), depth);
      rest.remove_prefix(keyBytes + lengthBytes + static_cast<std::size_t>(length));
    }
  }

  [[noreturn]] void inflatedTooMuch() const {
    fail(fmt::format(
        "compressed packets inflate to more than {} times the {} bytes of the file read so "
        "far (with nesting, at every level together): more than deflate's own limit allows, "
        "so not packets kinetrace wrote",
        kMaxInflationRatio, source_.consumedBytes()));
  }

  SequenceState& sequenceState(uint32_t id) {
    if (lastSequence_ == nullptr || id != lastSequenceId_) {
      // unordered_map references survive rehashing
      lastSequence_ = &sequences_.try_emplace(id, budget_).first->second;
      lastSequenceId_ = id;
    }
    return *lastSequence_;
  }

  void packetDefaults(SequenceState& sequence, std::string_view bytes) {
    sequence.hasDefaultTrack = false;
    sequence.defaultClock = 0;
    ProtoReader reader(bytes);
    ProtoField field;
    while (reader.next(field)) {
      if (field.number == kDefaultsTimestampClockId) {
        sequence.defaultClock = static_cast<uint32_t>(field.value);
      } else if (field.number == kDefaultsTrackEvent) {
        ProtoReader eventDefaults(field.bytes);
        ProtoField part;
        while (eventDefaults.next(part)) {
          if (part.number == kTrackEventDefaultsTrackUuid) {
            sequence.hasDefaultTrack = true;
            sequence.defaultTrack = part.value;
          }
        }
      }
    }
  }

  // Sequence clocks (ids 64 to 127) against BOOTTIME, the clock kinetrace's times are on.
  void clockSnapshot(SequenceState& sequence, std::string_view bytes) {
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
        fail(
            fmt::format("a clock snapshot of clock {} without BOOTTIME, which kinetrace's "
                        "times are on",
                        r.id));
      }
      SequenceClock& clock = sequence.clocks[r.id];
      clock.incremental = r.incremental;
      clock.unitNs = r.unitNs;
      clock.atSnapshotNs = scaledTime(r.timestamp, r.unitNs);
      clock.bootNs = bootNs;
      clock.lastNs = clock.atSnapshotNs;
    }
  }

  // A packet's time on BOOTTIME, which for kinetrace is nanoseconds after the timebase.
  int64_t packetTime(SequenceState& sequence, uint32_t clockId, uint64_t timestamp) {
    if (clockId == 0) clockId = sequence.defaultClock;
    if (clockId == 0 || clockId == kClockBoottime) return scaledTime(timestamp, 1);
    auto found = sequence.clocks.find(clockId);
    if (found == sequence.clocks.end()) {
      fail(
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

  void internedData(SequenceState& sequence, std::string_view bytes) {
    ProtoReader reader(bytes);
    ProtoField field;
    while (reader.next(field)) {
      InternTable* table = nullptr;
      if (field.number == kInternedEventNames) table = &sequence.names;
      if (field.number == kInternedCategories) table = &sequence.categories;
      if (field.number == kInternedAnnotationNames) table = &sequence.annotationNames;
      if (field.number == kInternedStringValues) table = &sequence.stringValues;
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
          table->try_emplace(iid, BudgetAllocator<char>(budget_, kInternedStrings)).first->second;
      slot.assign(name.data(), name.size());
      if (slot.capacity() > 2 * slot.size() + 15) slot.shrink_to_fit();  // a long one replaced
    }
  }

  void trackDescriptor(std::string_view bytes) {
    ProtoReader reader(bytes);
    ProtoField field;
    uint64_t uuid = 0;
    TrackInfo info(budget_);
    while (reader.next(field)) {
      switch (field.number) {
        case kTrackUuid:
          uuid = field.value;
          break;
        case kTrackParentUuid:
          info.parent = field.value;
          break;
        case kTrackName:
          info.name.assign(field.bytes.data(), field.bytes.size());
          break;
        case kTrackProcess: {
          info.kind = TrackInfo::Kind::Process;
          ProtoReader process(field.bytes);
          ProtoField part;
          while (process.next(part)) {
            // int32 in Perfetto's schema; kinetrace writes any int64 pid as a varint.
            if (part.number == kProcessPid) info.pid = part.asInt64();
          }
          break;
        }
        case kTrackThread: {
          info.kind = TrackInfo::Kind::Thread;
          ProtoReader thread(field.bytes);
          ProtoField part;
          while (thread.next(part)) {
            if (part.number == kThreadPid) info.pid = part.asInt64();
            if (part.number == kThreadTid) info.tid = part.asInt64();
          }
          break;
        }
        case kTrackCounter: {
          info.kind = TrackInfo::Kind::Counter;
          ProtoReader counter(field.bytes);
          ProtoField part;
          while (counter.next(part)) {
            if (part.number == kCounterUnitName)
              info.unit.assign(part.bytes.data(), part.bytes.size());
            if (part.number == kCounterCategories) {
              info.category.assign(part.bytes.data(), part.bytes.size());
            }
          }
          break;
        }
        default:
          break;
      }
    }
    // A lane of a thread track (a child track with no descriptor of its own): its events
    // are the thread's.
    if (info.kind == TrackInfo::Kind::Other && info.parent != 0) {
      auto parent = tracks_.find(info.parent);
      if (parent != tracks_.end() && parent->second.kind == TrackInfo::Kind::Thread) {
        info.kind = TrackInfo::Kind::Thread;
        info.pid = parent->second.pid;
        info.tid = parent->second.tid;
      }
    }
    auto found = tracks_.find(uuid);
    if (found == tracks_.end()) {
      tracks_.emplace(uuid, std::move(info));
    } else {
      found->second = std::move(info);
    }
  }

  std::string_view interned(const InternTable& table, uint64_t iid, const char* what) const {
    auto found = table.find(iid);
    if (found == table.end()) fail(fmt::format("{} id {} was never interned", what, iid));
    return viewOf(found->second);
  }

  Annotation annotation(const SequenceState& sequence, std::string_view bytes,
                        std::size_t depth = 0) const {
    if (depth >= kMaxProtoDepth) {
      fail(fmt::format("a debug annotation nested more than {} levels deep", kMaxProtoDepth));
    }
    Annotation a;
    ProtoReader reader(bytes);
    ProtoField field;
    std::vector<int64_t> array;
    bool arrayOfInts = true;
    while (reader.next(field)) {
      switch (field.number) {
        case kAnnotationNameIid:
          a.name = std::string(interned(sequence.annotationNames, field.value, "annotation name"));
          break;
        case kAnnotationName:
          a.name = std::string(field.bytes);
          break;
        case kAnnotationInt:
          a.kind = Annotation::Kind::Int;
          a.i = field.asInt64();
          break;
        case kAnnotationUint:
          a.kind = Annotation::Kind::Uint;
          a.u = field.value;
          break;
        case kAnnotationDouble:
          a.kind = Annotation::Kind::Double;
          a.d = field.asDouble();
          break;
        case kAnnotationBool:
          a.kind = Annotation::Kind::Bool;
          a.b = field.value != 0;
          break;
        case kAnnotationString:
          a.kind = Annotation::Kind::String;
          a.text = std::string(field.bytes);
          break;
        case kAnnotationLegacyJson:
          a.kind = Annotation::Kind::Json;
          a.text = std::string(field.bytes);
          break;
        case kAnnotationStringIid:  // odd ids are JSON texts (output/perfetto_sink.cpp)
          a.kind = field.value % 2 == 1 ? Annotation::Kind::Json : Annotation::Kind::String;
          a.text = std::string(interned(sequence.stringValues, field.value, "string value"));
          break;
        case kAnnotationArray: {
          const Annotation item = annotation(sequence, field.bytes, depth + 1);
          if (item.kind == Annotation::Kind::Int) {
            array.push_back(item.i);
          } else {
            arrayOfInts = false;
          }
          break;
        }
        default:
          break;
      }
    }
    if (!array.empty() || !arrayOfInts) {
      if (!arrayOfInts || array.size() != 3) {
        fail(fmt::format("annotation \"{}\" is an array kinetrace does not write", a.name));
      }
      a.kind = Annotation::Kind::Dim3;
      a.dim = Dim3{array[0], array[1], array[2]};
    }
    return a;
  }

  DecodedEvent decodeEvent(const SequenceState& sequence, std::string_view bytes,
                           int64_t timeNs) const {
    DecodedEvent e;
    e.timeNs = addTimes(timebaseNs_, timeNs);
    e.track = sequence.hasDefaultTrack ? sequence.defaultTrack : 0;
    ProtoReader reader(bytes);
    ProtoField field;
    while (reader.next(field)) {
      switch (field.number) {
        case kEventType:
          e.type = field.value;
          break;
        case kEventTrackUuid:
          e.track = field.value;
          break;
        case kEventNameIid:
          e.name = std::string(interned(sequence.names, field.value, "event name"));
          break;
        case kEventName:
          e.name = std::string(field.bytes);
          break;
        case kEventCategoryIids:
          e.category = std::string(interned(sequence.categories, field.value, "category"));
          break;
        case kEventCategories:
          e.category = std::string(field.bytes);
          break;
        case kEventDebugAnnotations:
          e.annotations.push_back(annotation(sequence, field.bytes));
          break;
        case kEventFlowIds:  // fixed64 (older kinetrace files) or varint (flow_ids_old)
        case kEventFlowIdsOld:
          e.flowIds.push_back(field.value);
          break;
        case kEventTerminatingFlowIds:
        case kEventTerminatingFlowIdsOld:
          e.terminatingFlowIds.push_back(field.value);
          break;
        case kEventLegacyEvent: {
          ProtoReader legacy(field.bytes);
          ProtoField part;
          while (legacy.next(part)) {
            if (part.number == kLegacyPhase) e.legacyPhase = part.asInt64();
            if (part.number == kLegacyUnscopedId) e.legacyId = part.value;
          }
          break;
        }
        case kEventCounterValue:
          e.hasCounter = true;
          e.counterInt = field.asInt64();
          break;
        case kEventDoubleCounterValue:
          e.hasCounter = true;
          e.counterIsDouble = true;
          e.counterDouble = field.asDouble();
          break;
        default:
          break;
      }
    }
    return e;
  }

  const TrackInfo& track(uint64_t uuid) const {
    auto found = tracks_.find(uuid);
    if (found == tracks_.end())
      fail(fmt::format("an event on track {}, which was never described", uuid));
    return found->second;
  }

  void event(const SequenceState& sequence, std::string_view bytes, int64_t timeNs) {
    // Decoded, an event holds its packet's strings a second time.
    BudgetHold decoded(budget_);
    decoded.take(2 * bytes.size() + sizeof(DecodedEvent), kPackets);
    DecodedEvent e = decodeEvent(sequence, bytes, timeNs);
    if (!begun_) {
      if (e.track != kMetadataTrackUuid || e.name != kHeaderEventName ||
          e.category != kLayoutCategory) {
        fail(fmt::format("its first event is not kinetrace's trace header; {}", kNotOurs));
      }
      header(e);
      return;
    }
    if (ended_) fail("an event after the trace footer");
    switch (e.type) {
      case kTypeSliceBegin: {
        const TrackInfo& t = track(e.track);
        if (t.kind != TrackInfo::Kind::Thread) fail("a slice on a track that is not a thread's");
        beginSlice(std::move(e));
        return;
      }
      case kTypeSliceEnd: {
        auto found = open_.find(e.track);
        if (found == open_.end() || found->second.empty()) fail("a slice end without its begin");
        OpenSlice& top = found->second.back();
        if (top.leftOut > 0) {
          // Its begin was left out for want of memory: the slice is lost, and counted.
          --top.leftOut;
          ++report_.skipped[kLeftOutSlices];
          if (top.leftOut == 0 && !top.kept) found->second.pop_back();
          return;
        }
        DecodedEvent begin = std::move(top.begin);
        const std::size_t taken = top.bytes;
        found->second.pop_back();
        openBytes_ -= taken + 2 * sizeof(OpenSlice);
        openTaken_ -= taken;
        budget_.giveBack(taken);
        const TrackInfo& t = track(begin.track);
        emit(Phase::Complete, begin, t.pid, t.tid, addTimes(e.timeNs, -begin.timeNs));
        for (uint64_t id : begin.flowIds) flow(Phase::FlowStart, begin, t, id);
        for (uint64_t id : begin.terminatingFlowIds) flow(Phase::FlowEnd, begin, t, id);
        return;
      }
      case kTypeInstant:
        instant(e);
        return;
      case kTypeCounter:
        counter(e);
        return;
      case 0:
        if (e.legacyPhase == 's' || e.legacyPhase == 'f') {
          emitFlow(e.legacyPhase == 's' ? Phase::FlowStart : Phase::FlowEnd, e, track(e.track),
                   e.legacyId);
          return;
        }
        fail(fmt::format("a legacy track event of phase {}", e.legacyPhase));
      default:
        fail(fmt::format("a track event of type {}", e.type));
    }
  }

  static constexpr const char* kLeftOutSlices =
      "slices whose begin was left out: the slices begun and not yet ended needed more than "
      "half the memory allowed (--memory-mb)";

  // What a begun slice holds in memory while it waits for its end: its strings, flows and
  // annotations, each allocation with malloc's overhead.
  static std::size_t bytesOf(const DecodedEvent& e) {
    const auto heap = [](std::size_t size) {
      return size > 15 ? size + 1 + kAllocationOverheadBytes : 0;
    };
    std::size_t bytes = heap(e.name.size()) + heap(e.category.size()) +
                        (e.flowIds.size() + e.terminatingFlowIds.size()) * sizeof(uint64_t) +
                        2 * kAllocationOverheadBytes;
    for (const Annotation& a : e.annotations) {
      bytes += sizeof(Annotation) + heap(a.name.size()) + heap(a.text.size());
    }
    return bytes;
  }

  // A slice's begin waits for its end within half the budget, and what the budget gives;
  // beyond it, begins are counted (as runs on their track, so an endless nesting takes no
  // memory) and their ends matched to them. Half the budget bounds the slice and the room
  // its stack may keep for it (twice its size, as a vector grows): the stacks' room is
  // taken from the budget by their allocator, the slice's own from the budget here.
  void beginSlice(DecodedEvent e) {
    BudgetVector<OpenSlice>& stack =
        open_.try_emplace(e.track, BudgetAllocator<OpenSlice>(budget_, kOpenSlices)).first->second;
    const std::size_t bytes = bytesOf(e);
    const std::size_t counted = bytes + 2 * sizeof(OpenSlice);
    if (openBytes_ + counted > openBudgetBytes_ || !budget_.tryTake(bytes)) {
      if (stack.empty()) stack.push_back(OpenSlice{});
      ++stack.back().leftOut;
      return;
    }
    openBytes_ += counted;
    openTaken_ += bytes;
    try {
      stack.push_back(OpenSlice{std::move(e), true, 0, bytes});
    } catch (...) {
      openBytes_ -= counted;
      openTaken_ -= bytes;
      budget_.giveBack(bytes);
      throw;
    }
  }

  void header(const DecodedEvent& e) {
    if (e.annotations.size() < static_cast<std::size_t>(kHeaderFixedAnnotations) ||
        e.annotations[1].kind != Annotation::Kind::Int ||
        e.annotations[2].kind != Annotation::Kind::Int ||
        (e.annotations[3].text != kFormatName && e.annotations[3].text != kFormatNameLayout2 &&
         e.annotations[3].text != kFormatNameLayout1)) {
      fail(fmt::format("the trace header is not in the layout \"{}\"", kFormatName));
    }
    header_.baseTimeNs = e.annotations[1].i;
    timebaseNs_ = e.annotations[2].i;
    for (std::size_t i = kHeaderFixedAnnotations; i < e.annotations.size(); ++i) {
      keepMetadata(header_.metadata, e.annotations[i]);
    }
    // The sink may keep its own copy of the metadata until the trace ends (a PerfettoSink
    // does, until its first event): counted for the whole read, while the reader's goes.
    sinkHeaderHold_.take(footprintOf(header_.metadata), kTopLevelMetadata);
    begun_ = true;
    sink_.begin(header_);
    Metadata().swap(header_.metadata);
    metadataHold_.reset();
  }

  // A metadata annotation kept as a value, its footprint counted while it is kept.
  void keepMetadata(Metadata& metadata, const Annotation& a) {
    Value value = valueOf(a);
    metadataHold_.take(sizeof(Value::Member) + a.name.size() + footprintOf(value),
                       kTopLevelMetadata);
    metadata.push_back({a.name, std::move(value)});
  }

  void instant(const DecodedEvent& e) {
    if (e.track == kMetadataTrackUuid) {
      if (e.category == kLayoutCategory && e.name == kFooterEventName) {
        for (const Annotation& a : e.annotations) keepMetadata(footer_, a);
        ended_ = true;
        return;
      }
      if (e.category == kNamingCategory) {
        if (e.annotations.size() < 2) fail("a naming event without its pid and tid");
        DecodedEvent naming = e;
        naming.category.clear();  // Chrome metadata events have no category
        if (naming.annotations.back().name == kNamingTimeAnnotation) {
          naming.timeNs = naming.annotations.back().i;  // it stood inside the events' span
          naming.annotations.pop_back();
        }
        const int64_t tid = naming.annotations.back().i;
        naming.annotations.pop_back();
        const int64_t pid = naming.annotations.back().i;
        naming.annotations.pop_back();
        emit(Phase::Metadata, naming, pid, tid, 0);
        return;
      }
      fail(fmt::format("an unknown event \"{}\" on the metadata track", e.name));
    }
    const TrackInfo& t = track(e.track);
    if (!e.flowIds.empty() || !e.terminatingFlowIds.empty()) {
      // An instant that carries an arrow: the flow event itself.
      for (uint64_t id : e.flowIds) emitFlow(Phase::FlowStart, e, t, id);
      for (uint64_t id : e.terminatingFlowIds) emitFlow(Phase::FlowEnd, e, t, id);
      return;
    }
    emit(Phase::Instant, e, t.pid, t.tid, 0);
  }

  void counter(const DecodedEvent& e) {
    const TrackInfo& t = track(e.track);
    if (t.kind != TrackInfo::Kind::Counter || !e.hasCounter)
      fail("a counter value off a counter track");
    const TrackInfo& thread = track(t.parent);
    Arg arg{t.unit.empty() ? viewOf(t.name) : viewOf(t.unit),
            e.counterIsDouble ? ArgValue(e.counterDouble) : ArgValue(e.counterInt)};
    Event out;
    out.phase = Phase::Counter;
    out.name = viewOf(t.name);
    out.category = t.category.empty() ? std::string_view("counter") : viewOf(t.category);
    out.pid = thread.pid;
    out.tid = thread.tid;
    out.timestampNs = e.timeNs;
    out.args = &arg;
    out.argCount = 1;
    sink_.write(out);
    ++report_.events;
  }

  // A flow attached to a slice: at the slice's start, named like PyTorch's launch arrows.
  void flow(Phase phase, const DecodedEvent& slice, const TrackInfo& t, uint64_t id) {
    DecodedEvent carrier;
    carrier.timeNs = slice.timeNs;
    carrier.name = std::string(kLaunchFlowName);
    carrier.category = std::string(kLaunchFlowName);
    emitFlow(phase, carrier, t, id);
  }

  void emitFlow(Phase phase, const DecodedEvent& e, const TrackInfo& t, uint64_t id) {
    Event out;
    out.phase = phase;
    out.name = e.name;
    out.category = e.category;
    out.pid = t.pid;
    out.tid = t.tid;
    out.timestampNs = e.timeNs;
    out.flowId = id;
    sink_.write(out);
    ++report_.events;
  }

  void emit(Phase phase, const DecodedEvent& e, int64_t pid, int64_t tid, int64_t durationNs) {
    // An event of many annotations leaves no room behind it (its packet was counted).
    if (args_.capacity() > 1024) std::vector<Arg>().swap(args_);
    args_.clear();
    for (const Annotation& a : e.annotations) args_.push_back({a.name, argOf(a)});
    Event out;
    out.phase = phase;
    out.name = e.name;
    out.category = e.category;
    out.pid = pid;
    out.tid = tid;
    out.timestampNs = e.timeNs;
    out.durationNs = durationNs;
    out.args = args_.data();
    out.argCount = args_.size();
    sink_.write(out);
    ++report_.events;
  }

  static ArgValue argOf(const Annotation& a) {
    switch (a.kind) {
      case Annotation::Kind::Int:
        return a.i;
      case Annotation::Kind::Uint:
        return a.u;
      case Annotation::Kind::Double:
        return a.d;
      case Annotation::Kind::Bool:
        return a.b;
      case Annotation::Kind::String:
        return std::string_view(a.text);
      case Annotation::Kind::Json:
        return JsonText{a.text};
      case Annotation::Kind::Dim3:
        return a.dim;
      case Annotation::Kind::None:
        break;
    }
    return JsonText{"null"};
  }

  Value valueOf(const Annotation& a) const {
    switch (a.kind) {
      case Annotation::Kind::Int:
        return Value(a.i);
      case Annotation::Kind::Uint:
        return Value(a.u);
      case Annotation::Kind::Double:
        return Value(a.d);
      case Annotation::Kind::Bool:
        return Value(a.b);
      case Annotation::Kind::String:
        return Value(a.text);
      case Annotation::Kind::Dim3:
        return Value::array({a.dim.x, a.dim.y, a.dim.z});
      case Annotation::Kind::Json: {
        checkJsonDepth(a.text, fmt::format("metadata \"{}\"", a.name));
        BudgetHold parsing(budget_);
        parsing.take(parsedFootprintOf(a.text), kTopLevelMetadata);
        std::optional<Value> parsed = parseJsonValue(a.text);
        if (!parsed) fail(fmt::format("metadata \"{}\" holds invalid JSON", a.name));
        return std::move(*parsed);
      }
      case Annotation::Kind::None:
        break;
    }
    return Value();
  }

  static constexpr uint64_t kMinInflationBytes = 4096;

  const std::string& path_;
  Sink& sink_;
  ReadReport& report_;
  ByteSource& source_;
  ReadBudget& budget_;
  BudgetHold metadataHold_;             // the header's metadata until the sink has it; the footer's
  BudgetHold sinkHeaderHold_{budget_};  // the sink's copy of the header's metadata
  uint64_t inflatedBytes_ = 0;          // by compressed_packets, at every level
  uint64_t offset_ = 0;
  TraceHeader header_;
  Metadata footer_;
  bool begun_ = false;
  bool ended_ = false;
  int64_t timebaseNs_ = 0;
  BudgetUnorderedMap<uint32_t, SequenceState> sequences_;
  SequenceState* lastSequence_ = nullptr;
  uint32_t lastSequenceId_ = 0;
  BudgetUnorderedMap<uint64_t, TrackInfo> tracks_;
  // A begun slice, kept, with the begins left out (for want of memory) after it on its track.
  struct OpenSlice {
    DecodedEvent begin;
    bool kept = false;
    uint64_t leftOut = 0;
    std::size_t bytes = 0;  // taken from the budget for `begin`
  };
  BudgetUnorderedMap<uint64_t, BudgetVector<OpenSlice>> open_;
  const std::size_t openBudgetBytes_;
  std::size_t openBytes_ = 0;  // of the open slices, with their stacks' room
  std::size_t openTaken_ = 0;  // of the open slices, taken from the budget
  std::vector<Arg> args_;
};

}  // namespace

ReadReport readPerfettoTrace(ByteSource& source, Sink& sink, const std::string& traceName,
                             ReadBudget& budget, const ReadProgress& progress) {
  const std::string& path = source.path();
  const ReadBudget::Reading reading(budget, path);
  ReadReport report;
  PerfettoReader reader(path, sink, traceName, report, source, budget);

  // The file is a Trace message: field 1 (TracePacket) over and over. Packets are read
  // whole into a buffer that keeps what the last read left over.
  BudgetString buffer{BudgetAllocator<char>(budget, kPackets)};
  std::size_t start = 0;
  uint64_t fileOffset = 0;  // of buffer[start], in the decompressed stream
  constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  BudgetHold chunkHold(budget);
  chunkHold.take(kChunkBytes + kAllocationOverheadBytes, kPackets);
  const std::unique_ptr<char[]> chunk(new char[kChunkBytes]);  // not zeroed: see SourceBuffer
  bool atEnd = false;
  while (true) {
    std::string_view rest(buffer.data() + start, buffer.size() - start);
    uint64_t key = 0;
    uint64_t length = 0;
    std::size_t keyBytes = rest.empty() ? 0 : proto::readVarint(rest, &key);
    std::size_t lengthBytes = 0;
    if (keyBytes != 0) {
      if (key != ((uint64_t{kTracePacket} << 3) | 2)) {
        throw Error(fmt::format(
            "{} is not a Perfetto trace: at byte {} a field other than a trace packet ({}); {}",
            path, fileOffset, key >> 3, "kinetrace reads the .pftrace files kinetrace writes"));
      }
      lengthBytes = proto::readVarint(rest.substr(keyBytes), &length);
      if (lengthBytes != 0 && length > kMaxPacketBytes) {
        throw Error(
            fmt::format("{}: the packet at byte {} claims {} bytes, more than a "
                        "kinetrace trace's packets hold",
                        path, fileOffset, length));
      }
    }
    const bool whole =
        keyBytes != 0 && lengthBytes != 0 && rest.size() >= keyBytes + lengthBytes + length;
    if (whole) {
      reader.packet(rest.substr(keyBytes + lengthBytes, static_cast<std::size_t>(length)),
                    fileOffset);
      const std::size_t used = keyBytes + lengthBytes + static_cast<std::size_t>(length);
      start += used;
      fileOffset += used;
      continue;
    }
    if (atEnd) {
      if (!rest.empty()) {
        throw Error(fmt::format("{} ends inside the packet at byte {} (is the file truncated?)",
                                path, fileOffset));
      }
      break;
    }
    buffer.erase(0, start);
    start = 0;
    const std::size_t got = source.read(chunk.get(), kChunkBytes);
    if (progress) progress(source.consumedBytes(), source.fileBytes());
    atEnd = got == 0;
    buffer.append(chunk.get(), got);
  }
  reader.finish();
  return report;
}

}  // namespace kinetrace::detail
