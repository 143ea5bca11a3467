#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

// The protobuf wire format (https://protobuf.dev/programming-guides/encoding/), the little
// of it that Perfetto's trace format needs: varints, 64-bit fixed values, and
// length-delimited fields (strings, bytes, nested messages). No schema, no reflection:
// callers name fields by number (perfetto_schema.h).

namespace kinetrace::detail::proto {

enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

// The bytes a varint of this value takes (1 to 10).
inline std::size_t varintSize(uint64_t value) {
  std::size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

// A growable byte buffer with inline appends: encoding a trace is a long run of tiny
// appends, and std::string::append is an out-of-line call each time.
class ByteBuffer {
 public:
  ByteBuffer() = default;
  explicit ByteBuffer(std::size_t capacity) { reserve(capacity); }

  const char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {data_.get(), size_}; }
  void clear() { size_ = 0; }

  // Room for `bytes` more; returns where they go. Call advance() with what was written.
  char* ensure(std::size_t bytes) {
    if (capacity_ - size_ < bytes) grow(bytes);
    return data_.get() + size_;
  }
  void advance(std::size_t bytes) { size_ += bytes; }
  void append(const char* bytes, std::size_t count) {
    if (count == 0) return;  // an empty view's data() may be null, which memcpy may not get
    std::memcpy(ensure(count), bytes, count);
    size_ += count;
  }
  void push(char byte) {
    *ensure(1) = byte;
    ++size_;
  }
  // Inserts `count` bytes (unspecified values) at `at`, moving what follows.
  void openGap(std::size_t at, std::size_t count);
  char& operator[](std::size_t i) { return data_[i]; }
  void reserve(std::size_t capacity);

 private:
  void grow(std::size_t bytes);
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// Appends fields to a buffer. Nested messages are written in place: beginMessage() appends
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
  explicit ProtoWriter(ByteBuffer& out) : out_(out) {}

  // Inlined into every caller (the field number is then a constant and its key is folded):
  // an event is a dozen such fields, and the calls were a twelfth of encoding one.
  [[gnu::always_inline]] void varint(uint32_t field, uint64_t value) {
    char* at = out_.ensure(20);
    at = putVarint(at, (uint64_t{field} << 3) | 0);
    at = putVarint(at, value);
    out_.advance(static_cast<std::size_t>(at - (out_.data() + out_.size())));
  }
  // int32/int64 fields: negative values take ten bytes, as protobuf encodes them.
  void signedVarint(uint32_t field, int64_t value) { varint(field, static_cast<uint64_t>(value)); }
  void boolean(uint32_t field, bool value) { varint(field, value ? 1 : 0); }
  void fixed64(uint32_t field, uint64_t value) {
    char* at = out_.ensure(18);
    at = putVarint(at, (uint64_t{field} << 3) | 1);
    for (int i = 0; i < 8; ++i) *at++ = static_cast<char>((value >> (8 * i)) & 0xff);
    out_.advance(static_cast<std::size_t>(at - (out_.data() + out_.size())));
  }
  void doubleValue(uint32_t field, double value) {
    uint64_t bits = 0;
    static_assert(sizeof bits == sizeof value);
    std::memcpy(&bits, &value, sizeof bits);
    fixed64(field, bits);
  }
  void bytes(uint32_t field, std::string_view value) {
    char* at = out_.ensure(20 + value.size());
    at = putVarint(at, (uint64_t{field} << 3) | 2);
    at = putVarint(at, value.size());
    // An empty view (an event without a category, an empty name) may hold a null data(),
    // which memcpy may not get even for no bytes.
    if (!value.empty()) std::memcpy(at, value.data(), value.size());
    at += value.size();
    out_.advance(static_cast<std::size_t>(at - (out_.data() + out_.size())));
  }

  // Returns a mark for endMessage(). Messages nest; end them innermost first.
  std::size_t beginMessage(uint32_t field) {
    char* at = out_.ensure(11);
    at = putVarint(at, (uint64_t{field} << 3) | 2);
    *at++ = 0;  // the length, one byte for now
    out_.advance(static_cast<std::size_t>(at - (out_.data() + out_.size())));
    return out_.size() - 1;
  }
  void endMessage(std::size_t mark) {
    const std::size_t length = out_.size() - mark - 1;
    if (length < 0x80) {
      out_[mark] = static_cast<char>(length);
      return;
    }
    endLongMessage(mark, length);
  }
  // Appends an already encoded message body as a length-delimited field.
  void message(uint32_t field, std::string_view encodedBody) { bytes(field, encodedBody); }

 private:
  [[gnu::always_inline]] static char* putVarint(char* at, uint64_t value) {
    while (value >= 0x80) {
      *at++ = static_cast<char>((value & 0x7f) | 0x80);
      value >>= 7;
    }
    *at++ = static_cast<char>(value);
    return at;
  }
  void endLongMessage(std::size_t mark, std::size_t length);

  ByteBuffer& out_;
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
