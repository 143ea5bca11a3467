#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kinetrace/value.h"

// A one-screen digest of a trace: how busy the GPU was over the recording window, which
// kernels took the time, how much was copied, and what was lost. Every session builds one
// as its records stream past (output/summary_builder.h); the CUDA injection writes it next
// to each trace ("<trace>.summary.json") and `kinetrace run` prints them when the program
// has exited. Its keys are listed once, in trace_summary.cpp's field table, which both
// directions of the conversion read.

namespace kinetrace::detail {

struct KernelTotal {
  std::string name;
  uint64_t count = 0;
  int64_t totalNs = 0;
  int64_t maxNs = 0;
};

struct CopyTotal {
  std::string kind;  // "HtoD", "DtoH", "DtoD", "PtoP", ...
  uint64_t count = 0;
  uint64_t bytes = 0;
  int64_t totalNs = 0;
};

struct DeviceBusy {
  uint32_t deviceId = 0;
  int64_t busyNs = 0;        // some kernel, copy or memset was running
  int64_t kernelBusyNs = 0;  // some kernel was running
};

struct Summary {
  // Where the trace went and whose it is.
  std::string traceFile;
  int64_t pid = 0;
  int64_t rank = -1;  // -1: not launched as a rank (no RANK variable)
  int64_t worldSize = 0;
  std::string processName;

  int64_t windowNs = 0;  // stop - start

  // Time with at least one GPU operation running, overlapping work counted once, summed
  // over devices; utilisation is that over windowNs x devices that ran work.
  std::vector<DeviceBusy> devices;
  int64_t busyNs = 0;
  int64_t kernelBusyNs = 0;
  double utilisation = 0;        // busyNs / (windowNs * devices.size()), 0..1
  double kernelUtilisation = 0;  // kernelBusyNs / (windowNs * devices.size())

  uint64_t kernelCount = 0;
  int64_t kernelTotalNs = 0;            // sum of kernel durations (concurrent kernels each count)
  std::vector<KernelTotal> topKernels;  // by total time, longest first

  uint64_t memcpyCount = 0;
  uint64_t memcpyBytes = 0;
  std::vector<CopyTotal> memcpyByKind;  // most bytes first
  uint64_t memsetCount = 0;
  uint64_t memsetBytes = 0;
  uint64_t graphCount = 0;  // graph launches traced whole (graph-level tracing)
  uint64_t syncCount = 0;
  uint64_t hostRangeCount = 0;

  // What was lost: every non-zero one deserves a line.
  uint64_t droppedGpuRecords = 0;  // CUPTI drops + refused buffer requests
  uint64_t droppedHostEvents = 0;
  uint64_t outOfWindowEvents = 0;
  uint64_t gpuOpsWithoutLaunch = 0;
  std::string gpuStatus;  // why GPU activity was not recorded, or the backend in use
};

// The summary as a typed value (kept in a trace's data), and back.
Value summaryToValue(const Summary& summary);
Summary summaryFromValue(const Value& value);

// The summary as a JSON object (the "<trace>.summary.json" file); the command reads it back
// with summaryFromJson (analysis/summary.h).
std::string summaryToJson(const Summary& summary);

}  // namespace kinetrace::detail
