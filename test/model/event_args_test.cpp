// The encoding of host events' typed arguments: what a recording thread writes after an
// event's name, and the collector reads back.

#include "model/event_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kinetrace::detail {
namespace {

std::vector<EventArg> roundTrip(const std::vector<EventArg>& args, std::size_t capacity,
                                std::string& storage) {
  storage.assign(capacity, '\0');
  storage.resize(encodeEventArgs(args.data(), args.size(), storage.data(), capacity));
  std::vector<EventArg> out;
  forEachEventArg(storage, [&](const EventArg& arg) { out.push_back(arg); });
  return out;
}

TEST(EventArgsTest, EveryTypeRoundTrips) {
  std::string storage;
  const auto out =
      roundTrip({EventArg::unsignedValue("bytes", UINT64_MAX), EventArg::signedValue("peer", -5),
                 EventArg::doubleValue("ratio", -0.125), EventArg::textValue("op", "Sum"),
                 EventArg::textValue("", "")},
                kMaxEventArgBytes, storage);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].key, "bytes");
  EXPECT_EQ(out[0].type, ArgType::Unsigned);
  EXPECT_EQ(out[0].number, UINT64_MAX);
  EXPECT_EQ(out[1].asSigned(), -5);
  EXPECT_EQ(out[2].asDouble(), -0.125);
  EXPECT_EQ(out[3].type, ArgType::Text);
  EXPECT_EQ(out[3].text, "Sum");
  EXPECT_EQ(out[4].key, "");
  EXPECT_EQ(out[4].text, "");
}

TEST(EventArgsTest, OnlyWholeArgumentsFitAndLongPartsAreCut) {
  std::string storage;
  // 2 + 1 + 8 bytes each: room for two of three.
  auto out = roundTrip({EventArg::unsignedValue("a", 1), EventArg::unsignedValue("b", 2),
                        EventArg::unsignedValue("c", 3)},
                       25, storage);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].key, "b");

  const std::string longKey(400, 'k');
  const std::string longText(1000, 't');
  out = roundTrip({EventArg::textValue(longKey, longText)}, kMaxEventArgBytes, storage);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key.size(), kMaxEventArgKeyBytes);
  EXPECT_EQ(out[0].text.size(), kMaxEventArgTextBytes);

  std::vector<EventArg> many(kMaxEventArgs + 5, EventArg::signedValue("x", 1));
  EXPECT_EQ(roundTrip(many, kMaxEventArgBytes, storage).size(), kMaxEventArgs);
}

TEST(EventArgsTest, DecodingStopsAtMalformedBytes) {
  std::string storage;
  roundTrip({EventArg::unsignedValue("a", 1), EventArg::textValue("b", "text")}, kMaxEventArgBytes,
            storage);
  std::size_t seen = 0;
  // Cut inside the second argument: the first still decodes.
  forEachEventArg(std::string_view(storage).substr(0, storage.size() - 2),
                  [&](const EventArg&) { ++seen; });
  EXPECT_EQ(seen, 1u);
  seen = 0;
  forEachEventArg(std::string_view("\x09\x01x", 3), [&](const EventArg&) { ++seen; });
  EXPECT_EQ(seen, 0u) << "an unknown type";
}

}  // namespace
}  // namespace kinetrace::detail
