// smallDeflate's streams inflated by zlib itself: every stream must be one zlib accepts
// (header, fixed-code block, window, checksum) and give back the input exactly.

#ifdef KINETRACE_HAVE_ZLIB

#include "output/small_deflate.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace kinetrace::detail {
namespace {

std::vector<unsigned char> deflated(const std::string& input) {
  std::vector<unsigned char> out(smallDeflateBound(input.size()));
  const std::size_t size =
      smallDeflate(reinterpret_cast<const unsigned char*>(input.data()), input.size(), out.data());
  EXPECT_LE(size, out.size());
  out.resize(size);
  return out;
}

// zlib's uncompress: fails on a bad header, code, distance or checksum.
std::string inflated(const std::vector<unsigned char>& stream, std::size_t expectedSize) {
  std::string out(expectedSize + 1, '\0');
  uLongf size = out.size();
  const int status = uncompress(reinterpret_cast<Bytef*>(out.data()), &size, stream.data(),
                                static_cast<uLong>(stream.size()));
  EXPECT_EQ(status, Z_OK) << zError(status);
  out.resize(size);
  return out;
}

std::string randomBytes(std::size_t size, uint32_t seed) {
  std::mt19937 random(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(random() & 0xFF);
  return bytes;
}

void expectRoundTrip(const std::string& input) {
  EXPECT_EQ(inflated(deflated(input), input.size()), input);
}

// The block type (RFC 1951 3.2.3) of a stream's one block: 1 fixed codes, 2 its own.
int blockType(const std::vector<unsigned char>& stream) {
  return (stream.at(2) >> 1) & 3;
}

TEST(SmallDeflate, EmptyAndTinyInputs) {
  expectRoundTrip("");
  expectRoundTrip("x");
  expectRoundTrip("abc");
  expectRoundTrip("abcd");
  expectRoundTrip("abcdabcd");
  EXPECT_EQ(blockType(deflated("abc")), 1) << "a header of codes would cost more than it saves";
}

TEST(SmallDeflate, LongRunsUseTheLongestMatches) {
  const std::string run(10'000, 'z');
  const auto stream = deflated(run);
  EXPECT_EQ(inflated(stream, run.size()), run);
  // Matches of 258 bytes at distance 1: about two bytes each.
  EXPECT_LT(stream.size(), 200u);
}

TEST(SmallDeflate, IncompressibleInputStaysWithinTheBound) {
  for (std::size_t size : {1u, 7u, 100u, 4'096u, 65'536u}) {
    const std::string input = randomBytes(size, static_cast<uint32_t>(size));
    expectRoundTrip(input);
  }
}

// Every match length (3..258 is all deflate has; this coder starts at 4) and distances
// from 1 to the window's end.
TEST(SmallDeflate, EveryMatchLengthAndDistance) {
  // Each piece twice, in two inputs of at most kSmallDeflateMaxInput bytes.
  for (const auto& [from, to] : {std::pair<std::size_t, std::size_t>{4, 200}, {200, 301}}) {
    std::string input;
    for (std::size_t length = from; length < to; ++length) {
      const std::string piece = randomBytes(length, static_cast<uint32_t>(length));
      input += piece;
      input += static_cast<char>(length);
      input += piece;
    }
    ASSERT_LE(input.size(), kSmallDeflateMaxInput);
    expectRoundTrip(input);
  }

  for (std::size_t distance : {1u, 2u, 5u, 31u, 257u, 4'097u, 24'577u, 32'000u, 32'768u}) {
    std::string spaced;
    if (distance < 64) {  // a period of `distance` bytes, repeated
      const std::string period = randomBytes(distance, static_cast<uint32_t>(distance));
      while (spaced.size() < 1'000) spaced += period;
    } else {  // 64 bytes, and the same 64 bytes `distance` bytes later
      const std::string head = randomBytes(64, 7);
      spaced = head + randomBytes(distance - 64, static_cast<uint32_t>(distance)) + head;
    }
    expectRoundTrip(spaced);
  }
}

// A repeat farther back than deflate's 32 KiB window must be written out again: zlib
// rejects a distance beyond it.
TEST(SmallDeflate, RepeatsBeyondTheWindowAreNotReferenced) {
  const std::string block = randomBytes(20'000, 1);
  const std::string input = block + randomBytes(20'000, 2) + block;
  ASSERT_LE(input.size(), kSmallDeflateMaxInput);
  const auto stream = deflated(input);
  EXPECT_EQ(inflated(stream, input.size()), input);
  EXPECT_GT(stream.size(), input.size());  // nothing in reach repeats
}

// The shape of a trace's packets: the same field keys, names and small deltas again and
// again.
TEST(SmallDeflate, RepetitiveRecordsCompressWell) {
  std::string input;
  for (int i = 0; input.size() < 60'000; ++i) {
    input += "\x0a\x2a\x08";
    input += static_cast<char>(i & 0x7F);
    input +=
        "\x12\x0b"
        "cudaLaunchKernel\x1a\x06kernel\x20";
    input += static_cast<char>((i * 37) & 0x7F);
  }
  input.resize(kSmallDeflateMaxInput);
  const auto stream = deflated(input);
  EXPECT_EQ(inflated(stream, input.size()), input);
  EXPECT_LT(stream.size(), input.size() / 4);
  EXPECT_EQ(blockType(stream), 2) << "codes fitted to the input";
}

// Counts falling off like the Fibonacci series make a Huffman tree as deep as it has
// symbols; deflate allows codes of 15 bits (7 in a header's code-length code). The lengths
// must stay within the limit and still make a complete code (the sum of 2^-length is 1),
// the most frequent symbols getting the shortest codes.
TEST(SmallDeflate, CodeLengthsStayWithinTheLimitAndMakeACompleteCode) {
  for (const auto& [symbols, maxBits] : {std::pair<int, int>{30, 15}, {19, 7}, {286, 15}}) {
    std::vector<uint32_t> counts(static_cast<std::size_t>(symbols));
    uint32_t a = 1;
    uint32_t b = 1;
    for (int s = 0; s < symbols; ++s) {
      counts[static_cast<std::size_t>(s)] = a;
      const uint32_t next = a + b;
      a = b;
      b = std::min<uint32_t>(next, 1u << 30);
    }
    std::vector<uint8_t> lengths(counts.size());
    huffmanCodeLengths(counts.data(), symbols, maxBits, lengths.data());
    double kraft = 0;
    for (uint8_t length : lengths) {
      ASSERT_GE(length, 1);
      ASSERT_LE(length, maxBits);
      kraft += std::ldexp(1.0, -length);
    }
    EXPECT_DOUBLE_EQ(kraft, 1.0) << symbols << " symbols";
    EXPECT_LE(lengths.back(), lengths.front()) << "the most frequent has the shortest code";
  }
}

TEST(SmallDeflate, ACodeHasAtLeastTwoSymbols) {
  const uint32_t one[4] = {0, 0, 9, 0};
  uint8_t lengths[4] = {};
  huffmanCodeLengths(one, 4, 15, lengths);
  EXPECT_EQ(lengths[2], 1);
  EXPECT_EQ(lengths[0] + lengths[1] + lengths[3], 1) << "one more symbol drafted";
}

}  // namespace
}  // namespace kinetrace::detail

#endif  // KINETRACE_HAVE_ZLIB
