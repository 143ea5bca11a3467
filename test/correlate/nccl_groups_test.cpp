#include "correlate/nccl_groups.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

// NCCL's groups fed by hand: the ranges NCCL's NVTX annotations open, on one or more
// threads, with the arguments their payloads carried already in the tables.

namespace kinetrace::detail {
namespace {

constexpr uint32_t kThread = 1;  // thread instances
constexpr uint32_t kOtherThread = 2;

class NcclGroupsTest : public ::testing::Test {
 protected:
  // A call's arguments as the assembler keeps them; returns their index + 1.
  uint32_t callArgs(const std::string& call, uint64_t communicator, uint64_t bytes, int64_t peer,
                    const std::string& bytesKey = "Message size [bytes]") {
    StoredArgs args;
    args.event = tables.strings.intern("NCCL: " + call);
    args.nccl = true;
    args.values.push_back(number("NCCL communicator ID", ArgType::Unsigned, communicator));
    args.values.push_back(number(bytesKey, ArgType::Unsigned, bytes));
    args.values.push_back(number("Peer rank", ArgType::Signed, static_cast<uint64_t>(peer)));
    tables.eventArgs.push_back(args);
    return static_cast<uint32_t>(tables.eventArgs.size());
  }
  StoredArg number(const std::string& key, ArgType type, uint64_t value) {
    StoredArg arg;
    arg.key = tables.strings.intern(key);
    arg.type = type;
    arg.number = value;
    return arg;
  }
  // What the range `rangeId` was given, key -> value ("ncclSend x2", "900"); empty: nothing.
  std::map<std::string, std::string> given(uint64_t rangeId) const {
    std::map<std::string, std::string> out;
    auto found = tables.argsOfRange.find(rangeId);
    if (found == tables.argsOfRange.end()) return out;
    for (const StoredArg& arg : tables.eventArgs.at(found->second - 1).values) {
      out[std::string(tables.strings.get(arg.key))] =
          arg.type == ArgType::Text ? std::string(tables.strings.get(arg.text))
                                    : std::to_string(arg.number);
    }
    return out;
  }

  TraceTables tables;
  NcclGroups groups{tables, 1000};
};

TEST_F(NcclGroupsTest, TheOutermostEndIsGivenItsCallsSummedAndAnInnerEndNothing) {
  groups.onRange(kThread, "ncclGroupStart", 1, 0);
  groups.onRange(kThread, "ncclGroupStart", 2, 0);
  groups.onRange(kThread, "ncclSend", 3, callArgs("ncclSend", 7, 100, 1));
  groups.onRange(kThread, "ncclGroupEnd", 4, 0);
  groups.onRange(kThread, "ncclRecv", 5, callArgs("ncclRecv", 7, 300, 1));
  groups.onRange(kThread, "ncclRecv", 6, callArgs("ncclRecv", 7, 500, 1));
  groups.onRange(kThread, "ncclGroupEnd", 7, 0);

  EXPECT_TRUE(given(4).empty()) << "the inner group's end launches nothing";
  const auto sum = given(7);
  EXPECT_EQ(sum.at("Calls in the group"), "ncclSend, ncclRecv x2");
  EXPECT_EQ(sum.at("Message size [bytes]"), "900");
  EXPECT_EQ(sum.at("NCCL communicator ID"), "7");
  EXPECT_EQ(sum.at("Peer rank"), "1");
  const StoredArgs& kept = tables.eventArgs.at(tables.argsOfRange.at(7) - 1);
  EXPECT_EQ(tables.strings.get(kept.event), "NCCL: ncclGroupEnd");
  EXPECT_TRUE(kept.nccl) << "so the GPU work launched inside it carries it";
}

TEST_F(NcclGroupsTest, WhatTheCallsDoNotShareIsLeftOutAndBytesCountUnderEitherKey) {
  groups.onRange(kThread, "ncclGroupStart", 1, 0);
  groups.onRange(kThread, "ncclSend", 2, callArgs("ncclSend", 7, 10, 2));
  groups.onRange(kThread, "ncclSend", 3, callArgs("ncclSend", 8, 20, 3, "Bytes"));
  groups.onRange(kThread, "ncclGroupEnd", 4, 0);

  const auto sum = given(4);
  EXPECT_EQ(sum.at("Calls in the group"), "ncclSend x2");
  EXPECT_EQ(sum.at("Message size [bytes]"), "30");
  EXPECT_EQ(sum.count("Peer rank"), 0u) << "two peers: none is named";
  EXPECT_EQ(sum.count("NCCL communicator ID"), 0u) << "two communicators: none is named";
}

TEST_F(NcclGroupsTest, GroupsArePerThread) {
  groups.onRange(kThread, "ncclGroupStart", 1, 0);
  groups.onRange(kOtherThread, "ncclAllReduce", 2, callArgs("ncclAllReduce", 7, 64, 0));
  groups.onRange(kThread, "ncclSend", 3, callArgs("ncclSend", 7, 10, 2));
  groups.onRange(kOtherThread, "ncclGroupEnd", 4, 0);  // no group open on that thread
  groups.onRange(kThread, "ncclGroupEnd", 5, 0);

  EXPECT_TRUE(given(4).empty());
  EXPECT_EQ(given(5).at("Calls in the group"), "ncclSend") << "not the other thread's call";
  EXPECT_EQ(given(5).at("Message size [bytes]"), "10");
}

TEST_F(NcclGroupsTest, AnUnmatchedEndAndAGroupWithoutArgumentsGiveNothing) {
  groups.onRange(kThread, "ncclGroupEnd", 1, 0);
  groups.onRange(kThread, "ncclGroupStart", 2, 0);
  groups.onRange(kThread, "ncclSend", 3, 0);  // its payload was not recorded
  groups.onRange(kThread, "ncclGroupEnd", 4, 0);
  groups.onRange(kThread, "ncclGroupEnd", 5, 0);  // one too many: ignored

  EXPECT_TRUE(tables.argsOfRange.empty());
  EXPECT_TRUE(tables.eventArgs.empty());
}

TEST_F(NcclGroupsTest, ANewGroupStartsWithoutTheCallsOfTheLastOne) {
  groups.onRange(kThread, "ncclGroupStart", 1, 0);
  groups.onRange(kThread, "ncclSend", 2, callArgs("ncclSend", 7, 10, 2));
  groups.onRange(kThread, "ncclGroupEnd", 3, 0);
  groups.onRange(kThread, "ncclGroupStart", 4, 0);
  groups.onRange(kThread, "ncclRecv", 5, callArgs("ncclRecv", 7, 40, 2));
  groups.onRange(kThread, "ncclGroupEnd", 6, 0);

  EXPECT_EQ(given(6).at("Calls in the group"), "ncclRecv");
  EXPECT_EQ(given(6).at("Message size [bytes]"), "40");
}

TEST_F(NcclGroupsTest, PastTheCapOnArgumentsNoSumIsKept) {
  NcclGroups capped(tables, 2);
  capped.onRange(kThread, "ncclGroupStart", 1, 0);
  capped.onRange(kThread, "ncclSend", 2, callArgs("ncclSend", 7, 10, 2));
  capped.onRange(kThread, "ncclRecv", 3, callArgs("ncclRecv", 7, 10, 2));
  capped.onRange(kThread, "ncclGroupEnd", 4, 0);

  EXPECT_EQ(tables.eventArgs.size(), 2u);
  EXPECT_TRUE(given(4).empty());
}

}  // namespace
}  // namespace kinetrace::detail
