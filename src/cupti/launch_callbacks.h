#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cupti/cupti_api.h"
#include "model/records.h"

// Launch correlation through the CUPTI callback API.
//
// Recording every runtime and driver call as CUPTI activity cost 1.25x-1.40x step time on a
// launch-bound training step; callbacks on just the entry points that start or wait for
// GPU work cost ~1.04x. So kinetrace enables callbacks for those entry points only
// (chosen by name, so every flavour -- _ptsz, Ex, cooperative, async -- is included and new
// CUDA versions need no list update), and the callback writes one 32-byte record into the
// calling thread's host buffer, the same lock-free path host ranges use.
//
// The External id of a GPU operation is read here too: the innermost host range open on
// the launching thread, taken from that thread's own range stack. This keeps range
// begin/end free of CUPTI calls (pushing an external correlation id per range, libkineto's
// way, is two CUPTI calls per range on the application's thread) and costs one load in a
// callback that runs anyway.

namespace kinetrace::detail {

// Per callback id: whether kinetrace records it, what it may produce on the GPU side
// (CallEffect), and whether it is a profiler-control call.
class CallbackTable {
 public:
  // kTarget: a graph launch, graph instantiation or synchronisation whose parameters say
  // what it acted on (LaunchTarget, recorded before the call).
  enum Flags : uint8_t { kRecorded = 1, kControl = 2, kTarget = 8, kEffectShift = 4 };

  // Who hears about what the callback sees. Set before subscribing and never changed while
  // subscribed, so CUPTI's threads read them without synchronisation.
  //   contextSeen: the first time a thread's calls use a context (the source keeps the set
  //     so it can synchronise each context when a window ends);
  //   profilerControl: cudaProfilerStart() returned (start) / cudaProfilerStop() was called.
  using ContextSeenFn = void (*)(void* target, CUcontext context);
  using ProfilerControlFn = void (*)(bool start);
  ContextSeenFn contextSeen = nullptr;
  void* contextSeenTarget = nullptr;
  ProfilerControlFn profilerControl = nullptr;
  // Changes with every subscription, so a thread's memory of the last context it reported
  // (kept across subscriptions) is not taken as reported to the new one.
  uint32_t epoch = 0;
  // Changes every time collection starts (owned by the source). Callbacks switched off
  // while a call was inside them never deliver its exit; a thread that sees a new value
  // forgets how deep in runtime calls it thought it was, instead of skipping its driver
  // calls for good.
  const std::atomic<uint32_t>* collection = nullptr;
  // Asked for the ids of graph nodes as they are created or cloned (CUPTI's resource
  // callbacks GRAPHNODE_CREATED / GRAPHNODE_CLONED); null: they are not recorded.
  CuptiApi* graphNodeIds = nullptr;
  // Asked for the ids of what graph launches, instantiations and synchronisations act on
  // (executable graph, stream, context), so the nodes of conditional bodies find their
  // launch (correlate/graph_launches.h); null: not recorded.
  CuptiApi* launchTargets = nullptr;

  // The launch-side entry points of both domains, found by name through `api`.
  void selectLaunchEntryPoints(CuptiApi& api);
  // Every call of a domain (the "record all API calls" option).
  void selectAll(CUpti_CallbackDomain domain, CuptiApi& api);
  // cuProfilerStart / cuProfilerStop (cudaProfilerStart/Stop call them), watched for the
  // profiler-control handler and kept enabled while collection is off.
  void selectProfilerControl();
  std::vector<uint32_t> control(CUpti_CallbackDomain domain) const;

  uint8_t flags(CUpti_CallbackDomain domain, uint32_t cbid) const {
    const auto& table = domain == CUPTI_CB_DOMAIN_DRIVER_API ? driver_ : runtime_;
    return cbid < table.size() ? table[cbid] : 0;
  }
  static CallEffect effectOf(uint8_t flags) { return static_cast<CallEffect>(flags >> kEffectShift); }
  std::vector<uint32_t> recorded(CUpti_CallbackDomain domain) const;

  // The CUDA runtime implements its calls with driver calls, and CUPTI reports those too
  // (measured on the H200 with CUDA 13: every cudaLaunchKernel carried a nested
  // cuLaunchKernel). The runtime call is the one users look for and the one the GPU
  // operation names, so driver calls made inside a recorded runtime call are skipped,
  // unless every driver call was asked for.
  bool recordsNestedDriverCalls() const { return recordNestedDriverCalls_; }

 private:
  std::vector<uint8_t>& tableOf(CUpti_CallbackDomain domain) {
    return domain == CUPTI_CB_DOMAIN_DRIVER_API ? driver_ : runtime_;
  }
  std::vector<uint8_t> runtime_;
  std::vector<uint8_t> driver_;
  bool recordNestedDriverCalls_ = false;
};

// Whether a CUDA API function (by its CUPTI name, "cudaLaunchKernel_v7000") starts or
// waits for GPU work or allocates device memory, and what it produces on the GPU side.
bool isLaunchSideCall(std::string_view name);
CallEffect callEffect(std::string_view name);
// Whether kinetrace reads what a call acted on from its parameters (CallbackTable::kTarget).
bool readsTarget(CUpti_CallbackDomain domain, uint32_t cbid);
// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
std::string apiDisplayName(std::string_view cuptiName);

// The resource callbacks that say where each CUDA graph node came from: created (by stream
// capture inside a launch call, or by cudaGraphAdd*Node) or cloned (by cudaGraphInstantiate:
// replayed work names the clone). Rare (graph construction, not replay), so recording them
// costs the application nothing measurable.
inline constexpr CUpti_CallbackId kGraphNodeCallbacks[] = {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                                           CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED};

// Whether a callback id is one of the profiler-control calls: compared with constants, so
// the check costs other calls two compares and no memory access.
inline bool isProfilerControlCall(CUpti_CallbackDomain domain, uint32_t cbid) {
  return domain == CUPTI_CB_DOMAIN_DRIVER_API && (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart ||
                                                  cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
}

// The callback registered with cuptiSubscribe. `userData` is the CallbackTable.
void CUPTIAPI onCuptiCallback(void* userData, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void* data) noexcept;

}  // namespace kinetrace::detail
