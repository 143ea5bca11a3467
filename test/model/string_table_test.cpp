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

TEST(StringTableTest, AMovedTableKeepsFindingItsStrings) {
  StringTable table;
  const StringId id = table.intern("moved");
  StringTable moved(std::move(table));
  EXPECT_EQ(moved.intern("moved"), id);
  EXPECT_EQ(moved.get(id), "moved");
}

}  // namespace
}  // namespace kinetrace::detail
