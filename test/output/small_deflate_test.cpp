// smallDeflate's streams inflated by zlib itself: every stream must be one zlib accepts
// (header, fixed-code block, window, checksum) and give back the input exactly.

#ifdef KINETRACE_HAVE_ZLIB

#include "output/small_deflate.h"

#include <gtest/gtest.h>
#include <zlib.h>

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

TEST(SmallDeflate, EmptyAndTinyInputs) {
  expectRoundTrip("");
  expectRoundTrip("x");
  expectRoundTrip("abc");
  expectRoundTrip("abcd");
  expectRoundTrip("abcdabcd");
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
    input += "\x12\x0b" "cudaLaunchKernel\x1a\x06kernel\x20";
    input += static_cast<char>((i * 37) & 0x7F);
  }
  input.resize(kSmallDeflateMaxInput);
  const auto stream = deflated(input);
  EXPECT_EQ(inflated(stream, input.size()), input);
  EXPECT_LT(stream.size(), input.size() / 4);
}

}  // namespace
}  // namespace kinetrace::detail

#endif  // KINETRACE_HAVE_ZLIB
