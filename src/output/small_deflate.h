#pragma once

#include <cstddef>
#include <cstdint>

// A zlib stream (RFC 1950 around RFC 1951) of a small buffer, made with nothing to
// allocate: greedy LZ77 matches, found through a 16 KiB hash table on the stack, written
// in blocks of up to 8,192 literals and matches (one for a short trace's chunk), each with
// Huffman codes fitted to it, or deflate's fixed codes where those come out shorter (a
// tiny block, whose header of codes would cost more than they save).
//
// Why not zlib or libdeflate, which the larger chunks of a .pftrace go through: they
// allocate hundreds of kilobytes of state and clear its tables for each stream, so a process
// that writes one short trace touches those pages for the first time, and deflating a short
// trace that way had cost more than writing it whole as JSON. This needs no state beyond
// its stack and compresses a short trace's packets about as well (the figures:
// bench/HISTORY.md, "Short .pftrace traces").

namespace kinetrace::detail {

// The most it compresses: its positions and hash table are sized for this.
constexpr std::size_t kSmallDeflateMaxInput = std::size_t{64} << 10;

// Room smallDeflate needs for `inputBytes`: one more bit per byte, plus the frame.
constexpr std::size_t smallDeflateBound(std::size_t inputBytes) {
  return inputBytes + inputBytes / 8 + 32;
}

// Writes the zlib stream of input[0, size) at `out`, which has room for
// smallDeflateBound(size) bytes, and returns its length. `size` is at most
// kSmallDeflateMaxInput.
std::size_t smallDeflate(const unsigned char* input, std::size_t size, unsigned char* out);

// Huffman code lengths, of at most `maxBits` (up to 15), for `symbols` symbols (up to 286)
// counted `counts` times (0: unused, given length 0); at least two get a code, so that the
// code is complete. smallDeflate's codes; here for its tests.
void huffmanCodeLengths(const uint32_t* counts, int symbols, int maxBits, uint8_t* lengths);

}  // namespace kinetrace::detail
