#pragma once

// PerfettoSink's encoder (output/perfetto_sink.h), one class in three files by concern: this
// header declares it; perfetto_sink.cpp holds what runs per event (tracks found, packets,
// clocks, interning, annotations, the output buffer), perfetto_descriptors.cpp what runs
// per track or once (tracks made and described, naming, the header and footer, the
// budget). Included by those two files only: its names are the encoder's own.

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kinetrace/sink.h"
#include "model/memory_budget.h"
#include "output/perfetto_intern.h"
#include "output/perfetto_lanes.h"
#include "output/perfetto_layout.h"
#include "output/perfetto_schema.h"
#include "output/perfetto_sink.h"
#include "output/protobuf.h"
#include "output/string_index.h"

namespace kinetrace::detail {

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
inline std::size_t argTextBytes(const Arg& arg) {
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
inline int64_t saturatingAdd(int64_t a, int64_t b, bool* clamped = nullptr) {
  int64_t sum = 0;
  const bool overflow = __builtin_add_overflow(a, b, &sum);
  if (clamped != nullptr) *clamped = overflow;
  if (!overflow) return sum;
  return b > 0 ? INT64_MAX : INT64_MIN;
}
inline int64_t saturatingSubtract(int64_t a, int64_t b) {
  int64_t difference = 0;
  if (!__builtin_sub_overflow(a, b, &difference)) return difference;
  return b < 0 ? INT64_MAX : INT64_MIN;
}

struct PairHash {
  std::size_t operator()(const std::pair<int64_t, int64_t>& key) const {
    return std::hash<int64_t>()(key.first) * 31 + std::hash<int64_t>()(key.second);
  }
};

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

  void drawMemoryFrom(MemoryBudget& budget);

  void begin(const TraceHeader& header);

  void write(const Event& event);

  void describe(const Track& track);

  void end(const Metadata& footer);

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

  static bool isKeyTheSinkWrites(std::string_view key);

  void expectState(State expected, const char* call) const;

  void writeEvent(const Event& event);

  // Takes `bytes` from the budget, when there is one, for `what`; throws when it cannot.
  void charge(std::size_t bytes, const char* what);

  // The slices the tracks' lanes remember are bounded together, not per track (a trace has
  // as many tracks as threads and streams): past the budget every track forgets the older
  // half of its own.
  void forgetLanesOlderHalf();

  // The sequence of the lane that holds an instant's or a flow event's time.
  std::size_t pointSequence(const Event& event);

  // A flow event as Chrome's legacy flow event (perfetto_layout.h): Perfetto binds it, as
  // it binds the JSON's, to the slice open on its track at its time, and draws an arrow
  // for every 'f' of an id (a launch that started several kernels), flows of other names
  // and categories being other flows even with the same id.
  void writeFlow(const Event& event);

  // The footer instant, at the header's time (never before the timebase).
  void writeFooter(const Metadata& footer);

  // The header instant, at `timeNs` (never before the timebase), then the naming events
  // kept until then.
  void writeHeader(int64_t timeNs);

  static void keep(const Event& event, KeptEvent& k);

  void writeCounter(const Event& event);

  // A Chrome naming event (a trace written the Chrome way, read back): names the track it
  // names (the descriptor again, now with its name) and keeps the event itself, so the
  // file holds sort indexes and labels too.
  void writeNaming(const Event& event);

  // A track described as a track: its descriptor as its kind says, named from the first.
  // Its Chrome naming events are kept, the latest description of each track, and written
  // at the end as instants on the metadata track (a reader gets them back where the JSON
  // has them: after the events).
  void describeTrack(const Track& t);

  void nameThread(ThreadTrack& track, int64_t pid, int64_t tid, std::string_view name);

  // The naming event as an instant on the metadata track, inside the span of the events
  // written so far (at the header's time when none is); its own time, when elsewhere, is
  // an annotation, so a reader gets the event back as it was.
  void writeNamingInstant(const Event& event);

  // ---- tracks and sequences --------------------------------------------------------------

  Sequence& sequence(std::size_t index) { return sequences_[index]; }

  // A sequence for a new track; it starts (its first packet is written) with its first event.
  std::size_t newSequence(uint64_t trackUuid);

  // Clears the sequence's incremental state and sets its defaults and clocks.
  void startSequence(Sequence& s);

  // A clock reading 0 when BOOTTIME reads 0, that is at the timebase.
  void snapshotClock(uint32_t id, bool incremental);

  // The process's track, made (and described, with `name` when given) the first time.
  uint64_t processTrack(int64_t pid, std::string_view name = {});

  // The thread's track, made (and described, with `name` when given) the first time.
  ThreadTrack& threadTrack(int64_t pid, int64_t tid, std::string_view name = {}) {
    if (lastThread_ != nullptr && lastThreadKey_ == std::make_pair(pid, tid)) return *lastThread_;
    auto found = threads_.find({pid, tid});
    if (found == threads_.end()) {
      charge(sizeof(ThreadTrack) + sizeof(SliceLanes) + 2 * kNodeBytes + name.size(), "its tracks");
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
                           std::string_view unit, std::string_view category);

  void describeProcess(uint64_t uuid, int64_t pid, std::string_view name);

  void describeThread(const ThreadTrack& t, int64_t pid, int64_t tid, std::string_view name);

  // A lane of a thread track (1, 2, ...): its sequence, described when first used.
  std::size_t laneSequence(ThreadTrack& t, std::size_t lane);

  // A child track of the thread's track (a thread descriptor of its own would merge with
  // the thread's track in Perfetto), named as kinetrace names a stream's lanes.
  void describeLane(const ThreadTrack& t, std::size_t lane);

  // ---- events --------------------------------------------------------------------------

  // Opens a packet and its TrackEvent on the track's sequence; false (and the event counted
  // as dropped) when the time is before the timebase, which no clock here can hold.
  // `nextNs` is the time of the sequence's next packet when known (see timestamp()).
  bool openTrackEvent(std::size_t trackSequence, int64_t timeNs, uint64_t type,
                      int64_t nextNs = INT64_MAX);

  // The packet's time on the clock that takes the fewest bytes (perfetto_layout.h): one of
  // the incremental clocks not past the time, the default one unless another saves bytes;
  // BOOTTIME (an absolute time) only when all are past it. A tie goes to the smaller step,
  // which leaves the clocks further behind free for earlier times. When the sequence's next
  // packet is known to be earlier (`nextIsEarlier`: a slice's end, then a slice inside it),
  // the default clock costs this packet the clock field the next one would need.
  void timestamp(Sequence& s, uint64_t t, bool nextIsEarlier);

  bool openInstant(std::size_t trackSequence, int64_t timeNs, std::string_view name,
                   std::string_view category);

  // Ends the TrackEvent, adds the strings it interned, ends the packet.
  void closeEvent();

  // `next` is the event being written, if any: on the same track, its time is the
  // sequence's next packet time.
  void closePendingSlice(const Event* next = nullptr);

  void eventNames(std::string_view name, std::string_view category);

  // The string's id, defining it in this packet's interned data when the packet's sequence
  // has not defined it yet; 0 when the intern budget is spent (the caller writes the string
  // in place). Which strings a sequence defined is a bit per string, counted in the budget.
  uint64_t intern(InternTable& table, InternKind kind, uint32_t field, std::string_view text);

  // Adds the string to the packet's interned data (once per string and sequence).
  [[gnu::noinline]] void define(uint32_t field, uint64_t id, std::string_view text);

  // A string or JSON text argument. Values repeat (shapes and types recorded for every op
  // of every step), so short ones are interned: JSON texts get odd ids and strings even
  // ones, which is how a reader tells them apart (both are strings to Perfetto, which shows
  // the JSON as text). Long values, and any past the intern budget, are written in place:
  // JSON as a legacy JSON value, which Perfetto expands into nested arguments.
  void stringValue(std::string_view text, bool json);

  std::size_t openAnnotation(std::string_view key);

  void annotations(const Event& event);

  void intAnnotation(std::string_view key, int64_t value);

  void stringAnnotation(std::string_view key, std::string_view value);

  void valueAnnotation(std::string_view key, const Value& value);

  // ---- output --------------------------------------------------------------------------

  // Called between events only: the open slice's marks index into the buffer.
  void flushIfFull();

  void flush();

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
  int64_t spanFirstNs_ = INT64_MAX;          // of the events written so far
  int64_t spanLastNs_ = INT64_MIN;

  int64_t eventsBeforeTimebase_ = 0;
  int64_t skippedCounterValues_ = 0;
  int64_t clampedSliceEnds_ = 0;

 public:
  SinkLosses losses() const;
};

}  // namespace kinetrace::detail
