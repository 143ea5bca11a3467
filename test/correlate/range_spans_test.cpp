// GPU spans of host ranges: an operation extends its range and every range enclosing it, per
// stream; spans go out once their range has ended before the completion time, each on a lane
// of its stream's span track.

#include "correlate/range_spans.h"

#include <gtest/gtest.h>

#include <vector>

namespace kinetrace::detail {
namespace {

GpuPlacement opOf(uint64_t externalId, uint32_t stream, int64_t startNs, int64_t endNs) {
  GpuPlacement at;
  at.externalId = externalId;
  at.deviceId = 0;
  at.streamId = stream;
  at.startNs = startNs;
  at.endNs = endNs;
  return at;
}

TEST(RangeSpansTest, AnOperationExtendsItsRangeAndEveryRangeEnclosingIt) {
  StreamLanes lanes;
  RangeSpans spans(lanes);
  spans.onBegin(1, 0, 11);  // outer
  spans.onBegin(2, 1, 12);  // inner, nested in 1
  spans.extend(opOf(2, 7, 100, 150));
  spans.extend(opOf(1, 7, 200, 260));
  spans.onEnd(2, 160);
  spans.onEnd(1, 300);

  std::vector<GpuSpanRecord> out;
  spans.release(INT64_MAX, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].externalId, 2u);
  EXPECT_EQ(out[0].name, 12u);
  EXPECT_EQ(out[0].startNs, 100);
  EXPECT_EQ(out[0].endNs, 150);
  EXPECT_EQ(out[1].externalId, 1u);
  EXPECT_EQ(out[1].startNs, 100);
  EXPECT_EQ(out[1].endNs, 260);
  EXPECT_EQ(out[1].streamId, 7u);
  // Nested spans of one stream overlap: each on a lane of its own.
  EXPECT_NE(out[0].lane, out[1].lane);
}

TEST(RangeSpansTest, ARangeHasASpanPerStream) {
  StreamLanes lanes;
  RangeSpans spans(lanes);
  spans.onBegin(1, 0, 11);
  spans.extend(opOf(1, 7, 100, 150));
  spans.extend(opOf(1, 8, 120, 130));
  spans.onEnd(1, 200);
  std::vector<GpuSpanRecord> out;
  spans.finish(out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].streamId, 7u);
  EXPECT_EQ(out[1].streamId, 8u);
}

TEST(RangeSpansTest, SpansWaitUntilTheirRangeEndedBeforeTheCompletionTime) {
  StreamLanes lanes;
  RangeSpans spans(lanes);
  spans.onBegin(1, 0, 11);
  spans.onBegin(2, 0, 12);
  spans.extend(opOf(1, 7, 100, 150));
  spans.extend(opOf(2, 7, 400, 450));
  spans.onEnd(1, 200);
  std::vector<GpuSpanRecord> out;
  spans.release(200, out);  // a launch before 200 may still be joined
  EXPECT_TRUE(out.empty());
  spans.release(201, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].externalId, 1u);
  // Still open: only finish() lets it go.
  spans.release(INT64_MAX, out);
  EXPECT_EQ(out.size(), 1u);
  spans.finish(out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].externalId, 2u);
  EXPECT_EQ(spans.heldBytes(), 0u);
}

TEST(RangeSpansTest, OperationsOfRangesItDoesNotKnowAreNotSpanned) {
  StreamLanes lanes;
  RangeSpans spans(lanes);
  spans.extend(opOf(5, 7, 100, 150));
  spans.extend(opOf(0, 7, 100, 150));
  spans.onEnd(5, 200);
  std::vector<GpuSpanRecord> out;
  spans.finish(out);
  EXPECT_TRUE(out.empty());
}

TEST(RangeSpansTest, AnAsyncRangeIsNamedAndSpannedLikeAnother) {
  StreamLanes lanes;
  RangeSpans spans(lanes);
  spans.onAsyncBegin(9, 19);
  spans.extend(opOf(9, 3, 10, 20));
  spans.onEnd(9, 30);
  std::vector<GpuSpanRecord> out;
  spans.release(31, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, 19u);
}

}  // namespace
}  // namespace kinetrace::detail
