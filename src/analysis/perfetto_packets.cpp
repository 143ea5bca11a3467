#include "analysis/perfetto_packets.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "analysis/byte_source.h"
#include "kinetrace/error.h"
#include "output/perfetto_compression.h"
#include "output/perfetto_schema.h"
#include "output/protobuf.h"

namespace kinetrace::detail {
namespace {

// A TracePacket's key in a Trace message: field 1, length-delimited.
constexpr uint64_t kPacketKey = (uint64_t{pftrace::kTracePacket} << 3) | 2;

}  // namespace

void forEachFilePacket(ByteSource& source, ReadBudget& budget, const ReadProgress& progress,
                       const std::function<void(std::string_view, uint64_t)>& onPacket) {
  const std::string& path = source.path();
  // Packets are read whole into a buffer that keeps what the last read left over.
  BudgetString buffer{BudgetAllocator<char>(budget, kPacketsGrowth)};
  std::size_t start = 0;
  uint64_t fileOffset = 0;  // of buffer[start], in the decompressed stream
  constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  BudgetHold chunkHold(budget);
  chunkHold.take(kChunkBytes + kAllocationOverheadBytes, kPacketsGrowth);
  const std::unique_ptr<char[]> chunk(new char[kChunkBytes]);  // not zeroed: see JsonSourceBuffer
  bool atEnd = false;
  while (true) {
    std::string_view rest(buffer.data() + start, buffer.size() - start);
    uint64_t key = 0;
    uint64_t length = 0;
    std::size_t keyBytes = rest.empty() ? 0 : proto::readVarint(rest, &key);
    std::size_t lengthBytes = 0;
    if (keyBytes != 0) {
      if (key != kPacketKey) {
        throw Error(fmt::format(
            "{} is not a Perfetto trace: at byte {} a field other than a trace packet ({}); {}",
            path, fileOffset, key >> 3, "kinetrace reads the .pftrace files kinetrace writes"));
      }
      lengthBytes = proto::readVarint(rest.substr(keyBytes), &length);
      if (lengthBytes != 0 && length > kMaxPacketBytes) {
        throw Error(
            fmt::format("{}: the packet at byte {} claims {} bytes, more than a "
                        "kinetrace trace's packets hold",
                        path, fileOffset, length));
      }
    }
    const bool whole =
        keyBytes != 0 && lengthBytes != 0 && rest.size() >= keyBytes + lengthBytes + length;
    if (whole) {
      onPacket(rest.substr(keyBytes + lengthBytes, static_cast<std::size_t>(length)), fileOffset);
      const std::size_t used = keyBytes + lengthBytes + static_cast<std::size_t>(length);
      start += used;
      fileOffset += used;
      continue;
    }
    if (atEnd) {
      if (!rest.empty()) {
        throw Error(fmt::format("{} ends inside the packet at byte {} (is the file truncated?)",
                                path, fileOffset));
      }
      break;
    }
    buffer.erase(0, start);
    start = 0;
    const std::size_t got = source.read(chunk.get(), kChunkBytes);
    if (progress) progress(source.consumedBytes(), source.fileBytes());
    atEnd = got == 0;
    buffer.append(chunk.get(), got);
  }
}

void forEachInflatedPacket(std::string_view packets,
                           const std::function<void(std::string_view)>& onPacket) {
  std::string_view rest = packets;
  while (!rest.empty()) {
    uint64_t key = 0;
    uint64_t length = 0;
    const std::size_t keyBytes = proto::readVarint(rest, &key);
    const std::size_t lengthBytes =
        keyBytes == 0 ? 0 : proto::readVarint(rest.substr(keyBytes), &length);
    if (keyBytes == 0 || lengthBytes == 0 || key != kPacketKey ||
        length > rest.size() - keyBytes - lengthBytes) {
      throw Error("compressed packets that are not whole trace packets");
    }
    onPacket(rest.substr(keyBytes + lengthBytes, static_cast<std::size_t>(length)));
    rest.remove_prefix(keyBytes + lengthBytes + static_cast<std::size_t>(length));
  }
}

PacketInflater::Inflated PacketInflater::inflate(std::string_view compressed,
                                                 uint64_t fileBytesRead) {
  const uint64_t allowed = kInflationAllowanceBytes + kMaxInflationRatio * fileBytesRead;
  inflatedBytes_ += kMinInflationBytes;
  if (inflatedBytes_ > allowed) inflatedTooMuch(fileBytesRead);
  const uint64_t byRatio = allowed - inflatedBytes_ + kMinInflationBytes;
  // Growing, the inflated packets' buffer holds its old and new room at once: it may take
  // half of what the budget has left.
  const uint64_t byBudget = budget_.left() / 2;
  const uint64_t limit = std::min<uint64_t>({kMaxPacketBytes, byRatio, byBudget});
  std::optional<std::string> inflated =
      inflatePacketsUpTo(compressed, static_cast<std::size_t>(limit));
  if (!inflated) {
    if (limit == byRatio) inflatedTooMuch(fileBytesRead);
    if (limit == byBudget) budget_.refuse(kPacketsGrowth);
    throw Error(
        fmt::format("compressed packets inflate to more than {} bytes, more than a kinetrace "
                    "trace's packets hold",
                    limit));
  }
  Inflated result{std::move(*inflated), BudgetHold(budget_)};
  const std::size_t size = result.packets.size();
  inflatedBytes_ += size > kMinInflationBytes ? size - kMinInflationBytes : 0;
  result.hold.take(result.packets.capacity() + kAllocationOverheadBytes, kPacketsGrowth);
  return result;
}

void PacketInflater::inflatedTooMuch(uint64_t fileBytesRead) {
  throw Error(fmt::format(
      "compressed packets inflate to more than {} times the {} bytes of the file read so "
      "far (with nesting, at every level together): more than deflate's own limit allows, "
      "so not packets kinetrace wrote",
      kMaxInflationRatio, fileBytesRead));
}

}  // namespace kinetrace::detail
