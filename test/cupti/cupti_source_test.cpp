#include "cupti/cupti_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fake_cupti_api.h"
#include "host_calls.h"
#include "kinetrace/host.h"
#include "model/clock.h"
#include "support/log.h"
#include "synthetic_buffer.h"

// CuptiSource against a fake CUPTI: refusals and the calls they name, what it enables, the
// hand-off of completed buffers to poll(), flushing, loss accounting and the launch
// callback it subscribes. Records are real CUPTI structs.

namespace kinetrace::detail {
namespace {

using synthetic::Call;
using synthetic::CallbackKey;
using synthetic::contains;
using synthetic::environment;
using synthetic::everything;
using synthetic::FakeCuptiApi;
using synthetic::kBufferBytes;
using synthetic::kernelsOnly;
using synthetic::pollOnce;
using synthetic::SimulatedCall;
using synthetic::SyntheticBuffer;

constexpr uint32_t kLaunchKernel = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
constexpr uint32_t kCuLaunchKernel = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
constexpr uint32_t kCuProfilerStart = CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
constexpr uint32_t kCuProfilerStop = CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;
constexpr CUpti_CallbackDomain kRuntime = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr CUpti_CallbackDomain kDriver = CUPTI_CB_DOMAIN_DRIVER_API;

// The names CUPTI gives a few callback ids: the launch-side ones and two that are not.
void nameCallbacks(FakeCuptiApi& fake) {
  fake.callbackNames = {
      {{kRuntime, kLaunchKernel}, "cudaLaunchKernel_v7000"},
      {{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020},
       "cudaStreamSynchronize_v3020"},
      {{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020}, "cudaMemcpyAsync_v3020"},
      {{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020}, "cudaGetDevice_v3020"},
      {{kDriver, kCuLaunchKernel}, "cuLaunchKernel"},
      {{kDriver, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice}, "cuCtxGetDevice"},
  };
}

// Where the profiler-control handler of the options below reports.
std::vector<bool> gControlCalls;
void noteControl(bool start) {
  gControlCalls.push_back(start);
}

class CuptiSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nameCallbacks(fake_);
    setLogLevel(LogLevel::Warning);
    gControlCalls.clear();
  }

  MemoryBudget budget_{256 << 20};
  FakeCuptiApi fake_;
  StringTable strings_;
};

SyntheticBuffer oneKernel(const char* name, uint64_t start, uint64_t end, uint32_t correlationId) {
  SyntheticBuffer records;
  records.add(synthetic::kernelRecord(name, start, end, correlationId));
  return records;
}

// ---- enabling and refusals ----------------------------------------------------------

TEST_F(CuptiSourceTest, EnableRefusesClearlyWhenAnotherProfilerHoldsCupti) {
  fake_.failing[Call::Subscribe] = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  CuptiSource source(environment(fake_));
  std::string why = source.enable(everything(), budget_).why();
  EXPECT_TRUE(contains(why, "already in use by another profiler"));
  EXPECT_TRUE(contains(why, "only one can trace GPU activity at a time"));
  EXPECT_TRUE(fake_.enabledKinds.empty());
  EXPECT_TRUE(fake_.enabledCallbacks.empty());
  EXPECT_EQ(fake_.request, nullptr);

  FakeCuptiApi other;
  CuptiSource next(environment(other));
  EXPECT_TRUE(next.enable(kernelsOnly(), budget_).ok());
}

// CUPTI's timestamp callback is process-wide: a refused enable must not leave kinetrace's
// clock stamping the records of the profiler that holds CUPTI.
TEST_F(CuptiSourceTest, RefusedSubscribeLeavesNoTimestampCallbackBehind) {
  fake_.failing[Call::Subscribe] = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  CuptiSource source(environment(fake_));
  EXPECT_FALSE(source.enable(kernelsOnly(), budget_).ok());
  EXPECT_EQ(fake_.timestampCallback, nullptr);
}

TEST_F(CuptiSourceTest, RefusedActivityKindIsReportedNamingTheCallAndCuptisReason) {
  fake_.activityEnableResults[CUPTI_ACTIVITY_KIND_MEMCPY] = CUPTI_ERROR_NOT_INITIALIZED;
  CuptiSource source(environment(fake_));
  std::string why = source.enable(everything(), budget_).why();
  EXPECT_TRUE(contains(why, "cuptiActivityEnable(MEMCPY): "));
  EXPECT_TRUE(contains(why, describeCuptiResult(CUPTI_ERROR_NOT_INITIALIZED)));
  EXPECT_TRUE(contains(why, "CUPTI_ERROR_NOT_INITIALIZED"));
  EXPECT_TRUE(contains(why, "activity kind"));
  EXPECT_FALSE(fake_.subscribed);

  FakeCuptiApi other;
  CuptiSource next(environment(other));
  EXPECT_TRUE(next.enable(kernelsOnly(), budget_).ok());
}

TEST_F(CuptiSourceTest, RefusedActivityKindLeavesNoKindEnabled) {
  // CONCURRENT_KERNEL is enabled before MEMCPY is refused; it must not stay on.
  fake_.activityEnableResults[CUPTI_ACTIVITY_KIND_MEMCPY] = CUPTI_ERROR_NOT_INITIALIZED;
  CuptiSource source(environment(fake_));
  EXPECT_FALSE(source.enable(everything(), budget_).ok());
  EXPECT_TRUE(fake_.enabledKinds.empty()) << fake_.enabledKinds.size() << " kinds still enabled";
}

// Whichever CUPTI call refuses, the user reads which one and CUPTI's reason, and CUPTI is
// left as it was found: not subscribed, nothing enabled, free for the next session.
TEST_F(CuptiSourceTest, EveryCallThatStopsEnablingIsNamedInTheRefusal) {
  constexpr CUptiResult kError = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  struct Case {
    std::string call;  // as the refusal names it
    std::function<void(FakeCuptiApi&)> fail;
  };
  auto kind = [](CUpti_ActivityKind k) {
    return [k](FakeCuptiApi& f) { f.activityEnableResults[k] = kError; };
  };
  auto callback = [](CUpti_CallbackDomain domain, uint32_t cbid) {
    return [domain, cbid](FakeCuptiApi& f) { f.enableCallbackResults[{domain, cbid}] = kError; };
  };
  const std::vector<Case> cases = {
      {"cuptiGetVersion: ", [](FakeCuptiApi& f) { f.failing[Call::GetVersion] = kError; }},
      {"cuptiSubscribe: ", [](FakeCuptiApi& f) { f.failing[Call::Subscribe] = kError; }},
      {"cuptiActivityRegisterCallbacks: ",
       [](FakeCuptiApi& f) { f.failing[Call::RegisterCallbacks] = kError; }},
      {"cuptiActivityEnable(CONCURRENT_KERNEL): ", kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)},
      {"cuptiActivityEnable(MEMCPY): ", kind(CUPTI_ACTIVITY_KIND_MEMCPY)},
      {"cuptiActivityEnable(MEMCPY2): ", kind(CUPTI_ACTIVITY_KIND_MEMCPY2)},
      {"cuptiActivityEnable(MEMSET): ", kind(CUPTI_ACTIVITY_KIND_MEMSET)},
      {"cuptiActivityEnable(SYNCHRONIZATION): ", kind(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)},
      {"cuptiActivityEnable(CONTEXT): ", kind(CUPTI_ACTIVITY_KIND_CONTEXT)},
      {"cuptiActivityEnable(MEMORY2): ", kind(CUPTI_ACTIVITY_KIND_MEMORY2)},
      {"cuptiActivityEnable(OVERHEAD): ", kind(CUPTI_ACTIVITY_KIND_OVERHEAD)},
      {"cuptiEnableCallback(runtime, " + std::to_string(kLaunchKernel) + "): ",
       callback(kRuntime, kLaunchKernel)},
      {"cuptiEnableCallback(driver, " + std::to_string(kCuLaunchKernel) + "): ",
       callback(kDriver, kCuLaunchKernel)},
      {"cuptiEnableCallback(driver, " + std::to_string(kCuProfilerStart) + "): ",
       callback(kDriver, kCuProfilerStart)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.call);
    FakeCuptiApi fake;
    nameCallbacks(fake);
    c.fail(fake);
    GpuOptions options = everything();
    options.profilerControl = &noteControl;
    CuptiSource source(environment(fake));
    std::string why = source.enable(options, budget_).why();
    EXPECT_TRUE(contains(why, c.call));
    EXPECT_TRUE(contains(why, describeCuptiResult(kError)));
    EXPECT_FALSE(fake.subscribed);
    EXPECT_TRUE(fake.enabledKinds.empty());
    EXPECT_TRUE(fake.enabledCallbacks.empty());

    FakeCuptiApi other;
    CuptiSource next(environment(other));
    EXPECT_TRUE(next.enable(kernelsOnly(), budget_).ok()) << "a refused enable holds nothing";
  }
}

TEST_F(CuptiSourceTest, SecondSourceIsRefusedWhileTheFirstIsEnabled) {
  CuptiSource first(environment(fake_));
  ASSERT_TRUE(first.enable(kernelsOnly(), budget_).ok());
  FakeCuptiApi other;
  CuptiSource second(environment(other));
  EXPECT_TRUE(contains(second.enable(kernelsOnly(), budget_).why(), "another kinetrace session"));
  EXPECT_FALSE(other.subscribed);

  first.disable();
  EXPECT_TRUE(second.enable(kernelsOnly(), budget_).ok());
}

TEST_F(CuptiSourceTest, EnabledActivityKindsFollowTheOptions) {
  struct Case {
    GpuOptions options;
    std::set<CUpti_ActivityKind> kinds;
  };
  const auto with = [](Activity activity) {
    GpuOptions options;
    options.activities.add(activity);
    return options;
  };
  GpuOptions graphLevel;
  graphLevel.graphLevel = true;
  const std::vector<Case> cases = {
      {with(Activity::Kernel), {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}},
      {with(Activity::Memcpy), {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2}},
      {with(Activity::Memset), {CUPTI_ACTIVITY_KIND_MEMSET}},
      {with(Activity::Sync), {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_CONTEXT}},
      {with(Activity::Memory), {CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY_POOL}},
      {with(Activity::Overhead), {CUPTI_ACTIVITY_KIND_OVERHEAD}},
      {graphLevel, {CUPTI_ACTIVITY_KIND_GRAPH_TRACE}},
      {with(Activity::Launch), {}},
  };
  for (const Case& c : cases) {
    FakeCuptiApi fake;
    CuptiSource source(environment(fake));
    ASSERT_TRUE(source.enable(c.options, budget_).ok());
    EXPECT_EQ(fake.enabledKinds, c.kinds);
  }
}

// The launch-side entry points, and the creation and cloning of graph nodes (where replayed
// work came from).
TEST_F(CuptiSourceTest, LaunchCallbacksAreExactlyTheLaunchSideEntryPoints) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(everything(), budget_).ok());
  std::set<CallbackKey> expected = {
      {kRuntime, kLaunchKernel},
      {kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020},
      {kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020},
      {kDriver, kCuLaunchKernel},
      {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED},
      {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED},
  };
  EXPECT_EQ(fake_.enabledCallbacks, expected);
}

TEST_F(CuptiSourceTest, NoCallbackIsEnabledWithoutLaunchCalls) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  EXPECT_TRUE(fake_.enabledCallbacks.empty());
}

TEST_F(CuptiSourceTest, AllCallsOfADomainEnablesEveryNamedCallbackOfIt) {
  for (CUpti_CallbackDomain domain : {kRuntime, kDriver}) {
    FakeCuptiApi fake;
    nameCallbacks(fake);
    GpuOptions options = kernelsOnly();
    options.activities.add(domain == kRuntime ? Activity::RuntimeAll : Activity::DriverAll);
    CuptiSource source(environment(fake));
    ASSERT_TRUE(source.enable(options, budget_).ok());
    std::set<CallbackKey> expected = {
        {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED},
        {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED}};
    for (const auto& [key, name] : fake.callbackNames) {
      if (key.first == domain) expected.insert(key);
    }
    EXPECT_EQ(fake.enabledCallbacks, expected) << (domain == kRuntime ? "runtime" : "driver");
  }
}

// A program may run for long before its first cudaProfilerStart(): nothing is recorded
// until then, but the calls that say when are watched from the start.
TEST_F(CuptiSourceTest, DeferredCollectionWatchesOnlyProfilerControlUntilStart) {
  GpuOptions options = everything();
  options.profilerControl = &noteControl;
  options.deferCollection = true;
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(options, budget_).ok());
  const std::set<CallbackKey> control = {{kDriver, kCuProfilerStart}, {kDriver, kCuProfilerStop}};
  EXPECT_TRUE(fake_.subscribed);
  EXPECT_NE(fake_.request, nullptr) << "buffers are registered";
  EXPECT_TRUE(fake_.enabledKinds.empty());
  EXPECT_EQ(fake_.enabledCallbacks, control);

  source.start(1000);
  EXPECT_EQ(fake_.enabledKinds.size(), 9u) << "every activity's kinds (kActivityRecords)";
  EXPECT_EQ(fake_.enabledCallbacks.size(), control.size() + 4 + 2) << "and the graph nodes'";

  source.stopCollecting();
  EXPECT_TRUE(fake_.enabledKinds.empty());
  EXPECT_EQ(fake_.enabledCallbacks, control) << "they are what turns collection on again";
}

TEST_F(CuptiSourceTest, StopCollectingTurnsCollectionOffAndStartTurnsItOnAgain) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(everything(), budget_).ok());
  const auto kinds = fake_.enabledKinds;
  const auto callbacks = fake_.enabledCallbacks;
  ASSERT_FALSE(kinds.empty());
  ASSERT_FALSE(callbacks.empty());

  source.start(1000);
  source.finishWindow();
  pollOnce(source, strings_);
  source.stopCollecting();
  EXPECT_TRUE(fake_.enabledKinds.empty());
  EXPECT_TRUE(fake_.enabledCallbacks.empty());
  EXPECT_TRUE(fake_.subscribed) << "subscribed until disable()";

  source.start(20000);
  EXPECT_EQ(fake_.enabledKinds, kinds);
  EXPECT_EQ(fake_.enabledCallbacks, callbacks);
}

TEST_F(CuptiSourceTest, CollectionThatCannotRestartIsReportedAndStaysOff) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(everything(), budget_).ok());
  source.start(1000);
  source.stopCollecting();
  fake_.activityEnableResults[CUPTI_ACTIVITY_KIND_MEMSET] = CUPTI_ERROR_NOT_INITIALIZED;

  ::testing::internal::CaptureStderr();
  source.start(20000);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(log, "GPU collection could not restart"));
  EXPECT_TRUE(contains(log, "cuptiActivityEnable(MEMSET): "));
  EXPECT_TRUE(contains(log, describeCuptiResult(CUPTI_ERROR_NOT_INITIALIZED)));
  EXPECT_TRUE(fake_.enabledKinds.empty()) << "the kinds enabled before MEMSET are off again";
  EXPECT_TRUE(fake_.enabledCallbacks.empty());
}

TEST_F(CuptiSourceTest, DisableUnsubscribesAndReleasesCupti) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(everything(), budget_).ok());
  source.disable();
  EXPECT_FALSE(fake_.subscribed);
  EXPECT_TRUE(fake_.enabledKinds.empty());
  uint8_t* buffer = reinterpret_cast<uint8_t*>(1);
  size_t size = 1, maxRecords = 1;
  fake_.request(&buffer, &size, &maxRecords);  // a late request after disable gets nothing
  EXPECT_EQ(buffer, nullptr);
  EXPECT_EQ(size, 0u);
}

// CUPTI's own period hands over full buffers only: kinetrace asks for the complete ones
// itself, from a thread of its own, until disable (after which only the forced flush).
TEST_F(CuptiSourceTest, CompleteBuffersAreAskedForEveryPeriodUntilDisable) {
  auto asked = [this] {
    std::vector<uint32_t> flags = fake_.flushes();
    return std::count(flags.begin(), flags.end(), 0u);
  };
  {
    CuptiSource source(environment(fake_));
    ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
    source.disable();
    EXPECT_EQ(asked(), 0) << "not asked unless a period is configured";
  }
  GpuOptions options = kernelsOnly();
  options.flushPeriodMs = 1;
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(options, budget_).ok());
  // Asked only once the program has launched work in a context (before, it may still be
  // initialising the driver).
  source.onContextSeen(reinterpret_cast<CUcontext>(0x10));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (asked() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_GE(asked(), 2) << "no poll and no window end asked for these";
  source.disable();
  const std::vector<uint32_t> flags = fake_.flushes();
  ASSERT_FALSE(flags.empty());
  EXPECT_EQ(flags.back(), CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) << "nothing asked after disable";
}

TEST_F(CuptiSourceTest, AFlushCuptiRefusesEveryPeriodIsSaidOnce) {
  fake_.failing[Call::FlushAll] = CUPTI_ERROR_UNKNOWN;
  GpuOptions options = kernelsOnly();
  options.flushPeriodMs = 1;
  CuptiSource source(environment(fake_));
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(source.enable(options, budget_).ok());
  source.onContextSeen(reinterpret_cast<CUcontext>(0x10));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (fake_.flushes().size() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  source.disable();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_GE(fake_.flushes().size(), 3u);
  const std::string said = "cuptiActivityFlushAll(0), asked every gpu_flush_ms";
  const std::size_t first = log.find(said);
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find(said, first + 1), std::string::npos) << "said once:\n" << log;
  EXPECT_TRUE(contains(log, describeCuptiResult(CUPTI_ERROR_UNKNOWN))) << log;
}

TEST_F(CuptiSourceTest, FlushPeriodIsSetOnlyWhenAskedAndResetAtDisable) {
  {
    CuptiSource source(environment(fake_));
    ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
    EXPECT_EQ(fake_.flushPeriodMs, 0u) << "CUPTI's heuristics unless a period is configured";
  }
  GpuOptions options = kernelsOnly();
  options.flushPeriodMs = 250;
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(options, budget_).ok());
  EXPECT_EQ(fake_.flushPeriodMs, 250u);
  source.disable();
  EXPECT_EQ(fake_.flushPeriodMs, 0u) << "a later CUPTI client starts from CUPTI's defaults";
}

// Calls whose failure does not stop tracing still say which call failed and why.
TEST_F(CuptiSourceTest, FailedCallsThatDoNotStopTracingAreLoggedNamingTheCall) {
  constexpr CUptiResult kError = CUPTI_ERROR_UNKNOWN;
  struct Case {
    std::string call;  // as the warning names it
    Call failing;
    std::function<void(CuptiSource&, FakeCuptiApi&)> act;  // after a successful enable
  };
  const std::vector<Case> cases = {
      {"cuptiActivityFlushPeriod(250)", Call::FlushPeriod, [](CuptiSource&, FakeCuptiApi&) {}},
      {"cuptiActivityFlushAll(FORCED)", Call::FlushAll,
       [](CuptiSource& s, FakeCuptiApi&) { s.finishWindow(); }},
      {"cuptiActivityGetNumDroppedRecords", Call::GetNumDroppedRecords,
       [](CuptiSource& s, FakeCuptiApi&) { s.finishWindow(); }},
      {"cuptiGetTimestamp", Call::GetTimestamp,
       [](CuptiSource& s, FakeCuptiApi&) { s.start(1000); }},
      {"cuptiActivityDisable", Call::ActivityDisable,
       [](CuptiSource& s, FakeCuptiApi&) { s.stopCollecting(); }},
      {"cuptiEnableCallback(0)", Call::EnableCallback,
       [](CuptiSource& s, FakeCuptiApi&) { s.stopCollecting(); }},
      {"cuptiUnsubscribe", Call::Unsubscribe, [](CuptiSource& s, FakeCuptiApi&) { s.disable(); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.call);
    FakeCuptiApi fake;
    nameCallbacks(fake);
    // Without the timestamp callback, start() measures CUPTI's clock.
    fake.failing[Call::RegisterTimestampCallback] = CUPTI_ERROR_NOT_SUPPORTED;
    GpuOptions options = everything();
    options.flushPeriodMs = 250;
    CuptiSource source(environment(fake));
    ::testing::internal::CaptureStderr();
    if (c.failing != Call::EnableCallback) fake.failing[c.failing] = kError;
    const std::string why = source.enable(options, budget_).why();
    fake.failing[c.failing] = kError;
    if (why.empty()) {
      source.start(1000);
      c.act(source, fake);
    }
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(why, "");
    EXPECT_TRUE(contains(log, c.call + ": " + describeCuptiResult(kError)));
    fake.failing.clear();
  }
}

// ---- buffers and poll() --------------------------------------------------------------

TEST_F(CuptiSourceTest, PollDecodesWhatTheCompletionCallbackQueued) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(everything(), budget_).ok());
  source.start(1000);
  SyntheticBuffer records;
  records.add(synthetic::kernelRecord("_Z6kernelPfi", 2000, 3000, 10));
  records.add(synthetic::memcpyRecord(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                                      CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                                      CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 4096, 3000, 3500, 11));
  records.add(synthetic::memsetRecord(64, 0, 4000, 4100, 12));
  records.add(synthetic::externalCorrelationRecord(10, 99));
  fake_.deliver(records);
  EXPECT_EQ(strings_.size(), 1u) << "CUPTI's thread only queues the buffer";

  GpuBatch batch = pollOnce(source, strings_);
  ASSERT_EQ(batch.records.kernels.size(), 1u);
  EXPECT_EQ(strings_.get(batch.records.kernels[0].name), "kernel(float*, int)");
  EXPECT_EQ(batch.records.kernels[0].at.correlationId, 10u);
  ASSERT_EQ(batch.records.memcpys.size(), 1u);
  EXPECT_EQ(batch.records.memcpys[0].copyKind, CopyKind::HtoD);
  EXPECT_EQ(batch.records.memcpys[0].bytes, 4096u);
  ASSERT_EQ(batch.records.memsets.size(), 1u);
  EXPECT_EQ(batch.records.memsets[0].memoryKind, MemoryKind::Device);
  EXPECT_EQ(batch.externalIds, (std::vector<std::pair<uint32_t, uint64_t>>{{10, 99}}));
  EXPECT_EQ(batch.undecoded, 0u);

  EXPECT_TRUE(pollOnce(source, strings_).records.empty()) << "each buffer is decoded once";
}

TEST_F(CuptiSourceTest, PolledBuffersGoBackToThePoolAndAreLentAgain) {
  GpuOptions options = kernelsOnly();
  options.maxBufferBytes = options.bufferBytes;  // one buffer, reused every time
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(options, budget_).ok());
  source.start(1000);
  uint8_t* first = nullptr;
  for (uint32_t i = 1; i <= 10; ++i) {
    uint8_t* buffer = fake_.deliver(oneKernel("k", 1000 + i, 1001 + i, i));
    ASSERT_NE(buffer, nullptr) << "round " << i;
    if (first == nullptr) first = buffer;
    EXPECT_EQ(buffer, first);
    GpuBatch batch = pollOnce(source, strings_);
    ASSERT_EQ(batch.records.kernels.size(), 1u);
    EXPECT_EQ(batch.records.kernels[0].at.correlationId, i);
    EXPECT_EQ(batch.buffersRefused, 0u);
  }
  EXPECT_EQ(budget_.used(), kBufferBytes) << "the pool did not grow";
}

TEST_F(CuptiSourceTest, BufferHasTheConfiguredSize) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  uint8_t* buffer = nullptr;
  size_t size = 0, maxRecords = 7;
  fake_.request(&buffer, &size, &maxRecords);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(size, kernelsOnly().bufferBytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer) % 8, 0u);
  EXPECT_EQ(maxRecords, 0u);  // as many as fit
  EXPECT_EQ(budget_.used(), size) << "counted in the budget";
  fake_.complete(nullptr, 0, buffer, size, 0);
}

TEST_F(CuptiSourceTest, FinishWindowForcesCuptiToHandOverEveryBuffer) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  source.start(1000);
  fake_.hold(oneKernel("k", 2000, 3000, 1));
  EXPECT_EQ(source.finishWindow(), 0) << "no driver: nothing synchronised, no bound claimed";
  EXPECT_EQ(fake_.flushes(), std::vector<uint32_t>{CUPTI_ACTIVITY_FLAG_FLUSH_FORCED});
  EXPECT_EQ(pollOnce(source, strings_).records.kernels.size(), 1u);
}

// How records waited in CUPTI's hands, for the trace: a buffer handed over before it was
// full (a flush asked), and those handed over by the window's last flush, apart.
TEST_F(CuptiSourceTest, TheTraceSaysHowCuptiHandedItsBuffersOver) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  auto handOvers = [&source](const char* field) -> uint64_t {
    for (const auto& member : source.metadata()) {
      if (member.key != "kinetrace_gpu_buffers") continue;
      const Value* value = member.value.find(field);
      if (value == nullptr) break;
      return value->kind() == Value::Kind::Int ? static_cast<uint64_t>(value->asInt())
                                               : value->asUint();
    }
    ADD_FAILURE() << "no kinetrace_gpu_buffers." << field;
    return 0;
  };
  source.start(1000);
  fake_.deliver(oneKernel("k", 2000, 3000, 1));  // one record in a buffer of 64 KiB
  fake_.hold(oneKernel("k", 3000, 4000, 2));
  source.finishWindow();
  EXPECT_EQ(handOvers("handed_over"), 2u);
  EXPECT_EQ(handOvers("before_full"), 1u);
  EXPECT_EQ(handOvers("at_window_end"), 1u);
  EXPECT_LT(handOvers("longest_held_ms"), 60'000u);
  pollOnce(source, strings_);
  pollOnce(source, strings_);

  source.start(5000);
  EXPECT_EQ(handOvers("handed_over"), 0u) << "each window counts its own";
  fake_.deliver(oneKernel("k", 6000, 7000, 3));
  EXPECT_EQ(handOvers("before_full"), 1u) << "not the window's end any more";
}

// The assembler keeps a launch waiting while its record may still be in a buffer CUPTI holds.
TEST_F(CuptiSourceTest, ABatchSaysBeforeWhenEveryRecordHasCome) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  source.start(1000);
  const int64_t beforeLending = Clock::instance().nowNs();
  fake_.hold(oneKernel("k", 2000, 3000, 1));  // lent now, kept by CUPTI
  const int64_t afterLending = Clock::instance().nowNs();
  GpuBatch batch = pollOnce(source, strings_);
  EXPECT_GE(batch.allRecordsBeforeNs, beforeLending);
  EXPECT_LE(batch.allRecordsBeforeNs, afterLending) << "the held buffer's lending";

  source.finishWindow();
  const int64_t handedBack = Clock::instance().nowNs();
  batch = pollOnce(source, strings_);
  EXPECT_EQ(batch.records.kernels.size(), 1u);
  EXPECT_GE(batch.allRecordsBeforeNs, handedBack) << "nothing out: up to the poll";
}

TEST_F(CuptiSourceTest, DestroyingTheSourceGivesTheBudgetBackEveryBuffer) {
  {
    CuptiSource source(environment(fake_));
    ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
    source.start(1000);
    fake_.deliver(oneKernel("k", 2000, 3000, 1));  // queued, never polled
    fake_.hold(oneKernel("k", 3000, 4000, 2));     // still CUPTI's
    EXPECT_EQ(budget_.used(), 2 * kBufferBytes);
    source.disable();
    EXPECT_TRUE(pollOnce(source, strings_).records.empty()) << "nobody records any more";
  }
  EXPECT_EQ(budget_.used(), 0u);
}

// CUPTI completes buffers on its own threads while kinetrace's pipeline thread polls.
TEST_F(CuptiSourceTest, BuffersCompletedWhilePollingAreEachDecodedOnce) {
  GpuOptions options = kernelsOnly();
  options.maxBufferBytes = 2 * options.bufferBytes;  // CUPTI waits for buffers to come back
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(options, budget_).ok());
  source.start(0);
  constexpr uint32_t kBuffers = 300;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  std::thread cupti([&] {
    for (uint32_t i = 1; i <= kBuffers; ++i) {
      const SyntheticBuffer records = oneKernel("k", i, i + 1, i);
      while (fake_.tryDeliver(records) == nullptr && Clock::now() < deadline) {
        std::this_thread::yield();
      }
    }
  });
  std::set<uint32_t> seen;
  while (seen.size() < kBuffers && Clock::now() < deadline) {
    GpuBatch batch = pollOnce(source, strings_);
    for (const KernelRecord& k : batch.records.kernels) {
      EXPECT_TRUE(seen.insert(k.at.correlationId).second) << k.at.correlationId;
    }
    if (batch.records.empty()) std::this_thread::yield();
  }
  cupti.join();
  EXPECT_EQ(seen.size(), kBuffers);
  EXPECT_LE(budget_.peak(), 2 * kBufferBytes);
}

// Records decoded from a buffer exist before the pipeline accounts them: poll() decodes one
// buffer at a time, into the room the pipeline sets aside (decodeRoomBytes).
TEST_F(CuptiSourceTest, PollDecodesOneBufferAtATime) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  EXPECT_EQ(source.decodeRoomBytes(), kBufferBytes);
  source.start(1000);
  fake_.deliver(oneKernel("k", 2000, 3000, 1));
  fake_.deliver(oneKernel("k", 3000, 4000, 2));
  GpuBatch batch;
  EXPECT_TRUE(source.poll(batch, strings_)) << "the second buffer waits";
  EXPECT_EQ(batch.records.kernels.size(), 1u);
  EXPECT_FALSE(source.poll(batch, strings_));
  EXPECT_EQ(batch.records.kernels.size(), 2u);
}

// A window's trace has a string table of its own, which may well be allocated where the
// previous window's was: names decoded for the old table must not leak into the new one.
TEST_F(CuptiSourceTest, EachWindowInternsKernelNamesIntoItsOwnTable) {
  static const char kMangled[] = "_Z6kernelPfi";
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  std::optional<StringTable> table;

  table.emplace();
  source.start(1000);
  fake_.deliver(oneKernel(kMangled, 2000, 3000, 1));
  GpuBatch first = pollOnce(source, *table);
  ASSERT_EQ(first.records.kernels.size(), 1u);
  EXPECT_EQ(table->get(first.records.kernels[0].name), "kernel(float*, int)");
  source.finishWindow();
  pollOnce(source, *table);
  source.stopCollecting();

  table.reset();
  table.emplace();  // the same address
  table->intern("a name of the next trace");
  source.start(5000);
  fake_.deliver(oneKernel(kMangled, 6000, 7000, 2));
  GpuBatch second = pollOnce(source, *table);
  ASSERT_EQ(second.records.kernels.size(), 1u);
  EXPECT_EQ(table->get(second.records.kernels[0].name), "kernel(float*, int)");
}

// ---- clocks ---------------------------------------------------------------------------

std::string gpuClock(const Metadata& metadata) {
  for (const auto& member : metadata) {
    if (member.key == "kinetrace_gpu_clock") return member.value.asString();
  }
  return "";
}

TEST_F(CuptiSourceTest, WithTheTimestampCallbackCuptiStampsRecordsWithKinetracesClock) {
  fake_.cuptiNowNs = 1'000'000;  // not asked: no offset to measure
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  ASSERT_NE(fake_.timestampCallback, nullptr);
  EXPECT_TRUE(contains(source.describe(), "timestamp callback"));
  EXPECT_EQ(gpuClock(source.metadata()), "cupti_timestamp_callback");
  const int64_t before = Clock::instance().nowNs();
  const auto stamped = static_cast<int64_t>(fake_.timestampCallback());
  const int64_t after = Clock::instance().nowNs();
  EXPECT_GE(stamped, before);
  EXPECT_LE(stamped, after);

  source.start(1000);
  fake_.deliver(oneKernel("k", 5000, 6000, 1));
  GpuBatch batch = pollOnce(source, strings_);
  ASSERT_EQ(batch.records.kernels.size(), 1u);
  EXPECT_EQ(batch.records.kernels[0].at.startNs, 5000) << "already on kinetrace's clock";
}

TEST_F(CuptiSourceTest, WithoutTheTimestampCallbackGpuTimesAreShiftedByTheMeasuredOffset) {
  fake_.failing[Call::RegisterTimestampCallback] = CUPTI_ERROR_NOT_SUPPORTED;
  fake_.cuptiNowNs = 1'000'000;  // CUPTI's clock reads 1 ms when ours reads "now"
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  EXPECT_TRUE(contains(source.describe(), "measured offset"));
  EXPECT_EQ(gpuClock(source.metadata()), "measured_offset");
  const int64_t before = Clock::instance().nowNs();
  source.start(before);
  const int64_t after = Clock::instance().nowNs();
  fake_.deliver(oneKernel("k", 1'000'100, 1'000'200, 1));  // 100 ns after start

  GpuBatch batch = pollOnce(source, strings_);
  ASSERT_EQ(batch.records.kernels.size(), 1u);
  EXPECT_GE(batch.records.kernels[0].at.startNs, before + 100);
  EXPECT_LE(batch.records.kernels[0].at.startNs, after + 100);
}

// ---- loss accounting -------------------------------------------------------------------

TEST_F(CuptiSourceTest, RefusedBufferRequestsReachTheBatch) {
  GpuOptions options = kernelsOnly();
  options.maxBufferBytes = options.bufferBytes;  // exactly one buffer
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(options, budget_).ok());
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

  EXPECT_EQ(pollOnce(source, strings_).buffersRefused, 1u);
  EXPECT_EQ(pollOnce(source, strings_).buffersRefused, 0u) << "each refusal is reported once";
}

TEST_F(CuptiSourceTest, RecordsCuptiDroppedAreAddedWhenTheWindowFinishes) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  source.start(1000);
  fake_.droppedOnNextQuery = 17;
  source.finishWindow();
  EXPECT_EQ(pollOnce(source, strings_).droppedRecords, 17u);
  EXPECT_EQ(pollOnce(source, strings_).droppedRecords, 0u);
}

TEST_F(CuptiSourceTest, DropsReportedWhenABufferCompletesReachTheBatch) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  source.start(1000);
  fake_.droppedOnNextQuery = 3;
  fake_.deliver(oneKernel("k", 2000, 3000, 1));
  GpuBatch batch = pollOnce(source, strings_);
  EXPECT_EQ(batch.droppedRecords, 3u);
  EXPECT_EQ(batch.records.kernels.size(), 1u);
  EXPECT_EQ(pollOnce(source, strings_).droppedRecords, 0u) << "each drop is reported once";
}

TEST_F(CuptiSourceTest, DropsBeforeStartAreNotCounted) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(kernelsOnly(), budget_).ok());
  fake_.droppedOnNextQuery = 5;
  source.start(1000);
  source.finishWindow();
  EXPECT_EQ(pollOnce(source, strings_).droppedRecords, 0u);
}

TEST_F(CuptiSourceTest, LossCountersStartFromZeroInEachWindow) {
  GpuOptions options = kernelsOnly();
  options.maxBufferBytes = options.bufferBytes;  // one buffer
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(options, budget_).ok());
  source.start(1000);
  source.finishWindow();
  pollOnce(source, strings_);
  source.stopCollecting();

  // Between windows: a buffer completes with drops, and the next request is refused.
  fake_.droppedOnNextQuery = 4;
  fake_.deliver(oneKernel("k", 2000, 3000, 1));
  EXPECT_EQ(fake_.tryDeliver(oneKernel("k", 3000, 4000, 2)), nullptr);

  source.start(10000);
  GpuBatch batch = pollOnce(source, strings_);
  EXPECT_EQ(batch.droppedRecords, 0u);
  EXPECT_EQ(batch.buffersRefused, 0u);
  EXPECT_EQ(batch.records.kernels.size(), 1u) << "records are kept; the window is judged later";
}

// ---- names and the callbacks the source subscribes -----------------------------------

TEST_F(CuptiSourceTest, ApiNamesDropTheVersionSuffix) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(everything(), budget_).ok());
  EXPECT_EQ(source.apiName(ApiDomain::Runtime, kLaunchKernel), "cudaLaunchKernel");
  EXPECT_EQ(source.apiName(ApiDomain::Driver, kCuLaunchKernel), "cuLaunchKernel");
  EXPECT_EQ(source.apiName(ApiDomain::Runtime, 401), "CUDA API 401") << "CUPTI has no name";
}

// CUPTI calls the subscribed callback at a launch's entry and exit; the host recorder
// keeps the call, with the innermost range's External id and what it starts on the GPU.
TEST_F(CuptiSourceTest, LaunchThroughTheSubscribedCallbackIsRecordedWithItsRange) {
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(everything(), budget_).ok());
  source.start(Clock::instance().nowNs());
  synthetic::HostCalls host = synthetic::recordHost([&] {
    kinetrace::Range range("step");
    SimulatedCall(kRuntime, kLaunchKernel, 4242).run(fake_.callback, fake_.callbackUserData);
  });

  ASSERT_EQ(host.calls.size(), 1u);
  const auto* range = host.range("step");
  ASSERT_NE(range, nullptr);
  const ApiCallRecord& call = host.calls[0];
  EXPECT_EQ(call.correlationId, 4242u);
  EXPECT_EQ(call.callbackId, kLaunchKernel);
  EXPECT_EQ(call.externalId, range->id);
  EXPECT_EQ(call.effect, CallEffect::Kernel);
  EXPECT_EQ(call.domain, ApiDomain::Runtime);
  EXPECT_LE(range->startNs, call.startNs);
  EXPECT_LE(call.startNs, call.endNs);
  EXPECT_LE(call.endNs, range->endNs);
}

// The set of contexts to synchronise at stop belongs to one source: a context a thread
// used under an earlier source must be reported to the next one too.
TEST_F(CuptiSourceTest, ContextSeenUnderAnEarlierSourceIsReportedToTheNextOne) {
  CUcontext context = reinterpret_cast<CUcontext>(0x1234);
  for (int session = 0; session < 2; ++session) {
    FakeCuptiApi fake;
    nameCallbacks(fake);
    CuptiSource source(environment(fake));
    ASSERT_TRUE(source.enable(everything(), budget_).ok());
    source.start(1000);
    SimulatedCall(kRuntime, kLaunchKernel, 1, context).run(fake.callback, fake.callbackUserData);
    SimulatedCall(kRuntime, kLaunchKernel, 2, context).run(fake.callback, fake.callbackUserData);
    EXPECT_EQ(source.knownContexts(), 1u) << "session " << session;
    EXPECT_EQ(source.finishWindow(), 0) << "no driver: nothing synchronised, no bound claimed";
  }
}

TEST_F(CuptiSourceTest, ProfilerControlHandlerHearsCudaProfilerStartAndStop) {
  GpuOptions options = everything();
  options.profilerControl = &noteControl;
  options.deferCollection = true;
  CuptiSource source(environment(fake_));
  ASSERT_TRUE(source.enable(options, budget_).ok());

  SimulatedCall start(kDriver, kCuProfilerStart, 1);
  start.enter(fake_.callback, fake_.callbackUserData);
  EXPECT_TRUE(gControlCalls.empty()) << "not before cuProfilerStart has run";
  start.exit(fake_.callback, fake_.callbackUserData);
  EXPECT_EQ(gControlCalls, std::vector<bool>{true});

  SimulatedCall stop(kDriver, kCuProfilerStop, 2);
  stop.enter(fake_.callback, fake_.callbackUserData);
  EXPECT_EQ(gControlCalls, (std::vector<bool>{true, false})) << "before cuProfilerStop runs";
  stop.exit(fake_.callback, fake_.callbackUserData);
  EXPECT_EQ(gControlCalls, (std::vector<bool>{true, false}));
}

}  // namespace
}  // namespace kinetrace::detail
