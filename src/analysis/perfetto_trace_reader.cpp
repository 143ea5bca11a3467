// Reads a .pftrace that PerfettoSink wrote back into the sink stream, event for event: the
// inverse of the mapping in output/perfetto_sink.h. Packet sequences are followed as
// Perfetto's trace processor follows them: interned strings and defaults per sequence,
// cleared with its incremental state; times on the sequence's clocks turned into BOOTTIME.
//
// This file turns packets into the sink's events: which parts a packet holds and in what
// order they apply, the trace's header and footer, and what each kind of track event
// becomes. The units it uses each own one concern:
//   perfetto_packets.h       the file's framing, and compressed_packets' inflation;
//   perfetto_sequences.h     per sequence: interned strings, defaults and clocks;
//   perfetto_tracks.h        the track table (process, thread and counter tracks);
//   perfetto_track_events.h  a TrackEvent message decoded into a value;
//   perfetto_open_slices.h   slices begun and waiting for their end, within the budget.
//
// What grows with the file draws from the read budget: the packet being read, the packets
// compressed_packets inflate to, the sequences and their interned strings, the tracks, the
// slices begun and not yet ended (those past half the budget are counted instead), and the
// header's and footer's metadata.

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/byte_source.h"
#include "analysis/perfetto_open_slices.h"
#include "analysis/perfetto_packets.h"
#include "analysis/perfetto_sequences.h"
#include "analysis/perfetto_track_events.h"
#include "analysis/perfetto_tracks.h"
#include "analysis/trace_reader.h"
#include "kinetrace/error.h"
#include "output/perfetto_layout.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"
#include "output/value_json.h"

namespace kinetrace::detail {
namespace {

using proto::ProtoField;
using proto::ProtoReader;
using namespace pftrace;

constexpr const char* kTopLevelMetadata = "top-level metadata";

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
        inflater_(budget),
        sequences_(budget),
        tracks_(budget),
        open_(budget) {
    header_.traceName = std::move(traceName);
  }

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
    const uint64_t unended = open_.unended();
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
  static constexpr const char* kLeftOutSlices =
      "slices whose begin was left out: the slices begun and not yet ended needed more than "
      "half the memory allowed (--memory-mb)";

  [[noreturn]] void fail(const std::string& what) const { throw Error(what); }

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
      // The packets inside, read in order as if they stood here.
      const PacketInflater::Inflated inflated =
          inflater_.inflate(compressed, source_.consumedBytes());
      forEachInflatedPacket(inflated.packets,
                            [&](std::string_view inner) { decodePacket(inner, depth + 1); });
      return;
    }
    SequenceState& sequence = sequences_[sequenceId];
    if (cleared) sequence.clearIncrementalState();
    if (!defaults.empty()) sequence.applyDefaults(defaults);
    if (!interned.empty()) sequence.addInterned(interned);
    if (!snapshot.empty()) sequence.applyClockSnapshot(snapshot);
    int64_t timeNs = 0;  // after the timebase
    if (hasTimestamp) timeNs = sequence.packetTime(clockId, timestamp);
    if (!descriptor.empty()) tracks_.describe(descriptor);
    if (!trackEvent.empty()) {
      if (!hasTimestamp) fail("a track event without a timestamp");
      event(sequence, trackEvent, timeNs);
    }
  }

  void event(const SequenceState& sequence, std::string_view bytes, int64_t timeNs) {
    // Decoded, an event holds its packet's strings a second time.
    BudgetHold decoded(budget_);
    decoded.take(2 * bytes.size() + sizeof(DecodedEvent), kPacketsGrowth);
    DecodedEvent e = decodeTrackEvent(sequence, bytes, addTimes(timebaseNs_, timeNs));
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
        const TrackInfo& t = tracks_.at(e.track);
        if (t.kind != TrackInfo::Kind::Thread) fail("a slice on a track that is not a thread's");
        open_.begin(std::move(e));
        return;
      }
      case kTypeSliceEnd: {
        std::optional<DecodedEvent> begin = open_.end(e.track);
        if (!begin) {
          // Its begin was left out for want of memory: the slice is lost, and counted.
          ++report_.skipped[kLeftOutSlices];
          return;
        }
        const TrackInfo& t = tracks_.at(begin->track);
        emit(Phase::Complete, *begin, t.pid, t.tid, addTimes(e.timeNs, -begin->timeNs));
        for (uint64_t id : begin->flowIds) flow(Phase::FlowStart, *begin, t, id);
        for (uint64_t id : begin->terminatingFlowIds) flow(Phase::FlowEnd, *begin, t, id);
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
          emitFlow(e.legacyPhase == 's' ? Phase::FlowStart : Phase::FlowEnd, e, tracks_.at(e.track),
                   e.legacyId);
          return;
        }
        fail(fmt::format("a legacy track event of phase {}", e.legacyPhase));
      default:
        fail(fmt::format("a track event of type {}", e.type));
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
    // The trace keeps its name through a conversion (a name known only at its end comes
    // with the footer).
    if (e.annotations[0].kind == Annotation::Kind::String && !e.annotations[0].text.empty()) {
      header_.traceName = e.annotations[0].text;
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
    const TrackInfo& t = tracks_.at(e.track);
    if (!e.flowIds.empty() || !e.terminatingFlowIds.empty()) {
      // An instant that carries an arrow: the flow event itself.
      for (uint64_t id : e.flowIds) emitFlow(Phase::FlowStart, e, t, id);
      for (uint64_t id : e.terminatingFlowIds) emitFlow(Phase::FlowEnd, e, t, id);
      return;
    }
    emit(Phase::Instant, e, t.pid, t.tid, 0);
  }

  void counter(const DecodedEvent& e) {
    const TrackInfo& t = tracks_.at(e.track);
    if (t.kind != TrackInfo::Kind::Counter || !e.hasCounter)
      fail("a counter value off a counter track");
    const TrackInfo& thread = tracks_.at(t.parent);
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
    for (const Annotation& a : e.annotations) args_.push_back({a.name, annotationArg(a)});
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

  const std::string& path_;
  Sink& sink_;
  ReadReport& report_;
  ByteSource& source_;
  ReadBudget& budget_;
  BudgetHold metadataHold_;             // the header's metadata until the sink has it; the footer's
  BudgetHold sinkHeaderHold_{budget_};  // the sink's copy of the header's metadata
  PacketInflater inflater_;             // compressed_packets, at every level
  uint64_t offset_ = 0;
  TraceHeader header_;
  Metadata footer_;
  bool begun_ = false;
  bool ended_ = false;
  int64_t timebaseNs_ = 0;
  PacketSequences sequences_;
  TrackTable tracks_;
  OpenSlices open_;
  std::vector<Arg> args_;
};

}  // namespace

ReadReport readPerfettoTrace(ByteSource& source, Sink& sink, const std::string& traceName,
                             ReadBudget& budget, const ReadProgress& progress) {
  const std::string& path = source.path();
  const ReadBudget::Reading reading(budget, path);
  ReadReport report;
  PerfettoReader reader(path, sink, traceName, report, source, budget);
  forEachFilePacket(source, budget, progress, [&](std::string_view packet, uint64_t offset) {
    reader.packet(packet, offset);
  });
  reader.finish();
  return report;
}

}  // namespace kinetrace::detail
