#pragma once

#include <cstddef>

// A zlib stream (RFC 1950 around RFC 1951) of a small buffer, made in one pass with nothing
// to allocate: greedy LZ77 matches, found through a 16 KiB hash table on the stack, coded
// with deflate's fixed Huffman codes (one block, no code tables to send).
//
// Why not zlib or libdeflate, which the larger chunks of a .pftrace go through: at level 1
// they allocate 268 KB and 205 KB of state, and clear its tables for each stream; a process
// that writes one short trace touches those pages for the first time. Deflating the 31 KB
// of packets of a 200-event trace took 650,000 instructions in libdeflate and 176,000 here,
// and about 700 us against 150 us in a fresh process (dev machine); on the H200's host the
// census program's trace had taken longer to deflate than to write whole as JSON. Fixed
// codes give up about a tenth of the ratio dynamic ones reach on a trace's packets (4,147
// bytes against libdeflate's 3,720 for those 31 KB; the JSON is 51,680).

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

}  // namespace kinetrace::detail
