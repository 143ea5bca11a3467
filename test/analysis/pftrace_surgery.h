#pragma once

// Editing a .pftrace that kinetrace wrote, for reader tests that need packets the writer
// never makes (a state reset, hostile nesting): where the events are, and room before the
// footer for packets of the test's own.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "output/perfetto_layout.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"

namespace kinetrace::testing {

// The sequence that carries a trace's events (not the metadata sequence) and its default
// track; 0 for each when there is none.
struct EventSequence {
  uint64_t sequence = 0;
  uint64_t track = 0;
};

// The file's packets, each without its frame (tag and length).
inline std::vector<std::string_view> packetsOf(std::string_view file) {
  std::vector<std::string_view> packets;
  detail::proto::ProtoReader trace(file);
  detail::proto::ProtoField field;
  while (trace.next(field)) packets.push_back(field.bytes);
  return packets;
}

inline EventSequence eventSequenceOf(std::string_view file) {
  using namespace detail::pftrace;
  namespace proto = detail::proto;
  EventSequence found;
  proto::ProtoField field;
  for (std::string_view packet : packetsOf(file)) {
    proto::ProtoReader reader(packet);
    uint64_t id = 0;
    std::string_view defaults;
    while (reader.next(field)) {
      if (field.number == kPacketSequenceId) id = field.value;
      if (field.number == kPacketTracePacketDefaults) defaults = field.bytes;
    }
    if (id == kMetadataSequenceId || defaults.empty()) continue;
    found.sequence = id;
    proto::ProtoReader fields(defaults);
    while (fields.next(field)) {
      if (field.number != kDefaultsTrackEvent) continue;
      proto::ProtoReader eventDefaults(field.bytes);
      while (eventDefaults.next(field)) found.track = field.value;
    }
  }
  return found;
}

// `file` with `added` (framed packets) put before its last packet, the footer.
inline std::string withPacketsBeforeTheFooter(const std::string& file, std::string_view added) {
  const std::string_view footer = packetsOf(file).back();
  const std::size_t footerAt = static_cast<std::size_t>(footer.data() - file.data()) - 1 -
                               detail::proto::varintSize(footer.size());
  return file.substr(0, footerAt) + std::string(added) + file.substr(footerAt);
}

}  // namespace kinetrace::testing
