#include "model/event_args.h"

#include <algorithm>
#include <cstring>

namespace kinetrace::detail {

std::size_t encodeEventArgs(const EventArg* args, std::size_t count, char* out,
                            std::size_t capacity) noexcept {
  std::size_t used = 0;
  count = std::min(count, kMaxEventArgs);
  for (std::size_t i = 0; i < count; ++i) {
    const EventArg& arg = args[i];
    const bool text = arg.type == ArgType::Text;
    const std::size_t keyBytes = std::min(arg.key.size(), kMaxEventArgKeyBytes);
    const std::size_t valueBytes = text ? std::min(arg.text.size(), kMaxEventArgTextBytes) : 8;
    const std::size_t need = 2 + (text ? 2 : 0) + keyBytes + valueBytes;
    if (capacity - used < need) break;
    char* p = out + used;
    *p++ = static_cast<char>(arg.type);
    *p++ = static_cast<char>(keyBytes);
    if (text) {
      *p++ = static_cast<char>(valueBytes & 0xff);
      *p++ = static_cast<char>(valueBytes >> 8);
    }
    std::memcpy(p, arg.key.data(), keyBytes);
    p += keyBytes;
    if (text) {
      std::memcpy(p, arg.text.data(), valueBytes);
    } else {
      for (int b = 0; b < 8; ++b) p[b] = static_cast<char>((arg.number >> (8 * b)) & 0xff);
    }
    used += need;
  }
  return used;
}

namespace event_args_detail {

bool decodeOne(std::string_view& bytes, EventArg& arg) noexcept {
  auto byteAt = [&](std::size_t i) { return static_cast<uint8_t>(bytes[i]); };
  if (bytes.size() < 2) return false;
  const auto type = static_cast<ArgType>(byteAt(0));
  if (type != ArgType::Unsigned && type != ArgType::Signed && type != ArgType::Double &&
      type != ArgType::Text) {
    return false;
  }
  const std::size_t keyBytes = byteAt(1);
  std::size_t at = 2;
  std::size_t valueBytes = 8;
  if (type == ArgType::Text) {
    if (bytes.size() < 4) return false;
    valueBytes = byteAt(2) | (std::size_t{byteAt(3)} << 8);
    at = 4;
  }
  if (bytes.size() - at < keyBytes + valueBytes) return false;
  arg.type = type;
  arg.key = bytes.substr(at, keyBytes);
  at += keyBytes;
  arg.number = 0;
  arg.text = {};
  if (type == ArgType::Text) {
    arg.text = bytes.substr(at, valueBytes);
  } else {
    for (int b = 0; b < 8; ++b) arg.number |= uint64_t{byteAt(at + b)} << (8 * b);
  }
  bytes.remove_prefix(at + valueBytes);
  return true;
}

}  // namespace event_args_detail

}  // namespace kinetrace::detail
