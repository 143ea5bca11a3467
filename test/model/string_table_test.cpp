#include "model/string_table.h"

#include <gtest/gtest.h>

#include <string>

namespace kinetrace::detail {
namespace {

TEST(StringTableTest, EachDistinctStringIsStoredOnce) {
  StringTable table;
  StringId a = table.intern("kernel");
  EXPECT_EQ(table.intern(std::string("kernel")), a);
  EXPECT_NE(table.intern("other"), a);
  EXPECT_EQ(table.get(a), "kernel");
  EXPECT_EQ(table.get(StringTable::kEmpty), "");
}

// A program that makes a new name per event must not grow the table with the window.
TEST(StringTableTest, PastItsByteLimitNewNamesBecomeOnePlaceholderAndAreCounted) {
  StringTable table;
  const StringId kept = table.intern("kept");
  table.setByteLimit(table.bytes());
  const StringId first = table.intern("new 1");
  const StringId second = table.intern("new 2");
  EXPECT_EQ(first, second);
  EXPECT_EQ(table.get(first), StringTable::kDroppedName);
  EXPECT_EQ(table.dropped(), 2u);
  EXPECT_EQ(table.intern("kept"), kept) << "names already held are still found";
  EXPECT_EQ(table.dropped(), 2u);
}

// A budget that records fill to the brim still leaves the reserve for names; what the
// table took goes back whole.
TEST(StringTableTest, NamesUseTheirReserveWhenTheBudgetIsFullAndGiveEverythingBack) {
  MemoryBudget budget(4096);
  StringTable table;
  table.setByteLimit(4096, &budget, 1024);
  EXPECT_EQ(budget.used(), 1024u);
  ASSERT_TRUE(budget.tryAcquire(budget.cap() - budget.used())) << "records take the rest";
  const StringId name = table.intern("a kernel's name");
  EXPECT_EQ(table.get(name), "a kernel's name");
  std::size_t kept = 0;
  for (int i = 0; i < 100; ++i) {
    if (table.get(table.intern("name " + std::to_string(i))) != StringTable::kDroppedName) ++kept;
  }
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, 100u) << "the reserve ran out and the full budget refused the rest";
  EXPECT_EQ(table.dropped(), 100u - kept);
  table.releaseBudget();
  EXPECT_EQ(budget.used(), budget.cap() - 1024) << "only the records' share is left";
}

TEST(StringTableTest, AMovedTableKeepsFindingItsStrings) {
  StringTable table;
  const StringId id = table.intern("moved");
  StringTable moved(std::move(table));
  EXPECT_EQ(moved.intern("moved"), id);
  EXPECT_EQ(moved.get(id), "moved");
}

}  // namespace
}  // namespace kinetrace::detail
