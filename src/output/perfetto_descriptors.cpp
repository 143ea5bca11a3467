// PerfettoSink's encoder: what runs per track or once (output/perfetto_encoder.h).

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

void PerfettoSink::Encoder::drawMemoryFrom(MemoryBudget& budget) {
  expectState(State::Created, "drawMemoryFrom");
  const std::size_t share = budget.cap() / 8;
  internBudgetBytes_ = std::min(internBudgetBytes_, share);
  lanesBudget_ =
      std::max<std::size_t>(1, std::min(SliceLanes::kDefaultBudget, share / kLaneBytesPerSlice));
  budget_ = &budget;
  charge(internBudgetBytes_ + lanesBudget_ * kLaneBytesPerSlice, "its interned strings and lanes");
}

void PerfettoSink::Encoder::begin(const TraceHeader& header) {
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

void PerfettoSink::Encoder::describe(const Track& track) {
  expectState(State::Writing, "describe");
  try {
    describeTrack(track);
  } catch (...) {
    state_ = State::Failed;
    throw;
  }
}

void PerfettoSink::Encoder::end(const Metadata& footer) {
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

bool PerfettoSink::Encoder::isKeyTheSinkWrites(std::string_view key) {
  return key == chrome::kTraceEvents || key == chrome::kTraceName ||
         key == chrome::kBaseTimeNanoseconds;
}

void PerfettoSink::Encoder::expectState(State expected, const char* call) const {
  if (state_ == expected) return;
  if (state_ == State::Failed) {
    throw Error(fmt::format("Sink::{}() called after a write error", call));
  }
  throw Error(fmt::format("Sink::{}() called out of order (begin, write..., end)", call));
}

void PerfettoSink::Encoder::charge(std::size_t bytes, const char* what) {
  if (budget_ == nullptr) return;
  if (!budget_->tryAcquire(bytes)) {
    throw Error(
        fmt::format("{}: writing it as a .pftrace, {} would take more than the {} MB of memory "
                    "--memory-mb allows; raise --memory-mb",
                    header_.traceName.empty() ? std::string("the output") : header_.traceName, what,
                    (budget_->cap() + (std::size_t{1} << 20) - 1) >> 20));
  }
  charged_ += bytes;
}

void PerfettoSink::Encoder::forgetLanesOlderHalf() {
  lanesRemembered_ = 0;
  for (auto& [key, thread] : threads_) {
    thread.lanes->forgetOlderHalf();
    lanesRemembered_ += thread.lanes->remembered();
  }
}

void PerfettoSink::Encoder::writeFooter(const Metadata& footer) {
  if (!openInstant(metadata_, headerTimeNs_, kFooterEventName, kLayoutCategory)) return;
  for (const Value::Member& member : footer) {
    // A trace's name known only at its end (a converted trace's own) is the footer's: the
    // header, written at the first event, has the name the trace began with.
    if (isKeyTheSinkWrites(member.key) && member.key != chrome::kTraceName) continue;
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

void PerfettoSink::Encoder::writeHeader(int64_t timeNs) {
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

void PerfettoSink::Encoder::keep(const Event& event, KeptEvent& k) {
  k.event = event;
  auto own = [&k](std::string_view text) { return std::string_view(k.strings.emplace_back(text)); };
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

void PerfettoSink::Encoder::writeNaming(const Event& event) {
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

void PerfettoSink::Encoder::describeTrack(const Track& t) {
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

void PerfettoSink::Encoder::nameThread(ThreadTrack& track, int64_t pid, int64_t tid,
                                       std::string_view name) {
  if (name.size() > track.name.capacity()) {
    charge(name.size() - track.name.capacity(), "its track names");
  }
  track.name = std::string(name);
  describeThread(track, pid, tid, name);
  for (std::size_t lane = 1; lane <= track.laneSequences.size(); ++lane) {
    describeLane(track, lane);
  }
}

void PerfettoSink::Encoder::writeNamingInstant(const Event& event) {
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

std::size_t PerfettoSink::Encoder::newSequence(uint64_t trackUuid) {
  charge(sizeof(Sequence), "its tracks");
  Sequence& s = sequences_.emplace_back();
  s.id = static_cast<uint32_t>(sequences_.size());  // kMetadataSequenceId for the first
  s.trackUuid = trackUuid;
  return sequences_.size() - 1;
}

void PerfettoSink::Encoder::startSequence(Sequence& s) {
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

void PerfettoSink::Encoder::snapshotClock(uint32_t id, bool incremental) {
  const std::size_t clock = w_.beginMessage(kSnapshotClocks);
  w_.varint(kClockId, id);
  w_.varint(kClockTimestamp, 0);
  if (incremental) w_.boolean(kClockIsIncremental, true);
  w_.endMessage(clock);
}

uint64_t PerfettoSink::Encoder::processTrack(int64_t pid, std::string_view name) {
  auto found = processes_.find(pid);
  if (found != processes_.end()) return found->second;
  const uint64_t uuid = nextUuid_++;
  charge(sizeof(std::pair<int64_t, uint64_t>) + kNodeBytes, "its tracks");
  processes_.emplace(pid, uuid);
  describeProcess(uuid, pid, name);
  return uuid;
}

std::size_t PerfettoSink::Encoder::counterTrack(int64_t pid, int64_t tid, std::string_view name,
                                                std::string_view key, std::string_view unit,
                                                std::string_view category) {
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

void PerfettoSink::Encoder::describeProcess(uint64_t uuid, int64_t pid, std::string_view name) {
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

void PerfettoSink::Encoder::describeThread(const ThreadTrack& t, int64_t pid, int64_t tid,
                                           std::string_view name) {
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

void PerfettoSink::Encoder::describeLane(const ThreadTrack& t, std::size_t lane) {
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

void PerfettoSink::Encoder::valueAnnotation(std::string_view key, const Value& value) {
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

SinkLosses PerfettoSink::Encoder::losses() const {
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

}  // namespace kinetrace::detail
