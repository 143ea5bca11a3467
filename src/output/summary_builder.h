#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>

#include "model/trace_data.h"
#include "output/trace_summary.h"

namespace kinetrace::detail {

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

}  // namespace kinetrace::detail
