#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/trace_data.h"

// A one-screen digest of a trace: how busy the GPU was over the recording window, which
// kernels took the time, how much was copied, and what was lost. Every session builds one
// as its records stream past; the CUDA injection writes it next to each trace
// ("<trace>.summary.json") and `kinetrace run` prints them when the program has exited.

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

// Builds a summary from records as they stream past (a trace written while recording is
// never held whole), in memory bounded by the number of distinct kernel names and devices.
// Busy time is the union of GPU operations per device, clipped to the window.
class SummaryBuilder {
 public:
  explicit SummaryBuilder(int64_t windowStartNs) : windowStartNs_(windowStartNs) {}
  void add(const TraceRecords& records);
  // `tables` names the kernels; `topKernels` caps the kernel table. Rank, world size and
  // GPU status come from the header and footer metadata.
  Summary finish(const TraceTables& tables, int64_t windowStopNs, const LossCounters& losses,
                 const Metadata& header, const Metadata& footer, std::size_t topKernels = 20);

 private:
  // Length of the union of intervals seen, folding old ones into a total so memory stays
  // bounded. An interval arriving after older ones were folded counts only from where the
  // fold ended (arrivals are close to time order, so this loses next to nothing).
  class BusyTime {
   public:
    void add(int64_t startNs, int64_t endNs);
    // The union's length up to `untilNs` (work queued before the stop may end after it).
    int64_t total(int64_t untilNs) const;

   private:
    std::map<int64_t, int64_t> merged_;  // disjoint, by start
    int64_t foldedNs_ = 0;
    int64_t foldedUntilNs_ = INT64_MIN;
  };
  struct KernelTally {
    uint64_t count = 0;
    int64_t totalNs = 0;
    int64_t maxNs = 0;
  };

  int64_t windowStartNs_;
  Summary s_;
  std::map<uint32_t, BusyTime> busy_;
  std::map<uint32_t, BusyTime> kernelBusy_;
  std::unordered_map<StringId, KernelTally> kernels_;
  std::map<CopyKind, CopyTotal> copies_;
};

// The summary of a trace held in memory.
Summary summarize(const TraceData& trace, std::size_t topKernels = 20);

// The summary as a typed value (kept in a trace's data), and back.
Value summaryToValue(const Summary& summary);
Summary summaryFromValue(const Value& value);

// The summary as a JSON object, and back. fromJson throws kinetrace::Error for text that is
// not a summary; keys it does not know are ignored, missing ones keep their defaults.
std::string summaryToJson(const Summary& summary);
Summary summaryFromJson(const std::string& json);

// The summary for a terminal, at most `topKernels` kernels listed; lines end in '\n'.
//
//   trace  kinetrace-run1-node1-pid4242.json  (rank 0 of 2, python)
//   window 2.014 s   GPU busy 1.702 s (84.5%), kernels 1.650 s (81.9%) on 1 device
//   kernels 61,482 (total 1.688 s)
//      41.2%  0.695 s  x12000  ampere_sgemm_128x64_tn
//   ...
std::string formatSummary(const Summary& summary, std::size_t topKernels = 5);

// Helpers the summary uses, exposed for tests: "1.234 s", "12.3 ms", "850 us", "120 ns";
// "1.5 GB", "12.0 MB", "512 B"; names longer than `width` are cut with "...".
std::string formatDuration(int64_t ns);
std::string formatBytes(uint64_t bytes);
std::string shortenName(const std::string& name, std::size_t width);

}  // namespace kinetrace::detail
