#pragma once

#include <cstddef>
#include <cstdint>

// A zlib stream (RFC 1950 around RFC 1951) of a small buffer, made with nothing to
// allocate: greedy LZ77 matches, found through a 16 KiB hash table on the stack, written
// in blocks of up to 8,192 literals and matches (one for a short trace's chunk), each with
// Huffman codes fitted to it, or deflate's fixed codes where those come out shorter (a
// tiny block, whose header of codes would cost more than they save).
//
// Why not zlib or libdeflate, which the larger chunks of a .pftrace go through: at level 1
// they allocate 268 KB and 205 KB of state, and clear its tables for each stream; a process
// that writes one short trace touches those pages for the first time. On the 31 KB of
// packets of a 200-event trace (dev machine): about 320,000 instructions here against
// libdeflate's 650,000, 20-30 us against 40-60 us when warm, and in a fresh process about
// 300 us against 700-900 us; 3,766 bytes against libdeflate's 3,720 (deflate's fixed codes
// alone gave 4,147, in 176,000 instructions; the JSON is 51,680 bytes). On the H200's host
// the census program's trace had taken longer to deflate with libdeflate than to write
// whole as JSON.

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
