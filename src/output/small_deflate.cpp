#include "output/small_deflate.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#if KINETRACE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#else
#include <zlib.h>
#endif

namespace kinetrace::detail {
namespace {

// Deflate's bit order: fields from the least significant bit of each byte up, and a
// Huffman code from its first bit, so codes are stored bit-reversed.
class BitWriter {
 public:
  explicit BitWriter(unsigned char* out) : out_(out) {}

  // At most 31 bits at a time; fewer than 32 are ever held.
  void put(uint32_t value, int bits) {
    held_ |= uint64_t{value} << count_;
    count_ += bits;
    if (count_ >= 32) {
      for (int i = 0; i < 4; ++i) *out_++ = static_cast<unsigned char>(held_ >> (8 * i));
      held_ >>= 32;
      count_ -= 32;
    }
  }
  // Pads the last byte with zeros; returns where the next byte goes.
  unsigned char* finish() {
    for (; count_ > 0; count_ -= 8) {
      *out_++ = static_cast<unsigned char>(held_);
      held_ >>= 8;
    }
    count_ = 0;
    return out_;
  }

 private:
  unsigned char* out_;
  uint64_t held_ = 0;
  int count_ = 0;
};

constexpr uint32_t reversed(uint32_t code, int bits) {
  uint32_t out = 0;
  for (int i = 0; i < bits; ++i) out |= ((code >> i) & 1u) << (bits - 1 - i);
  return out;
}

// A code ready to put: its bits, reversed, with any extra bits above them.
struct Code {
  uint32_t bits = 0;
  int length = 0;
};

// RFC 1951 3.2.6: the fixed literal/length codes.
constexpr Code fixedSymbol(int symbol) {
  if (symbol < 144) return {reversed(0x30 + symbol, 8), 8};
  if (symbol < 256) return {reversed(0x190 + symbol - 144, 9), 9};
  if (symbol < 280) return {reversed(symbol - 256, 7), 7};
  return {reversed(0xC0 + symbol - 280, 8), 8};
}

// The index of the highest set bit of v > 0.
constexpr int highestBit(uint32_t v) {
  return 31 - __builtin_clz(v);
}

// A match length (3..258) as its symbol's code followed by the extra bits.
constexpr Code lengthCode(int length) {
  if (length == 258) return fixedSymbol(285);
  const uint32_t v = static_cast<uint32_t>(length - 3);
  if (v < 8) return fixedSymbol(257 + static_cast<int>(v));
  const int high = highestBit(v);  // 3..7
  const int extraBits = high - 2;
  const int symbol = 257 + 4 * (high - 1) + static_cast<int>((v >> extraBits) & 3u);
  const Code symbolCode = fixedSymbol(symbol);
  const uint32_t extra = v & ((1u << extraBits) - 1);
  return {symbolCode.bits | (extra << symbolCode.length), symbolCode.length + extraBits};
}

template <int N, typename F>
constexpr std::array<Code, N> tableOf(F code, int first) {
  std::array<Code, N> table{};
  for (int i = 0; i < N; ++i) table[i] = code(first + i);
  return table;
}

constexpr std::array<Code, 256> kLiterals = tableOf<256>(fixedSymbol, 0);
constexpr std::array<Code, 256> kLengths = tableOf<256>(lengthCode, 3);  // [length - 3]
constexpr Code kEndOfBlock = fixedSymbol(256);

constexpr std::array<uint32_t, 30> reversedDistanceCodes() {
  std::array<uint32_t, 30> table{};
  for (uint32_t code = 0; code < 30; ++code) table[code] = reversed(code, 5);
  return table;
}
constexpr std::array<uint32_t, 30> kDistanceCodes = reversedDistanceCodes();

// A distance (1..32768): its five bits of code, reversed, then its extra bits.
Code distanceCode(uint32_t distance) {
  const uint32_t v = distance - 1;
  if (v < 4) return {kDistanceCodes[v], 5};
  const int high = highestBit(v);  // 2..14
  const int extraBits = high - 1;
  const uint32_t code = 2 * static_cast<uint32_t>(high) + ((v >> extraBits) & 1u);
  const uint32_t extra = v & ((1u << extraBits) - 1);
  return {kDistanceCodes[code] | (extra << 5), 5 + extraBits};
}

constexpr std::size_t kWindow = 32768;
constexpr std::size_t kMinMatch = 4;  // what one hash probe compares
constexpr std::size_t kMaxMatch = 258;
constexpr int kHashBits = 12;

uint32_t load32(const unsigned char* at) {
  uint32_t v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

uint32_t hashOf(uint32_t fourBytes) {
  return (fourBytes * 2654435761u) >> (32 - kHashBits);
}

uint64_t load64(const unsigned char* at) {
  uint64_t v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

// How many bytes from `earlier` and `here` agree, up to `most`; the first kMinMatch do.
// Eight at a time: the first differing byte is the lowest set byte of their XOR (the
// bytes are loaded little-endian, as on every machine kinetrace runs on).
std::size_t matchLength(const unsigned char* earlier, const unsigned char* here,
                        std::size_t most) {
  std::size_t length = kMinMatch;
  while (length + 8 <= most) {
    const uint64_t differ = load64(earlier + length) ^ load64(here + length);
    if (differ != 0) return length + static_cast<std::size_t>(__builtin_ctzll(differ) / 8);
    length += 8;
  }
  while (length < most && earlier[length] == here[length]) ++length;
  return length;
}

// zlib's checksum of the input (RFC 1950 8.2), from the library the build deflates
// large chunks with: both have it vectorised.
uint32_t checksumOf(const unsigned char* data, std::size_t size) {
#if KINETRACE_HAVE_LIBDEFLATE
  return libdeflate_adler32(1, data, size);
#else
  return static_cast<uint32_t>(::adler32(::adler32(0, nullptr, 0), data, static_cast<uInt>(size)));
#endif
}

}  // namespace

std::size_t smallDeflate(const unsigned char* input, std::size_t size, unsigned char* out) {
  unsigned char* const start = out;
  // CMF 0x78: deflate with a 32 KiB window; FLG 0x01: the fastest level, and a multiple of
  // 31 together.
  *out++ = 0x78;
  *out++ = 0x01;

  BitWriter bits(out);
  bits.put(1 | (1 << 1), 3);  // the final block, with fixed codes

  // Positions + 1 of the last four bytes seen with each hash; 0: none.
  uint32_t lastSeen[std::size_t{1} << kHashBits] = {};
  std::size_t at = 0;
  while (at + kMinMatch <= size) {
    const uint32_t four = load32(input + at);
    uint32_t& slot = lastSeen[hashOf(four)];
    const std::size_t candidate = slot;  // its position + 1
    slot = static_cast<uint32_t>(at + 1);
    if (candidate != 0 && at + 1 - candidate <= kWindow && load32(input + candidate - 1) == four) {
      const unsigned char* earlier = input + candidate - 1;
      const std::size_t length = matchLength(earlier, input + at, std::min(kMaxMatch, size - at));
      const Code lengthBits = kLengths[length - 3];
      const Code distanceBits = distanceCode(static_cast<uint32_t>(at + 1 - candidate));
      bits.put(lengthBits.bits, lengthBits.length);
      bits.put(distanceBits.bits, distanceBits.length);
      at += length;
    } else {
      bits.put(kLiterals[input[at]].bits, kLiterals[input[at]].length);
      ++at;
    }
  }
  for (; at < size; ++at) bits.put(kLiterals[input[at]].bits, kLiterals[input[at]].length);
  bits.put(kEndOfBlock.bits, kEndOfBlock.length);
  out = bits.finish();

  const uint32_t check = checksumOf(input, size);
  for (int shift = 24; shift >= 0; shift -= 8) *out++ = static_cast<unsigned char>(check >> shift);
  return static_cast<std::size_t>(out - start);
}

}  // namespace kinetrace::detail
