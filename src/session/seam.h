#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kinetrace/config.h"
#include "kinetrace/export.h"
#include "kinetrace/profiler.h"
#include "kinetrace/trace.h"
#include "kinetrace/value.h"
#include "model/event_args.h"
#include "model/gpu_op.h"
#include "model/record_kinds.h"
#include "support/path_rule.h"

// The internal seam: what front-ends built on kinetrace's core -- the CUDA injection
// (src/inject), the libkineto-compatible API -- need beyond the public API. Exported from
// libkinetrace.so so that every front-end in a process shares its one core; NOT part of the
// public API: it may change with any release.
//
// Everything else a front-end needs it takes from the public headers: Profiler, Config,
// Trace, the host recording calls and kinetrace::recording().

namespace kinetrace::internal {

struct ProfilerOptions {
  // The profiler is created inside the CUDA driver's own initialisation (cuInit calling
  // InitializeInjection): it must not call into the driver to start it.
  bool insideDriverInit = false;
  // Called from the program's cudaProfilerStart() (start, after the call) and
  // cudaProfilerStop() (!start, before the call), inside a CUPTI callback: it may start and
  // stop the profiler, but must not block on other threads that may be inside CUDA calls.
  // When set, prepare() arms CUPTI without collecting until start().
  void (*profilerControl)(bool start) = nullptr;
  // The host process's name in traces ("python3 train.py").
  std::string processName;
};

KINETRACE_API std::unique_ptr<Profiler> makeProfiler(Config config, const ProfilerOptions& options);

// A framework's correlation id for the op it runs on the calling thread (libkineto's
// push/popCorrelationId): GPU work launched until the matching pop carries it as its
// "External id", ahead of kinetrace's own ranges. Balanced per thread; no lock, no
// allocation, no system call, whether or not a recording runs.
KINETRACE_API void pushCorrelationId(uint64_t id) noexcept;
KINETRACE_API void popCorrelationId() noexcept;

// Hears every kinetrace::step() of the process (as well as the process's StepScheduler,
// if any): how the CUDA injection counts the steps of a program that links kinetrace and
// marks them in code. Called on the thread that marks the step; nullptr: none.
using StepListener = void (*)() noexcept;
KINETRACE_API void setStepListener(StepListener listener) noexcept;

// Whether this process has started using a GPU (cupti/make_cupti_source.h: a device's primary
// context is active; the driver is never loaded by asking). A process answers dynolog as a
// GPU process only once it has, so that a launcher or agent importing the framework
// (torchrun's, accelerate's) takes none of a request's process slots. True without CUDA.
KINETRACE_API bool processUsesGpu() noexcept;

// JSON text as a metadata Value; nullopt when it is not valid JSON.
KINETRACE_API std::optional<Value> parseJson(const std::string& text);

// One GPU operation or launch-side CUDA call of a trace, typed: what a front-end that hands
// operations to a framework (the libkineto-compatible API) reads instead of parsing the
// events a sink would write. A call has the operation's times, correlation and External id
// (the pushed correlation id or host range open at the call), and no device or stream.
struct TraceOperation : detail::GpuOp {
  // Its kind of record (model/record_kinds.h): Kernel, Memcpy, Memset, Graph or Sync for a
  // GPU operation, ApiCall for a call.
  detail::RecordKind kind = detail::RecordKind::Kernel;
  // The category traces file it under ("kernel", "gpu_memcpy", "cuda_sync", "cuda_runtime",
  // "cuda_driver", "cuda_graph"): libkineto's names of its activity types, where it has one.
  std::string_view category;
  std::string_view name;  // as traces show it; valid during the visit only
  int64_t pid = 0;        // calls: the process and the OS thread that made the call
  int64_t tid = 0;
  // GPU operations: their launch call is in the trace; calls: GPU work they started is. An
  // arrow joins the two exactly when both say so.
  bool paired = false;
};

// Visits every GPU operation and launch-side call a trace holds in memory (none when its
// events were written while recording).
KINETRACE_API void visitOperations(const Trace& trace,
                                   const std::function<void(const TraceOperation&)>& visit);

// The track (tid, under the device's pid) where kinetrace writes the GPU spans of host
// ranges on a stream ("stream 7 annotations"): a framework's own GPU annotations go there.
KINETRACE_API int64_t gpuAnnotationTrackTid(uint32_t streamId) noexcept;

// kinetrace's clock now, in epoch nanoseconds: the time base of every event it records.
KINETRACE_API int64_t clockNowNs() noexcept;

// A range, async range or instant carrying typed arguments (what an NVTX payload says):
// like kinetrace::beginRange, startAsyncRange and instant, on the calling thread, with the
// arguments copied along with the name (up to kMaxEventArgs, kMaxEventArgBytes encoded). No
// lock, no allocation, no system call.
using EventArg = detail::EventArg;
KINETRACE_API void beginRangeWithArgs(std::string_view name, const EventArg* args,
                                      std::size_t count) noexcept;
KINETRACE_API uint64_t startAsyncRangeWithArgs(std::string_view name, const EventArg* args,
                                               std::size_t count) noexcept;
KINETRACE_API void instantWithArgs(std::string_view name, const EventArg* args,
                                   std::size_t count) noexcept;
// Ends the calling thread's innermost range (as kinetrace::endRange), or async range `id`
// (as endAsyncRange), adding arguments known only at the end.
KINETRACE_API void endRangeWithArgs(const EventArg* args, std::size_t count) noexcept;
KINETRACE_API void endAsyncRangeWithArgs(uint64_t id, const EventArg* args,
                                         std::size_t count) noexcept;

// Names a thread by its OS id (nvtxNameOsThread), from any thread; takes a lock.
KINETRACE_API void nameOsThread(int64_t tid, std::string_view name);

// The trace's summary (busy time, top kernels, copies, losses) as JSON, the content of the
// "<trace>.summary.json" file `kinetrace run` reads; `traceFile` is recorded in it.
KINETRACE_API std::string summaryJson(const Trace& trace, const std::string& traceFile);
// Writes text to a path atomically (temporary file, then rename), as traces are written,
// under `rule` (support/path_rule.h). Throws kinetrace::Error naming the path.
KINETRACE_API void writeFileAtomically(const std::string& path, std::string_view text,
                                       const detail::PathRule& rule = {});

// Profiler::start(output) with the trace written under `rule`: how a front-end records a
// window someone asked for, so that the request's confinement (a dynolog request's allowed
// directories) holds when the file is made, not only when the request was taken.
KINETRACE_API void startUnder(Profiler& profiler, const std::string& output,
                              const detail::PathRule& rule);
// openSink(url) under `rule`: a file path only, when the rule has allowed directories.
KINETRACE_API std::unique_ptr<Sink> openSinkUnder(const std::string& url,
                                                  const detail::PathRule& rule);

}  // namespace kinetrace::internal
