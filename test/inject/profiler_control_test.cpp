// --capture-range=cudaProfilerApi at the CUPTI seam: the source subscribes to
// cuProfilerStart/Stop (cudaProfilerStart/Stop call them), records nothing until the first
// start, keeps those two callbacks on while collection is off, and hands each call to the
// profiler-control handler at the right side of the call.

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "cupti/cupti_api.h"
#include "cupti/cupti_source.h"
#include "cupti/launch_callbacks.h"
#include "model/gpu_source.h"
#include "model/memory_budget.h"
#include "model/string_table.h"
#include "support/null_cupti_api.h"

namespace kinetrace::detail {
namespace {

using CallbackKey = std::pair<CUpti_CallbackDomain, uint32_t>;

// Just enough CUPTI: accepts everything and remembers what is enabled.
class RecordingCupti final : public NullCuptiApi {
 public:
  std::set<CallbackKey> enabledCallbacks;
  std::set<CUpti_ActivityKind> enabledKinds;
  CUpti_CallbackFunc callback = nullptr;
  void* userData = nullptr;

  CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc fn,
                        void* data) override {
    *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(this);
    callback = fn;
    userData = data;
    return CUPTI_SUCCESS;
  }
  CUptiResult unsubscribe(CUpti_SubscriberHandle) override {
    enabledCallbacks.clear();
    return CUPTI_SUCCESS;
  }
  CUptiResult enableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                             CUpti_CallbackId cbid) override {
    if (enable)
      enabledCallbacks.insert({domain, cbid});
    else
      enabledCallbacks.erase({domain, cbid});
    return CUPTI_SUCCESS;
  }
  CUptiResult activityEnable(CUpti_ActivityKind kind) override {
    enabledKinds.insert(kind);
    return CUPTI_SUCCESS;
  }
  CUptiResult activityDisable(CUpti_ActivityKind kind) override {
    enabledKinds.erase(kind);
    return CUPTI_SUCCESS;
  }
  CUptiResult getCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                              const char** name) override {
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
    *name = "cuLaunchKernel";
    return CUPTI_SUCCESS;
  }

  bool has(CUpti_CallbackDomain domain, uint32_t cbid) const {
    return enabledCallbacks.count({domain, cbid}) > 0;
  }
};

std::vector<bool> gControlCalls;
void recordControl(bool start) {
  gControlCalls.push_back(start);
}

class ProfilerControlTest : public ::testing::Test {
 protected:
  void SetUp() override { gControlCalls.clear(); }

  static GpuOptions profilerApiOptions() {
    GpuOptions options;
    options.activities.add(Activity::Kernel).add(Activity::Launch);
    options.profilerControl = &recordControl;
    options.deferCollection = true;
    options.bufferBytes = 64 * 1024;
    options.maxBufferBytes = 1024 * 1024;
    return options;
  }
  CuptiSource::Environment environment() {
    CuptiSource::Environment env;
    env.cupti = &cupti_;
    env.useDriver = false;
    return env;
  }
  // The end of a window as the session drives it: finish, the last poll, collection off.
  static void endWindow(CuptiSource& source) {
    source.finishWindow();
    GpuBatch batch;
    StringTable strings;
    while (source.poll(batch, strings)) {
    }
    source.stopCollecting();
  }
  // CUPTI calling the subscriber for a driver call.
  void driverCall(uint32_t cbid, CUpti_ApiCallbackSite site) {
    uint64_t slot = 0;
    CUpti_CallbackData data{};
    data.callbackSite = site;
    data.correlationData = &slot;
    cupti_.callback(cupti_.userData, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
  }

  RecordingCupti cupti_;
  MemoryBudget budget_{64 << 20};
};

constexpr uint32_t kStart = CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
constexpr uint32_t kStop = CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;

TEST_F(ProfilerControlTest, EnableSubscribesToProfilerCallsButCollectsNothingYet) {
  CuptiSource source(environment());
  ASSERT_TRUE(source.enable(profilerApiOptions(), budget_).ok());
  EXPECT_TRUE(cupti_.has(CUPTI_CB_DOMAIN_DRIVER_API, kStart));
  EXPECT_TRUE(cupti_.has(CUPTI_CB_DOMAIN_DRIVER_API, kStop));
  EXPECT_TRUE(cupti_.enabledKinds.empty()) << "no activity before cudaProfilerStart";
  EXPECT_EQ(cupti_.enabledCallbacks.size(), 2u) << "no launch callbacks before cudaProfilerStart";
}

TEST_F(ProfilerControlTest, StartCollectsAndStopTurnsCollectionOffButKeepsTheControlCallbacks) {
  CuptiSource source(environment());
  ASSERT_TRUE(source.enable(profilerApiOptions(), budget_).ok());
  source.start(1000);
  EXPECT_EQ(cupti_.enabledKinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 1u);
  EXPECT_GT(cupti_.enabledCallbacks.size(), 2u) << "launch callbacks on";
  endWindow(source);
  EXPECT_TRUE(cupti_.enabledKinds.empty());
  EXPECT_TRUE(cupti_.has(CUPTI_CB_DOMAIN_DRIVER_API, kStart))
      << "the next cudaProfilerStart must still be seen";
  EXPECT_TRUE(cupti_.has(CUPTI_CB_DOMAIN_DRIVER_API, kStop));
  source.start(3000);  // a second window
  EXPECT_EQ(cupti_.enabledKinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 1u);
}

TEST_F(ProfilerControlTest, StartIsReportedAfterTheCallAndStopBeforeIt) {
  CuptiSource source(environment());
  ASSERT_TRUE(source.enable(profilerApiOptions(), budget_).ok());
  driverCall(kStart, CUPTI_API_ENTER);
  EXPECT_TRUE(gControlCalls.empty()) << "cuProfilerStart has not run yet";
  driverCall(kStart, CUPTI_API_EXIT);
  driverCall(kStop, CUPTI_API_ENTER);
  driverCall(kStop, CUPTI_API_EXIT);
  EXPECT_EQ(gControlCalls, (std::vector<bool>{true, false}));
}

TEST_F(ProfilerControlTest, WithoutTheOptionNothingIsWatched) {
  CuptiSource source(environment());
  GpuOptions options = profilerApiOptions();
  options.profilerControl = nullptr;
  options.deferCollection = false;
  ASSERT_TRUE(source.enable(options, budget_).ok());
  EXPECT_FALSE(cupti_.has(CUPTI_CB_DOMAIN_DRIVER_API, kStart));
  EXPECT_FALSE(cupti_.enabledKinds.empty()) << "collects from enable(), as before";
}

TEST(ProfilerControlCallTest, OnlyTheTwoDriverProfilerCallsAreControlCalls) {
  EXPECT_TRUE(isProfilerControlCall(CUPTI_CB_DOMAIN_DRIVER_API, kStart));
  EXPECT_TRUE(isProfilerControlCall(CUPTI_CB_DOMAIN_DRIVER_API, kStop));
  EXPECT_FALSE(isProfilerControlCall(CUPTI_CB_DOMAIN_RUNTIME_API,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000));
  EXPECT_FALSE(
      isProfilerControlCall(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
}

}  // namespace
}  // namespace kinetrace::detail
