// Calls waiting for their GPU records: found by correlation id, forgotten when joined (a
// graph launch's stays for its other nodes), the watermark of the oldest still waiting,
// expiry once their records were due, and shedding oldest first.

#include "correlate/pending_calls.h"

#include <gtest/gtest.h>

namespace kinetrace::detail {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

PendingCall callAt(int64_t startNs, CallEffect effect = CallEffect::Kernel) {
  return PendingCall{startNs, startNs + 10, 0, 0, effect};
}

TEST(PendingCallsTest, AJoinedCallIsForgottenButAGraphLaunchStays) {
  PendingCalls calls;
  calls.add(1, callAt(100));
  calls.add(2, callAt(200, CallEffect::Graph));
  EXPECT_EQ(calls.find(0), nullptr);
  ASSERT_NE(calls.find(1), nullptr);
  EXPECT_EQ(calls.find(1)->startNs, 100);

  calls.forget(1, *calls.find(1));
  calls.forget(2, *calls.find(2));
  EXPECT_EQ(calls.find(1), nullptr);
  EXPECT_NE(calls.find(2), nullptr);
  calls.erase(2);
  EXPECT_EQ(calls.size(), 0u);
}

TEST(PendingCallsTest, TheWatermarkIsTheOldestCallStillWaiting) {
  PendingCalls calls;
  EXPECT_EQ(calls.watermark(), INT64_MAX);
  calls.add(1, callAt(300));
  calls.add(2, callAt(100));
  calls.add(3, callAt(200));
  EXPECT_EQ(calls.watermark(), 100);
  calls.forget(2, *calls.find(2));
  EXPECT_EQ(calls.watermark(), 200);
  // A call replaced by a later one of its id waits from the later start.
  calls.add(3, callAt(400));
  EXPECT_EQ(calls.watermark(), 300);
}

TEST(PendingCallsTest, ACallExpiresOnceItsRecordsWereDueInBuffersHandedBack) {
  PendingCalls calls;
  calls.add(1, callAt(1 * kSecond));
  calls.add(2, callAt(20 * kSecond));
  calls.setAllRecordsBefore(INT64_MAX);
  calls.expire(32 * kSecond);  // over 30 s after the first call, not the second
  EXPECT_EQ(calls.find(1), nullptr);
  EXPECT_NE(calls.find(2), nullptr);
}

TEST(PendingCallsTest, ACallWaitsForABufferCuptiStillHoldsButNotForever) {
  PendingCalls calls;
  calls.add(1, callAt(1 * kSecond));
  // CUPTI still holds a buffer lent at 0.5 s: the call's records may be in it.
  calls.setAllRecordsBefore(kSecond / 2);
  calls.expire(100 * kSecond);
  EXPECT_NE(calls.find(1), nullptr);
  calls.expire(602 * kSecond);  // past PendingCalls::kLongestNs
  EXPECT_EQ(calls.find(1), nullptr);
}

TEST(PendingCallsTest, TooManyCallsPastTheirExpiryGoEvenWhileABufferIsOut) {
  PendingCalls calls;
  for (uint32_t id = 1; id <= PendingCalls::kKeptPastExpiry + 1; ++id) {
    calls.add(id, callAt(kSecond + id));
  }
  calls.setAllRecordsBefore(0);
  calls.expire(40 * kSecond);
  // The oldest goes until no more than kKeptPastExpiry are left.
  EXPECT_EQ(calls.size(), PendingCalls::kKeptPastExpiry);
  EXPECT_EQ(calls.find(1), nullptr);
  EXPECT_NE(calls.find(2), nullptr);
}

TEST(PendingCallsTest, SheddingGivesUpTheOldestCallsFirst) {
  PendingCalls calls;
  calls.add(1, callAt(300));
  calls.add(2, callAt(100));
  calls.add(3, callAt(200));
  calls.shed(1);  // one call frees more than a byte
  EXPECT_EQ(calls.find(2), nullptr);
  EXPECT_NE(calls.find(1), nullptr);
  EXPECT_NE(calls.find(3), nullptr);
  const std::size_t held = calls.heldBytes();
  calls.shed(SIZE_MAX);
  EXPECT_EQ(calls.size(), 0u);
  EXPECT_LT(calls.heldBytes(), held);
  EXPECT_EQ(calls.heldBytes(), 0u);
}

}  // namespace
}  // namespace kinetrace::detail
