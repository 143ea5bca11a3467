#pragma once

#include <cstddef>
#include <memory>
#include <optional>
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
// From the second chunk on, threads of its own (two, one on a machine of two cores)
// compress chunks while the sink encodes the next, and write them in order; writing a
// compressed trace takes about as long as the slower of encoding and compressing, not their
// sum. A trace of one chunk starts no thread: a small chunk (a short trace's) is compressed
// and written by write() itself, a large one by commit(). A chunk more than there are
// threads can wait: write() blocks beyond that. An error below (a full disk) is thrown by
// the write() that met it or a later one, or by commit().
class CompressedPacketsOutput final : public ByteOutput {
 public:
  // `threads`: how many compress, 0 for the default above.
  explicit CompressedPacketsOutput(std::unique_ptr<ByteOutput> next, std::size_t threads = 0);
  ~CompressedPacketsOutput() override;
  CompressedPacketsOutput(const CompressedPacketsOutput&) = delete;
  CompressedPacketsOutput& operator=(const CompressedPacketsOutput&) = delete;

  void write(const char* data, std::size_t size) override;
  void commit() override;

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
// The same, but inflating to more than `maxBytes` gives nullopt rather than an error, for a
// caller whose limit is its own to explain. It stops as soon as the limit is passed: the
// work done is bounded by `maxBytes`, whatever the input.
std::optional<std::string> inflatePacketsUpTo(std::string_view compressed, std::size_t maxBytes);

}  // namespace kinetrace::detail
