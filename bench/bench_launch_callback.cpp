// kinetrace's own share of launch correlation: the CUPTI callback body for one
// cudaLaunchKernel (runtime entry and exit, plus the nested cuLaunchKernel that CUDA 13
// reports and kinetrace skips), called directly with the data CUPTI would pass. CUPTI's
// cost of dispatching those callbacks is not in this number; bench/gpu/launch_cost.cu
// measures the whole on a GPU.
#include <benchmark/benchmark.h>
#include <cupti.h>

#include "cupti/launch_callbacks.h"
#include "kinetrace/profiler.h"
#include "support/null_cupti_api.h"

namespace {

using kinetrace::detail::CallbackTable;

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
  kinetrace::Config config;
  config.activities = kinetrace::ActivitySet::parse("host");
  config.hostBufferMb = 4096;
  config.logLevel = kinetrace::LogLevel::Error;
  kinetrace::Profiler profiler(config);
  profiler.start();

  uint64_t runtimeSlot = 0, driverSlot = 0;
  uint32_t correlationId = 1;
  int64_t sinceRestart = 0;
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
    if (++sinceRestart == 4'000'000) {  // keep the recorded calls inside the buffer cap
      state.PauseTiming();
      profiler.stop();
      profiler.start();
      sinceRestart = 0;
      state.ResumeTiming();
    }
  }
  // Every launch must have been recorded, or the number above timed an early return.
  const uint64_t recorded = profiler.stop().stats().apiCalls;
  if (recorded != static_cast<uint64_t>(sinceRestart)) {
    state.SkipWithError("launch calls were not recorded");
  }
  state.counters["recorded"] = static_cast<double>(recorded);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LaunchCallbacks);

}  // namespace

BENCHMARK_MAIN();
