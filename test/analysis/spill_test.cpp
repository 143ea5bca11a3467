// The lists `kinetrace analyze` keeps in bounded memory: what goes in comes back, in order
// (SpilledList) or sorted (ExternalSorter), whether it stayed in memory or went to a file.

#include "analysis/spill.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kinetrace/error.h"

namespace kinetrace::detail {
namespace {

struct Record {
  uint64_t key = 0;
  uint64_t sequence = 0;
};
struct ByKeyThenSequence {
  bool operator()(const Record& a, const Record& b) const {
    return a.key != b.key ? a.key < b.key : a.sequence < b.sequence;
  }
};

std::vector<Record> randomRecords(std::size_t count, uint64_t keys) {
  std::mt19937_64 random(7);
  std::vector<Record> records;
  for (std::size_t i = 0; i < count; ++i) records.push_back({random() % keys, i});
  return records;
}

std::vector<Record> sortedThrough(std::size_t bufferBytes, const std::vector<Record>& records,
                                  std::size_t* runs) {
  ReadBudget budget;
  ExternalSorter<Record, ByKeyThenSequence> sorter(budget, "records", bufferBytes);
  for (const Record& r : records) sorter.add(r);
  EXPECT_EQ(sorter.size(), records.size());
  *runs = sorter.spilledRuns();
  std::vector<Record> out;
  sorter.drain([&out](const Record& r) { out.push_back(r); });
  EXPECT_TRUE(sorter.done());
  EXPECT_EQ(budget.used(), 0u) << "read through, a list gives back all it took";
  return out;
}

void expectSorted(const std::vector<Record>& records, const std::vector<Record>& sorted) {
  std::vector<Record> expected = records;
  std::sort(expected.begin(), expected.end(), ByKeyThenSequence());
  ASSERT_EQ(sorted.size(), expected.size());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    ASSERT_EQ(sorted[i].key, expected[i].key) << "at " << i;
    ASSERT_EQ(sorted[i].sequence, expected[i].sequence) << "at " << i;
  }
}

TEST(ExternalSorterTest, ASmallListIsSortedInMemory) {
  const std::vector<Record> records = randomRecords(1000, 50);
  std::size_t runs = 0;
  expectSorted(records, sortedThrough(1 << 20, records, &runs));
  EXPECT_EQ(runs, 0u);
}

TEST(ExternalSorterTest, ALargeListIsSortedThroughRunsInAFile) {
  const std::vector<Record> records = randomRecords(100'000, 1'000);
  std::size_t runs = 0;
  expectSorted(records, sortedThrough(64 << 10, records, &runs));  // 4,096 records a run
  EXPECT_EQ(runs, 24u);  // the 25th is the one left in memory
}

TEST(ExternalSorterTest, RunsOfOneRecordEachStillMerge) {
  const std::vector<Record> records = randomRecords(500, 7);
  std::size_t runs = 0;
  expectSorted(records, sortedThrough(1, records, &runs));
  EXPECT_EQ(runs, 499u);
}

TEST(ExternalSorterTest, AnEmptyListIsDoneAtOnce) {
  ReadBudget budget;
  ExternalSorter<Record, ByKeyThenSequence> sorter(budget, "records", 1 << 10);
  sorter.sort();
  EXPECT_TRUE(sorter.done());
}

TEST(ExternalSorterTest, TwoSortedListsReadSideBySide) {
  // The analysis joins lists this way (operations to their launch calls).
  ReadBudget budget;
  ExternalSorter<Record, ByKeyThenSequence> evens(budget, "evens", 64), odds(budget, "odds", 64);
  for (uint64_t i = 0; i < 200; ++i) ((i % 2) == 0 ? evens : odds).add({199 - i, i});
  evens.sort();
  odds.sort();
  std::vector<uint64_t> merged;
  while (!evens.done() || !odds.done()) {
    auto& next =
        odds.done() || (!evens.done() && evens.front().key < odds.front().key) ? evens : odds;
    merged.push_back(next.front().key);
    next.pop();
  }
  ASSERT_EQ(merged.size(), 200u);
  for (uint64_t i = 0; i < 200; ++i) EXPECT_EQ(merged[i], i);
}

TEST(SpilledListTest, RecordsComeBackInTheOrderTheyWereAddedEachTime) {
  for (std::size_t bufferBytes : {std::size_t{1} << 20, std::size_t{1000}, std::size_t{1}}) {
    ReadBudget budget;
    SpilledList<Record> list(budget, "records", bufferBytes);
    for (uint64_t i = 0; i < 5'000; ++i) list.add({i * 3, i});
    EXPECT_EQ(list.size(), 5'000u);
    for (int pass = 0; pass < 2; ++pass) {
      uint64_t next = 0;
      list.forEach([&next](const Record& r) {
        EXPECT_EQ(r.sequence, next);
        EXPECT_EQ(r.key, next * 3);
        ++next;
      });
      EXPECT_EQ(next, 5'000u) << "buffer of " << bufferBytes << " bytes, pass " << pass;
    }
  }
}

// The lists draw from the one budget: when what else is held leaves little, they write to
// their files sooner instead of growing, and the budget is never exceeded.
TEST(ExternalSorterTest, SpillsEarlierWhenTheBudgetRefusesToGrowItsBuffer) {
  ReadBudget budget(std::size_t{1} << 20);
  BudgetHold others(budget);
  others.take(budget.cap() - (std::size_t{32} << 10), "the rest");  // 32 KB left
  const std::vector<Record> records = randomRecords(20'000, 1000);  // 320 KB of records
  ExternalSorter<Record, ByKeyThenSequence> sorter(budget, "records", std::size_t{1} << 20);
  for (const Record& r : records) sorter.add(r);
  EXPECT_GT(sorter.spilledRuns(), 10u) << "a 1 MB share, but 32 KB given: runs of 32 KB or less";
  EXPECT_LE(budget.peak(), budget.cap());
  std::vector<Record> out;
  sorter.drain([&out](const Record& r) { out.push_back(r); });
  expectSorted(records, out);
  EXPECT_LE(budget.peak(), budget.cap()) << "the runs' read-back buffers are within it too";
  EXPECT_EQ(budget.used(), others.bytes());
}

TEST(SpilledListTest, AListThatCannotGetARecordsRoomIsAnErrorNamingIt) {
  ReadBudget budget(std::size_t{1} << 20);
  BudgetHold others(budget);
  others.take(budget.cap(), "the rest");
  SpilledList<Record> list(budget, "the list of host ranges", 1 << 20);
  try {
    list.add({1, 1});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "the list of host ranges would take more than the 1 MB of memory --memory-mb "
              "allows; raise --memory-mb");
  }
}

TEST(SpillFileTest, AnUnwritableDirectoryIsAClearError) {
  const char* before = std::getenv("TMPDIR");
  const std::string saved = before != nullptr ? before : "";
  setenv("TMPDIR", "/nonexistent-kinetrace-dir", 1);
  try {
    SpillFile file;
    FAIL() << "made a file in a directory that does not exist";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent-kinetrace-dir"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("TMPDIR"), std::string::npos) << error.what();
  }
  if (before != nullptr) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
}

}  // namespace
}  // namespace kinetrace::detail
