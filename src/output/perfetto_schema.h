#pragma once

#include <cstdint>

// The field numbers of Perfetto's trace protos that kinetrace writes and reads, written
// down from Perfetto's .proto files (protos/perfetto/trace/...): message, then field, as
// named there. Field numbers are Perfetto's stable wire contract; names are not used.

namespace kinetrace::detail::pftrace {

// trace.proto: message Trace
constexpr uint32_t kTracePacket = 1;  // repeated TracePacket packet

// trace_packet.proto: message TracePacket
constexpr uint32_t kPacketClockSnapshot = 6;         // ClockSnapshot clock_snapshot
constexpr uint32_t kPacketTimestamp = 8;             // uint64 timestamp
constexpr uint32_t kPacketSequenceId = 10;           // uint32 trusted_packet_sequence_id
constexpr uint32_t kPacketTrackEvent = 11;           // TrackEvent track_event
constexpr uint32_t kPacketInternedData = 12;         // InternedData interned_data
constexpr uint32_t kPacketSequenceFlags = 13;        // uint32 sequence_flags
constexpr uint32_t kPacketStateCleared = 41;         // bool incremental_state_cleared (old)
constexpr uint32_t kPacketCompressedPackets = 50;    // bytes compressed_packets (zlib)
constexpr uint32_t kPacketTimestampClockId = 58;     // uint32 timestamp_clock_id
constexpr uint32_t kPacketTracePacketDefaults = 59;  // TracePacketDefaults
constexpr uint32_t kPacketTrackDescriptor = 60;      // TrackDescriptor track_descriptor
// TracePacket.SequenceFlags
constexpr uint64_t kSeqIncrementalStateCleared = 1;

// trace_packet_defaults.proto: message TracePacketDefaults (the TracePacket's numbers)
constexpr uint32_t kDefaultsTimestampClockId = 58;  // uint32 timestamp_clock_id
constexpr uint32_t kDefaultsTrackEvent = 11;        // TrackEventDefaults track_event_defaults
// track_event/track_event.proto: message TrackEventDefaults
constexpr uint32_t kTrackEventDefaultsTrackUuid = 11;  // uint64 track_uuid

// clock_snapshot.proto: message ClockSnapshot
constexpr uint32_t kSnapshotClocks = 1;  // repeated Clock clocks
// ClockSnapshot.Clock
constexpr uint32_t kClockId = 1;                // uint32 clock_id
constexpr uint32_t kClockTimestamp = 2;         // uint64 timestamp
constexpr uint32_t kClockIsIncremental = 3;     // bool is_incremental
constexpr uint32_t kClockUnitMultiplierNs = 4;  // uint64 unit_multiplier_ns
// common/builtin_clock.proto: BuiltinClock. Ids 64 to 127 are clocks of one packet
// sequence, defined by a ClockSnapshot on that sequence.
constexpr uint32_t kClockBoottime = 6;
constexpr uint32_t kFirstSequenceClock = 64;
constexpr uint32_t kLastSequenceClock = 127;

// track_event/track_descriptor.proto: message TrackDescriptor
constexpr uint32_t kTrackUuid = 1;        // uint64 uuid
constexpr uint32_t kTrackName = 2;        // string name
constexpr uint32_t kTrackProcess = 3;     // ProcessDescriptor process
constexpr uint32_t kTrackThread = 4;      // ThreadDescriptor thread
constexpr uint32_t kTrackParentUuid = 5;  // uint64 parent_uuid
constexpr uint32_t kTrackCounter = 8;     // CounterDescriptor counter

// track_event/counter_descriptor.proto: message CounterDescriptor
constexpr uint32_t kCounterCategories = 2;  // repeated string categories
constexpr uint32_t kCounterUnitName = 6;    // string unit_name

// track_event/process_descriptor.proto: message ProcessDescriptor
constexpr uint32_t kProcessPid = 1;   // int32 pid
constexpr uint32_t kProcessName = 6;  // string process_name

// track_event/thread_descriptor.proto: message ThreadDescriptor
constexpr uint32_t kThreadPid = 1;   // int32 pid
constexpr uint32_t kThreadTid = 2;   // int32 tid (int64 in newer protos; same varint)
constexpr uint32_t kThreadName = 5;  // string thread_name

// track_event/track_event.proto: message TrackEvent
constexpr uint32_t kEventCategoryIids = 3;            // repeated uint64 category_iids
constexpr uint32_t kEventDebugAnnotations = 4;        // repeated DebugAnnotation
constexpr uint32_t kEventType = 9;                    // Type type
constexpr uint32_t kEventNameIid = 10;                // uint64 name_iid
constexpr uint32_t kEventTrackUuid = 11;              // uint64 track_uuid
constexpr uint32_t kEventCategories = 22;             // repeated string categories
constexpr uint32_t kEventName = 23;                   // string name
constexpr uint32_t kEventCounterValue = 30;           // int64 counter_value
constexpr uint32_t kEventDoubleCounterValue = 44;     // double double_counter_value
constexpr uint32_t kEventFlowIdsOld = 36;             // repeated uint64 flow_ids_old
constexpr uint32_t kEventTerminatingFlowIdsOld = 42;  // repeated uint64 terminating_flow_ids_old
constexpr uint32_t kEventFlowIds = 47;                // repeated fixed64 flow_ids
constexpr uint32_t kEventTerminatingFlowIds = 48;     // repeated fixed64 terminating_flow_ids
constexpr uint32_t kEventLegacyEvent = 6;             // LegacyEvent legacy_event
// TrackEvent.LegacyEvent
constexpr uint32_t kLegacyPhase = 2;             // int32 phase ('s', 'f', ...)
constexpr uint32_t kLegacyUnscopedId = 6;        // uint64 unscoped_id
constexpr uint32_t kLegacyBindToEnclosing = 12;  // bool bind_to_enclosing
// TrackEvent.Type
constexpr uint64_t kTypeSliceBegin = 1;
constexpr uint64_t kTypeSliceEnd = 2;
constexpr uint64_t kTypeInstant = 3;
constexpr uint64_t kTypeCounter = 4;

// interned_data/interned_data.proto: message InternedData
constexpr uint32_t kInternedCategories = 1;       // repeated EventCategory event_categories
constexpr uint32_t kInternedEventNames = 2;       // repeated EventName event_names
constexpr uint32_t kInternedAnnotationNames = 3;  // repeated DebugAnnotationName
constexpr uint32_t kInternedStringValues = 29;    // repeated InternedString
                                                  //   debug_annotation_string_values
// EventCategory, EventName and DebugAnnotationName are all {uint64 iid = 1; string name = 2};
// InternedString (profiling/profile_common.proto) is {uint64 iid = 1; bytes str = 2}.
constexpr uint32_t kInternedIid = 1;
constexpr uint32_t kInternedName = 2;

// track_event/debug_annotation.proto: message DebugAnnotation
constexpr uint32_t kAnnotationNameIid = 1;     // uint64 name_iid
constexpr uint32_t kAnnotationBool = 2;        // bool bool_value
constexpr uint32_t kAnnotationUint = 3;        // uint64 uint_value
constexpr uint32_t kAnnotationInt = 4;         // int64 int_value
constexpr uint32_t kAnnotationDouble = 5;      // double double_value
constexpr uint32_t kAnnotationString = 6;      // string string_value
constexpr uint32_t kAnnotationLegacyJson = 9;  // string legacy_json_value
constexpr uint32_t kAnnotationName = 10;       // string name
constexpr uint32_t kAnnotationArray = 12;      // repeated DebugAnnotation array_values
constexpr uint32_t kAnnotationStringIid = 17;  // uint64 string_value_iid

}  // namespace kinetrace::detail::pftrace
