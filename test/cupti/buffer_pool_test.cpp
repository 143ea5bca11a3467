#include "cupti/buffer_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace kinetrace::detail {
namespace {

constexpr std::size_t kBuffer = 64 * 1024;

TEST(BufferPoolTest, ReleasedBufferIsLentAgainInsteadOfANewOne) {
  BufferPool pool(kBuffer, 4 * kBuffer);
  uint8_t* first = pool.acquire();
  ASSERT_NE(first, nullptr);
  pool.release(first);
  EXPECT_EQ(pool.acquire(), first);
  EXPECT_EQ(pool.allocated(), 1u);
}

TEST(BufferPoolTest, BuffersAreEightByteAlignedAndDistinct) {
  BufferPool pool(kBuffer + 3, 8 * kBuffer);  // an odd size is rounded up
  EXPECT_EQ(pool.bufferBytes() % 8, 0u);
  EXPECT_GE(pool.bufferBytes(), kBuffer + 3);
  std::set<uint8_t*> seen;
  for (int i = 0; i < 4; ++i) {
    uint8_t* buffer = pool.acquire();
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer) % 8, 0u);
    EXPECT_TRUE(seen.insert(buffer).second);
  }
}

TEST(BufferPoolTest, CapLimitsTheNumberOfBuffers) {
  BufferPool pool(kBuffer, 3 * kBuffer);
  EXPECT_EQ(pool.maxBuffers(), 3u);
  // A cap below one buffer still lends one: CUPTI cannot record anything without it.
  BufferPool tiny(kBuffer, kBuffer / 2);
  EXPECT_EQ(tiny.maxBuffers(), 1u);
}

TEST(BufferPoolTest, RequestBeyondTheCapIsRefusedAndCounted) {
  BufferPool pool(kBuffer, 2 * kBuffer);
  uint8_t* a = pool.acquire();
  uint8_t* b = pool.acquire();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 2u);
  EXPECT_EQ(pool.allocated(), 2u);

  pool.release(a);
  EXPECT_EQ(pool.acquire(), a);  // room again once a buffer comes back
  EXPECT_EQ(pool.refused(), 2u);
}

TEST(BufferPoolTest, ResetRefusedStartsTheCountAgain) {
  BufferPool pool(kBuffer, kBuffer);
  ASSERT_NE(pool.acquire(), nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 1u);
  pool.resetRefused();
  EXPECT_EQ(pool.refused(), 0u);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 1u);
}

TEST(BufferPoolTest, ReleasingNullIsHarmless) {
  BufferPool pool(kBuffer, kBuffer);
  pool.release(nullptr);
  EXPECT_NE(pool.acquire(), nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);  // the null did not become a lendable buffer
}

TEST(BufferPoolTest, TinyBufferSizeIsRaisedToAUsableMinimum) {
  BufferPool pool(16, 1 << 20);
  EXPECT_GE(pool.bufferBytes(), 1024u);
}

}  // namespace
}  // namespace kinetrace::detail
