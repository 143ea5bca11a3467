#include "output/perfetto_sink.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kinetrace/error.h"
#include "output/gzip_output.h"
#include "output/perfetto_layout.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"
#include "output/value_json.h"

namespace kinetrace::detail {
namespace {

using proto::ProtoWriter;

// String and JSON argument values longer than this are written in place, not interned:
// long values rarely repeat, and the intern budget is better spent on short ones.
constexpr std::size_t kMaxInternedValueBytes = 1024;
using namespace pftrace;

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Strings of one kind (event names, categories, annotation names) with their interning ids,
// from 1. Most strings come again and again from the same address (a trace's string table,
// a literal): a slot per address remembers the id, checked against the interned text, so a
// repeat costs one comparison, and an address reused for other text only misses the slot.
class InternTable {
 public:
  // Ids are first, first + stride, first + 2 * stride, ...
  explicit InternTable(uint64_t stride = 1, uint64_t first = 1) : stride_(stride), first_(first) {}

  // The string's id, and whether it is new; 0 when the budget is spent and the string is
  // not already interned (the caller writes it in place).
  uint64_t find(std::string_view text, bool* isNew, std::size_t* budgetBytes) {
    Slot& slot = slots_[(reinterpret_cast<uintptr_t>(text.data()) >> 3 ^ text.size()) % kSlots];
    if (slot.data == text.data() && slot.text != nullptr && slot.text->size() == text.size() &&
        std::memcmp(slot.text->data(), text.data(), text.size()) == 0) {
      *isNew = false;
      return slot.id;
    }
    key_.assign(text.data(), text.size());
    auto found = ids_.find(key_);
    *isNew = found == ids_.end();
    if (*isNew) {
      if (*budgetBytes < text.size() + kEntryOverheadBytes) {
        *isNew = false;  // not interned at all: the caller writes it in place
        return 0;
      }
      *budgetBytes -= text.size() + kEntryOverheadBytes;
      found = ids_.emplace(key_, first_ + stride_ * ids_.size()).first;
    }
    slot = Slot{text.data(), &found->first, found->second};  // map keys never move
    return found->second;
  }

 private:
  struct Slot {
    const char* data = nullptr;
    const std::string* text = nullptr;
    uint64_t id = 0;
  };
  static constexpr std::size_t kSlots = 1021;  // prime: addresses are 8-byte aligned
  // What a map entry costs beyond its characters (node, hash, id): counted in the budget.
  static constexpr std::size_t kEntryOverheadBytes = 64;
  uint64_t stride_;
  uint64_t first_;
  std::unordered_map<std::string, uint64_t> ids_;
  std::array<Slot, kSlots> slots_{};
  std::string key_;
};

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
    out_.reserve(bufferBytes_ + 4096);
    interned_.reserve(4096);
  }

  void begin(const TraceHeader& header) {
    expectState(State::Created, "begin");
    state_ = State::Writing;
    timebaseNs_ = header.baseTimeNs - kTimebaseLeadNs;

    // The first packet clears the sequence's incremental state: interned ids start here.
    const std::size_t packet = w_.beginMessage(kTracePacket);
    w_.varint(kPacketSequenceId, kSequenceId);
    w_.varint(kPacketSequenceFlags, kSeqIncrementalStateCleared);
    const std::size_t track = w_.beginMessage(kPacketTrackDescriptor);
    w_.varint(kTrackUuid, kMetadataTrackUuid);
    w_.bytes(kTrackName, kMetadataTrackName);
    w_.endMessage(track);
    w_.endMessage(packet);

    openInstant(kMetadataTrackUuid, header.baseTimeNs, kHeaderEventName, kLayoutCategory);
    stringAnnotation("traceName", header.traceName);
    intAnnotation("baseTimeNanoseconds", header.baseTimeNs);
    intAnnotation("timebaseNanoseconds", timebaseNs_);
    stringAnnotation("format", kFormatName);
    for (const Value::Member& member : header.metadata) {
      if (isKeyTheSinkWrites(member.key)) continue;
      valueAnnotation(member.key, member.value);
    }
    closeEvent();
    flushIfFull();
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

  void end(const Metadata& footer) {
    expectState(State::Writing, "end");
    try {
      closePendingSlice();
      openInstant(kMetadataTrackUuid, timebaseNs_ + kTimebaseLeadNs, kFooterEventName,
                  kLayoutCategory);
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
      closeEvent();
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

  struct ThreadTrack {
    uint64_t uuid = 0;
    uint64_t processUuid = 0;
  };

  // A slice whose BEGIN packet is still open: a launch arrow that follows it on its track
  // becomes a flow id on it.
  struct OpenSlice {
    bool open = false;
    int64_t pid = 0;
    int64_t tid = 0;
    int64_t startNs = 0;
    int64_t endNs = 0;
    uint64_t uuid = 0;
  };

  static bool isKeyTheSinkWrites(std::string_view key) {
    return key == "traceEvents" || key == "traceName" || key == "baseTimeNanoseconds";
  }

  void expectState(State expected, const char* call) const {
    if (state_ == expected) return;
    if (state_ == State::Failed) {
      throw Error(fmt::format("Sink::{}() called after a write error", call));
    }
    throw Error(fmt::format("Sink::{}() called out of order (begin, write..., end)", call));
  }

  void writeEvent(const Event& event) {
    if (event.phase == Phase::FlowStart || event.phase == Phase::FlowEnd) {
      if (attachFlow(event)) return;
    }
    closePendingSlice();
    flushIfFull();
    switch (event.phase) {
      case Phase::Complete: {
        const uint64_t uuid = threadTrack(event.pid, event.tid).uuid;
        if (!openTrackEvent(event.timestampNs, kTypeSliceBegin, uuid)) return;
        eventNames(event.name, event.category);
        annotations(event);
        slice_ = {
            true, event.pid, event.tid, event.timestampNs, event.timestampNs + event.durationNs,
            uuid};
        return;
      }
      case Phase::Instant:
        if (!openInstant(threadTrack(event.pid, event.tid).uuid, event.timestampNs, event.name,
                         event.category)) {
          return;
        }
        annotations(event);
        closeEvent();
        return;
      case Phase::FlowStart:
      case Phase::FlowEnd:
        // Not at the start of the slice before it: an instant that carries the arrow.
        if (!openInstant(threadTrack(event.pid, event.tid).uuid, event.timestampNs, event.name,
                         event.category)) {
          return;
        }
        w_.fixed64(event.phase == Phase::FlowStart ? kEventFlowIds : kEventTerminatingFlowIds,
                   event.flowId);
        closeEvent();
        return;
      case Phase::Counter:
        writeCounter(event);
        return;
      case Phase::Metadata:
        writeNaming(event);
        return;
    }
  }

  // A launch arrow at the start of the slice just written, on its track: a flow id on it.
  bool attachFlow(const Event& event) {
    if (!slice_.open || event.pid != slice_.pid || event.tid != slice_.tid ||
        event.timestampNs != slice_.startNs || event.name != kLaunchFlowName ||
        event.category != kLaunchFlowName) {
      return false;
    }
    w_.fixed64(event.phase == Phase::FlowStart ? kEventFlowIds : kEventTerminatingFlowIds,
               event.flowId);
    return true;
  }

  void writeCounter(const Event& event) {
    for (std::size_t i = 0; i < event.argCount; ++i) {
      const Arg& arg = event.args[i];
      const uint64_t uuid = counterTrack(event.pid, event.tid, event.name, arg.key);
      if (const auto* d = std::get_if<double>(&arg.value)) {
        if (!openTrackEvent(event.timestampNs, kTypeCounter, uuid)) return;
        w_.doubleValue(kEventDoubleCounterValue, *d);
      } else if (const auto* i64 = std::get_if<int64_t>(&arg.value)) {
        if (!openTrackEvent(event.timestampNs, kTypeCounter, uuid)) return;
        w_.signedVarint(kEventCounterValue, *i64);
      } else if (const auto* u64 = std::get_if<uint64_t>(&arg.value)) {
        if (!openTrackEvent(event.timestampNs, kTypeCounter, uuid)) return;
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

  // Names the track (the descriptor again, now with its name) and keeps the event itself,
  // so the file holds sort indexes and labels too.
  void writeNaming(const Event& event) {
    const std::string_view* text = nullptr;
    for (std::size_t i = 0; i < event.argCount; ++i) {
      if (event.args[i].key == "name") text = std::get_if<std::string_view>(&event.args[i].value);
    }
    if (text != nullptr && event.name == "process_name") {
      describeProcess(processTrack(event.pid), event.pid, *text);
    } else if (text != nullptr && event.name == "thread_name") {
      const ThreadTrack& track = threadTrack(event.pid, event.tid);
      describeThread(track, event.pid, event.tid, *text);
    }
    if (!openInstant(kMetadataTrackUuid, event.timestampNs, event.name, kNamingCategory)) return;
    annotations(event);
    intAnnotation("pid", event.pid);
    intAnnotation("tid", event.tid);
    closeEvent();
  }

  // ---- tracks --------------------------------------------------------------------------

  uint64_t processTrack(int64_t pid) {
    auto found = processes_.find(pid);
    if (found != processes_.end()) return found->second;
    const uint64_t uuid = nextUuid_++;
    processes_.emplace(pid, uuid);
    describeProcess(uuid, pid, {});
    return uuid;
  }

  const ThreadTrack& threadTrack(int64_t pid, int64_t tid) {
    if (lastThread_ != nullptr && lastThreadKey_ == std::make_pair(pid, tid)) return *lastThread_;
    auto found = threads_.find({pid, tid});
    if (found == threads_.end()) {
      ThreadTrack track;
      track.processUuid = processTrack(pid);
      track.uuid = nextUuid_++;
      found = threads_.emplace(std::make_pair(pid, tid), track).first;
      describeThread(track, pid, tid, {});
    }
    lastThreadKey_ = {pid, tid};
    lastThread_ = &found->second;  // unordered_map references survive rehashing
    return found->second;
  }

  uint64_t counterTrack(int64_t pid, int64_t tid, std::string_view name, std::string_view key) {
    auto lookup = std::make_tuple(pid, tid, std::string(name), std::string(key));
    auto found = counters_.find(lookup);
    if (found != counters_.end()) return found->second;
    const uint64_t parent = threadTrack(pid, tid).uuid;
    const uint64_t uuid = nextUuid_++;
    counters_.emplace(std::move(lookup), uuid);
    const std::size_t packet = w_.beginMessage(kTracePacket);
    w_.varint(kPacketSequenceId, kSequenceId);
    const std::size_t track = w_.beginMessage(kPacketTrackDescriptor);
    w_.varint(kTrackUuid, uuid);
    w_.varint(kTrackParentUuid, parent);
    w_.bytes(kTrackName, key == name ? std::string(name) : fmt::format("{} {}", name, key));
    w_.endMessage(w_.beginMessage(kTrackCounter));  // an empty CounterDescriptor
    w_.endMessage(track);
    w_.endMessage(packet);
    return uuid;
  }

  void describeProcess(uint64_t uuid, int64_t pid, std::string_view name) {
    const std::size_t packet = w_.beginMessage(kTracePacket);
    w_.varint(kPacketSequenceId, kSequenceId);
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
    w_.varint(kPacketSequenceId, kSequenceId);
    const std::size_t track = w_.beginMessage(kPacketTrackDescriptor);
    w_.varint(kTrackUuid, t.uuid);
    w_.varint(kTrackParentUuid, t.processUuid);
    const std::size_t thread = w_.beginMessage(kTrackThread);
    w_.signedVarint(kThreadPid, pid);
    w_.signedVarint(kThreadTid, tid);
    if (!name.empty()) w_.bytes(kThreadName, name);
    w_.endMessage(thread);
    w_.endMessage(track);
    w_.endMessage(packet);
  }

  // ---- events --------------------------------------------------------------------------

  // Opens a packet and its TrackEvent; false (and the event counted as dropped) when the
  // time is before the timebase, which a packet's unsigned timestamp cannot hold.
  bool openTrackEvent(int64_t timeNs, uint64_t type, uint64_t trackUuid) {
    if (timeNs < timebaseNs_) {
      ++eventsBeforeTimebase_;
      return false;
    }
    packetMark_ = w_.beginMessage(kTracePacket);
    w_.varint(kPacketTimestamp, static_cast<uint64_t>(timeNs - timebaseNs_));
    w_.varint(kPacketSequenceId, kSequenceId);
    // No SEQ_NEEDS_INCREMENTAL_STATE flag: it only tells a reader to skip packets on a
    // sequence whose state was lost (a ring buffer that wrapped); this file's first packet
    // clears the state and none is lost after it, and two bytes per event add up.
    eventMark_ = w_.beginMessage(kPacketTrackEvent);
    w_.varint(kEventType, type);
    w_.varint(kEventTrackUuid, trackUuid);
    return true;
  }

  bool openInstant(uint64_t trackUuid, int64_t timeNs, std::string_view name,
                   std::string_view category) {
    if (!openTrackEvent(timeNs, kTypeInstant, trackUuid)) return false;
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

  void closePendingSlice() {
    if (!slice_.open) return;
    slice_.open = false;
    closeEvent();
    if (!openTrackEvent(slice_.endNs, kTypeSliceEnd, slice_.uuid)) return;
    closeEvent();
  }

  void eventNames(std::string_view name, std::string_view category) {
    if (!category.empty()) {
      const uint64_t id = intern(categories_, kInternedCategories, category);
      if (id != 0) {
        w_.varint(kEventCategoryIids, id);
      } else {
        w_.bytes(kEventCategories, category);
      }
    }
    const uint64_t id = intern(names_, kInternedEventNames, name);
    if (id != 0) {
      w_.varint(kEventNameIid, id);
    } else {
      w_.bytes(kEventName, name);
    }
  }

  // The id of a string, adding it to this packet's interned data when it is new; 0 when
  // the intern budget is spent.
  uint64_t intern(InternTable& table, uint32_t field, std::string_view text) {
    bool isNew = false;
    const uint64_t id = table.find(text, &isNew, &internBudgetBytes_);
    if (isNew) {
      ProtoWriter interned(interned_);
      const std::size_t entry = interned.beginMessage(field);
      interned.varint(kInternedIid, id);
      interned.bytes(kInternedName, text);
      interned.endMessage(entry);
    }
    return id;
  }

  // A string or JSON text argument. Values repeat (shapes and types recorded for every op
  // of every step), so short ones are interned: JSON texts get odd ids and strings even
  // ones, which is how a reader tells them apart (both are strings to Perfetto, which shows
  // the JSON as text). Long values, and any past the intern budget, are written in place:
  // JSON as a legacy JSON value, which Perfetto expands into nested arguments.
  void stringValue(std::string_view text, bool json) {
    const uint64_t id =
        text.size() <= kMaxInternedValueBytes
            ? intern(json ? jsonValues_ : stringValues_, kInternedStringValues, text)
            : 0;
    if (id != 0) {
      w_.varint(kAnnotationStringIid, id);
    } else {
      w_.bytes(json ? kAnnotationLegacyJson : kAnnotationString, text);
    }
  }

  std::size_t openAnnotation(std::string_view key) {
    const std::size_t mark = w_.beginMessage(kEventDebugAnnotations);
    const uint64_t id = intern(annotationNames_, kInternedAnnotationNames, key);
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
    if (out_.size() >= bufferBytes_) flush();
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
  OpenSlice slice_;

  uint64_t nextUuid_ = kMetadataTrackUuid + 1;
  std::unordered_map<int64_t, uint64_t> processes_;
  std::unordered_map<std::pair<int64_t, int64_t>, ThreadTrack, PairHash> threads_;
  std::pair<int64_t, int64_t> lastThreadKey_;
  const ThreadTrack* lastThread_ = nullptr;
  std::map<std::tuple<int64_t, int64_t, std::string, std::string>, uint64_t> counters_;

  InternTable names_;
  InternTable categories_;
  InternTable annotationNames_;
  InternTable jsonValues_{2, 1};    // ids 1, 3, 5, ...
  InternTable stringValues_{2, 2};  // ids 2, 4, 6, ...
  std::size_t internBudgetBytes_;

  int64_t eventsBeforeTimebase_ = 0;
  int64_t skippedCounterValues_ = 0;
};

PerfettoSink::PerfettoSink(std::unique_ptr<ByteOutput> output, std::size_t bufferBytes,
                           std::size_t internBudgetBytes)
    : encoder_(std::make_unique<Encoder>(std::move(output), bufferBytes, internBudgetBytes)) {}

PerfettoSink::~PerfettoSink() = default;

void PerfettoSink::begin(const TraceHeader& header) {
  encoder_->begin(header);
}
void PerfettoSink::write(const Event& event) {
  encoder_->write(event);
}
void PerfettoSink::end(const Metadata& footer) {
  encoder_->end(footer);
}

bool isPerfettoPath(std::string_view path) {
  if (endsWith(path, ".gz")) path.remove_suffix(3);
  return endsWith(path, ".pftrace") || endsWith(path, ".perfetto-trace");
}

std::unique_ptr<Sink> openPerfettoFile(const std::string& pathOrUrl) {
  constexpr std::string_view kScheme = "perfetto://";
  std::string path = pathOrUrl;
  if (path.size() >= kScheme.size() &&
      std::equal(kScheme.begin(), kScheme.end(), path.begin(),
                 [](char a, char b) { return a == (b >= 'A' && b <= 'Z' ? b - 'A' + 'a' : b); })) {
    path.erase(0, kScheme.size());
    if (path.empty()) throw Error("trace URL \"" + pathOrUrl + "\" has no path");
  }
  std::unique_ptr<ByteOutput> file = std::make_unique<AtomicFile>(path);
  if (endsWith(path, ".gz")) file = std::make_unique<GzipOutput>(std::move(file));
  return std::make_unique<PerfettoSink>(std::move(file));
}

}  // namespace kinetrace::detail
