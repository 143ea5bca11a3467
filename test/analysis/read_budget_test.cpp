// The one budget the offline readers draw from: what is taken comes back, what does not fit
// is refused with an error naming the file, what grew and the cap.

#include "analysis/read_budget.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kinetrace/error.h"

namespace kinetrace::detail {
namespace {

constexpr std::size_t kMb = std::size_t{1} << 20;

std::string refusalOf(ReadBudget& budget, std::size_t bytes, const char* what) {
  try {
    budget.take(bytes, what);
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(ReadBudgetTest, ARefusalNamesTheFileBeingReadWhatGrewAndTheCap) {
  ReadBudget budget(16 * kMb);
  EXPECT_EQ(refusalOf(budget, 17 * kMb, "distinct names"),
            "distinct names would take more than the 16 MB of memory --memory-mb allows; raise "
            "--memory-mb");
  {
    const ReadBudget::Reading reading(budget, "t.json");
    EXPECT_EQ(refusalOf(budget, 17 * kMb, "distinct names"),
              "t.json: distinct names would take more than the 16 MB of memory --memory-mb "
              "allows; raise --memory-mb");
  }
  EXPECT_EQ(budget.file(), "") << "the file named before comes back";
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ReadBudgetTest, ARefusalKeepsItsPartsForAReaderToSayWhere) {
  ReadBudget budget(kMb);
  const ReadBudget::Reading reading(budget, "t.pftrace");
  try {
    budget.refuse("tracks");
    FAIL() << "no error";
  } catch (const BudgetRefusal& refusal) {
    EXPECT_EQ(refusal.file(), "t.pftrace");
    EXPECT_EQ(refusal.whatGrew(), "tracks");
    EXPECT_EQ(refusal.capBytes(), kMb);
  }
}

TEST(BudgetAllocatorTest, ContainersTakeTheirRoomAndGiveItBack) {
  ReadBudget budget(kMb);
  {
    BudgetVector<int64_t> numbers(BudgetAllocator<int64_t>(budget, "numbers"));
    for (int64_t i = 0; i < 1000; ++i) numbers.push_back(i);
    EXPECT_GE(budget.used(), 1000 * sizeof(int64_t));
    BudgetUnorderedMap<int, BudgetString> names(
        0, std::hash<int>(), std::equal_to<int>(), BudgetAllocator<char>(budget, "names"));
    names.try_emplace(1, std::string(1000, 'x').c_str(), BudgetAllocator<char>(budget, "names"));
    EXPECT_GE(budget.used(), 1000 * sizeof(int64_t) + 1000);
  }
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_GT(budget.peak(), 0u);
}

TEST(BudgetAllocatorTest, AContainerThatOutgrowsTheBudgetIsRefusedNamingIt) {
  ReadBudget budget(kMb);
  BudgetString text{BudgetAllocator<char>(budget, "the string being read")};
  try {
    text.assign(2 * kMb, 'x');
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "the string being read would take more than the 1 MB of memory --memory-mb "
              "allows; raise --memory-mb");
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(BudgetHoldTest, AnEstimateIsHeldUntilTheHoldGoes) {
  ReadBudget budget(kMb);
  {
    BudgetHold hold(budget);
    hold.take(1000, "metadata");
    EXPECT_TRUE(hold.tryTake(24));
    EXPECT_FALSE(hold.tryTake(kMb));
    EXPECT_EQ(hold.bytes(), 1024u);
    BudgetHold moved = std::move(hold);
    EXPECT_EQ(budget.used(), 1024u);
    moved.giveBack(24);
    EXPECT_EQ(budget.used(), 1000u);
  }
  EXPECT_EQ(budget.used(), 0u);
}

TEST(BudgetBufferTest, GrowsOnlyWhileTheBudgetGivesCountingOldAndNewRoomWhileMoving) {
  ReadBudget budget(64 << 10);
  BudgetBuffer<uint64_t> buffer(budget);
  ASSERT_TRUE(buffer.tryReserve(1024));  // 8 KB
  for (uint64_t i = 0; i < 1024; ++i) buffer.push(i);
  ASSERT_TRUE(buffer.tryReserve(2048));  // 16 KB: 24 KB while the records move
  EXPECT_GE(budget.peak(), 24u << 10);
  EXPECT_FALSE(buffer.tryReserve(8192)) << "64 KB more, with 16 KB held, is past the cap";
  EXPECT_EQ(buffer.capacity(), 2048u) << "a refusal changes nothing";
  EXPECT_EQ(buffer[1023], 1023u);
  buffer.release();
  EXPECT_EQ(budget.used(), 0u);
}

TEST(FootprintTest, CountsAValuesNodesAndStrings) {
  const Value small = Value::object({{"rank", 1}});
  const Value large = Value::object({{"text", std::string(100'000, 'x')}});
  EXPECT_GT(footprintOf(large), 100'000u);
  EXPECT_LT(footprintOf(small), 1'000u);
  // A JSON text of many small values parses into many nodes: counted before it is parsed.
  std::string zeros = "[0";
  for (int i = 0; i < 10'000; ++i) zeros += ",0";
  zeros += "]";
  EXPECT_GT(parsedFootprintOf(zeros), 10'000 * sizeof(Value));
}

}  // namespace
}  // namespace kinetrace::detail
