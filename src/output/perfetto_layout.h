#pragma once

#include <cstdint>
#include <string_view>

// How kinetrace lays a trace out in Perfetto's protobuf format: what PerfettoSink writes
// and what the .pftrace reader (src/analysis) expects. docs/PERFETTO_FORMAT.md explains the
// mapping in prose.

namespace kinetrace::detail::pftrace {

// Every packet is on one packet sequence (interned strings are per sequence).
constexpr uint32_t kSequenceId = 1;

// Packet timestamps are nanoseconds after the trace's timebase, which is one second before
// the trace's base time (the window start): small numbers take fewer varint bytes than
// nanoseconds since 1970, and events up to a second before the window (clock skew between
// host and GPU) still fit. The timebase is written in the trace header.
constexpr int64_t kTimebaseLeadNs = 1'000'000'000;

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
constexpr std::string_view kFormatName = "kinetrace pftrace 1";
constexpr int kHeaderFixedAnnotations = 4;
// A naming metadata event ('M': process_name, thread_name, sort indexes, labels): an
// instant of this category named like the event, whose annotations are the event's args
// followed by "pid" and "tid".
constexpr std::string_view kNamingCategory = "__metadata";

// Launch-to-GPU arrows as PyTorch and kinetrace name them: a flow event of this name and
// category at the start of the slice just written on its track becomes a flow id on that
// slice; any other flow event becomes an instant that carries the flow id.
constexpr std::string_view kLaunchFlowName = "ac2g";

}  // namespace kinetrace::detail::pftrace
