#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

// The protobuf wire format (https://protobuf.dev/programming-guides/encoding/), the little
// of it that Perfetto's trace format needs: varints, 64-bit fixed values, and
// length-delimited fields (strings, bytes, nested messages). No schema, no reflection:
// callers name fields by number (perfetto_schema.h).

namespace kinetrace::detail::proto {

enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

// The bytes a varint of this value takes (1 to 10).
std::size_t varintSize(uint64_t value);

// Appends fields to a string. Nested messages are written in place: beginMessage() appends
// the tag and a one-byte length, endMessage() writes the real length and, when it needs
// more than one byte, moves the message's bytes up to make room. Messages in a trace are
// mostly under 128 bytes, so the move is rare and short, and every length is minimal
// (Perfetto's own writer pads lengths to 4 bytes instead; that costs 3 bytes per message).
//
//   ProtoWriter w(buffer);
//   std::size_t packet = w.beginMessage(1);
//   w.varint(8, timestampNs);
//   w.endMessage(packet);
class ProtoWriter {
 public:
  explicit ProtoWriter(std::string& out) : out_(out) {}

  void varint(uint32_t field, uint64_t value);
  // int32/int64 fields: negative values take ten bytes, as protobuf encodes them.
  void signedVarint(uint32_t field, int64_t value) { varint(field, static_cast<uint64_t>(value)); }
  void boolean(uint32_t field, bool value) { varint(field, value ? 1 : 0); }
  void fixed64(uint32_t field, uint64_t value);
  void doubleValue(uint32_t field, double value);
  void bytes(uint32_t field, std::string_view value);

  // Returns a mark for endMessage(). Messages nest; end them innermost first.
  std::size_t beginMessage(uint32_t field);
  void endMessage(std::size_t mark);
  // Appends an already encoded message body as a length-delimited field.
  void message(uint32_t field, std::string_view encodedBody) { bytes(field, encodedBody); }

 private:
  void tag(uint32_t field, WireType type);
  void rawVarint(uint64_t value);

  std::string& out_;
};

// One field as read from a message. For LengthDelimited, `bytes` points into the message;
// for Varint, Fixed64 and Fixed32, `value` holds the bits.
struct ProtoField {
  uint32_t number = 0;
  WireType type = WireType::Varint;
  uint64_t value = 0;
  std::string_view bytes;

  int64_t asInt64() const { return static_cast<int64_t>(value); }
  double asDouble() const;
};

// Reads a message's fields in order. Malformed input (a truncated varint or field, a
// length past the end, a wire type protobuf no longer uses) throws kinetrace::Error
// saying what is wrong; callers add where.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view message) : rest_(message) {}
  // The next field, or false at the end of the message.
  bool next(ProtoField& field);

 private:
  uint64_t readVarint();
  std::string_view rest_;
};

// Reads a varint at the start of `bytes`: the value and how many bytes it took (0 when the
// bytes end before the varint does; throws when it is longer than ten bytes).
std::size_t readVarint(std::string_view bytes, uint64_t* value);

}  // namespace kinetrace::detail::proto
