#include "cupti/buffer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace kinetrace::detail {
namespace {

constexpr std::size_t kBuffer = 64 * 1024;

TEST(BufferPoolTest, ReleasedBufferIsLentAgainInsteadOfANewOne) {
  MemoryBudget budget(64 * kBuffer);
  BufferPool pool(kBuffer, 4, budget);
  uint8_t* first = pool.acquire(0);
  ASSERT_NE(first, nullptr);
  pool.release(first);
  EXPECT_EQ(pool.acquire(0), first);
  EXPECT_EQ(pool.allocated(), 1u);
  EXPECT_EQ(budget.used(), kBuffer);
}

TEST(BufferPoolTest, BuffersAreEightByteAlignedAndDistinct) {
  MemoryBudget budget(64 * kBuffer);
  BufferPool pool(kBuffer + 3, 8, budget);  // an odd size is rounded up
  EXPECT_EQ(pool.bufferBytes() % 8, 0u);
  EXPECT_GE(pool.bufferBytes(), kBuffer + 3);
  std::set<uint8_t*> seen;
  for (int i = 0; i < 4; ++i) {
    uint8_t* buffer = pool.acquire(0);
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer) % 8, 0u);
    EXPECT_TRUE(seen.insert(buffer).second);
  }
}

TEST(BufferPoolTest, AtLeastOneBufferMayExist) {
  MemoryBudget budget(64 * kBuffer);
  BufferPool pool(kBuffer, 3, budget);
  EXPECT_EQ(pool.maxBuffers(), 3u);
  // CUPTI cannot record anything without a buffer.
  BufferPool none(kBuffer, 0, budget);
  EXPECT_EQ(none.maxBuffers(), 1u);
  EXPECT_NE(none.acquire(0), nullptr);
}

TEST(BufferPoolTest, RequestBeyondTheBufferCountIsRefusedAndCounted) {
  MemoryBudget budget(64 * kBuffer);
  BufferPool pool(kBuffer, 2, budget);
  uint8_t* a = pool.acquire(0);
  uint8_t* b = pool.acquire(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(pool.acquire(0), nullptr);
  EXPECT_EQ(pool.acquire(0), nullptr);
  EXPECT_EQ(pool.allocated(), 2u);
  EXPECT_EQ(budget.used(), 2 * kBuffer) << "a refused request takes nothing from the budget";

  pool.release(a);
  EXPECT_EQ(pool.acquire(0), a);  // room again once a buffer comes back
  EXPECT_EQ(pool.takeRefused(), 2u);
}

TEST(BufferPoolTest, RequestTheBudgetCannotCoverIsRefusedAndCounted) {
  MemoryBudget budget(2 * kBuffer + kBuffer / 2);  // room for two buffers, not three
  BufferPool pool(kBuffer, 10, budget);
  ASSERT_NE(pool.acquire(0), nullptr);
  ASSERT_NE(pool.acquire(0), nullptr);
  EXPECT_EQ(pool.acquire(0), nullptr);
  EXPECT_EQ(pool.allocated(), 2u);
  EXPECT_EQ(budget.used(), 2 * kBuffer);
  EXPECT_EQ(pool.takeRefused(), 1u);
}

// The budget is shared with the host recorder and the pipeline: what they hold leaves
// less for buffers, and what they give back makes room again.
TEST(BufferPoolTest, BudgetFreedByOthersLetsTheNextRequestThrough) {
  MemoryBudget budget(kBuffer);
  budget.forceAcquire(kBuffer);  // another holder has everything
  BufferPool pool(kBuffer, 10, budget);
  EXPECT_EQ(pool.acquire(0), nullptr);
  budget.release(kBuffer);
  EXPECT_NE(pool.acquire(0), nullptr);
  EXPECT_EQ(pool.takeRefused(), 1u);
}

TEST(BufferPoolTest, TakeRefusedStartsTheCountAgain) {
  MemoryBudget budget(64 * kBuffer);
  BufferPool pool(kBuffer, 1, budget);
  ASSERT_NE(pool.acquire(0), nullptr);
  EXPECT_EQ(pool.acquire(0), nullptr);
  EXPECT_EQ(pool.takeRefused(), 1u);
  EXPECT_EQ(pool.takeRefused(), 0u);
  EXPECT_EQ(pool.acquire(0), nullptr);
  EXPECT_EQ(pool.takeRefused(), 1u);
}

TEST(BufferPoolTest, ReleasingNullIsHarmless) {
  MemoryBudget budget(64 * kBuffer);
  BufferPool pool(kBuffer, 1, budget);
  pool.release(nullptr);
  EXPECT_NE(pool.acquire(0), nullptr);
  EXPECT_EQ(pool.acquire(0), nullptr);  // the null did not become a lendable buffer
}

TEST(BufferPoolTest, TinyBufferSizeIsRaisedToAUsableMinimum) {
  MemoryBudget budget(1 << 20);
  BufferPool pool(16, 1, budget);
  EXPECT_GE(pool.bufferBytes(), 1024u);
  ASSERT_NE(pool.acquire(0), nullptr);
  EXPECT_EQ(budget.used(), pool.bufferBytes()) << "the budget is charged what was allocated";
}

TEST(BufferPoolTest, DestroyingThePoolGivesTheBudgetBackEveryBuffer) {
  MemoryBudget budget(64 * kBuffer);
  {
    BufferPool pool(kBuffer, 8, budget);
    uint8_t* lent = pool.acquire(0);
    uint8_t* returned = pool.acquire(0);
    ASSERT_NE(lent, nullptr);
    ASSERT_NE(returned, nullptr);
    pool.release(returned);
    ASSERT_EQ(budget.used(), 2 * kBuffer);
  }
  EXPECT_EQ(budget.used(), 0u) << "buffers still lent and buffers given back alike";
  EXPECT_EQ(budget.peak(), 2 * kBuffer);
}

// CUPTI asks for buffers on its own threads while the pipeline gives them back.
TEST(BufferPoolTest, ABufferIsNeverLentToTwoHoldersAtOnce) {
  MemoryBudget budget(64 * kBuffer);
  BufferPool pool(kBuffer, 4, budget);
  std::atomic<int> collisions{0};
  std::vector<std::thread> threads;
  for (uint8_t owner = 1; owner <= 4; ++owner) {
    threads.emplace_back([&, owner] {
      for (int i = 0; i < 2000; ++i) {
        uint8_t* buffer = pool.acquire(0);
        if (buffer == nullptr) continue;
        std::memset(buffer, owner, 64);
        for (int b = 0; b < 64; ++b) {
          if (buffer[b] != owner) collisions.fetch_add(1);
        }
        pool.release(buffer);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(collisions.load(), 0);
  EXPECT_LE(pool.allocated(), 4u);
}

TEST(BufferPoolTest, HandOversSayHowFullAndHowLongCuptiHeldTheBuffers) {
  MemoryBudget budget(64 * kBuffer);
  BufferPool pool(kBuffer, 4, budget);
  uint8_t* filled = pool.acquire(1'000);
  uint8_t* flushed = pool.acquire(2'000);
  uint8_t* empty = pool.acquire(3'000);
  pool.noteHandedBack(filled, kBuffer - 100, 121'000, false);  // no room for another record
  pool.noteHandedBack(flushed, 10'000, 7'000, false);          // handed back by a flush
  pool.noteHandedBack(empty, 0, 900'000, false);               // nothing in it: not counted
  BufferPool::HandOvers h = pool.handOvers();
  EXPECT_EQ(h.count, 2u);
  EXPECT_EQ(h.beforeFull, 1u);
  EXPECT_EQ(h.atWindowEnd, 0u);
  EXPECT_EQ(h.longestHeldNs, 120'000);

  // Lent again: held from the new lending, not the first.
  pool.release(filled);
  ASSERT_EQ(pool.acquire(500'000), filled);
  pool.resetHandOvers();
  pool.noteHandedBack(filled, 64, 530'000, true);  // by the window's last flush
  h = pool.handOvers();
  EXPECT_EQ(h.count, 1u);
  EXPECT_EQ(h.beforeFull, 0u) << "the window's end is counted apart";
  EXPECT_EQ(h.atWindowEnd, 1u);
  EXPECT_EQ(h.longestHeldNs, 30'000);
}

TEST(BufferPoolTest, EverythingIsBackBeforeTheOldestBufferStillOut) {
  MemoryBudget budget(64 * kBuffer);
  BufferPool pool(kBuffer, 4, budget);
  EXPECT_EQ(pool.everythingBackBeforeNs(50), 50) << "nothing lent: every record has come";
  uint8_t* first = pool.acquire(100);
  uint8_t* second = pool.acquire(200);
  EXPECT_EQ(pool.everythingBackBeforeNs(1'000), 100);
  pool.noteHandedBack(first, 64, 300, false);
  EXPECT_EQ(pool.everythingBackBeforeNs(1'000), 100) << "handed back, not yet decoded";
  EXPECT_EQ(pool.lentOut(), 2u);
  pool.release(first);
  EXPECT_EQ(pool.lentOut(), 1u);
  EXPECT_EQ(pool.everythingBackBeforeNs(1'000), 200);
  pool.release(second);
  EXPECT_EQ(pool.everythingBackBeforeNs(1'000), 1'000);
  ASSERT_NE(pool.acquire(400), nullptr);
  EXPECT_EQ(pool.everythingBackBeforeNs(1'000), 400) << "lent again: from its new lending";
}

TEST(BufferPoolTest, ABufferReleasedTwiceIsLentOnlyOnce) {
  MemoryBudget budget(64 * kBuffer);
  BufferPool pool(kBuffer, 4, budget);
  uint8_t* buffer = pool.acquire(0);
  uint8_t foreign[64] = {};
  pool.release(buffer);
  pool.release(buffer);
  pool.release(foreign);
  EXPECT_EQ(pool.acquire(0), buffer);
  uint8_t* next = pool.acquire(0);
  EXPECT_NE(next, buffer);
  EXPECT_NE(next, foreign);
  EXPECT_EQ(pool.allocated(), 2u);
}

TEST(BufferPoolTest, ABufferNotLentByThePoolIsNotCounted) {
  MemoryBudget budget(64 * kBuffer);
  BufferPool pool(kBuffer, 4, budget);
  uint8_t foreign[64] = {};
  pool.noteHandedBack(foreign, 64, 1'000, false);
  pool.noteHandedBack(nullptr, 64, 1'000, false);
  EXPECT_EQ(pool.handOvers().count, 0u);
}

}  // namespace
}  // namespace kinetrace::detail
