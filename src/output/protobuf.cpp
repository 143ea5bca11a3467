#include "output/protobuf.h"

#include <fmt/format.h>

#include <cstring>

#include "kinetrace/error.h"

namespace kinetrace::detail::proto {

std::size_t varintSize(uint64_t value) {
  std::size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

void ProtoWriter::rawVarint(uint64_t value) {
  char bytes[10];
  std::size_t size = 0;
  while (value >= 0x80) {
    bytes[size++] = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  bytes[size++] = static_cast<char>(value);
  out_.append(bytes, size);
}

void ProtoWriter::tag(uint32_t field, WireType type) {
  rawVarint((uint64_t{field} << 3) | static_cast<uint64_t>(type));
}

void ProtoWriter::varint(uint32_t field, uint64_t value) {
  tag(field, WireType::Varint);
  rawVarint(value);
}

void ProtoWriter::fixed64(uint32_t field, uint64_t value) {
  tag(field, WireType::Fixed64);
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  out_.append(bytes, 8);
}

void ProtoWriter::doubleValue(uint32_t field, double value) {
  uint64_t bits = 0;
  static_assert(sizeof bits == sizeof value);
  std::memcpy(&bits, &value, sizeof bits);
  fixed64(field, bits);
}

void ProtoWriter::bytes(uint32_t field, std::string_view value) {
  tag(field, WireType::LengthDelimited);
  rawVarint(value.size());
  out_.append(value.data(), value.size());
}

std::size_t ProtoWriter::beginMessage(uint32_t field) {
  tag(field, WireType::LengthDelimited);
  out_.push_back('\0');  // the length, one byte for now
  return out_.size() - 1;
}

void ProtoWriter::endMessage(std::size_t mark) {
  const std::size_t length = out_.size() - mark - 1;
  const std::size_t lengthBytes = varintSize(length);
  if (lengthBytes > 1) out_.insert(mark + 1, lengthBytes - 1, '\0');
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
