#include "output/perfetto_sink.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kinetrace/error.h"
#include "output/chrome_naming.h"
#include "output/perfetto_intern.h"
#include "output/perfetto_lanes.h"
#include "output/perfetto_layout.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"
#include "output/string_index.h"
#include "output/trace_vocabulary.h"
#include "output/value_json.h"

namespace kinetrace::detail {
namespace {

using proto::ProtoWriter;

// String and JSON argument values longer than this are written in place, not interned:
// long values rarely repeat, and the intern budget is better spent on short ones.
constexpr std::size_t kMaxInternedValueBytes = 1024;

// The buffer starts at this size, and takes the flush size when half of it is used: a short
// trace touches (and pays page faults for) a small buffer, not a megabyte.
constexpr std::size_t kFirstBufferBytes = std::size_t{64} << 10;
// What a budget is charged besides a record's own size: a hash or tree node's pointers and
// the allocator's header.
constexpr std::size_t kNodeBytes = 48;
// What the lanes remember of a slice, at most (perfetto_lanes.h), for a budget's share.
constexpr std::size_t kLaneBytesPerSlice = 64;

// The bytes an argument's text takes when kept (a string or JSON text); 0 for a number.
std::size_t argTextBytes(const Arg& arg) {
  if (const auto* text = std::get_if<std::string_view>(&arg.value)) return text->size();
  if (const auto* json = std::get_if<JsonText>(&arg.value)) return json->text.size();
  return 0;
}
using namespace pftrace;

// The kinds of interned strings, one InternTable each.
enum InternKind { kNames, kCategories, kAnnotationNames, kJsonValues, kStringValues, kKinds };

// A packet sequence (perfetto_layout.h): its id, the track its events are on, the time each
// of its incremental clocks last read, and which interned strings it has defined (a bit
// per string index, per kind).
struct Sequence {
  uint32_t id = 0;
  uint64_t trackUuid = 0;
  bool started = false;
  std::array<uint64_t, kIncrementalClocks> clockNs{};  // after the timebase
  // A bit per string index: the first 64 strings of each kind in the sequence itself (a
  // short trace allocates nothing for its tracks' bits), the rest in a vector.
  std::array<uint64_t, kKinds> definedFirst{};
  std::array<std::vector<uint64_t>, kKinds> definedMore;
};

// Times from hostile inputs (INT64_MIN, INT64_MAX) stay defined: a result past the ends
// of int64 sticks at the end it passed (and `clamped`, when given, says so).
int64_t saturatingAdd(int64_t a, int64_t b, bool* clamped = nullptr) {
  int64_t sum = 0;
  const bool overflow = __builtin_add_overflow(a, b, &sum);
  if (clamped != nullptr) *clamped = overflow;
  if (!overflow) return sum;
  return b > 0 ? INT64_MAX : INT64_MIN;
}
int64_t saturatingSubtract(int64_t a, int64_t b) {
  int64_t difference = 0;
  if (!__builtin_sub_overflow(a, b, &difference)) return difference;
  return b < 0 ? INT64_MAX : INT64_MIN;
}

struct PairHash {
  std::size_t operator()(const std::pair<int64_t, int64_t>& key) const {
    return std::hash<int64_t>()(key.first) * 31 + std::hash<int64_t>()(key.second);
  }
};

}  // namespace

class PerfettoSink::Encoder {
 public:
  Encoder(std::unique_ptr<ByteOutput> output, std::size_t bufferBytes,
          std::size_t internBudgetBytes)
      : output_(std::move(output)),
        bufferBytes_(bufferBytes),
        w_(out_),
        internBudgetBytes_(internBudgetBytes) {
    if (!output_) throw Error("PerfettoSink needs an output");
    out_.reserve(std::min(bufferBytes_ + 4096, kFirstBufferBytes));
    interned_.reserve(4096);
    metadata_ = newSequence(kMetadataTrackUuid);
  }
  ~Encoder() {
    if (budget_ != nullptr) budget_->release(charged_);
  }
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  void drawMemoryFrom(MemoryBudget& budget) {
    expectState(State::Created, "drawMemoryFrom");
    const std::size_t share = budget.cap() / 8;
    internBudgetBytes_ = std::min(internBudgetBytes_, share);
    lanesBudget_ =
        std::max<std::size_t>(1, std::min(SliceLanes::kDefaultBudget, share / kLaneBytesPerSlice));
    budget_ = &budget;
    charge(internBudgetBytes_ + lanesBudget_ * kLaneBytesPerSlice,
           "its interned strings and lanes");
  }

  void begin(const TraceHeader& header) {
    expectState(State::Created, "begin");
    state_ = State::Writing;
    // A base time within a second of INT64_MIN puts the timebase at INT64_MIN: every time
    // is still at or after it, and the header keeps the base time as it was.
    timebaseNs_ = saturatingSubtract(header.baseTimeNs, kTimebaseLeadNs);

    // The metadata sequence starts first: it holds the track descriptors too.
    startSequence(sequence(metadata_));
    const std::size_t packet = w_.beginMessage(kTracePacket);
    w_.varint(kPacketSequenceId, kMetadataSequenceId);
    const std::size_t track = w_.beginMessage(kPacketTrackDescriptor);
    w_.varint(kTrackUuid, kMetadataTrackUuid);
    w_.bytes(kTrackName, kMetadataTrackName);
    w_.endMessage(track);
    w_.endMessage(packet);

    // The header instant waits for the first event, whose time it takes: at the base time
    // it could lie far outside the events (torch.profiler's base time is not on its events'
    // clock), and Perfetto's timeline would span both.
    header_ = header;
    headerPending_ = true;
  }

  void write(const Event& event) {
    expectState(State::Writing, "write");
    try {
      writeEvent(event);
    } catch (...) {
      state_ = State::Failed;
      throw;
    }
  }

  void describe(const Track& track) {
    expectState(State::Writing, "describe");
    try {
      describeTrack(track);
    } catch (...) {
      state_ = State::Failed;
      throw;
    }
  }

  void end(const Metadata& footer) {
    expectState(State::Writing, "end");
    try {
      closePendingSlice();
      if (headerPending_) writeHeader(header_.baseTimeNs);
      for (const OwnedTrack& described : describedTracks_) {
        forEachChromeNamingEvent(trackView(described),
                                 [this](const Event& naming) { writeNamingInstant(naming); });
      }
      writeFooter(footer);
      flush();
      output_->commit();
    } catch (...) {
      state_ = State::Failed;
      throw;
    }
    state_ = State::Ended;
  }

 private:
  enum class State { Created, Writing, Ended, Failed };

  // A thread track: its uuid is its sequence's track. Tracks are named below by the index
  // of their sequence in sequences_.
  struct ThreadTrack {
    std::size_t sequence = 0;
    uint64_t processUuid = 0;
    int64_t tid = 0;
    std::string name;                        // from its thread_name event, once known
    std::vector<std::size_t> laneSequences;  // lanes 1, 2, ...: child tracks
    std::unique_ptr<SliceLanes> lanes;
  };

  // A naming event met before the header was written, with its strings kept. Its event's
  // views point into its own strings and args: it is built in place and never moved or
  // copied (keptNamings_ is a deque, whose elements stay where they are).
  struct KeptEvent {
    KeptEvent() = default;
    KeptEvent(const KeptEvent&) = delete;
    KeptEvent& operator=(const KeptEvent&) = delete;
    Event event;
    std::deque<std::string> strings;
    std::vector<Arg> args;
  };

  // A slice whose BEGIN packet is still open: a launch arrow that follows it on its track
  // becomes a flow id on it.
  struct OpenSlice {
    bool open = false;
    int64_t pid = 0;
    int64_t tid = 0;
    int64_t startNs = 0;
    int64_t endNs = 0;
    std::size_t sequence = 0;
  };

  static bool isKeyTheSinkWrites(std::string_view key) {
    return key == chrome::kTraceEvents || key == chrome::kTraceName ||
           key == chrome::kBaseTimeNanoseconds;
  }

  void expectState(State expected, const char* call) const {
    if (state_ == expected) return;
    if (state_ == State::Failed) {
      throw Error(fmt::format("Sink::{}() called after a write error", call));
    }
    throw Error(fmt::format("Sink::{}() called out of order (begin, write..., end)", call));
  }

  void writeEvent(const Event& event) {
    closePendingSlice(&event);
    flushIfFull();
    if (event.phase == Phase::Metadata) {
      writeNaming(event);
      return;
    }
    if (headerPending_) writeHeader(std::max(event.timestampNs, timebaseNs_));
    // A slice ending past INT64_MAX nanoseconds ends there, counted in the footer.
    bool endClamped = false;
    const int64_t endNs = saturatingAdd(event.timestampNs, event.durationNs, &endClamped);
    spanFirstNs_ = std::min(spanFirstNs_, event.timestampNs);
    spanLastNs_ = std::max(spanLastNs_, endNs);
    switch (event.phase) {
      case Phase::Complete: {
        if (endClamped) ++clampedSliceEnds_;
        ThreadTrack& thread = threadTrack(event.pid, event.tid);
        const std::size_t track =
            laneSequence(thread, thread.lanes->place(event.timestampNs, endNs));
        if (++lanesRemembered_ > lanesBudget_) forgetLanesOlderHalf();
        if (!openTrackEvent(track, event.timestampNs, kTypeSliceBegin)) return;
        eventNames(event.name, event.category);
        annotations(event);
        slice_ = {true, event.pid, event.tid, event.timestampNs, endNs, track};
        return;
      }
      case Phase::Instant:
        if (!openInstant(pointSequence(event), event.timestampNs, event.name, event.category)) {
          return;
        }
        annotations(event);
        closeEvent();
        return;
      case Phase::FlowStart:
      case Phase::FlowEnd:
        writeFlow(event);
        return;
      case Phase::Counter:
        writeCounter(event);
        return;
      case Phase::Metadata:
        return;
    }
  }

  // Takes `bytes` from the budget, when there is one, for `what`; throws when it cannot.
  void charge(std::size_t bytes, const char* what) {
    if (budget_ == nullptr) return;
    if (!budget_->tryAcquire(bytes)) {
      throw Error(
          fmt::format("{}: writing it as a .pftrace, {} would take more than the {} MB of memory "
                      "--memory-mb allows; raise --memory-mb",
                      header_.traceName.empty() ? std::string("the output") : header_.traceName,
                      what, (budget_->cap() + (std::size_t{1} << 20) - 1) >> 20));
    }
    charged_ += bytes;
  }

  // The slices the tracks' lanes remember are bounded together, not per track (a trace has
  // as many tracks as threads and streams): past the budget every track forgets the older
  // half of its own.
  void forgetLanesOlderHalf() {
    lanesRemembered_ = 0;
    for (auto& [key, thread] : threads_) {
      thread.lanes->forgetOlderHalf();
      lanesRemembered_ += thread.lanes->remembered();
    }
  }

  // The sequence of the lane that holds an instant's or a flow event's time.
  std::size_t pointSequence(const Event& event) {
    ThreadTrack& thread = threadTrack(event.pid, event.tid);
    return laneSequence(thread, thread.lanes->laneAt(event.timestampNs));
  }

  // A flow event as Chrome's legacy flow event (perfetto_layout.h): Perfetto binds it, as
  // it binds the JSON's, to the slice open on its track at its time, and draws an arrow
  // for every 'f' of an id (a launch that started several kernels), flows of other names
  // and categories being other flows even with the same id.
  void writeFlow(const Event& event) {
    if (!openTrackEvent(pointSequence(event), event.timestampNs, 0)) return;
    eventNames(event.name, event.category);
    const std::size_t legacy = w_.beginMessage(kEventLegacyEvent);
    w_.varint(kLegacyPhase, event.phase == Phase::FlowStart ? 's' : 'f');
    w_.varint(kLegacyUnscopedId, event.flowId);
    if (event.phase == Phase::FlowEnd) w_.boolean(kLegacyBindToEnclosing, true);
    w_.endMessage(legacy);
    closeEvent();
  }

  // The footer instant, at the header's time (never before the timebase).
  void writeFooter(const Metadata& footer) {
    if (!openInstant(metadata_, headerTimeNs_, kFooterEventName, kLayoutCategory)) return;
    for (const Value::Member& member : footer) {
      if (isKeyTheSinkWrites(member.key)) continue;
      valueAnnotation(member.key, member.value);
    }
    if (eventsBeforeTimebase_ > 0) {
      intAnnotation("kinetrace_pftrace_dropped_early_events", eventsBeforeTimebase_);
    }
    if (skippedCounterValues_ > 0) {
      intAnnotation("kinetrace_pftrace_skipped_counter_values", skippedCounterValues_);
    }
    if (clampedSliceEnds_ > 0) {
      intAnnotation("kinetrace_pftrace_clamped_slice_ends", clampedSliceEnds_);
    }
    closeEvent();
  }

  // The header instant, at `timeNs` (never before the timebase), then the naming events
  // kept until then.
  void writeHeader(int64_t timeNs) {
    headerPending_ = false;
    headerTimeNs_ = timeNs;
    if (openInstant(metadata_, timeNs, kHeaderEventName, kLayoutCategory)) {
      stringAnnotation(chrome::kTraceName, header_.traceName);
      intAnnotation(chrome::kBaseTimeNanoseconds, header_.baseTimeNs);
      intAnnotation("timebaseNanoseconds", timebaseNs_);
      stringAnnotation("format", kFormatName);
      for (const Value::Member& member : header_.metadata) {
        if (isKeyTheSinkWrites(member.key)) continue;
        valueAnnotation(member.key, member.value);
      }
      closeEvent();
    }
    header_.metadata.clear();
    for (KeptEvent& kept : keptNamings_) {
      kept.event.args = kept.args.data();
      writeNamingInstant(kept.event);
    }
    keptNamings_.clear();
  }

  static void keep(const Event& event, KeptEvent& k) {
    k.event = event;
    auto own = [&k](std::string_view text) {
      return std::string_view(k.strings.emplace_back(text));
    };
    k.event.name = own(event.name);
    k.event.category = own(event.category);
    for (std::size_t i = 0; i < event.argCount; ++i) {
      Arg arg = event.args[i];
      arg.key = own(arg.key);
      if (const auto* text = std::get_if<std::string_view>(&arg.value)) {
        arg.value = own(*text);
      } else if (const auto* json = std::get_if<JsonText>(&arg.value)) {
        arg.value = JsonText{own(json->text)};
      }
      k.args.push_back(arg);
    }
    k.event.args = k.args.data();
  }

  void writeCounter(const Event& event) {
    for (std::size_t i = 0; i < event.argCount; ++i) {
      const Arg& arg = event.args[i];
      // A counter described as a track is found by its unit, its series' key; of the Chrome
      // trace's counters, a GPU metric's series is keyed by its unit too.
      const bool keyIsUnit = event.category == chrome::kCatGpuMetric;
      const std::size_t track =
          counterTrack(event.pid, event.tid, event.name, arg.key,
                       keyIsUnit ? arg.key : std::string_view(), event.category);
      if (const auto* d = std::get_if<double>(&arg.value)) {
        if (!openTrackEvent(track, event.timestampNs, kTypeCounter)) return;
        w_.doubleValue(kEventDoubleCounterValue, *d);
      } else if (const auto* i64 = std::get_if<int64_t>(&arg.value)) {
        if (!openTrackEvent(track, event.timestampNs, kTypeCounter)) return;
        w_.signedVarint(kEventCounterValue, *i64);
      } else if (const auto* u64 = std::get_if<uint64_t>(&arg.value)) {
        if (!openTrackEvent(track, event.timestampNs, kTypeCounter)) return;
        if (*u64 <= static_cast<uint64_t>(INT64_MAX)) {
          w_.signedVarint(kEventCounterValue, static_cast<int64_t>(*u64));
        } else {
          w_.doubleValue(kEventDoubleCounterValue, static_cast<double>(*u64));
        }
      } else {
        ++skippedCounterValues_;  // a counter holds numbers only
        continue;
      }
      closeEvent();
    }
  }

  // A Chrome naming event (a trace written the Chrome way, read back): names the track it
  // names (the descriptor again, now with its name) and keeps the event itself, so the
  // file holds sort indexes and labels too.
  void writeNaming(const Event& event) {
    const std::string_view* text = nullptr;
    for (std::size_t i = 0; i < event.argCount; ++i) {
      if (event.args[i].key == "name") text = std::get_if<std::string_view>(&event.args[i].value);
    }
    if (text != nullptr && event.name == chrome::kProcessName) {
      describeProcess(processTrack(event.pid), event.pid, *text);
    } else if (text != nullptr && event.name == chrome::kThreadName) {
      nameThread(threadTrack(event.pid, event.tid), event.pid, event.tid, *text);
    }
    if (headerPending_) {
      std::size_t bytes = sizeof(KeptEvent) + event.name.size() + event.category.size();
      for (std::size_t i = 0; i < event.argCount; ++i) {
        bytes += sizeof(Arg) + kNodeBytes + event.args[i].key.size() + argTextBytes(event.args[i]);
      }
      charge(bytes, "the naming events kept until its first event");
      keep(event, keptNamings_.emplace_back());
      return;
    }
    writeNamingInstant(event);
  }

  // A track described as a track: its descriptor as its kind says, named from the first.
  // Its Chrome naming events are kept, the latest description of each track, and written
  // at the end as instants on the metadata track (a reader gets them back where the JSON
  // has them: after the events).
  void describeTrack(const Track& t) {
    closePendingSlice();
    flushIfFull();
    switch (t.kind) {
      case TrackKind::Process: {
        const bool known = processes_.count(t.pid) != 0;
        const uint64_t uuid = processTrack(t.pid, t.name);
        if (known) describeProcess(uuid, t.pid, t.name);
        break;
      }
      case TrackKind::Counter: {
        // Its events' one series is keyed by its unit (the Chrome trace's counters by their
        // name when they have none).
        const std::string_view key = t.unit.empty() ? t.name : t.unit;
        counterTrack(t.pid, t.tid, t.name, key, t.unit, t.category);
        break;
      }
      case TrackKind::Thread:
      case TrackKind::GpuStream:
      case TrackKind::Lane: {
        // Each has a tid of its own in the Chrome trace, and is a thread track here, so that
        // the file reads back as the JSON does.
        ThreadTrack& thread = threadTrack(t.pid, t.tid, t.name);
        if (thread.name != t.name) nameThread(thread, t.pid, t.tid, t.name);
        break;
      }
    }
    if (t.kind == TrackKind::Counter) return;  // the Chrome trace does not name counters
    const std::size_t before = describedTracks_.size();
    noteLatestTrack(describedTracks_, t);
    if (describedTracks_.size() > before) {
      charge(sizeof(OwnedTrack) + t.name.size() + t.label.size(), "its track names");
    }
  }

  void nameThread(ThreadTrack& track, int64_t pid, int64_t tid, std::string_view name) {
    if (name.size() > track.name.capacity()) {
      charge(name.size() - track.name.capacity(), "its track names");
    }
    track.name = std::string(name);
    describeThread(track, pid, tid, name);
    for (std::size_t lane = 1; lane <= track.laneSequences.size(); ++lane) {
      describeLane(track, lane);
    }
  }

  // The naming event as an instant on the metadata track, inside the span of the events
  // written so far (at the header's time when none is); its own time, when elsewhere, is
  // an annotation, so a reader gets the event back as it was.
  void writeNamingInstant(const Event& event) {
    int64_t timeNs = event.timestampNs;
    if (spanFirstNs_ > spanLastNs_) {
      timeNs = headerTimeNs_;
    } else {
      timeNs = std::clamp(timeNs, spanFirstNs_, spanLastNs_);
    }
    timeNs = std::max(timeNs, timebaseNs_);
    if (!openInstant(metadata_, timeNs, event.name, kNamingCategory)) return;
    annotations(event);
    intAnnotation("pid", event.pid);
    intAnnotation("tid", event.tid);
    if (timeNs != event.timestampNs) intAnnotation(kNamingTimeAnnotation, event.timestampNs);
    closeEvent();
  }

  // ---- tracks and sequences --------------------------------------------------------------

  Sequence& sequence(std::size_t index) { return sequences_[index]; }

  // A sequence for a new track; it starts (its first packet is written) with its first event.
  std::size_t newSequence(uint64_t trackUuid) {
    charge(sizeof(Sequence), "its tracks");
    Sequence& s = sequences_.emplace_back();
    s.id = static_cast<uint32_t>(sequences_.size());  // kMetadataSequenceId for the first
    s.trackUuid = trackUuid;
    return sequences_.size() - 1;
  }

  // Clears the sequence's incremental state and sets its defaults and clocks.
  void startSequence(Sequence& s) {
    s.started = true;
    const std::size_t packet = w_.beginMessage(kTracePacket);
    w_.varint(kPacketSequenceId, s.id);
    w_.varint(kPacketSequenceFlags, kSeqIncrementalStateCleared);
    const std::size_t defaults = w_.beginMessage(kPacketTracePacketDefaults);
    w_.varint(kDefaultsTimestampClockId, kDefaultClockId);
    const std::size_t eventDefaults = w_.beginMessage(kDefaultsTrackEvent);
    w_.varint(kTrackEventDefaultsTrackUuid, s.trackUuid);
    w_.endMessage(eventDefaults);
    w_.endMessage(defaults);
    const std::size_t snapshot = w_.beginMessage(kPacketClockSnapshot);
    snapshotClock(kClockBoottime, false);
    for (int k = 0; k < kIncrementalClocks; ++k) {
      snapshotClock(kDefaultClockId + static_cast<uint32_t>(k), true);
      s.clockNs[static_cast<std::size_t>(k)] = 0;
    }
    w_.endMessage(snapshot);
    w_.endMessage(packet);
  }

  // A clock reading 0 when BOOTTIME reads 0, that is at the timebase.
  void snapshotClock(uint32_t id, bool incremental) {
    const std::size_t clock = w_.beginMessage(kSnapshotClocks);
    w_.varint(kClockId, id);
    w_.varint(kClockTimestamp, 0);
    if (incremental) w_.boolean(kClockIsIncremental, true);
    w_.endMessage(clock);
  }

  // The process's track, made (and described, with `name` when given) the first time.
  uint64_t processTrack(int64_t pid, std::string_view name = {}) {
    auto found = processes_.find(pid);
    if (found != processes_.end()) return found->second;
    const uint64_t uuid = nextUuid_++;
    charge(sizeof(std::pair<int64_t, uint64_t>) + kNodeBytes, "its tracks");
    processes_.emplace(pid, uuid);
    describeProcess(uuid, pid, name);
    return uuid;
  }

  // The thread's track, made (and described, with `name` when given) the first time.
  ThreadTrack& threadTrack(int64_t pid, int64_t tid, std::string_view name = {}) {
    if (lastThread_ != nullptr && lastThreadKey_ == std::make_pair(pid, tid)) return *lastThread_;
    auto found = threads_.find({pid, tid});
    if (found == threads_.end()) {
      charge(sizeof(ThreadTrack) + sizeof(SliceLanes) + 2 * kNodeBytes + name.size(),
             "its tracks");
      ThreadTrack track;
      track.processUuid = processTrack(pid);
      track.sequence = newSequence(nextUuid_++);
      track.tid = tid;
      track.name = std::string(name);
      track.lanes = std::make_unique<SliceLanes>();
      found = threads_.emplace(std::make_pair(pid, tid), std::move(track)).first;
      describeThread(found->second, pid, tid, name);
    }
    lastThreadKey_ = {pid, tid};
    lastThread_ = &found->second;  // unordered_map references survive rehashing
    return found->second;
  }

  // A counter series' track under its thread's track: named by the event and the series'
  // key, or, for a series with a unit, by the event alone, carrying the unit and its
  // samples' category (which a reader gives back to its events).
  std::size_t counterTrack(int64_t pid, int64_t tid, std::string_view name, std::string_view key,
                           std::string_view unit, std::string_view category) {
    auto lookup = std::make_tuple(pid, tid, std::string(name), std::string(key));
    auto found = counters_.find(lookup);
    if (found != counters_.end()) return found->second;
    const uint64_t parent = sequence(threadTrack(pid, tid).sequence).trackUuid;
    charge(sizeof(lookup) + sizeof(std::size_t) + kNodeBytes + name.size() + key.size(),
           "its counter series");
    const std::size_t track = newSequence(nextUuid_++);
    counters_.emplace(std::move(lookup), track);
    const std::size_t packet = w_.beginMessage(kTracePacket);
    w_.varint(kPacketSequenceId, kMetadataSequenceId);
    const std::size_t descriptor = w_.beginMessage(kPacketTrackDescriptor);
    w_.varint(kTrackUuid, sequence(track).trackUuid);
    w_.varint(kTrackParentUuid, parent);
    w_.bytes(kTrackName,
             key == name || !unit.empty() ? std::string(name) : fmt::format("{} {}", name, key));
    const std::size_t counter = w_.beginMessage(kTrackCounter);
    if (!unit.empty()) {
      w_.bytes(kCounterCategories, category);
      w_.bytes(kCounterUnitName, unit);
    }
    w_.endMessage(counter);
    w_.endMessage(descriptor);
    w_.endMessage(packet);
    return track;
  }

  void describeProcess(uint64_t uuid, int64_t pid, std::string_view name) {
    const std::size_t packet = w_.beginMessage(kTracePacket);
    w_.varint(kPacketSequenceId, kMetadataSequenceId);
    const std::size_t track = w_.beginMessage(kPacketTrackDescriptor);
    w_.varint(kTrackUuid, uuid);
    const std::size_t process = w_.beginMessage(kTrackProcess);
    w_.signedVarint(kProcessPid, pid);
    if (!name.empty()) w_.bytes(kProcessName, name);
    w_.endMessage(process);
    w_.endMessage(track);
    w_.endMessage(packet);
  }

  void describeThread(const ThreadTrack& t, int64_t pid, int64_t tid, std::string_view name) {
    const std::size_t packet = w_.beginMessage(kTracePacket);
    w_.varint(kPacketSequenceId, kMetadataSequenceId);
    const std::size_t track = w_.beginMessage(kPacketTrackDescriptor);
    w_.varint(kTrackUuid, sequence(t.sequence).trackUuid);
    w_.varint(kTrackParentUuid, t.processUuid);
    const std::size_t thread = w_.beginMessage(kTrackThread);
    w_.signedVarint(kThreadPid, pid);
    w_.signedVarint(kThreadTid, tid);
    if (!name.empty()) w_.bytes(kThreadName, name);
    w_.endMessage(thread);
    w_.endMessage(track);
    w_.endMessage(packet);
  }

  // A lane of a thread track (1, 2, ...): its sequence, described when first used.
  std::size_t laneSequence(ThreadTrack& t, std::size_t lane) {
    if (lane == 0) return t.sequence;
    while (t.laneSequences.size() < lane) {
      charge(sizeof(std::size_t), "its tracks");
      t.laneSequences.push_back(newSequence(nextUuid_++));
      describeLane(t, t.laneSequences.size());
    }
    return t.laneSequences[lane - 1];
  }

  // A child track of the thread's track (a thread descriptor of its own would merge with
  // the thread's track in Perfetto), named as kinetrace names a stream's lanes.
  void describeLane(const ThreadTrack& t, std::size_t lane) {
    const std::size_t packet = w_.beginMessage(kTracePacket);
    w_.varint(kPacketSequenceId, kMetadataSequenceId);
    const std::size_t track = w_.beginMessage(kPacketTrackDescriptor);
    w_.varint(kTrackUuid, sequence(t.laneSequences[lane - 1]).trackUuid);
    w_.varint(kTrackParentUuid, sequence(t.sequence).trackUuid);
    w_.bytes(kTrackName, t.name.empty() ? fmt::format("{} ({})", t.tid, lane + 1)
                                        : fmt::format("{} ({})", t.name, lane + 1));
    w_.endMessage(track);
    w_.endMessage(packet);
  }

  // ---- events --------------------------------------------------------------------------

  // Opens a packet and its TrackEvent on the track's sequence; false (and the event counted
  // as dropped) when the time is before the timebase, which no clock here can hold.
  // `nextNs` is the time of the sequence's next packet when known (see timestamp()).
  bool openTrackEvent(std::size_t trackSequence, int64_t timeNs, uint64_t type,
                      int64_t nextNs = INT64_MAX) {
    if (timeNs < timebaseNs_) {
      ++eventsBeforeTimebase_;
      return false;
    }
    Sequence& s = sequence(trackSequence);
    if (!s.started) startSequence(s);
    current_ = &s;
    packetMark_ = w_.beginMessage(kTracePacket);
    // In unsigned arithmetic: from a timebase at INT64_MIN the offset exceeds INT64_MAX.
    timestamp(s, static_cast<uint64_t>(timeNs) - static_cast<uint64_t>(timebaseNs_),
              nextNs < timeNs && nextNs >= timebaseNs_);
    w_.varint(kPacketSequenceId, s.id);
    // No SEQ_NEEDS_INCREMENTAL_STATE flag: it only tells a reader to skip packets on a
    // sequence whose state was lost (a ring buffer that wrapped); this file's sequences
    // clear their state first and lose none after, and two bytes per event add up. The
    // track is the sequence's default, so no track_uuid.
    eventMark_ = w_.beginMessage(kPacketTrackEvent);
    if (type != 0) w_.varint(kEventType, type);  // 0: a legacy event, its phase says what
    return true;
  }

  // The packet's time on the clock that takes the fewest bytes (perfetto_layout.h): one of
  // the incremental clocks not past the time, the default one unless another saves bytes;
  // BOOTTIME (an absolute time) only when all are past it. A tie goes to the smaller step,
  // which leaves the clocks further behind free for earlier times. When the sequence's next
  // packet is known to be earlier (`nextIsEarlier`: a slice's end, then a slice inside it),
  // the default clock costs this packet the clock field the next one would need.
  void timestamp(Sequence& s, uint64_t t, bool nextIsEarlier) {
    constexpr std::size_t kClockFieldBytes = 3;  // a two-byte key and the id
    // Most packets: a step of up to three bytes on the default clock, which another clock
    // (its field, then a step of at least a byte) cannot beat.
    if (!nextIsEarlier && s.clockNs[0] <= t && t - s.clockNs[0] < (uint64_t{1} << 21)) {
      w_.varint(kPacketTimestamp, t - s.clockNs[0]);
      s.clockNs[0] = t;
      return;
    }
    int best = -1;
    std::tuple<std::size_t, bool, uint64_t> bestCost;  // bytes, whether it delays the next, step
    for (int k = 0; k < kIncrementalClocks; ++k) {
      const uint64_t last = s.clockNs[static_cast<std::size_t>(k)];
      if (last > t) continue;
      const uint64_t step = t - last;
      const bool delaysNext = k == 0 && nextIsEarlier;
      const std::size_t bytes =
          (k == 0 && !delaysNext ? 0 : kClockFieldBytes) + proto::varintSize(step);
      const auto cost = std::make_tuple(bytes, delaysNext, step);
      if (best < 0 || cost < bestCost) {
        best = k;
        bestCost = cost;
        if (k == 0 && bytes == 1) break;  // one byte on the default clock: nothing is shorter
      }
    }
    if (best < 0) {
      w_.varint(kPacketTimestamp, t);
      w_.varint(kPacketTimestampClockId, kClockBoottime);
      return;
    }
    s.clockNs[static_cast<std::size_t>(best)] = t;
    w_.varint(kPacketTimestamp, std::get<2>(bestCost));
    if (best > 0) w_.varint(kPacketTimestampClockId, kDefaultClockId + static_cast<uint32_t>(best));
  }

  bool openInstant(std::size_t trackSequence, int64_t timeNs, std::string_view name,
                   std::string_view category) {
    if (!openTrackEvent(trackSequence, timeNs, kTypeInstant)) return false;
    eventNames(name, category);
    return true;
  }

  // Ends the TrackEvent, adds the strings it interned, ends the packet.
  void closeEvent() {
    w_.endMessage(eventMark_);
    if (!interned_.empty()) {
      w_.message(kPacketInternedData, interned_.view());
      interned_.clear();
    }
    w_.endMessage(packetMark_);
  }

  // `next` is the event being written, if any: on the same track, its time is the
  // sequence's next packet time.
  void closePendingSlice(const Event* next = nullptr) {
    if (!slice_.open) return;
    slice_.open = false;
    closeEvent();
    const bool sameTrack = next != nullptr && next->pid == slice_.pid && next->tid == slice_.tid &&
                           next->phase != Phase::Counter && next->phase != Phase::Metadata;
    if (!openTrackEvent(slice_.sequence, slice_.endNs, kTypeSliceEnd,
                        sameTrack ? next->timestampNs : INT64_MAX)) {
      return;
    }
    closeEvent();
  }

  void eventNames(std::string_view name, std::string_view category) {
    if (!category.empty()) {
      const uint64_t id = intern(categories_, kCategories, kInternedCategories, category);
      if (id != 0) {
        w_.varint(kEventCategoryIids, id);
      } else {
        w_.bytes(kEventCategories, category);
      }
    }
    const uint64_t id = intern(names_, kNames, kInternedEventNames, name);
    if (id != 0) {
      w_.varint(kEventNameIid, id);
    } else {
      w_.bytes(kEventName, name);
    }
  }

  // The string's id, defining it in this packet's interned data when the packet's sequence
  // has not defined it yet; 0 when the intern budget is spent (the caller writes the string
  // in place). Which strings a sequence defined is a bit per string, counted in the budget.
  uint64_t intern(InternTable& table, InternKind kind, uint32_t field, std::string_view text) {
    const std::size_t index = table.find(text, &internBudgetBytes_);
    if (index == InternTable::kNone) return 0;
    uint64_t* word = &current_->definedFirst[kind];
    if (index >= 64) {
      std::vector<uint64_t>& more = current_->definedMore[kind];
      const std::size_t at = index / 64 - 1;
      if (at >= more.size()) {
        const std::size_t bytes = (at + 1 - more.size()) * sizeof(uint64_t);
        if (internBudgetBytes_ < bytes) return 0;
        internBudgetBytes_ -= bytes;
        more.resize(at + 1);
      }
      word = &more[at];
    }
    const uint64_t bit = uint64_t{1} << (index % 64);
    const uint64_t id = table.id(index);
    if ((*word & bit) == 0) {
      *word |= bit;
      define(field, id, text);
    }
    return id;
  }

  // Adds the string to the packet's interned data (once per string and sequence).
  [[gnu::noinline]] void define(uint32_t field, uint64_t id, std::string_view text) {
    ProtoWriter interned(interned_);
    const std::size_t entry = interned.beginMessage(field);
    interned.varint(kInternedIid, id);
    interned.bytes(kInternedName, text);
    interned.endMessage(entry);
  }

  // A string or JSON text argument. Values repeat (shapes and types recorded for every op
  // of every step), so short ones are interned: JSON texts get odd ids and strings even
  // ones, which is how a reader tells them apart (both are strings to Perfetto, which shows
  // the JSON as text). Long values, and any past the intern budget, are written in place:
  // JSON as a legacy JSON value, which Perfetto expands into nested arguments.
  void stringValue(std::string_view text, bool json) {
    const uint64_t id =
        text.size() <= kMaxInternedValueBytes
            ? intern(json ? jsonValues_ : stringValues_, json ? kJsonValues : kStringValues,
                     kInternedStringValues, text)
            : 0;
    if (id != 0) {
      w_.varint(kAnnotationStringIid, id);
    } else {
      w_.bytes(json ? kAnnotationLegacyJson : kAnnotationString, text);
    }
  }

  std::size_t openAnnotation(std::string_view key) {
    const std::size_t mark = w_.beginMessage(kEventDebugAnnotations);
    const uint64_t id = intern(annotationNames_, kAnnotationNames, kInternedAnnotationNames, key);
    if (id != 0) {
      w_.varint(kAnnotationNameIid, id);
    } else {
      w_.bytes(kAnnotationName, key);
    }
    return mark;
  }

  void annotations(const Event& event) {
    for (std::size_t i = 0; i < event.argCount; ++i) {
      const Arg& arg = event.args[i];
      const std::size_t mark = openAnnotation(arg.key);
      switch (arg.value.index()) {
        case 0:
          w_.signedVarint(kAnnotationInt, *std::get_if<int64_t>(&arg.value));
          break;
        case 1:
          w_.varint(kAnnotationUint, *std::get_if<uint64_t>(&arg.value));
          break;
        case 2:
          w_.doubleValue(kAnnotationDouble, *std::get_if<double>(&arg.value));
          break;
        case 3:
          w_.boolean(kAnnotationBool, *std::get_if<bool>(&arg.value));
          break;
        case 4:
          stringValue(*std::get_if<std::string_view>(&arg.value), /*json=*/false);
          break;
        case 5: {
          const Dim3& dim = *std::get_if<Dim3>(&arg.value);
          for (int64_t component : {dim.x, dim.y, dim.z}) {
            const std::size_t item = w_.beginMessage(kAnnotationArray);
            w_.signedVarint(kAnnotationInt, component);
            w_.endMessage(item);
          }
          break;
        }
        case 6:
          stringValue(std::get_if<JsonText>(&arg.value)->text, /*json=*/true);
          break;
        default:
          break;
      }
      w_.endMessage(mark);
    }
  }

  void intAnnotation(std::string_view key, int64_t value) {
    const std::size_t mark = openAnnotation(key);
    w_.signedVarint(kAnnotationInt, value);
    w_.endMessage(mark);
  }

  void stringAnnotation(std::string_view key, std::string_view value) {
    const std::size_t mark = openAnnotation(key);
    w_.bytes(kAnnotationString, value);
    w_.endMessage(mark);
  }

  void valueAnnotation(std::string_view key, const Value& value) {
    const std::size_t mark = openAnnotation(key);
    switch (value.kind()) {
      case Value::Kind::Bool:
        w_.boolean(kAnnotationBool, value.asBool());
        break;
      case Value::Kind::Int:
        w_.signedVarint(kAnnotationInt, value.asInt());
        break;
      case Value::Kind::Uint:
        w_.varint(kAnnotationUint, value.asUint());
        break;
      case Value::Kind::Double:
        w_.doubleValue(kAnnotationDouble, value.asDouble());
        break;
      case Value::Kind::String:
        w_.bytes(kAnnotationString, value.asString());
        break;
      case Value::Kind::Null:
      case Value::Kind::Array:
      case Value::Kind::Object:
        w_.bytes(kAnnotationLegacyJson,
                 valueToJson(value).dump(-1, ' ', false,
                                         nlohmann::ordered_json::error_handler_t::replace));
        break;
    }
    w_.endMessage(mark);
  }

  // ---- output --------------------------------------------------------------------------

  // Called between events only: the open slice's marks index into the buffer.
  void flushIfFull() {
    if (out_.size() >= bufferBytes_) {
      flush();
    } else if (out_.size() >= kFirstBufferBytes / 2) {
      // A long trace: the whole buffer now (no-op once done), not by doubling, which
      // touched 3 MB of fresh memory on the way to a buffer of 1 MB.
      out_.reserve(bufferBytes_ + 4096);
    }
  }

  void flush() {
    if (out_.empty()) return;
    output_->write(out_.data(), out_.size());
    out_.clear();
  }

  std::unique_ptr<ByteOutput> output_;
  const std::size_t bufferBytes_;
  proto::ByteBuffer out_;
  ProtoWriter w_;
  proto::ByteBuffer interned_;  // InternedData entries of the packet being written
  State state_ = State::Created;
  int64_t timebaseNs_ = 0;
  std::size_t packetMark_ = 0;
  std::size_t eventMark_ = 0;
  Sequence* current_ = nullptr;  // the sequence of the packet being written
  OpenSlice slice_;

  std::deque<Sequence> sequences_;  // by id - 1; a deque: references stay valid
  std::size_t metadata_ = 0;        // the metadata track's sequence
  uint64_t nextUuid_ = kMetadataTrackUuid + 1;
  std::unordered_map<int64_t, uint64_t> processes_;
  std::unordered_map<std::pair<int64_t, int64_t>, ThreadTrack, PairHash> threads_;
  std::pair<int64_t, int64_t> lastThreadKey_;
  ThreadTrack* lastThread_ = nullptr;
  std::size_t lanesRemembered_ = 0;  // slices remembered by every track's lanes together
  std::size_t lanesBudget_ = SliceLanes::kDefaultBudget;  // what they may remember
  MemoryBudget* budget_ = nullptr;  // what the sink's growing state draws from, if anything
  std::size_t charged_ = 0;         // and what it took
  std::map<std::tuple<int64_t, int64_t, std::string, std::string>, std::size_t> counters_;

  InternTable names_;
  InternTable categories_;
  InternTable annotationNames_;
  InternTable jsonValues_{2, 1};    // ids 1, 3, 5, ...
  InternTable stringValues_{2, 2};  // ids 2, 4, 6, ...
  std::size_t internBudgetBytes_;

  TraceHeader header_;  // until the header is written
  bool headerPending_ = false;
  int64_t headerTimeNs_ = 0;
  std::deque<KeptEvent> keptNamings_;
  std::vector<OwnedTrack> describedTracks_;  // for their naming instants at the end
  int64_t spanFirstNs_ = INT64_MAX;  // of the events written so far
  int64_t spanLastNs_ = INT64_MIN;

  int64_t eventsBeforeTimebase_ = 0;
  int64_t skippedCounterValues_ = 0;
  int64_t clampedSliceEnds_ = 0;

 public:
  SinkLosses losses() const {
    SinkLosses out;
    if (eventsBeforeTimebase_ > 0) {
      out.events
          ["events more than a second before the trace's base time, which a .pftrace "
           "cannot place"] = static_cast<uint64_t>(eventsBeforeTimebase_);
    }
    if (skippedCounterValues_ > 0) {
      out.changes["counter values that are not numbers (a .pftrace counter holds numbers)"] =
          static_cast<uint64_t>(skippedCounterValues_);
    }
    if (clampedSliceEnds_ > 0) {
      out.changes["slices ending past the range of times in nanoseconds, ended at its end"] =
          static_cast<uint64_t>(clampedSliceEnds_);
    }
    return out;
  }
};

PerfettoSink::PerfettoSink(std::unique_ptr<ByteOutput> output, std::size_t bufferBytes,
                           std::size_t internBudgetBytes)
    : encoder_(std::make_unique<Encoder>(std::move(output), bufferBytes, internBudgetBytes)) {}

PerfettoSink::~PerfettoSink() = default;

void PerfettoSink::drawMemoryFrom(MemoryBudget& budget) {
  encoder_->drawMemoryFrom(budget);
}

void PerfettoSink::begin(const TraceHeader& header) {
  encoder_->begin(header);
}
void PerfettoSink::write(const Event& event) {
  encoder_->write(event);
}
void PerfettoSink::describe(const Track& track) {
  encoder_->describe(track);
}

void PerfettoSink::end(const Metadata& footer) {
  encoder_->end(footer);
}
SinkLosses PerfettoSink::losses() const {
  return encoder_->losses();
}

}  // namespace kinetrace::detail
