#include "model/memory_budget.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace kinetrace::detail {
namespace {

TEST(MemoryBudgetTest, RefusesWhatWouldExceedTheCapAndRemembersThePeak) {
  MemoryBudget budget(100);
  EXPECT_TRUE(budget.tryAcquire(60));
  EXPECT_FALSE(budget.tryAcquire(41));
  EXPECT_TRUE(budget.tryAcquire(40));
  EXPECT_EQ(budget.used(), 100u);
  budget.release(70);
  EXPECT_EQ(budget.used(), 30u);
  EXPECT_EQ(budget.peak(), 100u);
  budget.resetPeak();
  EXPECT_EQ(budget.peak(), 30u);
}

TEST(MemoryBudgetTest, ForcedAcquisitionsCountAndBlockFurtherRequests) {
  MemoryBudget budget(100);
  budget.forceAcquire(150);
  EXPECT_FALSE(budget.tryAcquire(1)) << "over the cap: nothing more until released";
  EXPECT_EQ(budget.peak(), 150u);
}

TEST(MemoryBudgetTest, ConcurrentRequestsNeverExceedTheCap) {
  MemoryBudget budget(1000);
  std::vector<std::thread> threads;
  std::atomic<int> granted{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (budget.tryAcquire(7)) granted.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(granted.load(), 1000 / 7);
  EXPECT_LE(budget.peak(), 1000u);
}

}  // namespace
}  // namespace kinetrace::detail
