#pragma once

#include <cstdint>
#include <string_view>

// How kinetrace lays a trace out in Perfetto's protobuf format: what PerfettoSink writes
// and what the .pftrace reader (src/analysis) expects. docs/PERFETTO_FORMAT.md explains the
// mapping in prose.

namespace kinetrace::detail::pftrace {

// Packet sequences. Every track that holds events (a thread track, a counter track, the
// metadata track) has a packet sequence of its own, whose TracePacketDefaults name that
// track: no event packet carries a track uuid. Sequence 1 is the metadata track's and also
// holds every track descriptor; the others are numbered from 2 in the order their tracks
// get their first event. Interned strings are per sequence (Perfetto's rule), so a string
// used on several tracks is defined once on each; kinetrace gives it the same id on all.
constexpr uint32_t kMetadataSequenceId = 1;

// Times are nanoseconds on BOOTTIME (Perfetto's default trace clock) counted from the
// trace's timebase, one second before its base time (the window start): events up to a
// second before the window (clock skew between host and GPU) still fit. The timebase is
// written in the trace header.
constexpr int64_t kTimebaseLeadNs = 1'000'000'000;

// Each sequence's first packet clears its incremental state, sets its defaults and holds a
// ClockSnapshot of BOOTTIME at 0 and kIncrementalClocks incremental clocks, ids 64, 65, ...,
// also at 0. A packet's timestamp on an incremental clock is the time since that clock's
// previous packet on the sequence, so a time takes one to three bytes instead of five.
// Clock 64 is the sequence's default (TracePacketDefaults.timestamp_clock_id); a packet on
// another clock names it (timestamp_clock_id, three bytes). An incremental clock cannot go
// back, and a sequence's events are not all in time order (a range is written after the
// ranges inside it; an event's end comes before the next event's start), so the writer
// puts each packet on the clock that takes the fewest bytes: usually 64, another one when
// the time is before clock 64's, BOOTTIME itself (an absolute time) when it is before all.
constexpr uint32_t kDefaultClockId = 64;
constexpr int kIncrementalClocks = 4;

// The track that holds what is not an event on a timeline: the trace header (first event
// of the file), the naming metadata events, and the trace footer (last event).
constexpr uint64_t kMetadataTrackUuid = 1;
constexpr std::string_view kMetadataTrackName = "kinetrace trace metadata";
// Instants on that track. The header's first debug annotations are, in order: traceName,
// baseTimeNanoseconds, timebaseNanoseconds, format; the trace's header metadata follows.
// The footer's annotations are the footer metadata.
constexpr std::string_view kLayoutCategory = "__kinetrace";
constexpr std::string_view kHeaderEventName = "trace header";
constexpr std::string_view kFooterEventName = "trace footer";
// Layout 3: as layout 2, with flow events as Chrome's legacy flow events (below), slices
// that would overlap on a track moved to lanes (child tracks of the thread's track), and
// the metadata track's instants inside the events' span. Layout 2 (packet sequences per
// track, incremental clocks, flow ids on slices and instants) and layout 1 (one sequence,
// absolute times, a track uuid on every event) are still read.
constexpr std::string_view kFormatName = "kinetrace pftrace 3";
constexpr std::string_view kFormatNameLayout2 = "kinetrace pftrace 2";
constexpr std::string_view kFormatNameLayout1 = "kinetrace pftrace 1";
constexpr int kHeaderFixedAnnotations = 4;
// A naming metadata event ('M': process_name, thread_name, sort indexes, labels): an
// instant of this category named like the event, whose annotations are the event's args
// followed by "pid" and "tid", and by kNamingTimeAnnotation (the event's own time, in ns
// since the Unix epoch) when the instant stands elsewhere: no instant on the metadata track
// lies outside the span of the trace's events, which Perfetto's timeline would stretch to.
constexpr std::string_view kNamingCategory = "__metadata";
constexpr std::string_view kNamingTimeAnnotation = "kinetrace ts ns";

// Flow events ('s', 'f') are TrackEvents with no type and a LegacyEvent of that phase, the
// flow's id as unscoped_id and, on an 'f', bind_to_enclosing: Perfetto's trace processor
// reads them as its JSON importer reads the JSON's, an arrow per 'f' from the slice
// enclosing the 's' to the one enclosing the 'f', flows told apart by id, name and category.

// Layout 2's launch arrows: flow ids on the slice of this name and category (read only).
constexpr std::string_view kLaunchFlowName = "ac2g";

// Lanes of a thread track: TrackDescriptors with the thread's track as parent, named
// "NAME (2)", "NAME (3)", ... as kinetrace names the lanes of a stream.
}  // namespace kinetrace::detail::pftrace
