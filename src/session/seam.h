#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kinetrace/config.h"
#include "kinetrace/export.h"
#include "kinetrace/profiler.h"
#include "kinetrace/trace.h"

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

// Names a thread by its OS id (nvtxNameOsThread), from any thread; takes a lock.
KINETRACE_API void nameOsThread(int64_t tid, std::string_view name);

// The trace's summary (busy time, top kernels, copies, losses) as JSON, the content of the
// "<trace>.summary.json" file `kinetrace run` reads; `traceFile` is recorded in it.
KINETRACE_API std::string summaryJson(const Trace& trace, const std::string& traceFile);
// Writes text to a path atomically (temporary file, then rename), as traces are written.
// Throws kinetrace::Error naming the path.
KINETRACE_API void writeFileAtomically(const std::string& path, std::string_view text);

}  // namespace kinetrace::internal
