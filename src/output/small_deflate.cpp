#include "output/small_deflate.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>

#if KINETRACE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#else
#include <zlib.h>
#endif

namespace kinetrace::detail {
namespace {

// Deflate's alphabets (RFC 1951 3.2.5): literals and lengths (0-255 bytes, 256 the end of
// the block, 257-285 match lengths), distances (0-29), and the code lengths that a dynamic
// block's header is written in (0-18).
constexpr int kLiteralLengthSymbols = 286;
constexpr int kDistanceSymbols = 30;
constexpr int kCodeLengthSymbols = 19;
constexpr int kEndOfBlock = 256;
constexpr int kMaxCodeBits = 15;
constexpr int kMaxCodeLengthBits = 7;

constexpr std::size_t kWindow = 32768;
constexpr std::size_t kMinMatch = 4;  // what one hash probe compares
constexpr std::size_t kMaxMatch = 258;
constexpr int kHashBits = 12;

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
      // One store of the low four bytes, least significant first (little-endian hosts).
      const auto low = static_cast<uint32_t>(held_);
      std::memcpy(out_, &low, sizeof low);
      out_ += sizeof low;
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

constexpr std::array<uint8_t, 256> reversedBytes() {
  std::array<uint8_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t out = 0;
    for (int i = 0; i < 8; ++i) out |= ((byte >> i) & 1u) << (7 - i);
    table[byte] = static_cast<uint8_t>(out);
  }
  return table;
}
constexpr std::array<uint8_t, 256> kReversedBytes = reversedBytes();

// The low `bits` (at most 16) of `code`, in reverse order.
constexpr uint32_t reversed(uint32_t code, int bits) {
  const uint32_t all16 =
      (uint32_t{kReversedBytes[code & 0xFF]} << 8) | kReversedBytes[(code >> 8) & 0xFF];
  return all16 >> (16 - bits);
}

// The index of the highest set bit of v > 0.
constexpr int highestBit(uint32_t v) {
  return 31 - __builtin_clz(v);
}

// A length or distance as deflate writes it: a symbol, then `extraBits` bits of `extra`.
struct Symbol {
  uint16_t symbol = 0;
  uint8_t extraBits = 0;
  uint16_t extra = 0;
};

// A match length (3..258).
constexpr Symbol lengthSymbol(int length) {
  if (length == 258) return {285, 0, 0};
  const auto v = static_cast<uint32_t>(length - 3);
  if (v < 8) return {static_cast<uint16_t>(257 + v), 0, 0};
  const int high = highestBit(v);  // 3..7
  const int extraBits = high - 2;
  const uint32_t symbol = 257 + 4 * static_cast<uint32_t>(high - 1) + ((v >> extraBits) & 3u);
  return {static_cast<uint16_t>(symbol), static_cast<uint8_t>(extraBits),
          static_cast<uint16_t>(v & ((1u << extraBits) - 1))};
}

constexpr std::array<Symbol, 256> lengthSymbols() {
  std::array<Symbol, 256> table{};
  for (int length = 3; length <= 258; ++length) table[length - 3] = lengthSymbol(length);
  return table;
}
constexpr std::array<Symbol, 256> kLengthSymbols = lengthSymbols();  // [length - 3]

// A distance (1..32768).
constexpr Symbol computeDistanceSymbol(uint32_t distance) {
  const uint32_t v = distance - 1;
  if (v < 4) return {static_cast<uint16_t>(v), 0, 0};
  const int high = highestBit(v);  // 2..14
  const int extraBits = high - 1;
  const uint32_t symbol = 2 * static_cast<uint32_t>(high) + ((v >> extraBits) & 1u);
  return {static_cast<uint16_t>(symbol), static_cast<uint8_t>(extraBits),
          static_cast<uint16_t>(v & ((1u << extraBits) - 1))};
}

// Distance symbols by distance - 1: the first 256 one by one, the rest by (distance - 1) >>
// 7, which no symbol above 256 splits (zlib's trick). A lookup instead of a bit scan for
// every match, written once and counted once.
constexpr std::array<uint8_t, 512> distanceSymbolTable() {
  std::array<uint8_t, 512> table{};
  for (uint32_t v = 0; v < 256; ++v) {
    table[v] = static_cast<uint8_t>(computeDistanceSymbol(v + 1).symbol);
  }
  for (uint32_t high = 2; high < 256; ++high) {
    table[256 + high] = static_cast<uint8_t>(computeDistanceSymbol((high << 7) + 1).symbol);
  }
  return table;
}
constexpr std::array<uint8_t, 512> kDistanceSymbolOf = distanceSymbolTable();

// Where each distance symbol's range starts (distance - 1), and its extra bits.
constexpr std::array<uint16_t, 30> kDistanceBase = {
    0,   1,   2,   3,   4,   6,    8,    12,   16,   24,   32,   48,   64,    96,    128,
    192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576};
constexpr std::array<uint8_t, 30> kDistanceExtraBits = {0, 0, 0,  0,  1,  1,  2,  2,  3,  3,
                                                        4, 4, 5,  5,  6,  6,  7,  7,  8,  8,
                                                        9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

Symbol distanceSymbol(uint32_t distance) {
  const uint32_t v = distance - 1;
  const uint32_t symbol = kDistanceSymbolOf[v < 256 ? v : 256 + (v >> 7)];
  return {static_cast<uint16_t>(symbol), kDistanceExtraBits[symbol],
          static_cast<uint16_t>(v - kDistanceBase[symbol])};
}

uint32_t load32(const unsigned char* at) {
  uint32_t v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

uint64_t load64(const unsigned char* at) {
  uint64_t v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

uint32_t hashOf(uint32_t fourBytes) {
  return (fourBytes * 2654435761u) >> (32 - kHashBits);
}

// How many bytes from `earlier` and `here` agree, up to `most`; the first kMinMatch do.
// Eight at a time: the first differing byte is the lowest set byte of their XOR (the
// bytes are loaded little-endian, as on every machine kinetrace runs on).
std::size_t matchLength(const unsigned char* earlier, const unsigned char* here, std::size_t most) {
  std::size_t length = kMinMatch;
  while (length + 8 <= most) {
    const uint64_t differ = load64(earlier + length) ^ load64(here + length);
    if (differ != 0) return length + static_cast<std::size_t>(__builtin_ctzll(differ) / 8);
    length += 8;
  }
  while (length < most && earlier[length] == here[length]) ++length;
  return length;
}

// The input as literals and matches, greedily: at each position the last earlier one with
// the same four bytes, if within the window.
template <typename Visitor>
void parse(const unsigned char* input, std::size_t size, Visitor& visit) {
  // Positions + 1 of the last four bytes seen with each hash; 0: none.
  uint32_t lastSeen[std::size_t{1} << kHashBits] = {};
  std::size_t at = 0;
  while (at + kMinMatch <= size) {
    const uint32_t four = load32(input + at);
    uint32_t& slot = lastSeen[hashOf(four)];
    const std::size_t candidate = slot;  // its position + 1
    slot = static_cast<uint32_t>(at + 1);
    if (candidate != 0 && at + 1 - candidate <= kWindow && load32(input + candidate - 1) == four) {
      const std::size_t length =
          matchLength(input + candidate - 1, input + at, std::min(kMaxMatch, size - at));
      visit.match(length, static_cast<uint32_t>(at + 1 - candidate));
      at += length;
    } else {
      visit.literal(input[at]);
      ++at;
    }
  }
  for (; at < size; ++at) visit.literal(input[at]);
}

struct Frequencies {
  std::array<uint32_t, kLiteralLengthSymbols> literalLength{};
  std::array<uint32_t, kDistanceSymbols> distance{};
};

}  // namespace

void huffmanCodeLengths(const uint32_t* counts, int symbols, int maxBits, uint8_t* lengths) {
  constexpr int N = kLiteralLengthSymbols;  // the largest alphabet
  std::array<uint32_t, N> frequencies{};
  std::copy_n(counts, symbols, frequencies.begin());
  std::fill_n(lengths, symbols, uint8_t{0});
  int used = 0;
  for (int s = 0; s < symbols; ++s) used += frequencies[s] != 0;
  for (int s = 0; used < 2; ++s) {
    if (frequencies[s] == 0) {
      frequencies[s] = 1;
      ++used;
    }
  }
  // Leaves by frequency, least first; then the tree, built with two queues: the leaves, and
  // the inner nodes, which are made in order of weight. A node's parent is made after it.
  // Sorted as single numbers, frequency above symbol: a plain integer sort instead of a
  // comparison that looks both frequencies up.
  std::array<uint64_t, N> byFrequency{};
  int leafCount = 0;
  for (int s = 0; s < symbols; ++s) {
    if (frequencies[s] != 0) byFrequency[leafCount++] = (uint64_t{frequencies[s]} << 16) | s;
  }
  std::sort(byFrequency.begin(), byFrequency.begin() + leafCount);
  std::array<uint16_t, N> leaves{};
  for (int i = 0; i < leafCount; ++i) leaves[i] = static_cast<uint16_t>(byFrequency[i] & 0xFFFF);
  std::array<uint64_t, 2 * N> weight{};
  std::array<uint16_t, 2 * N> parent{};
  for (int i = 0; i < leafCount; ++i) weight[i] = frequencies[leaves[i]];
  int nextLeaf = 0;
  int nextInner = leafCount;
  int made = leafCount;
  const auto takeLightest = [&]() {
    if (nextLeaf < leafCount && (nextInner == made || weight[nextLeaf] <= weight[nextInner])) {
      return nextLeaf++;
    }
    return nextInner++;
  };
  for (int i = 0; i < leafCount - 1; ++i) {
    const int a = takeLightest();
    const int b = takeLightest();
    weight[made] = weight[a] + weight[b];
    parent[a] = parent[b] = static_cast<uint16_t>(made);
    ++made;
  }
  // Depths from the root (the last node made) down.
  std::array<uint8_t, 2 * N> depth{};
  for (int node = made - 2; node >= 0; --node) {
    depth[node] = static_cast<uint8_t>(std::min(depth[parent[node]] + 1, 255));
  }

  // Leaves deeper than maxBits are lifted to it, which over-fills the code (the sum of
  // 2^-length passes 1); each round moves the deepest leaf above maxBits one level down,
  // where it and a leaf from maxBits share its old place, until the sum is 1 again.
  std::array<int, 256> perLength{};
  for (int i = 0; i < leafCount; ++i) ++perLength[std::min<int>(depth[i], maxBits)];
  uint64_t kraft = 0;  // in units of 2^-maxBits
  for (int length = 1; length <= maxBits; ++length) {
    kraft += uint64_t{static_cast<uint32_t>(perLength[length])} << (maxBits - length);
  }
  while (kraft > (uint64_t{1} << maxBits)) {
    int length = maxBits - 1;
    while (perLength[length] == 0) --length;
    --perLength[length];
    perLength[length + 1] += 2;
    --perLength[maxBits];
    --kraft;
  }
  // The shortest codes to the most frequent symbols.
  int leaf = leafCount - 1;
  for (int length = 1; length <= maxBits; ++length) {
    for (int k = 0; k < perLength[length]; ++k)
      lengths[leaves[leaf--]] = static_cast<uint8_t>(length);
  }
}

namespace {

template <std::size_t N>
void huffmanLengths(const std::array<uint32_t, N>& frequencies, int maxBits,
                    std::array<uint8_t, N>& lengths) {
  huffmanCodeLengths(frequencies.data(), static_cast<int>(N), maxBits, lengths.data());
}

// Canonical Huffman codes for the lengths (RFC 1951 3.2.2), bit-reversed for writing.
template <std::size_t N>
void canonicalCodes(const std::array<uint8_t, N>& lengths, std::array<uint16_t, N>& codes) {
  std::array<uint32_t, kMaxCodeBits + 2> perLength{};
  for (uint8_t length : lengths) ++perLength[length];
  perLength[0] = 0;
  std::array<uint32_t, kMaxCodeBits + 2> next{};
  uint32_t code = 0;
  for (int length = 1; length <= kMaxCodeBits; ++length) {
    code = (code + perLength[length - 1]) << 1;
    next[length] = code;
  }
  for (std::size_t s = 0; s < N; ++s) {
    const int length = lengths[s];
    codes[s] = length == 0 ? 0 : static_cast<uint16_t>(reversed(next[length]++, length));
  }
}

// A block's codes for literals and lengths, and for distances.
struct Codes {
  std::array<uint8_t, kLiteralLengthSymbols> literalLengthBits{};
  std::array<uint16_t, kLiteralLengthSymbols> literalLength{};
  std::array<uint8_t, kDistanceSymbols> distanceBits{};
  std::array<uint16_t, kDistanceSymbols> distance{};

  void build() {
    canonicalCodes(literalLengthBits, literalLength);
    canonicalCodes(distanceBits, distance);
  }
  // Bits the symbols counted in `f` take with these codes, extra bits included.
  uint64_t cost(const Frequencies& f) const {
    uint64_t bits = 0;
    for (int s = 0; s < kLiteralLengthSymbols; ++s) {
      bits += uint64_t{f.literalLength[s]} * (literalLengthBits[s] + lengthExtraBits(s));
    }
    for (int s = 0; s < kDistanceSymbols; ++s) {
      bits += uint64_t{f.distance[s]} * (distanceBits[s] + distanceExtraBits(s));
    }
    return bits;
  }

 private:
  // RFC 1951 3.2.5's tables of extra bits, by symbol.
  static uint64_t lengthExtraBits(int symbol) {
    return symbol < 265 || symbol == 285 ? 0 : static_cast<uint64_t>(symbol - 261) / 4;
  }
  static uint64_t distanceExtraBits(int symbol) {
    return symbol < 4 ? 0 : static_cast<uint64_t>(symbol) / 2 - 1;
  }
};

// RFC 1951 3.2.6: the codes of a fixed block. Its literal/length code has 288 symbols (two
// never used), which count in how the others are numbered.
Codes fixedCodes() {
  std::array<uint8_t, 288> lengths{};
  for (int s = 0; s < 288; ++s) lengths[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
  std::array<uint16_t, 288> literalLength{};
  canonicalCodes(lengths, literalLength);
  Codes codes;
  std::copy_n(lengths.begin(), kLiteralLengthSymbols, codes.literalLengthBits.begin());
  std::copy_n(literalLength.begin(), kLiteralLengthSymbols, codes.literalLength.begin());
  codes.distanceBits.fill(5);
  canonicalCodes(codes.distanceBits, codes.distance);
  return codes;
}

// A dynamic block's header: its code lengths, run-length coded (16: the previous length
// 3-6 times more, 17: 3-10 zeros, 18: 11-138 zeros), in a Huffman code of their own.
class DynamicHeader {
 public:
  explicit DynamicHeader(const Codes& codes) {
    literalLengthCount_ = kLiteralLengthSymbols;
    while (literalLengthCount_ > 257 && codes.literalLengthBits[literalLengthCount_ - 1] == 0) {
      --literalLengthCount_;
    }
    distanceCount_ = kDistanceSymbols;
    while (distanceCount_ > 1 && codes.distanceBits[distanceCount_ - 1] == 0) --distanceCount_;
    std::array<uint8_t, kLiteralLengthSymbols + kDistanceSymbols> all{};
    std::copy_n(codes.literalLengthBits.begin(), literalLengthCount_, all.begin());
    std::copy_n(codes.distanceBits.begin(), distanceCount_, all.begin() + literalLengthCount_);
    runLengths(all.data(), literalLengthCount_ + distanceCount_);

    std::array<uint32_t, kCodeLengthSymbols> frequencies{};
    for (int i = 0; i < itemCount_; ++i) ++frequencies[items_[i].symbol];
    huffmanLengths(frequencies, kMaxCodeLengthBits, lengthBits_);
    canonicalCodes(lengthBits_, lengthCodes_);
    orderCount_ = kCodeLengthSymbols;
    while (orderCount_ > 4 && lengthBits_[kOrder[orderCount_ - 1]] == 0) --orderCount_;
  }

  uint64_t bits() const {
    uint64_t total = 5 + 5 + 4 + 3 * static_cast<uint64_t>(orderCount_);
    for (int i = 0; i < itemCount_; ++i) {
      total += lengthBits_[items_[i].symbol] + items_[i].extraBits;
    }
    return total;
  }

  void write(BitWriter& out) const {
    out.put(static_cast<uint32_t>(literalLengthCount_ - 257), 5);
    out.put(static_cast<uint32_t>(distanceCount_ - 1), 5);
    out.put(static_cast<uint32_t>(orderCount_ - 4), 4);
    for (int i = 0; i < orderCount_; ++i) out.put(lengthBits_[kOrder[i]], 3);
    for (int i = 0; i < itemCount_; ++i) {
      const Item& item = items_[i];
      out.put(lengthCodes_[item.symbol], lengthBits_[item.symbol]);
      if (item.extraBits != 0) out.put(item.extra, item.extraBits);
    }
  }

 private:
  // The order the code-length code's lengths are written in.
  static constexpr uint8_t kOrder[kCodeLengthSymbols] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                                         11, 4,  12, 3, 13, 2, 14, 1, 15};
  struct Item {
    uint8_t symbol = 0;
    uint8_t extraBits = 0;
    uint8_t extra = 0;
  };

  void runLengths(const uint8_t* lengths, int count) {
    for (int i = 0; i < count;) {
      const uint8_t length = lengths[i];
      int run = 1;
      while (i + run < count && lengths[i + run] == length) ++run;
      i += run;
      if (length == 0) {
        while (run >= 11) {
          const int n = std::min(run, 138);
          add(18, 7, n - 11);
          run -= n;
        }
        if (run >= 3) {
          add(17, 3, run - 3);
          run = 0;
        }
      } else {
        add(length, 0, 0);
        --run;
        while (run >= 3) {
          const int n = std::min(run, 6);
          add(16, 2, n - 3);
          run -= n;
        }
      }
      for (; run > 0; --run) add(length, 0, 0);
    }
  }
  void add(int symbol, int extraBits, int extra) {
    items_[itemCount_++] = Item{static_cast<uint8_t>(symbol), static_cast<uint8_t>(extraBits),
                                static_cast<uint8_t>(extra)};
  }

  int literalLengthCount_ = 0;
  int distanceCount_ = 0;
  int orderCount_ = 0;
  std::array<Item, kLiteralLengthSymbols + kDistanceSymbols> items_{};
  int itemCount_ = 0;
  std::array<uint8_t, kCodeLengthSymbols> lengthBits_{};
  std::array<uint16_t, kCodeLengthSymbols> lengthCodes_{};
};

// Collects the parse's literals and matches, with their counts, and writes them as a block
// each time kBlockItems have come, and at the end: one block for a short trace's chunk,
// a few for a larger one, each with codes fitted to it, or deflate's fixed codes where
// those come out shorter (a tiny block, whose header of codes would cost more than they
// save).
class BlockWriter {
 public:
  explicit BlockWriter(BitWriter& out) : out_(out) {}

  void literal(unsigned char byte) {
    ++counts_.literalLength[byte];
    add(byte);
  }
  void match(std::size_t length, uint32_t distance) {
    ++counts_.literalLength[kLengthSymbols[length - 3].symbol];
    ++counts_.distance[distanceSymbol(distance).symbol];
    add(kMatch | (static_cast<uint32_t>(length - 3) << 15) | (distance - 1));
  }
  // Writes what is left as the final block.
  void finish() { writeBlock(true); }

 private:
  // An item: a literal byte, or kMatch | (length - 3) << 15 | (distance - 1).
  static constexpr uint32_t kMatch = uint32_t{1} << 31;
  static constexpr std::size_t kBlockItems = 8192;  // 32 KiB of the stack
  static constexpr std::size_t kFixedBelowItems = 64;

  void add(uint32_t item) {
    items_[count_++] = item;
    if (count_ == kBlockItems) writeBlock(false);
  }

  void writeBlock(bool last) {
    ++counts_.literalLength[kEndOfBlock];
    static const Codes kFixed = fixedCodes();
    Codes fitted;
    bool useFitted = false;
    std::optional<DynamicHeader> header;
    if (count_ >= kFixedBelowItems) {
      huffmanLengths(counts_.literalLength, kMaxCodeBits, fitted.literalLengthBits);
      huffmanLengths(counts_.distance, kMaxCodeBits, fitted.distanceBits);
      fitted.build();
      header.emplace(fitted);
      useFitted = header->bits() + fitted.cost(counts_) < kFixed.cost(counts_);
    }
    const uint32_t final = last ? 1 : 0;
    if (useFitted) {
      out_.put(final | (2 << 1), 3);  // codes of its own, then the header that gives them
      header->write(out_);
    } else {
      out_.put(final | (1 << 1), 3);  // fixed codes
    }
    const Codes& codes = useFitted ? fitted : kFixed;
    for (std::size_t i = 0; i < count_; ++i) {
      const uint32_t item = items_[i];
      if ((item & kMatch) == 0) {
        out_.put(codes.literalLength[item], codes.literalLengthBits[item]);
        continue;
      }
      const Symbol l = kLengthSymbols[(item >> 15) & 0xFF];
      out_.put(
          codes.literalLength[l.symbol] | (uint32_t{l.extra} << codes.literalLengthBits[l.symbol]),
          codes.literalLengthBits[l.symbol] + l.extraBits);
      const Symbol d = distanceSymbol((item & 0x7FFF) + 1);
      out_.put(codes.distance[d.symbol] | (uint32_t{d.extra} << codes.distanceBits[d.symbol]),
               codes.distanceBits[d.symbol] + d.extraBits);
    }
    out_.put(codes.literalLength[kEndOfBlock], codes.literalLengthBits[kEndOfBlock]);
    count_ = 0;
    counts_ = Frequencies{};
  }

  BitWriter& out_;
  Frequencies counts_;
  std::array<uint32_t, kBlockItems> items_;  // not cleared: only the first count_ are read
  std::size_t count_ = 0;
};

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
  BlockWriter blocks(bits);
  parse(input, size, blocks);
  blocks.finish();
  out = bits.finish();

  const uint32_t check = checksumOf(input, size);
  for (int shift = 24; shift >= 0; shift -= 8) *out++ = static_cast<unsigned char>(check >> shift);
  return static_cast<std::size_t>(out - start);
}

}  // namespace kinetrace::detail
