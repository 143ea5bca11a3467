#include "output/json_escape.h"

#include <array>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kinetrace::detail {
namespace {

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighBits = kOnes * 0x80;

// Nonzero when any byte of the word is a control character, '"', '\\' or non-ASCII.
// Each term is the classic "has a byte less than n" / "has a zero byte" test: a borrow can
// only start at a byte that truly matches, so the word-level answer is exact even though
// the flagged positions above a match may not be.
inline uint64_t wordNeedsWork(uint64_t word) {
  uint64_t control = (word - kOnes * 0x20) & ~word;
  uint64_t quote = word ^ (kOnes * '"');
  uint64_t backslash = word ^ (kOnes * '\\');
  uint64_t isQuote = (quote - kOnes) & ~quote;
  uint64_t isBackslash = (backslash - kOnes) & ~backslash;
  return (control | isQuote | isBackslash | word) & kHighBits;
}

constexpr std::array<bool, 256> makePlainTable() {
  std::array<bool, 256> table{};
  for (int c = 0x20; c < 0x80; ++c) table[c] = (c != '"' && c != '\\');
  return table;
}
constexpr std::array<bool, 256> kPlain = makePlainTable();

// Whether a string shorter than 16 bytes needs no escaping, without a byte loop: two
// possibly overlapping loads cover it (a byte seen twice is judged the same both times).
inline bool shortStringIsPlain(const unsigned char* p, std::size_t size) {
  uint64_t first;
  uint64_t last;
  if (size >= 8) {
    std::memcpy(&first, p, 8);
    std::memcpy(&last, p + size - 8, 8);
  } else if (size >= 4) {
    uint32_t low;
    uint32_t high;
    std::memcpy(&low, p, 4);
    std::memcpy(&high, p + size - 4, 4);
    first = last = low | (static_cast<uint64_t>(high) << 32);
  } else if (size > 0) {
    // Three lanes cover one to three bytes; the rest hold a plain letter.
    first = last = (kOnes * 'a' & ~uint64_t{0xFFFFFF}) | p[0] |
                   (static_cast<uint64_t>(p[size / 2]) << 8) |
                   (static_cast<uint64_t>(p[size - 1]) << 16);
  } else {
    return true;
  }
  return (wordNeedsWork(first) | wordNeedsWork(last)) == 0;
}

#if defined(__SSE2__)
// One bit per byte of p[0, 16) that needs work. A signed compare against 0x20 catches the
// control characters and, as negative numbers, every non-ASCII byte at once.
inline unsigned specialMask16(const unsigned char* p) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i low = _mm_cmplt_epi8(bytes, _mm_set1_epi8(0x20));
  const __m128i quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('"'));
  const __m128i backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\'));
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(low, _mm_or_si128(quote, backslash))));
}
#endif

// The first byte in [p, end) that is not copied as is, or end. Bytes before `begin` are
// not ours to read; bytes in [begin, p) may be re-read to finish with one overlapping
// block instead of a byte loop.
const unsigned char* findSpecial(const unsigned char* p, const unsigned char* end,
                                 const unsigned char* begin) {
#if defined(__SSE2__)
  while (end - p >= 16) {
    const unsigned mask = specialMask16(p);
    if (mask != 0) return p + __builtin_ctz(mask);
    p += 16;
  }
  if (p != end && end - begin >= 16) {
    const unsigned char* last = end - 16;
    // Bytes before p were handled already (one may be the quote just escaped).
    const unsigned mask = specialMask16(last) & (0xFFFFu << (p - last));
    return mask != 0 ? last + __builtin_ctz(mask) : end;
  }
#endif
  while (end - p >= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof word);
    if (wordNeedsWork(word)) break;
    p += 8;
  }
  if (p != end && end - p < 8 && end - begin >= 8) {
    uint64_t word;
    std::memcpy(&word, end - 8, sizeof word);
    if (!wordNeedsWork(word)) return end;
  }
  while (p < end && kPlain[*p]) ++p;
  return p;
}

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER

// Copies `size` bytes, one to two Words, as a Word from the front and one from the back
// (overlapping when size is less than two Words).
template <typename Word>
inline void copyAsTwoWords(char* out, const unsigned char* from, std::size_t size) {
  Word head;
  Word tail;
  std::memcpy(&head, from, sizeof(Word));
  std::memcpy(&tail, from + size - sizeof(Word), sizeof(Word));
  std::memcpy(out, &head, sizeof(Word));
  std::memcpy(out + size - sizeof(Word), &tail, sizeof(Word));
}

// Most runs are short (an arg key, a word between two escapes): copying them inline avoids
// a call into memcpy. Overlapping loads and stores cover every length without a loop.
inline void copyRun(char* out, const unsigned char* from, std::size_t size) {
  if (size >= 8 && size <= 16) {
    copyAsTwoWords<uint64_t>(out, from, size);
  } else if (size >= 4 && size < 8) {
    copyAsTwoWords<uint32_t>(out, from, size);
  } else if (size < 4) {
    for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<char>(from[i]);
  } else {
    std::memcpy(out, from, size);
  }
}

inline bool isContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The UTF-8 sequence starting at p (p[0] >= 0x80): its length (2-4) when well formed, or
// minus the length of its maximal invalid subpart (1-3), which becomes one U+FFFD.
// The ranges exclude overlong forms (C0, C1, E0 80-9F, F0 80-8F), UTF-16 surrogates
// (ED A0-BF) and code points above U+10FFFF (F4 90+, F5-FF).
int utf8Sequence(const unsigned char* p, const unsigned char* end) {
  const unsigned lead = p[0];
  int continuations = 0;
  unsigned low = 0x80;
  unsigned high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    continuations = 1;
  } else if (lead == 0xE0) {
    continuations = 2;
    low = 0xA0;
  } else if (lead == 0xED) {
    continuations = 2;
    high = 0x9F;
  } else if (lead >= 0xE1 && lead <= 0xEF) {
    continuations = 2;
  } else if (lead == 0xF0) {
    continuations = 3;
    low = 0x90;
  } else if (lead >= 0xF1 && lead <= 0xF3) {
    continuations = 3;
  } else if (lead == 0xF4) {
    continuations = 3;
    high = 0x8F;
  } else {
    return -1;
  }
  for (int i = 1; i <= continuations; ++i) {
    if (p + i >= end) return -i;
    const unsigned byte = p[i];
    if (byte < low || byte > high) return -i;
    low = 0x80;
    high = 0xBF;
  }
  return continuations + 1;
}

inline char* writeEscapedAscii(char* out, unsigned char c) {
  *out++ = '\\';
  switch (c) {
    case '"': *out++ = '"'; break;
    case '\\': *out++ = '\\'; break;
    case '\b': *out++ = 'b'; break;
    case '\f': *out++ = 'f'; break;
    case '\n': *out++ = 'n'; break;
    case '\r': *out++ = 'r'; break;
    case '\t': *out++ = 't'; break;
    default:
      std::memcpy(out, "u00", 3);
      out[3] = kHexDigits[c >> 4];
      out[4] = kHexDigits[c & 0xF];
      out += 5;
      break;
  }
  return out;
}

}  // namespace

char* writeJsonEscaped(char* out, std::string_view text) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char* end = p + text.size();
  if (text.size() < 16 && shortStringIsPlain(p, text.size())) {
    copyRun(out, p, text.size());  // the usual arg key or category
    return out + text.size();
  }
  const unsigned char* begin = p;
  while (p < end) {
    const unsigned char* run = p;
    p = findSpecial(p, end, begin);
    copyRun(out, run, static_cast<std::size_t>(p - run));
    out += p - run;
    if (p == end) break;

    if (*p < 0x80) {
      out = writeEscapedAscii(out, *p);
      ++p;
      continue;
    }
    const int length = utf8Sequence(p, end);
    if (length > 0) {
      std::memcpy(out, p, static_cast<std::size_t>(length));
      out += length;
      p += length;
    } else {
      std::memcpy(out, kReplacement, 3);
      out += 3;
      p += -length;
    }
  }
  return out;
}

std::size_t jsonEscapeSplitPoint(std::string_view text, std::size_t maxBytes) noexcept {
  if (text.size() <= maxBytes) return text.size();
  // A cut before a byte that is not a continuation byte splits no sequence. If the three
  // bytes before the cut are continuations too, the byte at the cut cannot belong to a
  // sequence (a lead is at most three bytes back), so the cut is safe there as well.
  for (std::size_t back = 0; back < 4 && back < maxBytes; ++back) {
    const std::size_t cut = maxBytes - back;
    if (!isContinuation(static_cast<unsigned char>(text[cut]))) return cut;
  }
  return maxBytes;
}

void appendJsonString(std::string& out, std::string_view text) {
  // Escaping in chunks bounds the scratch space resize() zero-fills for a long string.
  constexpr std::size_t kChunkBytes = 4096;
  out.push_back('"');
  while (!text.empty()) {
    const std::size_t take = jsonEscapeSplitPoint(text, kChunkBytes);
    const std::size_t oldSize = out.size();
    out.resize(oldSize + take * kJsonEscapeMaxExpansion);
    char* written = writeJsonEscaped(out.data() + oldSize, text.substr(0, take));
    out.resize(static_cast<std::size_t>(written - out.data()));
    text.remove_prefix(take);
  }
  out.push_back('"');
}

}  // namespace kinetrace::detail
