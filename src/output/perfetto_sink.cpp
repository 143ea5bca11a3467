#include "output/perfetto_sink.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kinetrace/error.h"
#include "output/chrome_naming.h"
#include "output/perfetto_encoder.h"
#include "output/trace_vocabulary.h"
#include "output/value_json.h"

namespace kinetrace::detail {

void PerfettoSink::Encoder::write(const Event& event) {
  expectState(State::Writing, "write");
  try {
    writeEvent(event);
  } catch (...) {
    state_ = State::Failed;
    throw;
  }
}

void PerfettoSink::Encoder::writeEvent(const Event& event) {
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
      const std::size_t track = laneSequence(thread, thread.lanes->place(event.timestampNs, endNs));
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

std::size_t PerfettoSink::Encoder::pointSequence(const Event& event) {
  ThreadTrack& thread = threadTrack(event.pid, event.tid);
  return laneSequence(thread, thread.lanes->laneAt(event.timestampNs));
}

void PerfettoSink::Encoder::writeFlow(const Event& event) {
  if (!openTrackEvent(pointSequence(event), event.timestampNs, 0)) return;
  eventNames(event.name, event.category);
  const std::size_t legacy = w_.beginMessage(kEventLegacyEvent);
  w_.varint(kLegacyPhase, event.phase == Phase::FlowStart ? 's' : 'f');
  w_.varint(kLegacyUnscopedId, event.flowId);
  if (event.phase == Phase::FlowEnd) w_.boolean(kLegacyBindToEnclosing, true);
  w_.endMessage(legacy);
  closeEvent();
}

void PerfettoSink::Encoder::writeCounter(const Event& event) {
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

std::size_t PerfettoSink::Encoder::laneSequence(ThreadTrack& t, std::size_t lane) {
  if (lane == 0) return t.sequence;
  while (t.laneSequences.size() < lane) {
    charge(sizeof(std::size_t), "its tracks");
    t.laneSequences.push_back(newSequence(nextUuid_++));
    describeLane(t, t.laneSequences.size());
  }
  return t.laneSequences[lane - 1];
}

bool PerfettoSink::Encoder::openTrackEvent(std::size_t trackSequence, int64_t timeNs, uint64_t type,
                                           int64_t nextNs) {
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

void PerfettoSink::Encoder::timestamp(Sequence& s, uint64_t t, bool nextIsEarlier) {
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

bool PerfettoSink::Encoder::openInstant(std::size_t trackSequence, int64_t timeNs,
                                        std::string_view name, std::string_view category) {
  if (!openTrackEvent(trackSequence, timeNs, kTypeInstant)) return false;
  eventNames(name, category);
  return true;
}

void PerfettoSink::Encoder::closeEvent() {
  w_.endMessage(eventMark_);
  if (!interned_.empty()) {
    w_.message(kPacketInternedData, interned_.view());
    interned_.clear();
  }
  w_.endMessage(packetMark_);
}

void PerfettoSink::Encoder::closePendingSlice(const Event* next) {
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

void PerfettoSink::Encoder::eventNames(std::string_view name, std::string_view category) {
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

uint64_t PerfettoSink::Encoder::intern(InternTable& table, InternKind kind, uint32_t field,
                                       std::string_view text) {
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

[[gnu::noinline]] void PerfettoSink::Encoder::define(uint32_t field, uint64_t id,
                                                     std::string_view text) {
  ProtoWriter interned(interned_);
  const std::size_t entry = interned.beginMessage(field);
  interned.varint(kInternedIid, id);
  interned.bytes(kInternedName, text);
  interned.endMessage(entry);
}

void PerfettoSink::Encoder::stringValue(std::string_view text, bool json) {
  const uint64_t id = text.size() <= kMaxInternedValueBytes
                          ? intern(json ? jsonValues_ : stringValues_,
                                   json ? kJsonValues : kStringValues, kInternedStringValues, text)
                          : 0;
  if (id != 0) {
    w_.varint(kAnnotationStringIid, id);
  } else {
    w_.bytes(json ? kAnnotationLegacyJson : kAnnotationString, text);
  }
}

std::size_t PerfettoSink::Encoder::openAnnotation(std::string_view key) {
  const std::size_t mark = w_.beginMessage(kEventDebugAnnotations);
  const uint64_t id = intern(annotationNames_, kAnnotationNames, kInternedAnnotationNames, key);
  if (id != 0) {
    w_.varint(kAnnotationNameIid, id);
  } else {
    w_.bytes(kAnnotationName, key);
  }
  return mark;
}

void PerfettoSink::Encoder::annotations(const Event& event) {
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

void PerfettoSink::Encoder::intAnnotation(std::string_view key, int64_t value) {
  const std::size_t mark = openAnnotation(key);
  w_.signedVarint(kAnnotationInt, value);
  w_.endMessage(mark);
}

void PerfettoSink::Encoder::stringAnnotation(std::string_view key, std::string_view value) {
  const std::size_t mark = openAnnotation(key);
  w_.bytes(kAnnotationString, value);
  w_.endMessage(mark);
}

void PerfettoSink::Encoder::flushIfFull() {
  if (out_.size() >= bufferBytes_) {
    flush();
  } else if (out_.size() >= kFirstBufferBytes / 2) {
    // A long trace: the whole buffer now (no-op once done), not by doubling, which
    // touched 3 MB of fresh memory on the way to a buffer of 1 MB.
    out_.reserve(bufferBytes_ + 4096);
  }
}

void PerfettoSink::Encoder::flush() {
  if (out_.empty()) return;
  output_->write(out_.data(), out_.size());
  out_.clear();
}

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
