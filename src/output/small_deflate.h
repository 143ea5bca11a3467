#pragma once

#include <cstddef>
#include <cstdint>

// A zlib stream (RFC 1950 around RFC 1951) of a small buffer, made with nothing to
// allocate: greedy LZ77 matches, found through a 16 KiB hash table on the stack, in one
// block whose Huffman codes are fitted to the input (or deflate's fixed codes, when those
// come out shorter: a tiny input). The parse runs twice, once to count symbols and once to
// write them, rather than keeping them in between.
//
// Why not zlib or libdeflate, which the larger chunks of a .pftrace go through: at level 1
// they allocate 268 KB and 205 KB of state, and clear its tables for each stream; a process
// that writes one short trace touches those pages for the first time. Deflating the 31 KB
// of packets of a 200-event trace took 650,000 instructions in libdeflate and about 180,000
// here, and in a fresh process about three times as long (dev machine); on the H200's host
// the census program's trace had taken longer to deflate than to write whole as JSON. The
// stream is as small as libdeflate's level 1 within a few per cent (3,766 bytes against
// 3,720 for those 31 KB; deflate's fixed codes alone took 4,147; the JSON is 51,680).

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
