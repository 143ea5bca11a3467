#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "output/atomic_file.h"

// Perfetto's compressed packets: a TracePacket whose field 50 (compressed_packets) holds a
// zlib stream (RFC 1950) of further TracePackets, each framed as a Trace message frames
// them (field 1, length-delimited). Perfetto's trace processor and UI inflate them and
// read the packets inside as if they stood in the file; Perfetto's own service writes
// traces this way when asked to compress. A .pftrace compressed so stays a .pftrace.

namespace kinetrace::detail {

// Wraps each write, which must be a whole number of framed TracePackets, into one
// compressed_packets packet for the output below. The sink writes its buffer of packets
// (about a megabyte) at a time, so each chunk compresses well and memory stays small.
//
// The first chunk, up to kSmallDeflateMaxInput bytes (a short trace's only one), is taken in
// pieces (pieceBytes()) and deflated by a thread beside the sink while the sink encodes the
// rest (deflate_worker.h): commit() then waits for the last piece only. Where that thread
// is busy or cannot be had, the chunk is deflated when it is complete, as below.
//
// From the second chunk on, threads of its own (two, one on a machine of two cores)
// compress chunks while the sink encodes the next, and write them in order; writing a
// compressed trace takes about as long as the slower of encoding and compressing, not their
// sum. A trace of one chunk starts no thread: a small chunk (a short trace's) is compressed
// and written by write() itself, a large one by commit(). A chunk more than there are
// threads can wait: write() blocks beyond that. An error below (a full disk) is thrown by
// the write() that met it or a later one, or by commit().
class CompressedPacketsOutput final : public ByteOutput {
 public:
  // Whether the first chunk is deflated as it comes, by the thread beside the sink, or
  // when it is complete, as every later chunk is (tests of the chunking use that).
  enum class FirstChunk { Streamed, WhenComplete };

  // `threads`: how many compress, 0 for the default above.
  explicit CompressedPacketsOutput(std::unique_ptr<ByteOutput> next, std::size_t threads = 0,
                                   FirstChunk first = FirstChunk::Streamed);
  ~CompressedPacketsOutput() override;
  CompressedPacketsOutput(const CompressedPacketsOutput&) = delete;
  CompressedPacketsOutput& operator=(const CompressedPacketsOutput&) = delete;

  void write(const char* data, std::size_t size) override;
  void commit() override;
  std::size_t pieceBytes() const override;

 private:
  struct Stream;
  std::unique_ptr<ByteOutput> next_;
  std::size_t threads_;
  std::unique_ptr<Stream> stream_;
};

// Whether this build can compress packets (zlib was found).
bool packetCompressionAvailable();

// The packets inside a compressed_packets field. Throws kinetrace::Error when the bytes are
// not a whole zlib stream, or inflate to more than `maxBytes`.
std::string inflatePackets(std::string_view compressed, std::size_t maxBytes);

}  // namespace kinetrace::detail
