#include "output/protobuf.h"

#include <fmt/format.h>

#include <cstring>

#include "kinetrace/error.h"

namespace kinetrace::detail::proto {

void ByteBuffer::reserve(std::size_t capacity) {
  if (capacity <= capacity_) return;
  std::unique_ptr<char[]> bigger(new char[capacity]);  // not value-initialised
  if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
  data_ = std::move(bigger);
  capacity_ = capacity;
}

void ByteBuffer::grow(std::size_t bytes) {
  std::size_t capacity = capacity_ < 256 ? 256 : capacity_;
  while (capacity - size_ < bytes) capacity *= 2;
  reserve(capacity);
}

void ByteBuffer::openGap(std::size_t at, std::size_t count) {
  ensure(count);
  std::memmove(data_.get() + at + count, data_.get() + at, size_ - at);
  size_ += count;
}

void ProtoWriter::endLongMessage(std::size_t mark, std::size_t length) {
  const std::size_t lengthBytes = varintSize(length);
  out_.openGap(mark + 1, lengthBytes - 1);
  uint64_t value = length;
  for (std::size_t i = 0; i < lengthBytes; ++i) {
    const bool more = i + 1 < lengthBytes;
    out_[mark + i] = static_cast<char>((value & 0x7f) | (more ? 0x80 : 0));
    value >>= 7;
  }
}

double ProtoField::asDouble() const {
  double result = 0;
  std::memcpy(&result, &value, sizeof result);
  return result;
}

std::size_t readVarint(std::string_view bytes, uint64_t* value) {
  uint64_t result = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 10) throw Error("malformed protobuf: a varint longer than ten bytes");
    const auto byte = static_cast<uint8_t>(bytes[i]);
    result |= uint64_t{byte & 0x7fu} << (7 * i);
    if ((byte & 0x80) == 0) {
      *value = result;
      return i + 1;
    }
  }
  return 0;
}

uint64_t ProtoReader::readVarint() {
  uint64_t value = 0;
  const std::size_t used = proto::readVarint(rest_, &value);
  if (used == 0) throw Error("malformed protobuf: a varint runs past the end of its message");
  rest_.remove_prefix(used);
  return value;
}

bool ProtoReader::next(ProtoField& field) {
  if (rest_.empty()) return false;
  const uint64_t key = readVarint();
  field.number = static_cast<uint32_t>(key >> 3);
  field.bytes = {};
  field.value = 0;
  if (field.number == 0) throw Error("malformed protobuf: field number 0");
  switch (key & 7) {
    case 0:
      field.type = WireType::Varint;
      field.value = readVarint();
      return true;
    case 1:
    case 5: {
      const std::size_t size = (key & 7) == 1 ? 8 : 4;
      if (rest_.size() < size) {
        throw Error(fmt::format("malformed protobuf: field {} needs {} bytes, {} are left",
                                field.number, size, rest_.size()));
      }
      for (std::size_t i = 0; i < size; ++i) {
        field.value |= uint64_t{static_cast<uint8_t>(rest_[i])} << (8 * i);
      }
      field.type = size == 8 ? WireType::Fixed64 : WireType::Fixed32;
      rest_.remove_prefix(size);
      return true;
    }
    case 2: {
      const uint64_t length = readVarint();
      if (length > rest_.size()) {
        throw Error(fmt::format("malformed protobuf: field {} says {} bytes, {} are left",
                                field.number, length, rest_.size()));
      }
      field.type = WireType::LengthDelimited;
      field.bytes = rest_.substr(0, static_cast<std::size_t>(length));
      rest_.remove_prefix(static_cast<std::size_t>(length));
      return true;
    }
    default:
      throw Error(
          fmt::format("malformed protobuf: field {} has wire type {}, which no message "
                      "in a trace uses",
                      field.number, key & 7));
  }
}

}  // namespace kinetrace::detail::proto
