// The least a CUPTI activity tracer can do: a CUDA injection library that enables the
// requested activity kinds, hands CUPTI buffers, counts the records it gets back, and
// nothing else (no clock callback, no decoding, no trace). Its cost on a program is the
// floor under any tracer built on CUPTI's activity API, kinetrace included; the overhead
// scripts run it beside kinetrace to separate what CUPTI costs from what kinetrace adds.
//
//   CUDA_INJECTION64_PATH=.../libcupti_floor.so CUPTI_FLOOR_KINDS=concurrent_kernel ./program
//
// Knobs (environment; each defaults to CUPTI's own default):
//   CUPTI_FLOOR_KINDS        comma list of concurrent_kernel, kernel, memcpy, memset, runtime
//                            (default concurrent_kernel); empty: subscribe only
//   CUPTI_FLOOR_CALLBACKS    1: an empty runtime-API callback on the kernel-launch entry points;
//                            2: also on the driver's (cuLaunchKernel, which CUDA 13 reports
//                            nested in every runtime launch), as kinetrace enables them
//   CUPTI_FLOOR_BUFFER_MB    size of each activity buffer handed to CUPTI (default 4)
//   CUPTI_FLOOR_ZEROED       1: buffers are zeroed before CUPTI asks for them and CUPTI is told
//                            so (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER)
//   CUPTI_FLOOR_PINNED       1: CUPTI's device-side record buffers in pinned host memory
//   CUPTI_FLOOR_PREALLOCATE  N device buffers and N profiling-semaphore pools allocated by
//                            CUPTI at context creation (instead of while the program runs)
//   CUPTI_FLOOR_HW_TRACE     1: kernel timestamps from hardware events instead of CUPTI's
//                            instrumentation (cuptiActivityEnableHWTrace; Blackwell and later),
//                            asked for from InitializeInjection, where CUPTI 13.0 on an H200
//                            answers NOT_INITIALIZED; the outcome is printed with the counts
//   CUPTI_FLOOR_FLUSH_MS     CUPTI worker-thread flush period (cuptiActivityFlushPeriod)
//   CUPTI_FLOOR_TOGGLE       1: the kinds are enabled only between the program's
//                            cudaProfilerStart() and cudaProfilerStop()
//
// At exit it prints to stderr: "cupti_floor: records=N dropped=N buffers=N hw_trace=S".

#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

std::atomic<unsigned long long> gRecords{0};
std::atomic<unsigned long long> gBuffers{0};
size_t gBufferBytes = 4u << 20;
bool gZeroed = false;
const char* gHwTrace = "off";  // or "on", or why CUPTI refused it

const char* knob(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// A knob's number; 0 when unset.
unsigned long long knobNumber(const char* name) {
  const char* value = knob(name);
  return value != nullptr ? std::strtoull(value, nullptr, 10) : 0;
}

void check(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  std::fprintf(stderr, "cupti_floor: %s failed: %s\n", what, text != nullptr ? text : "?");
}

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxNumRecords) {
  // calloc gets fresh zero pages from the kernel: zeroed without touching them here.
  void* memory = gZeroed ? std::calloc(1, gBufferBytes) : std::malloc(gBufferBytes);
  *buffer = static_cast<uint8_t*>(memory);
  *size = memory != nullptr ? gBufferBytes : 0;
  *maxNumRecords = 0;
  gBuffers.fetch_add(1, std::memory_order_relaxed);
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t validSize) {
  CUpti_Activity* record = nullptr;
  unsigned long long count = 0;
  while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) ++count;
  gRecords.fetch_add(count, std::memory_order_relaxed);
  std::free(buffer);
}

std::vector<CUpti_ActivityKind> gKinds;

void enableKinds(bool enable) {
  for (CUpti_ActivityKind kind : gKinds) {
    check(enable ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind),
          "cuptiActivityEnable/Disable");
  }
}

// Launch callbacks do nothing; profiler-control callbacks turn the kinds on and off.
void CUPTIAPI onCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                         const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart && info->callbackSite == CUPTI_API_EXIT) {
    enableKinds(true);
  } else if (id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop &&
             info->callbackSite == CUPTI_API_ENTER) {
    cuptiActivityFlushAll(0);
    enableKinds(false);
  }
}

void report() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  std::fprintf(stderr, "cupti_floor: records=%llu dropped=%zu buffers=%llu hw_trace=%s\n",
               gRecords.load(), dropped, gBuffers.load(), gHwTrace);
}

void setAttribute(CUpti_ActivityAttribute attribute, size_t value, const char* what) {
  size_t bytes = sizeof(value);
  check(cuptiActivitySetAttribute(attribute, &bytes, &value), what);
}

void setFlag(CUpti_ActivityAttribute attribute, uint8_t value, const char* what) {
  size_t bytes = sizeof(value);
  check(cuptiActivitySetAttribute(attribute, &bytes, &value), what);
}

std::vector<CUpti_ActivityKind> requestedKinds() {
  const char* list = std::getenv("CUPTI_FLOOR_KINDS");
  std::string kinds = list != nullptr ? list : "concurrent_kernel";
  std::vector<CUpti_ActivityKind> out;
  size_t begin = 0;
  while (begin < kinds.size()) {
    size_t end = kinds.find(',', begin);
    if (end == std::string::npos) end = kinds.size();
    std::string name = kinds.substr(begin, end - begin);
    if (name == "concurrent_kernel")
      out.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    else if (name == "kernel")
      out.push_back(CUPTI_ACTIVITY_KIND_KERNEL);
    else if (name == "memcpy")
      out.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
    else if (name == "memset")
      out.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
    else if (name == "runtime")
      out.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
    else if (!name.empty())
      std::fprintf(stderr, "cupti_floor: unknown kind '%s' ignored\n", name.c_str());
    begin = end + 1;
  }
  return out;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (knob("CUPTI_FLOOR_BUFFER_MB") != nullptr)
    gBufferBytes = knobNumber("CUPTI_FLOOR_BUFFER_MB") << 20;
  gZeroed = knobNumber("CUPTI_FLOOR_ZEROED") == 1;
  if (gZeroed) {
    setFlag(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, 1, "zeroed-buffer attribute");
  }
  if (knob("CUPTI_FLOOR_PINNED") != nullptr) {
    setFlag(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED,
            knobNumber("CUPTI_FLOOR_PINNED") == 1, "pinned attribute");
  }
  if (knob("CUPTI_FLOOR_PREALLOCATE") != nullptr) {
    setAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE,
                 knobNumber("CUPTI_FLOOR_PREALLOCATE"), "pre-allocation attribute");
    setAttribute(CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_PRE_ALLOCATE_VALUE,
                 knobNumber("CUPTI_FLOOR_PREALLOCATE"), "semaphore pre-allocation attribute");
  }
  if (knob("CUPTI_FLOOR_FLUSH_MS") != nullptr) {
    check(cuptiActivityFlushPeriod(static_cast<uint32_t>(knobNumber("CUPTI_FLOOR_FLUSH_MS"))),
          "flush period");
  }
  const unsigned long long callbacks = knobNumber("CUPTI_FLOOR_CALLBACKS");
  const bool launchCallbacks = callbacks == 1 || callbacks == 2;
  const bool driverCallbacks = callbacks == 2;
  const bool toggle = knobNumber("CUPTI_FLOOR_TOGGLE") == 1;
  if (launchCallbacks || toggle) {
    CUpti_SubscriberHandle subscriber = nullptr;
    check(cuptiSubscribe(&subscriber, &onCallback, nullptr), "cuptiSubscribe");
    if (launchCallbacks) {
      for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060}) {
        check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id),
              "cuptiEnableCallback");
      }
    }
    if (driverCallbacks) {
      for (CUpti_CallbackId id :
           {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx}) {
        check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id),
              "cuptiEnableCallback");
      }
    }
    if (toggle) {
      for (CUpti_CallbackId id :
           {CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop}) {
        check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id),
              "cuptiEnableCallback");
      }
    }
  }
  check(cuptiActivityRegisterCallbacks(&bufferRequested, &bufferCompleted),
        "cuptiActivityRegisterCallbacks");
  if (knobNumber("CUPTI_FLOOR_HW_TRACE") == 1) {
    CUptiResult result = cuptiActivityEnableHWTrace(1);
    if (result == CUPTI_SUCCESS) {
      gHwTrace = "on";
    } else {
      gHwTrace = "?";
      cuptiGetResultString(result, &gHwTrace);
    }
  }
  gKinds = requestedKinds();
  if (!toggle) enableKinds(true);
  std::atexit(&report);
  return 1;
}
