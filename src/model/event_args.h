#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "model/string_table.h"

// Typed arguments a host event carries beyond its name: what an NVTX payload says about a
// range or mark (NCCL's message size, communicator and peer). The recording thread encodes
// them in bytes right after the event's name, in its own buffer (nothing allocated, one copy);
// the collector decodes them when it drains the buffer.
//
// Encoding, per argument: type (1 byte), key length (1 byte), then for Text the text's length
// (2 bytes, little-endian), the key's bytes, and the value: 8 bytes for numbers (a double's
// bits for Double), the text's bytes for Text.

namespace kinetrace::detail {

enum class ArgType : uint8_t { Unsigned = 1, Signed = 2, Double = 3, Text = 4 };

// One argument as a front-end hands it over: views into the caller's memory. (Header-only:
// front-ends outside libkinetrace.so build these.)
struct EventArg {
  std::string_view key;
  ArgType type = ArgType::Unsigned;
  uint64_t number = 0;    // Unsigned; Signed as two's complement; Double as its bits
  std::string_view text;  // Text

  static EventArg unsignedValue(std::string_view key, uint64_t value) {
    return EventArg{key, ArgType::Unsigned, value, {}};
  }
  static EventArg signedValue(std::string_view key, int64_t value) {
    return EventArg{key, ArgType::Signed, static_cast<uint64_t>(value), {}};
  }
  static EventArg doubleValue(std::string_view key, double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return EventArg{key, ArgType::Double, bits, {}};
  }
  static EventArg textValue(std::string_view key, std::string_view value) {
    return EventArg{key, ArgType::Text, 0, value};
  }
  int64_t asSigned() const { return static_cast<int64_t>(number); }
  double asDouble() const {
    double value;
    std::memcpy(&value, &number, sizeof value);
    return value;
  }
};

constexpr std::size_t kMaxEventArgs = 16;           // per event; more are left out
constexpr std::size_t kMaxEventArgKeyBytes = 255;   // longer keys are cut
constexpr std::size_t kMaxEventArgTextBytes = 256;  // longer texts are cut
constexpr std::size_t kMaxEventArgBytes = 2048;  // an event's encoded arguments; more are left out

// Encodes up to kMaxEventArgs of `args` into `out` (room for `capacity` bytes), whole
// arguments only. Returns the bytes written.
std::size_t encodeEventArgs(const EventArg* args, std::size_t count, char* out,
                            std::size_t capacity) noexcept;

// Calls visit(const EventArg&) for each argument encoded in `bytes`; views point into
// `bytes`. Stops at the first malformed argument. Returns how many were visited.
template <typename Visit>
std::size_t forEachEventArg(std::string_view bytes, Visit&& visit);

// NVTX ranges of a domain are named "<domain>: <message>"; NCCL's domain is "NCCL".
constexpr std::string_view kNcclRangePrefix = "NCCL: ";
inline bool isNcclRange(std::string_view name) {
  return name.substr(0, kNcclRangePrefix.size()) == kNcclRangePrefix;
}

// An event's arguments as a trace keeps them: strings interned in its tables.
struct StoredArg {
  StringId key = StringTable::kEmpty;
  ArgType type = ArgType::Unsigned;
  uint64_t number = 0;
  StringId text = StringTable::kEmpty;
};
struct StoredArgs {
  std::vector<StoredArg> values;
  StringId event = StringTable::kEmpty;  // the name of the event they belong to
  bool nccl = false;  // NCCL's own ranges ("NCCL: ncclAllReduce"): GPU work inside gets them
};

// ---- implementation -----------------------------------------------------------------

namespace event_args_detail {
bool decodeOne(std::string_view& bytes, EventArg& arg) noexcept;
}

template <typename Visit>
std::size_t forEachEventArg(std::string_view bytes, Visit&& visit) {
  std::size_t visited = 0;
  EventArg arg;
  while (!bytes.empty() && event_args_detail::decodeOne(bytes, arg)) {
    visit(static_cast<const EventArg&>(arg));
    ++visited;
  }
  return visited;
}

}  // namespace kinetrace::detail
