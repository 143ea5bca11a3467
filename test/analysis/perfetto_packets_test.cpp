// The .pftrace framing: the packets of an inflated Trace body, and compressed_packets
// inflated within the ratio to the file read and within the budget.

#include "analysis/perfetto_packets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kinetrace/error.h"
#include "output/perfetto_schema.h"
#include "proto_message.h"

#ifdef KINETRACE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace kinetrace::detail {
namespace {

std::vector<std::string> packetsIn(std::string_view body) {
  std::vector<std::string> packets;
  forEachInflatedPacket(body, [&](std::string_view p) { packets.emplace_back(p); });
  return packets;
}

std::string errorOf(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PerfettoPacketsTest, AnInflatedBodyGivesItsPacketsInOrder) {
  const std::string body = protoMessage([](proto::ProtoWriter& w) {
    w.bytes(pftrace::kTracePacket, "first");
    w.bytes(pftrace::kTracePacket, "");
    w.bytes(pftrace::kTracePacket, std::string(300, 'x'));  // a two-byte length
  });
  const std::vector<std::string> packets = packetsIn(body);
  ASSERT_EQ(packets.size(), 3u);
  EXPECT_EQ(packets[0], "first");
  EXPECT_EQ(packets[1], "");
  EXPECT_EQ(packets[2], std::string(300, 'x'));
}

TEST(PerfettoPacketsTest, AnythingButWholePacketsIsAnError) {
  const std::string packet =
      protoMessage([](proto::ProtoWriter& w) { w.bytes(pftrace::kTracePacket, "abc"); });
  const std::string notAPacket = protoMessage([](proto::ProtoWriter& w) { w.bytes(2, "abc"); });
  const std::string message = "compressed packets that are not whole trace packets";
  EXPECT_EQ(errorOf([&] { packetsIn(packet.substr(0, packet.size() - 1)); }), message);
  EXPECT_EQ(errorOf([&] { packetsIn(notAPacket); }), message);
  EXPECT_EQ(errorOf([&] { packetsIn(packet + "\x0a"); }), message);
}

#ifdef KINETRACE_HAVE_ZLIB
std::string deflated(const std::string& bytes) {
  uLongf size = compressBound(static_cast<uLong>(bytes.size()));
  std::string out(size, '\0');
  EXPECT_EQ(
      compress(reinterpret_cast<Bytef*>(out.data()), &size,
               reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uLong>(bytes.size())),
      Z_OK);
  out.resize(size);
  return out;
}

TEST(PerfettoPacketsTest, CompressedPacketsInflateWithTheBudgetHoldingThem) {
  ReadBudget budget;
  PacketInflater inflater(budget);
  const std::string packets(10'000, 'p');
  {
    const PacketInflater::Inflated inflated = inflater.inflate(deflated(packets), 100);
    EXPECT_EQ(inflated.packets, packets);
    EXPECT_GE(inflated.hold.bytes(), packets.size());
    EXPECT_GE(budget.used(), packets.size());
  }
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(inflater.inflatedBytes(), packets.size());
}

TEST(PerfettoPacketsTest, InflatingPastTheRatioToTheFileReadIsAnError) {
  ReadBudget budget;
  PacketInflater inflater(budget);
  // Nothing read yet: the allowance alone, 4 MiB.
  const std::string bomb = deflated(std::string(std::size_t{5} << 20, '\0'));
  EXPECT_EQ(errorOf([&] { inflater.inflate(bomb, 0); }),
            "compressed packets inflate to more than 1032 times the 0 bytes of the file read "
            "so far (with nesting, at every level together): more than deflate's own limit "
            "allows, so not packets kinetrace wrote");
  // With enough of the file read, the same packets are fine.
  PacketInflater later(budget);
  EXPECT_EQ(later.inflate(bomb, 10'000).packets.size(), std::size_t{5} << 20);
}

TEST(PerfettoPacketsTest, InflatingPastHalfWhatTheBudgetHasLeftIsRefused) {
  ReadBudget budget(std::size_t{1} << 20);
  PacketInflater inflater(budget);
  const std::string packets(std::size_t{600} << 10, 'p');
  try {
    inflater.inflate(deflated(packets), 10'000);
    FAIL() << "no refusal";
  } catch (const BudgetRefusal& refusal) {
    EXPECT_EQ(refusal.whatGrew(), kPacketsGrowth);
  }
  EXPECT_EQ(budget.used(), 0u);
}
#endif

}  // namespace
}  // namespace kinetrace::detail
