#pragma once

// The framing of a .pftrace: a Trace message, field 1 (TracePacket) over and over, read
// from the file a whole packet at a time; and compressed_packets, a zlib stream of more such
// packets, inflated within limits that keep a hostile file's work linear in its size.
// Separate from the reader because it knows nothing of what a packet holds: it hands each
// packet's bytes on, in order, and owns the buffers and limits of getting them.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "analysis/read_budget.h"
#include "analysis/trace_reader.h"

namespace kinetrace::detail {

// A packet larger than this is not from PerfettoSink (its packets hold one event).
inline constexpr uint64_t kMaxPacketBytes = uint64_t{64} << 20;

inline constexpr const char* kPacketsGrowth = ".pftrace packets";

// Reads `source` (at its start) to its end, calling `onPacket` with each TracePacket's bytes
// and the offset in the (decompressed) file where it starts. Packets are read whole into a
// buffer drawn from `budget`. A field other than a packet, a packet claiming more than
// kMaxPacketBytes, or a file ending inside a packet throws kinetrace::Error naming the file
// and the offset; what `onPacket` throws passes through.
void forEachFilePacket(ByteSource& source, ReadBudget& budget, const ReadProgress& progress,
                       const std::function<void(std::string_view, uint64_t)>& onPacket);

// Calls `onPacket` with each TracePacket's bytes of `packets`, the body of a Trace message
// (what compressed_packets inflates to). Anything but whole packets throws kinetrace::Error.
void forEachInflatedPacket(std::string_view packets,
                           const std::function<void(std::string_view)>& onPacket);

// Inflates compressed_packets fields. What they inflate to, at every level of nesting
// together, stays within kMaxInflationRatio times the file read so far (plus
// kInflationAllowanceBytes): nested, each level's packets could inflate as much again, and
// the work would grow as the ratio to the power of the depth. Each inflation counts as at
// least kMinInflationBytes: starting zlib costs that much.
class PacketInflater {
 public:
  static constexpr uint64_t kMinInflationBytes = 4096;

  explicit PacketInflater(ReadBudget& budget) : budget_(budget) {}

  // The packets, with the budget's hold on them.
  struct Inflated {
    std::string packets;
    BudgetHold hold;
  };
  // Inflates `compressed`, `fileBytesRead` bytes of the file having been read. Throws
  // kinetrace::Error past the ratio or kMaxPacketBytes, the budget's refusal past half of
  // what it has left (the growing buffer holds its old and new room at once).
  Inflated inflate(std::string_view compressed, uint64_t fileBytesRead);

  // Bytes inflated so far, at every level, each inflation counted as at least
  // kMinInflationBytes.
  uint64_t inflatedBytes() const { return inflatedBytes_; }

 private:
  [[noreturn]] static void inflatedTooMuch(uint64_t fileBytesRead);

  ReadBudget& budget_;
  uint64_t inflatedBytes_ = 0;
};

}  // namespace kinetrace::detail
