// What host events refer to, in the tables once each: threads by instance and by tid, names,
// CUDA API names, and event arguments (a range's end adding to its begin's; past the cap,
// counted).

#include "correlate/host_table_writer.h"

#include <gtest/gtest.h>

#include <string>

#include "model/event_args.h"

namespace kinetrace::detail {
namespace {

std::string encoded(std::initializer_list<EventArg> args) {
  char bytes[kMaxEventArgBytes];
  const std::size_t size = encodeEventArgs(args.begin(), args.size(), bytes, sizeof bytes);
  return std::string(bytes, size);
}

class HostTableWriterTest : public ::testing::Test {
 protected:
  TraceTables tables;
  LossCounters losses;
};

TEST_F(HostTableWriterTest, AThreadIsOneEntryWhateverBufferItRecordedIn) {
  tables.pid = 10;
  HostTableWriter writer(tables, losses, nullptr);
  writer.onThread(1, 501, "main");
  writer.onThread(2, 502, "worker");
  // A later buffer of a tid seen before (tids are recycled) is that thread's.
  writer.onThread(3, 501, "");
  EXPECT_EQ(writer.threadOf(3), writer.threadOf(1));
  EXPECT_EQ(writer.threadOfTid(502), writer.threadOf(2));
  ASSERT_EQ(tables.threads.size(), 2u);
  EXPECT_EQ(tables.threads[writer.threadOf(1)].tid, 501);
  EXPECT_EQ(tables.strings.get(tables.threads[writer.threadOf(1)].name), "main");
  EXPECT_EQ(tables.threads[writer.threadOf(1)].pid, 10);
}

TEST_F(HostTableWriterTest, AnInstanceNeverAnnouncedGetsAPlaceholder) {
  HostTableWriter writer(tables, losses, nullptr);
  const uint32_t index = writer.threadOf(9);
  EXPECT_EQ(writer.threadOf(9), index);
  EXPECT_EQ(tables.threads.at(index).tid, 0);
}

TEST_F(HostTableWriterTest, ALiteralIsInternedOnceAndAnApiNameByItsCallback) {
  int calls = 0;
  HostTableWriter writer(tables, losses, [&](ApiDomain domain, uint32_t id) {
    ++calls;
    return std::string(domain == ApiDomain::Driver ? "cu" : "cuda") + std::to_string(id);
  });
  static const char kLiteral[] = "step";
  const StringId step = writer.intern(HostName{kLiteral, kLiteral, {}});
  EXPECT_EQ(writer.intern(HostName{kLiteral, kLiteral, {}}), step);
  EXPECT_EQ(tables.strings.get(step), "step");
  EXPECT_EQ(tables.strings.get(writer.apiNameOf(ApiDomain::Runtime, 7)), "cuda7");
  EXPECT_EQ(tables.strings.get(writer.apiNameOf(ApiDomain::Driver, 7)), "cu7");
  writer.apiNameOf(ApiDomain::Runtime, 7);
  EXPECT_EQ(calls, 2);
}

TEST_F(HostTableWriterTest, WithoutANamerAnApiCallIsNamedByItsId) {
  HostTableWriter writer(tables, losses, nullptr);
  EXPECT_EQ(tables.strings.get(writer.apiNameOf(ApiDomain::Runtime, 42)), "CUDA API 42");
}

TEST_F(HostTableWriterTest, ArgumentsAtARangesEndJoinThoseOfItsBegin) {
  HostTableWriter writer(tables, losses, nullptr);
  EXPECT_EQ(writer.keepArgs("NCCL: ncclAllReduce", "", 5), 0u);  // none
  const uint32_t index =
      writer.keepArgs("NCCL: ncclAllReduce", encoded({EventArg::unsignedValue("bytes", 4096)}), 5);
  ASSERT_EQ(index, 1u);
  EXPECT_EQ(writer.keepArgs("ignored", encoded({EventArg::textValue("peer", "rank 3")}), 5), index);
  const StoredArgs& kept = tables.eventArgs.at(index - 1);
  EXPECT_EQ(tables.strings.get(kept.event), "NCCL: ncclAllReduce");
  EXPECT_TRUE(kept.nccl);
  ASSERT_EQ(kept.values.size(), 2u);
  EXPECT_EQ(tables.strings.get(kept.values[0].key), "bytes");
  EXPECT_EQ(kept.values[0].number, 4096u);
  EXPECT_EQ(tables.strings.get(kept.values[1].text), "rank 3");
  EXPECT_EQ(tables.argsOfRange.at(5), index);
  // An instant's are its own.
  EXPECT_EQ(writer.keepArgs("mark", encoded({EventArg::signedValue("n", -1)}), 0), 2u);
}

TEST_F(HostTableWriterTest, ArgumentsPastTheCapAreCountedNotKept) {
  HostTableWriter writer(tables, losses, nullptr);
  tables.eventArgs.resize(HostTableWriter::kEventArgsKept);
  EXPECT_EQ(writer.keepArgs("mark", encoded({EventArg::signedValue("n", 1)}), 0), 0u);
  EXPECT_EQ(losses.eventArgsNotKept, 1u);
  EXPECT_EQ(tables.eventArgs.size(), HostTableWriter::kEventArgsKept);
}

}  // namespace
}  // namespace kinetrace::detail
