// kinetrace's own share of launch correlation: the CUPTI callback body for one
// cudaLaunchKernel (runtime entry and exit, plus the nested cuLaunchKernel that CUDA 13
// reports and kinetrace skips), called directly with the data CUPTI would pass, recording
// into the host recorder as in a session. CUPTI's cost of dispatching those callbacks is
// not in this number; bench/gpu/launch_cost.cu measures the whole on a GPU.
#include <benchmark/benchmark.h>
#include <cupti.h>

#include <cstdint>
#include <string_view>

#include "cupti/launch_callbacks.h"
#include "host/host_recorder.h"
#include "model/clock.h"
#include "model/memory_budget.h"
#include "support/null_cupti_api.h"

namespace {

using kinetrace::detail::ApiCallRecord;
using kinetrace::detail::CallbackTable;
using kinetrace::detail::HostName;
using kinetrace::detail::HostRecorder;

// Names for the two launch entry points; every other id is unknown (not recorded).
class LaunchNames final : public kinetrace::detail::NullCuptiApi {
 public:
  CUptiResult getCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                              const char** name) override {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
        cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
      *name = "cudaLaunchKernel_v7000";
      return CUPTI_SUCCESS;
    }
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {
      *name = "cuLaunchKernel";
      return CUPTI_SUCCESS;
    }
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
};

// Counts the launch calls a drain hands over, as kinetrace's pipeline would collect them.
class CallCounter final : public kinetrace::detail::HostEventVisitor {
 public:
  uint64_t calls = 0;
  void onThread(uint32_t, int64_t, std::string_view) override {}
  void onRangeBegin(uint32_t, int64_t, uint64_t, HostName) override {}
  void onRangeEnd(uint32_t, int64_t, uint64_t) override {}
  void onInstant(uint32_t, int64_t, HostName) override {}
  void onCounter(uint32_t, int64_t, HostName, double) override {}
  void onApiCall(const ApiCallRecord&) override { ++calls; }
  void onAsyncBegin(uint32_t, int64_t, uint64_t, HostName) override {}
  void onAsyncEnd(uint32_t, int64_t, uint64_t) override {}
};

CUpti_CallbackData callbackData(CUpti_ApiCallbackSite site, uint64_t* slot,
                                uint32_t correlationId) {
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.functionName = "cudaLaunchKernel";
  data.context = reinterpret_cast<CUcontext>(0x1000);  // one context throughout
  data.correlationData = slot;
  data.correlationId = correlationId;
  return data;
}

void BM_LaunchCallbacks(benchmark::State& state) {
  LaunchNames names;
  CallbackTable table;
  table.selectLaunchEntryPoints(names);
  HostRecorder& recorder = HostRecorder::instance();
  kinetrace::detail::MemoryBudget budget(1ull << 30);
  const uint64_t generation = recorder.startRecording(budget);
  CallCounter counter;

  uint64_t runtimeSlot = 0, driverSlot = 0;
  uint32_t correlationId = 1;
  int64_t sinceDrain = 0;
  for (auto _ : state) {
    CUpti_CallbackData runtimeEnter = callbackData(CUPTI_API_ENTER, &runtimeSlot, correlationId);
    CUpti_CallbackData driverEnter = callbackData(CUPTI_API_ENTER, &driverSlot, correlationId + 1);
    CUpti_CallbackData driverExit = callbackData(CUPTI_API_EXIT, &driverSlot, correlationId + 1);
    CUpti_CallbackData runtimeExit = callbackData(CUPTI_API_EXIT, &runtimeSlot, correlationId);
    kinetrace::detail::onCuptiCallback(&table, CUPTI_CB_DOMAIN_RUNTIME_API,
                                       CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                       &runtimeEnter);
    kinetrace::detail::onCuptiCallback(&table, CUPTI_CB_DOMAIN_DRIVER_API,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &driverEnter);
    kinetrace::detail::onCuptiCallback(&table, CUPTI_CB_DOMAIN_DRIVER_API,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &driverExit);
    kinetrace::detail::onCuptiCallback(&table, CUPTI_CB_DOMAIN_RUNTIME_API,
                                       CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                       &runtimeExit);
    correlationId += 2;
    if (++sinceDrain == 1'000'000) {  // hand the chunks back, as the pipeline does
      state.PauseTiming();
      recorder.drain(generation, counter, kinetrace::detail::Clock::instance());
      sinceDrain = 0;
      state.ResumeTiming();
    }
  }
  recorder.stopRecording();
  const uint64_t dropped =
      recorder.drain(generation, counter, kinetrace::detail::Clock::instance());
  recorder.trimPool();
  // Every launch must have been recorded once (the nested driver call skipped), or the
  // number above timed an early return.
  if (dropped != 0 || counter.calls != static_cast<uint64_t>(state.iterations())) {
    state.SkipWithError("launch calls were not recorded");
  }
  state.counters["recorded"] = static_cast<double>(counter.calls);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LaunchCallbacks);

}  // namespace

BENCHMARK_MAIN();
