// The rules that class a device's idle gap by the operation that ended it, and split its
// time into the idle causes (the definitions in trace_analysis.h), on hand-made gaps.

#include "analysis/passes/idle_causes.h"

#include <gtest/gtest.h>

namespace kinetrace::detail::passes {
namespace {

constexpr int64_t kKernelWaitNs = 30;

// A gap [100, 200) ended by an operation whose launch call was [callStart, callEnd).
Gap endedByOp(int64_t callStart, int64_t callEnd, int64_t end = 200) {
  Gap gap;
  gap.start = 100;
  gap.end = end;
  gap.endedByOp = true;
  gap.hasCall = true;
  gap.callStartNs = callStart;
  gap.callEndNs = callEnd;
  return gap;
}

TEST(IdleCausesTest, AGapIsClassedByWhenTheOperationThatEndedItWasLaunched) {
  Gap first = endedByOp(150, 160);
  first.first = true;
  EXPECT_EQ(causeOf(first, kKernelWaitNs), Cause::BeforeFirstOp) << "whatever launched it";

  EXPECT_EQ(causeOf(endedByOp(150, 160), kKernelWaitNs), Cause::HostWait)
      << "launched after the gap opened";
  EXPECT_EQ(causeOf(endedByOp(100, 110), kKernelWaitNs), Cause::HostWait)
      << "launched as it opened";
  EXPECT_EQ(causeOf(endedByOp(50, 60, 120), kKernelWaitNs), Cause::KernelWait)
      << "queued, and the gap shorter than the consecutive-kernel delay";
  EXPECT_EQ(causeOf(endedByOp(50, 150), kKernelWaitNs), Cause::Launch)
      << "queued, its launch call still running when the gap opened";
  EXPECT_EQ(causeOf(endedByOp(50, 60), kKernelWaitNs), Cause::Other) << "nothing says why";

  Gap waited = endedByOp(50, 60);
  waited.found.any = true;
  EXPECT_EQ(causeOf(waited, kKernelWaitNs), Cause::OtherWork);

  Gap noCall = endedByOp(150, 160);
  noCall.hasCall = false;
  EXPECT_EQ(causeOf(noCall, kKernelWaitNs), Cause::Other) << "no known launch call";
  Gap after;
  after.start = 100;
  after.end = 200;
  EXPECT_EQ(causeOf(after, kKernelWaitNs), Cause::Other) << "the time after the last operation";
}

TEST(IdleCausesTest, HostWaitSplitsIntoAnEarlierLaunchCallTheWaitAndTheLaunch) {
  Gap gap = endedByOp(150, 160);
  gap.cause = Cause::HostWait;
  gap.inCallStart = 90;
  gap.inCallUntil = 120;  // the launching thread was in an earlier call until 120
  TimeBreakdown t;
  addIdle(t, gap, 100, 200, {});
  EXPECT_EQ(t.launchPreviousNs, 20);
  EXPECT_EQ(t.hostWaitNs, 30);
  EXPECT_EQ(t.launchNs, 20 + 50) << "the earlier call's part and its own launch";
  EXPECT_EQ(t.launchQueuedNs, 0);
}

TEST(IdleCausesTest, TheGapsPartInAWindowItEndsAfterIsOtherButTheTimeBeforeTheFirstOpIsNot) {
  Gap gap = endedByOp(150, 160);
  gap.cause = Cause::HostWait;
  TimeBreakdown step;
  addIdle(step, gap, 100, 160, {});
  EXPECT_EQ(step.otherIdleNs, 60) << "what ended the gap is outside the window";
  EXPECT_EQ(step.hostWaitNs, 0);

  gap.cause = Cause::BeforeFirstOp;
  TimeBreakdown early;
  addIdle(early, gap, 100, 160, {});
  EXPECT_EQ(early.beforeFirstOpNs, 60);
}

TEST(IdleCausesTest, EachCausesTimeGoesToItsOwnFigureAndDataLoadingIsCountedApart) {
  auto idleOf = [](Cause cause) {
    Gap gap = endedByOp(50, 60);
    gap.cause = cause;
    TimeBreakdown t;
    addIdle(t, gap, 100, 200, {{80, 110}, {190, 250}});
    EXPECT_EQ(t.dataLoadingIdleNs, 20);
    return t;
  };
  EXPECT_EQ(idleOf(Cause::Launch).launchNs, 100);
  EXPECT_EQ(idleOf(Cause::Launch).launchQueuedNs, 100);
  EXPECT_EQ(idleOf(Cause::KernelWait).kernelWaitNs, 100);
  EXPECT_EQ(idleOf(Cause::OtherWork).otherWorkWaitNs, 100);
  EXPECT_EQ(idleOf(Cause::Other).otherIdleNs, 100);
}

TEST(IdleCausesTest, WhatWasFoundIsDescribedWithItsStreamAndTheGpuOnlyWhenThereAreSeveral) {
  Found wait;
  wait.any = true;
  wait.kind = SyncKind::StreamWaitEvent;
  wait.stream = 7;
  wait.waitOnStream = 12;
  EXPECT_EQ(describe(wait, false), "Stream Wait Event on stream 7 (for stream 12's work)");
  wait.device = 1;
  EXPECT_EQ(describe(wait, true), "Stream Wait Event on GPU 1 stream 7 (for stream 12's work)");

  Found context;
  context.any = true;
  context.kind = SyncKind::ContextSync;
  context.device = 1;
  EXPECT_EQ(describe(context, false), "Context Sync");
  EXPECT_EQ(describe(context, true), "Context Sync on GPU 1");

  EXPECT_STREQ(causeName(Cause::OtherWork), "waiting on other work");
  EXPECT_STREQ(causeName(Cause::BeforeFirstOp), "before the first GPU operation");
}

TEST(IdleCausesTest, ASyncRecordIsFoundAsItsKindDeviceAndStreams) {
  CollectedSync sync;
  sync.kind = SyncKind::StreamSync;
  sync.device = 2;
  sync.stream = 5;
  const Found found = foundOf(sync);
  EXPECT_TRUE(found.any);
  EXPECT_EQ(found.kind, SyncKind::StreamSync);
  EXPECT_EQ(found.device, 2);
  EXPECT_EQ(found.stream, 5);
  EXPECT_EQ(found.waitOnStream, -1);
}

}  // namespace
}  // namespace kinetrace::detail::passes
