#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "model/trace_data.h"

namespace kinetrace::detail {

// What the session asks a GPU source to record.
struct GpuOptions {
  bool kernels = false;
  bool memcpy = false;
  bool memset = false;
  bool sync = false;
  bool memory = false;
  bool overhead = false;
  bool launchCalls = false;    // callbacks on launch / copy / sync / malloc entry points
  bool allRuntimeCalls = false;
  bool allDriverCalls = false;
  // Watch the program's cudaProfilerStart/Stop (cuProfilerStart/Stop) from enable() to
  // disable() and report them to the profiler-control handler.
  bool profilerControl = false;
  // enable() subscribes but records nothing until start(): the program may run for long
  // before its first cudaProfilerStart(), and records of that time would only be dropped.
  bool deferCollection = false;
  std::size_t bufferBytes = 4 << 20;   // one activity buffer
  std::size_t capBytes = 256 << 20;    // all activity buffers together
  // CUPTI's worker thread flushes completed buffers this often (cuptiActivityFlushPeriod);
  // 0 leaves the timing to CUPTI's own heuristics.
  uint32_t flushPeriodMs = 0;
};

// The seam between the session and the GPU backend (CUPTI in src/cupti). The session
// drives it: enable() once, then start()/stop() per recording, disable() at the end.
class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // Turns collection on. Returns "" on success, else why GPU activity cannot be recorded
  // (no GPU, no driver, CUPTI held by another tool...), in words for the user.
  virtual std::string enable(const GpuOptions& options) = 0;
  // Marks the start of a recording window (epoch ns).
  virtual void start(int64_t startNs) = 0;
  // Flushes GPU work still in flight and moves every decoded record into `trace`
  // (kernels, copies, ..., devices, losses). `trace.startNs/stopNs` hold the window.
  virtual void stop(TraceData& trace) = 0;
  // Turns collection off and releases what enable() took.
  virtual void disable() noexcept = 0;
  // One line describing the backend ("CUPTI 130001 on 1 device").
  virtual std::string describe() const = 0;
};

// Set by the CUDA injection entry point: sessions then start inside the driver's own
// initialisation and must not call into the driver to initialise it.
extern std::atomic<bool> gInsideCudaInjection;

// Called on the program's thread when it calls cudaProfilerStart() (start = true, after the
// call) or cudaProfilerStop() (start = false, before the call), while a GPU source with
// GpuOptions::profilerControl is enabled. It runs inside a CUPTI callback: it may enable,
// flush and disable CUPTI activity (NVIDIA's injection sample does the same) but must not
// block on other threads that may be inside CUDA calls. nullptr removes the handler.
using ProfilerControlFn = void (*)(bool start);
void setProfilerControlHandler(ProfilerControlFn handler) noexcept;

// The CUPTI source when kinetrace was built with CUDA; otherwise nullptr and `whyNot` says so.
std::unique_ptr<GpuSource> makeCuptiSource(std::string& whyNot);

}  // namespace kinetrace::detail
