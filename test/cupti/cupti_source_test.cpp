#include "cupti/cupti_source.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fake_cupti_api.h"
#include "synthetic_buffer.h"
#include "host/host_recorder.h"
#include "kinetrace/host.h"
#include "model/clock.h"

// CuptiSource against a fake CUPTI: refusals, what it enables, the buffer hand-off to the
// decoder thread, drop accounting and the launch callback. Records are real CUPTI structs.

namespace kinetrace::detail {
namespace {

using synthetic::SyntheticBuffer;
using synthetic::CallbackKey;
using synthetic::FakeCuptiApi;
using synthetic::contains;
using synthetic::environment;
using synthetic::everything;
using synthetic::kernelsOnly;
using synthetic::launchCall;
using synthetic::window;

class CuptiSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.callbackNames = {
        {{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000}, "cudaLaunchKernel_v7000"},
        {{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020}, "cudaStreamSynchronize_v3020"},
        {{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020}, "cudaMemcpyAsync_v3020"},
        {{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020}, "cudaGetDevice_v3020"},
        {{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel}, "cuLaunchKernel"},
        {{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice}, "cuCtxGetDevice"},
    };
  }
  FakeCuptiApi fake_;
};

// ---- enabling and refusals ----------------------------------------------------------

TEST_F(CuptiSourceTest, EnableRefusesClearlyWhenAnotherProfilerHoldsCupti) {
  fake_.subscribeResult = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  CuptiSource source(environment(fake_));
  std::string why = source.enable(everything());
  EXPECT_TRUE(contains(why, "already in use"));
  EXPECT_TRUE(fake_.enabledKinds.empty());
  EXPECT_TRUE(fake_.enabledCallbacks.empty());
  EXPECT_EQ(fake_.request, nullptr);

  FakeCuptiApi other;
  CuptiSource next(environment(other));
  EXPECT_EQ(next.enable(kernelsOnly()), "");
}

// CUPTI's timestamp callback is process-wide: a refused enable must not leave kinetrace's
// clock stamping the records of the profiler that holds CUPTI.
TEST_F(CuptiSourceTest, RefusedSubscribeLeavesNoTimestampCallbackBehind) {
  fake_.subscribeResult = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  CuptiSource source(environment(fake_));
  EXPECT_FALSE(source.enable(kernelsOnly()).empty());
  EXPECT_EQ(fake_.timestampCallback, nullptr);
}

TEST_F(CuptiSourceTest, RefusedActivityKindIsReportedWithCuptiResultText) {
  fake_.activityEnableResults[CUPTI_ACTIVITY_KIND_MEMCPY] = CUPTI_ERROR_NOT_INITIALIZED;
  CuptiSource source(environment(fake_));
  std::string why = source.enable(everything());
  EXPECT_TRUE(contains(why, describeCuptiResult(CUPTI_ERROR_NOT_INITIALIZED)));
  EXPECT_TRUE(contains(why, "CUPTI_ERROR_NOT_INITIALIZED"));
  EXPECT_TRUE(contains(why, "activity kind"));
  EXPECT_FALSE(fake_.subscribed);

  FakeCuptiApi other;
  CuptiSource next(environment(other));
  EXPECT_EQ(next.enable(kernelsOnly()), "");
}

TEST_F(CuptiSourceTest, RefusedActivityKindLeavesNoKindEnabled) {
  // CONCURRENT_KERNEL is enabled before MEMCPY is refused; it must not stay on.
  fake_.activityEnableResults[CUPTI_ACTIVITY_KIND_MEMCPY] = CUPTI_ERROR_NOT_INITIALIZED;
  CuptiSource source(environment(fake_));
  EXPECT_FALSE(source.enable(everything()).empty());
  EXPECT_TRUE(fake_.enabledKinds.empty()) << fake_.enabledKinds.size() << " kinds still enabled";
}

TEST_F(CuptiSourceTest, SecondSourceIsRefusedWhileTheFirstIsEnabled) {
  CuptiSource first(environment(fake_));
  ASSERT_EQ(first.enable(kernelsOnly()), "");
  FakeCuptiApi other;
  CuptiSource second(environment(other));
  EXPECT_TRUE(contains(second.enable(kernelsOnly()), "another kinetrace session"));
  EXPECT_FALSE(other.subscribed);

  first.disable();
  EXPECT_EQ(second.enable(kernelsOnly()), "");
}

TEST_F(CuptiSourceTest, EnabledActivityKindsFollowTheOptions) {
  struct Case {
    bool GpuOptions::*option;
    std::set<CUpti_ActivityKind> kinds;
  };
  const std::vector<Case> cases = {
      {&GpuOptions::kernels, {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}},
      {&GpuOptions::memcpy, {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2}},
      {&GpuOptions::memset, {CUPTI_ACTIVITY_KIND_MEMSET}},
      {&GpuOptions::sync, {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_CONTEXT}},
      {&GpuOptions::memory, {CUPTI_ACTIVITY_KIND_MEMORY2}},
      {&GpuOptions::overhead, {CUPTI_ACTIVITY_KIND_OVERHEAD}},
      {&GpuOptions::launchCalls, {}},
  };
  for (const Case& c : cases) {
    FakeCuptiApi fake;
    CuptiSource source(environment(fake));
    GpuOptions options;
    options.*c.option = true;
    ASSERT_EQ(source.enable(options), "");
    EXPECT_EQ(fake.enabledKinds, c.kinds);
  }
}

TEST_F(CuptiSourceTest, LaunchCallbacksAreExactlyTheLaunchSideEntryPoints) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(everything()), "");
  std::set<CallbackKey> expected = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel},
  };
  EXPECT_EQ(fake_.enabledCallbacks, expected);
}

TEST_F(CuptiSourceTest, NoCallbackIsEnabledWithoutLaunchCalls) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(kernelsOnly()), "");
  EXPECT_TRUE(fake_.enabledCallbacks.empty());
}

TEST_F(CuptiSourceTest, AllRuntimeCallsEnablesEveryNamedRuntimeCallback) {
  GpuOptions options = kernelsOnly();
  options.allRuntimeCalls = true;
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(options), "");
  std::set<CallbackKey> expected;
  for (const auto& [key, name] : fake_.callbackNames) {
    if (key.first == CUPTI_CB_DOMAIN_RUNTIME_API) expected.insert(key);
  }
  EXPECT_EQ(fake_.enabledCallbacks, expected);
}

TEST_F(CuptiSourceTest, StopDisablesCollectionAndStartEnablesItAgain) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(everything()), "");
  const auto kinds = fake_.enabledKinds;
  const auto callbacks = fake_.enabledCallbacks;
  ASSERT_FALSE(kinds.empty());
  ASSERT_FALSE(callbacks.empty());

  source.start(1000);
  TraceData trace = window();
  source.stop(trace);
  EXPECT_TRUE(fake_.enabledKinds.empty());
  EXPECT_TRUE(fake_.enabledCallbacks.empty());
  EXPECT_GE(fake_.flushes, 1);

  source.start(20000);
  EXPECT_EQ(fake_.enabledKinds, kinds);
  EXPECT_EQ(fake_.enabledCallbacks, callbacks);
}

TEST_F(CuptiSourceTest, DisableUnsubscribesAndReleasesCupti) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(everything()), "");
  source.disable();
  EXPECT_FALSE(fake_.subscribed);
  EXPECT_TRUE(fake_.enabledKinds.empty());
  uint8_t* buffer = reinterpret_cast<uint8_t*>(1);
  size_t size = 1, maxRecords = 1;
  fake_.request(&buffer, &size, &maxRecords);  // a late request after disable gets nothing
  EXPECT_EQ(buffer, nullptr);
  EXPECT_EQ(size, 0u);
}

TEST_F(CuptiSourceTest, FlushPeriodIsSetOnlyWhenAskedAndResetAtDisable) {
  {
    CuptiSource source(environment(fake_));
    ASSERT_EQ(source.enable(kernelsOnly()), "");
    EXPECT_EQ(fake_.flushPeriodMs, 0u) << "CUPTI's heuristics unless a period is configured";
  }
  GpuOptions options = kernelsOnly();
  options.flushPeriodMs = 250;
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(options), "");
  EXPECT_EQ(fake_.flushPeriodMs, 250u);
  source.disable();
  EXPECT_EQ(fake_.flushPeriodMs, 0u) << "a later CUPTI client starts from CUPTI's defaults";
}

// ---- buffers, decoding and the recording window -------------------------------------

TEST_F(CuptiSourceTest, CompletedBuffersAreDecodedIntoTheTraceAtStop) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(everything()), "");
  source.start(1000);
  SyntheticBuffer records;
  records.add(synthetic::kernelRecord("_Z6kernelPfi", 2000, 3000, 10));
  records.add(synthetic::memcpyRecord(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                                      CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 4096, 3000, 3500, 11));
  records.add(synthetic::memsetRecord(64, 0, 4000, 4100, 12));
  records.add(synthetic::externalCorrelationRecord(10, 99));
  fake_.deliver(records);

  TraceData trace = window();
  source.stop(trace);
  ASSERT_EQ(trace.kernels.size(), 1u);
  EXPECT_EQ(trace.strings.get(trace.kernels[0].name), "kernel(float*, int)");
  EXPECT_EQ(trace.kernels[0].at.externalId, 99u);
  ASSERT_EQ(trace.memcpys.size(), 1u);
  EXPECT_EQ(trace.strings.get(trace.memcpys[0].name), "Memcpy HtoD (Pinned -> Device)");
  ASSERT_EQ(trace.memsets.size(), 1u);
  EXPECT_EQ(trace.strings.get(trace.memsets[0].name), "Memset (Device)");
  EXPECT_EQ(trace.losses.outOfWindowEvents, 0u);
}

TEST_F(CuptiSourceTest, BufferHasTheConfiguredSize) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(kernelsOnly()), "");
  uint8_t* buffer = nullptr;
  size_t size = 0, maxRecords = 7;
  fake_.request(&buffer, &size, &maxRecords);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(size, kernelsOnly().bufferBytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer) % 8, 0u);
  EXPECT_EQ(maxRecords, 0u);  // as many as fit
  fake_.complete(nullptr, 0, buffer, size, 0);
}

TEST_F(CuptiSourceTest, WorkStartingBeforeTheWindowIsDroppedAndCounted) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(kernelsOnly()), "");
  source.start(1000);
  SyntheticBuffer records;
  records.add(synthetic::kernelRecord("early", 500, 1500, 1));
  records.add(synthetic::kernelRecord("inside", 1500, 2500, 2));
  fake_.deliver(records);

  TraceData trace = window();
  source.stop(trace);
  ASSERT_EQ(trace.kernels.size(), 1u);
  EXPECT_EQ(trace.kernels[0].at.correlationId, 2u);
  EXPECT_EQ(trace.losses.outOfWindowEvents, 1u);
}

TEST_F(CuptiSourceTest, WorkStartingAfterStopIsKeptOnlyWhenItsLaunchIsInTheTrace) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(kernelsOnly()), "");
  source.start(1000);
  SyntheticBuffer records;
  records.add(synthetic::kernelRecord("queued at stop", 20000, 21000, 5));
  records.add(synthetic::kernelRecord("launched after stop", 20000, 21000, 6));
  fake_.deliver(records);

  TraceData trace = window();
  trace.apiCalls.push_back(launchCall(5));
  source.stop(trace);
  ASSERT_EQ(trace.kernels.size(), 1u);
  EXPECT_EQ(trace.kernels[0].at.correlationId, 5u);
  EXPECT_EQ(trace.losses.outOfWindowEvents, 1u);
}

TEST_F(CuptiSourceTest, WithoutTheTimestampCallbackGpuTimesAreShiftedByTheMeasuredOffset) {
  fake_.timestampCallbackResult = CUPTI_ERROR_NOT_SUPPORTED;
  fake_.cuptiNowNs = 1'000'000;  // CUPTI's clock reads 1 ms when ours reads "now"
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(kernelsOnly()), "");
  EXPECT_TRUE(contains(source.describe(), "measured offset"));
  int64_t before = Clock::instance().nowNs();
  source.start(before);
  int64_t after = Clock::instance().nowNs();
  SyntheticBuffer records;
  records.add(synthetic::kernelRecord("k", 1'000'100, 1'000'200, 1));  // 100 ns after start
  fake_.deliver(records);

  TraceData trace;
  trace.startNs = before - 1'000'000;
  trace.stopNs = after + 1'000'000;
  source.stop(trace);
  ASSERT_EQ(trace.kernels.size(), 1u);
  EXPECT_GE(trace.kernels[0].at.startNs, before + 100);
  EXPECT_LE(trace.kernels[0].at.startNs, after + 100);
}

// ---- drop accounting ------------------------------------------------------------------

TEST_F(CuptiSourceTest, RequestBeyondTheBufferCapIsRefusedAndReported) {
  GpuOptions options = kernelsOnly();
  options.capBytes = options.bufferBytes;  // exactly one buffer
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(options), "");
  source.start(1000);
  uint8_t* first = nullptr;
  size_t firstSize = 0, maxRecords = 0;
  fake_.request(&first, &firstSize, &maxRecords);
  ASSERT_NE(first, nullptr);
  uint8_t* second = reinterpret_cast<uint8_t*>(1);
  size_t secondSize = 1;
  fake_.request(&second, &secondSize, &maxRecords);
  EXPECT_EQ(second, nullptr);
  EXPECT_EQ(secondSize, 0u);
  fake_.complete(nullptr, 0, first, firstSize, 0);

  TraceData trace = window();
  source.stop(trace);
  EXPECT_GE(trace.losses.cuptiBuffersRefused, 1u);
}

TEST_F(CuptiSourceTest, RecordsCuptiDroppedAreCounted) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(kernelsOnly()), "");
  source.start(1000);
  fake_.droppedOnNextQuery = 17;
  TraceData trace = window();
  source.stop(trace);
  EXPECT_EQ(trace.losses.cuptiDroppedRecords, 17u);
}

TEST_F(CuptiSourceTest, DropsReportedWhenABufferCompletesAreCounted) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(kernelsOnly()), "");
  source.start(1000);
  fake_.droppedOnNextQuery = 3;
  SyntheticBuffer records;
  records.add(synthetic::kernelRecord("k", 2000, 3000, 1));
  fake_.deliver(records);
  TraceData trace = window();
  source.stop(trace);
  EXPECT_EQ(trace.losses.cuptiDroppedRecords, 3u);
  EXPECT_EQ(trace.kernels.size(), 1u);
}

TEST_F(CuptiSourceTest, DropsBeforeStartAreNotCounted) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(kernelsOnly()), "");
  fake_.droppedOnNextQuery = 5;
  source.start(1000);
  TraceData trace = window();
  source.stop(trace);
  EXPECT_EQ(trace.losses.cuptiDroppedRecords, 0u);
}

// ---- launch calls -----------------------------------------------------------------------

TEST_F(CuptiSourceTest, ApiCallsAreNamedWithoutTheVersionSuffix) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(everything()), "");
  source.start(1000);
  TraceData trace = window();
  trace.apiCalls.push_back(launchCall(1, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  trace.apiCalls.push_back(launchCall(2, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  trace.apiCalls.back().domain = ApiDomain::Driver;
  trace.apiCalls.push_back(launchCall(3, 400));  // CUPTI has no name for it
  source.stop(trace);
  EXPECT_EQ(trace.strings.get(trace.apiCalls[0].name), "cudaLaunchKernel");
  EXPECT_EQ(trace.strings.get(trace.apiCalls[1].name), "cuLaunchKernel");
  EXPECT_EQ(trace.strings.get(trace.apiCalls[2].name), "CUDA API 400");
}

// CUPTI calls the subscribed callback at a launch's entry and exit; the host recorder
// keeps the call, carrying the innermost range's External id, and stop() names it.
TEST_F(CuptiSourceTest, LaunchThroughTheSubscribedCallbackReachesTheTrace) {
  CuptiSource source(environment(fake_));
  ASSERT_EQ(source.enable(everything()), "");
  TraceData trace;
  trace.startNs = Clock::instance().nowNs();
  source.start(trace.startNs);
  HostRecorder::instance().startRecording(16 << 20);
  uint64_t slot = 0;
  CUpti_CallbackData data{};
  data.correlationData = &slot;
  data.correlationId = 4242;
  data.functionName = "cudaLaunchKernel";
  {
    kinetrace::Range range("step");
    data.callbackSite = CUPTI_API_ENTER;
    fake_.callback(fake_.callbackUserData, CUPTI_CB_DOMAIN_RUNTIME_API,
                   CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &data);
    data.callbackSite = CUPTI_API_EXIT;
    fake_.callback(fake_.callbackUserData, CUPTI_CB_DOMAIN_RUNTIME_API,
                   CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &data);
  }
  HostRecorder::instance().stopRecording();
  trace.stopNs = Clock::instance().nowNs();
  HostRecorder::instance().collect(trace, Clock::instance());
  SyntheticBuffer records;
  records.add(synthetic::kernelRecord("k", static_cast<uint64_t>(trace.stopNs) + 1000,
                                      static_cast<uint64_t>(trace.stopNs) + 2000, 4242));
  fake_.deliver(records);
  source.stop(trace);

  ASSERT_EQ(trace.apiCalls.size(), 1u);
  ASSERT_EQ(trace.ranges.size(), 1u);
  const ApiCallRecord& call = trace.apiCalls[0];
  EXPECT_EQ(trace.strings.get(call.name), "cudaLaunchKernel");
  EXPECT_EQ(call.correlationId, 4242u);
  EXPECT_EQ(call.externalId, trace.ranges[0].externalId);
  EXPECT_TRUE(call.launchesGpuWork);
  EXPECT_EQ(call.domain, ApiDomain::Runtime);
  EXPECT_LE(call.startNs, call.endNs);
  ASSERT_EQ(trace.kernels.size(), 1u);  // after stop, but its launch is in the trace
}

// ---- the launch callback itself --------------------------------------------------------

TEST(LaunchCallbacksTest, DisplayNameDropsOnlyANumericVersionSuffix) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cudaLaunchKernel_v7000", "cudaLaunchKernel"},
      {"cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernel_ptsz"},
      {"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync"},
      {"cuLaunchKernel", "cuLaunchKernel"},
      {"cudaFoo_v", "cudaFoo_v"},
      {"cudaFoo_vX1", "cudaFoo_vX1"},
      {"", ""},
  };
  for (const auto& [cuptiName, display] : cases) EXPECT_EQ(apiDisplayName(cuptiName), display) << cuptiName;
}

TEST(LaunchCallbacksTest, LaunchSideCallsStartOrWaitForGpuWork) {
  struct Case {
    const char* name;
    bool launchSide;
    bool launches;
  };
  const std::vector<Case> cases = {
      // Launch GPU work.
      {"cudaLaunchKernel_v7000", true, true}, {"cudaLaunchKernel_ptsz_v7000", true, true},
      {"cudaLaunchKernelExC_v11060", true, true}, {"cudaLaunchCooperativeKernel_v9000", true, true},
      {"cudaGraphLaunch_v10000", true, true}, {"cudaMemcpyAsync_v3020", true, true},
      {"cudaMemsetAsync_v3020", true, true}, {"cuLaunchKernel", true, true},
      {"cuLaunchKernelEx", true, true}, {"cuMemcpyHtoDAsync_v2", true, true},
      {"cuMemsetD8_v2", true, true}, {"cuGraphLaunch", true, true},
      // Wait for GPU work, or allocate: recorded, but launch nothing.
      {"cudaStreamSynchronize_v3020", true, false}, {"cudaEventSynchronize_v3020", true, false},
      {"cudaDeviceSynchronize_v3020", true, false}, {"cudaStreamWaitEvent_v3020", true, false},
      {"cudaMalloc_v3020", true, false}, {"cudaFree_v3020", true, false},
      {"cuCtxSynchronize", true, false}, {"cuMemAlloc_v2", true, false}, {"cuMemFree_v2", true, false},
      // Neither.
      {"cudaGetDevice_v3020", false, false}, {"cudaEventRecord_v3020", false, false},
      {"cuCtxGetDevice", false, false}, {"cuDeviceGetAttribute", false, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(isLaunchSideCall(c.name), c.launchSide) << c.name;
    EXPECT_EQ(launchesGpuWork(c.name), c.launches) << c.name;
  }
}

class OnCuptiCallbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.callbackNames = {{{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
                            "cudaLaunchKernel_v7000"}};
    table_.selectLaunchEntryPoints(fake_);
  }
  void call(CUpti_ApiCallbackSite site, uint32_t correlationId, CUcontext context = nullptr) {
    data_.callbackSite = site;
    data_.correlationData = &slot_;
    data_.correlationId = correlationId;
    data_.context = context;
    onCuptiCallback(&table_, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &data_);
  }

  FakeCuptiApi fake_;
  CallbackTable table_;
  uint64_t slot_ = 0;
  CUpti_CallbackData data_{};
};

TEST_F(OnCuptiCallbackTest, LaunchCarriesTheInnermostRangeAsExternalId) {
  TraceData trace;
  trace.startNs = Clock::instance().nowNs();
  HostRecorder::instance().startRecording(16 << 20);
  {
    kinetrace::Range outer("outer");
    kinetrace::Range inner("inner");
    call(CUPTI_API_ENTER, 77);
    call(CUPTI_API_EXIT, 77);
  }
  HostRecorder::instance().stopRecording();
  trace.stopNs = Clock::instance().nowNs();
  HostRecorder::instance().collect(trace, Clock::instance());

  ASSERT_EQ(trace.apiCalls.size(), 1u);
  ASSERT_EQ(trace.ranges.size(), 2u);
  const RangeRecord& inner = trace.strings.get(trace.ranges[0].name) == "inner" ? trace.ranges[0] : trace.ranges[1];
  EXPECT_EQ(trace.apiCalls[0].correlationId, 77u);
  EXPECT_EQ(trace.apiCalls[0].externalId, inner.externalId);
  EXPECT_EQ(trace.apiCalls[0].callbackId, uint32_t{CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000});
  EXPECT_TRUE(trace.apiCalls[0].launchesGpuWork);
  EXPECT_GE(trace.apiCalls[0].startNs, inner.startNs);
  EXPECT_LE(trace.apiCalls[0].endNs, inner.endNs);
}

TEST_F(OnCuptiCallbackTest, NothingIsRecordedWhileTheHostRecorderIsOff) {
  call(CUPTI_API_ENTER, 1);
  call(CUPTI_API_EXIT, 1);
  TraceData trace;
  trace.startNs = 0;
  trace.stopNs = Clock::instance().nowNs();
  HostRecorder::instance().collect(trace, Clock::instance());
  EXPECT_TRUE(trace.apiCalls.empty());
}

// The set of contexts to synchronise at stop belongs to one source: a context a thread
// used under an earlier source must be reported to the next one too.
TEST_F(OnCuptiCallbackTest, ContextSeenUnderAnEarlierSourceIsReportedToTheNextOne) {
  CUcontext context = reinterpret_cast<CUcontext>(0x1234);
  for (int session = 0; session < 2; ++session) {
    FakeCuptiApi fake;
    CuptiSource source(environment(fake));
    ASSERT_EQ(source.enable(kernelsOnly()), "");
    source.start(1000);
    call(CUPTI_API_ENTER, 1, context);
    call(CUPTI_API_EXIT, 1, context);
    EXPECT_EQ(source.knownContexts(), 1u) << "session " << session;
    TraceData trace = window();
    source.stop(trace);
    EXPECT_EQ(trace.gpuSyncReturnNs, 0) << "no driver: nothing was synchronised, no bound claimed";
  }
}

}  // namespace
}  // namespace kinetrace::detail
