#include "cupti/launch_callbacks.h"

#include <algorithm>
#include <atomic>
#include <cctype>

#include "host/host_recorder.h"
#include "model/clock.h"

namespace kinetrace::detail {
namespace {

bool startsWithAny(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view prefix) {
    return name.substr(0, prefix.size()) == prefix;
  });
}

thread_local CUcontext tLastContext = nullptr;
// Recorded runtime calls in progress on this thread.
thread_local uint32_t tRuntimeDepth = 0;
thread_local uint32_t tRuntimeDepthCollection = 0;  // the collection tRuntimeDepth counts in
thread_local uint32_t tLastContextEpoch = 0;

uint32_t domainSize(CUpti_CallbackDomain domain) {
  return domain == CUPTI_CB_DOMAIN_DRIVER_API
             ? static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_SIZE)
             : static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE);
}

}  // namespace

bool isLaunchSideCall(std::string_view name) {
  // Graph building (adding nodes, instantiating) is recorded too: it names where a graph's
  // nodes were created, and instantiation is a cost worth seeing. It is rare.
  return startsWithAny(name, {"cudaLaunch",
                              "cudaMemcpy",
                              "cudaMemset",
                              "cudaGraphLaunch",
                              "cudaStreamSynchronize",
                              "cudaEventSynchronize",
                              "cudaDeviceSynchronize",
                              "cudaStreamWaitEvent",
                              "cudaMalloc",
                              "cudaFree",
                              "cudaGraphAdd",
                              "cudaGraphInstantiate",
                              "cuLaunch",
                              "cuMemcpy",
                              "cuMemset",
                              "cuGraphLaunch",
                              "cuStreamSynchronize",
                              "cuEventSynchronize",
                              "cuCtxSynchronize",
                              "cuStreamWaitEvent",
                              "cuMemAlloc",
                              "cuMemFree",
                              "cuGraphAdd",
                              "cuGraphInstantiate"});
}

CallEffect callEffect(std::string_view name) {
  if (startsWithAny(name, {"cudaGraphLaunch", "cuGraphLaunch"})) return CallEffect::Graph;
  if (startsWithAny(name, {"cudaLaunchHostFunc", "cuLaunchHostFunc"})) return CallEffect::None;
  if (startsWithAny(name, {"cudaLaunch", "cuLaunch"})) return CallEffect::Kernel;
  if (startsWithAny(name, {"cudaMemcpy", "cuMemcpy"})) return CallEffect::Copy;
  if (startsWithAny(name, {"cudaMemset", "cuMemset"})) return CallEffect::Set;
  if (startsWithAny(name, {"cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize",
                           "cudaStreamWaitEvent", "cuStreamSynchronize", "cuEventSynchronize",
                           "cuCtxSynchronize", "cuStreamWaitEvent"})) {
    return CallEffect::Sync;
  }
  if (startsWithAny(name, {"cudaMalloc", "cudaFree", "cuMemAlloc", "cuMemFree"}))
    return CallEffect::Memory;
  return CallEffect::None;
}

bool readsTarget(CUpti_CallbackDomain domain, uint32_t cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
        return true;
      default:
        return false;
    }
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
      case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
        return true;
      default:
        return false;
    }
  }
  return false;
}

std::string apiDisplayName(std::string_view cuptiName) {
  std::size_t suffix = cuptiName.rfind("_v");
  if (suffix != std::string_view::npos && suffix + 2 < cuptiName.size() &&
      std::all_of(cuptiName.begin() + static_cast<std::ptrdiff_t>(suffix + 2), cuptiName.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    cuptiName = cuptiName.substr(0, suffix);
  }
  return std::string(cuptiName);
}

void CallbackTable::selectLaunchEntryPoints(CuptiApi& api) {
  for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    std::vector<uint8_t>& table = tableOf(domain);
    table.resize(domainSize(domain), 0);
    for (uint32_t cbid = 1; cbid < table.size(); ++cbid) {
      const char* name = nullptr;
      if (api.getCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      if (!isLaunchSideCall(name)) continue;
      table[cbid] = static_cast<uint8_t>(kRecorded | (readsTarget(domain, cbid) ? kTarget : 0) |
                                         static_cast<uint8_t>(callEffect(name)) << kEffectShift);
    }
  }
}

void CallbackTable::selectAll(CUpti_CallbackDomain domain, CuptiApi& api) {
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) recordNestedDriverCalls_ = true;
  std::vector<uint8_t>& table = tableOf(domain);
  table.resize(domainSize(domain), 0);
  for (uint32_t cbid = 1; cbid < table.size(); ++cbid) {
    const char* name = nullptr;
    if (api.getCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    table[cbid] = static_cast<uint8_t>(kRecorded | (readsTarget(domain, cbid) ? kTarget : 0) |
                                       static_cast<uint8_t>(callEffect(name)) << kEffectShift);
  }
}

void CallbackTable::selectProfilerControl() {
  std::vector<uint8_t>& table = tableOf(CUPTI_CB_DOMAIN_DRIVER_API);
  table.resize(domainSize(CUPTI_CB_DOMAIN_DRIVER_API), 0);
  table[CUPTI_DRIVER_TRACE_CBID_cuProfilerStart] |= kControl;
  table[CUPTI_DRIVER_TRACE_CBID_cuProfilerStop] |= kControl;
}

std::vector<uint32_t> CallbackTable::control(CUpti_CallbackDomain domain) const {
  const auto& table = domain == CUPTI_CB_DOMAIN_DRIVER_API ? driver_ : runtime_;
  std::vector<uint32_t> ids;
  for (uint32_t cbid = 0; cbid < table.size(); ++cbid) {
    if (table[cbid] & kControl) ids.push_back(cbid);
  }
  return ids;
}

std::vector<uint32_t> CallbackTable::recorded(CUpti_CallbackDomain domain) const {
  const auto& table = domain == CUPTI_CB_DOMAIN_DRIVER_API ? driver_ : runtime_;
  std::vector<uint32_t> ids;
  for (uint32_t cbid = 0; cbid < table.size(); ++cbid) {
    if (table[cbid] & kRecorded) ids.push_back(cbid);
  }
  return ids;
}

namespace {

// Recording starts after cuProfilerStart returns and stops before cuProfilerStop runs, so
// the window holds exactly the work between the two calls (as in NVIDIA's injection sample).
// Returns whether the call is also one kinetrace records.
[[gnu::noinline]] bool onProfilerControl(const CallbackTable* table, uint32_t cbid,
                                         const CUpti_CallbackData* info) noexcept {
  bool start = cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
  bool act = start ? info->callbackSite == CUPTI_API_EXIT : info->callbackSite == CUPTI_API_ENTER;
  if (act && table->profilerControl != nullptr) table->profilerControl(start);
  return (table->flags(CUPTI_CB_DOMAIN_DRIVER_API, cbid) & CallbackTable::kRecorded) != 0;
}

// A graph node created or cloned: one host record on the calling thread, which the
// assembler ties to the call in progress (its record comes when the call returns).
[[gnu::noinline]] void onGraphNode(const CallbackTable* table, CUpti_CallbackId cbid,
                                   const CUpti_ResourceData* data) noexcept {
  const bool created = cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED;
  if ((!created && cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) ||
      table->graphNodeIds == nullptr || data == nullptr || data->resourceDescriptor == nullptr) {
    return;
  }
  const auto* graph = static_cast<const CUpti_GraphData*>(data->resourceDescriptor);
  uint64_t node = 0;
  uint64_t original = 0;
  if (graph->node == nullptr ||
      table->graphNodeIds->getGraphNodeId(graph->node, &node) != CUPTI_SUCCESS) {
    return;
  }
  if (!created &&
      (graph->originalNode == nullptr ||
       table->graphNodeIds->getGraphNodeId(graph->originalNode, &original) != CUPTI_SUCCESS)) {
    return;
  }
  ThreadBuffer* buffer = HostRecorder::threadBuffer();
  if (buffer == nullptr) return;
  HostEventRecord* r = HostRecorder::reserve(*buffer);
  if (r == nullptr) return;
  r->ticks = Clock::ticks();
  r->a = node;
  r->b = created ? HostRecorder::launchExternalId() : original;
  r->c = 0;
  r->d = 0;
  r->flags = created ? 0 : kGraphNodeCloned;
  r->kind = HostEventKind::GraphNode;
  HostRecorder::publish(*buffer);
}

// What a graph launch, instantiation or synchronisation acted on, from its parameters (the
// generated_*_meta.h structs). Returns the LaunchTarget bits of what is known: 0, nothing.
[[gnu::noinline]] uint16_t readTarget(const CallbackTable* table, CUpti_CallbackDomain domain,
                                      uint32_t cbid, const CUpti_CallbackData* info,
                                      uint32_t& graph, uint32_t& context,
                                      uint32_t& stream) noexcept {
  CuptiApi& api = *table->launchTargets;
  const void* params = info->functionParams;
  if (params == nullptr) return 0;
  CUgraphExec launched = nullptr;
  CUgraphExec* made = nullptr;
  CUstream synced = nullptr;
  bool onStream = false;
  bool perThread = false;
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (runtime) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
        perThread = true;
        [[fallthrough]];
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000: {
        const auto* p = static_cast<const cudaGraphLaunch_v10000_params*>(params);
        launched = p->graphExec;
        synced = p->stream;
        onStream = true;
        break;
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
        perThread = true;
        [[fallthrough]];
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
        synced = static_cast<const cudaStreamSynchronize_v3020_params*>(params)->stream;
        onStream = true;
        break;
      case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
        break;
      default:
        // Every instantiation's parameters begin with the executable graph it makes.
        made = *static_cast<CUgraphExec* const*>(params);
        break;
    }
  } else {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
        perThread = true;
        [[fallthrough]];
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch: {
        const auto* p = static_cast<const cuGraphLaunch_params*>(params);
        launched = p->hGraph;  // the _ptsz struct is laid out alike (hGraphExec)
        synced = p->hStream;
        onStream = true;
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
        perThread = true;
        [[fallthrough]];
      case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
        synced = static_cast<const cuStreamSynchronize_params*>(params)->hStream;
        onStream = true;
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
        break;
      default:
        made = *static_cast<CUgraphExec* const*>(params);
        break;
    }
  }
  uint16_t known = 0;
  if (made != nullptr) {
    if (*made != nullptr && api.getGraphExecId(*made, &graph) == CUPTI_SUCCESS) {
      known |= kTargetGraphInstantiated;
    }
    return known;
  }
  if (launched != nullptr) {
    if (api.getGraphExecId(launched, &graph) != CUPTI_SUCCESS) return 0;
    known |= kTargetGraphLaunched;
  }
  if (info->context == nullptr || api.getContextId(info->context, &context) != CUPTI_SUCCESS) {
    return known;
  }
  known |= kTargetContext;
  if (onStream && api.getStreamId(synced, perThread, &stream) == CUPTI_SUCCESS) {
    known |= kTargetStream;
  } else if (onStream) {
    known &= static_cast<uint16_t>(~kTargetContext);  // a stream's synchronisation, stream unknown
  }
  return known;
}

}  // namespace

void CUPTIAPI onCuptiCallback(void* userData, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void* data) noexcept {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    onGraphNode(static_cast<const CallbackTable*>(userData), cbid,
                static_cast<const CUpti_ResourceData*>(data));
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (__builtin_expect(isProfilerControlCall(domain, cbid), 0)) {
    if (!onProfilerControl(static_cast<const CallbackTable*>(userData), cbid, info)) return;
  }
  const auto* table = static_cast<const CallbackTable*>(userData);
  if (table->collection != nullptr) {
    const uint32_t collection = table->collection->load(std::memory_order_relaxed);
    if (collection != tRuntimeDepthCollection) {
      tRuntimeDepthCollection = collection;
      tRuntimeDepth = 0;
    }
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (info->callbackSite == CUPTI_API_ENTER) {
      ++tRuntimeDepth;
    } else if (tRuntimeDepth > 0) {
      --tRuntimeDepth;
    }
  } else if (tRuntimeDepth > 0 && !table->recordsNestedDriverCalls()) {
    return;
  }
  if (info->callbackSite == CUPTI_API_ENTER) {
    // CUPTI keeps this slot per call from entry to exit: no thread-local stack needed, and
    // a driver call nested in a runtime call has its own.
    *info->correlationData = Clock::ticks();
    return;
  }
  if ((info->context != tLastContext || table->epoch != tLastContextEpoch) &&
      info->context != nullptr) {
    tLastContext = info->context;
    tLastContextEpoch = table->epoch;
    if (table->contextSeen != nullptr) table->contextSeen(table->contextSeenTarget, info->context);
  }
  ThreadBuffer* buffer = HostRecorder::threadBuffer();
  if (buffer == nullptr) return;
  const uint8_t flags = table->flags(domain, cbid);
  const bool failed = info->functionReturnValue != nullptr &&
                      *static_cast<const int*>(info->functionReturnValue) != 0;
  uint32_t graph = 0, context = 0, stream = 0;
  const uint16_t known =
      (flags & CallbackTable::kTarget) && table->launchTargets != nullptr && !failed
          ? readTarget(table, domain, cbid, info, graph, context, stream)
          : 0;
  const uint32_t slots = known != 0 ? 2 : 1;
  HostEventRecord* r = HostRecorder::reserve(*buffer, slots);
  if (r == nullptr) return;
  uint64_t exitTicks = Clock::ticks();
  uint64_t entryTicks = *info->correlationData;
  CallEffect effect = CallbackTable::effectOf(flags);
  // A call that failed started nothing on the GPU: no record will come to wait for.
  if (effect != CallEffect::None && failed) effect = CallEffect::None;
  if (known != 0) {
    // The target first, so the call's record finds it (same ticks: drained together).
    r->ticks = entryTicks != 0 ? entryTicks : exitTicks;
    r->a = graph;
    r->b = uint64_t{context} << 32 | stream;
    r->c = info->correlationId;
    r->d = known;
    r->flags = 0;
    r->kind = HostEventKind::LaunchTarget;
    ++r;
  }
  r->ticks = entryTicks != 0 ? entryTicks : exitTicks;  // entered before recording began
  r->a = exitTicks;
  r->b = HostRecorder::launchExternalId();
  r->c = info->correlationId;
  r->d = static_cast<uint16_t>(cbid);
  r->flags = static_cast<uint8_t>((domain == CUPTI_CB_DOMAIN_DRIVER_API ? kApiDriver : 0) |
                                  static_cast<uint8_t>(effect) << kApiEffectShift);
  r->kind = HostEventKind::ApiCall;
  HostRecorder::publish(*buffer, slots);
}

}  // namespace kinetrace::detail
