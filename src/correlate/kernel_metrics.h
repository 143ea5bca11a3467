#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "model/gpu_metrics.h"
#include "model/records.h"
#include "model/trace_data.h"

namespace kinetrace::detail {

// Gives each kernel its GPU metric averages: per metric, the mean of the samples that
// overlap the kernel, each weighted by how long it overlaps (a kernel covering parts of
// several samples gets the time-weighted mean of the parts it covers; one that overlaps no
// sample gets none).
//
// Samples pass through to the trace as they come (its counter tracks), and are kept besides
// only as long as a kernel may still need them: a kernel waits here until its device's
// samples are complete past its end, and samples are let go once they end before the
// assembler's completion mark (every launch before it has been joined, so no kernel still
// to come starts before it) and before every kernel waiting here. A kernel whose samples
// were let go before its record came, or whose samples did not come within a grace, is
// written without averages and counted (LossCounters::kernelsWithoutTheirSamples).
//
// Single-threaded: the assembler calls every member.
class KernelMetrics {
 public:
  // How long past a kernel's end (by the drain horizon) it waits for its device's samples:
  // decoding samples is slower than recording them, so they come late, but a device whose
  // sampling stopped without saying so must not hold kernels for ever.
  static constexpr int64_t kSampleGraceNs = 2'000'000'000;

  explicit KernelMetrics(LossCounters& losses) : losses_(losses) {}

  // The session's metrics: from here on kernels of the sampled devices wait for samples.
  void configure(const GpuMetricSet& metrics);
  bool active() const { return metricCount_ > 0; }

  // A batch's samples and completion marks. Samples outside [startNs, stopNs] are counted
  // (outOfWindowEvents), not kept; the others go to `out` for the trace and are kept here.
  void addSamples(const TraceRecords& batch,
                  const std::vector<std::pair<uint32_t, int64_t>>& completeUntil, int64_t startNs,
                  int64_t stopNs, TraceRecords& out);
  // A kernel ready to be written: into `out` with its averages, or held until its samples
  // are in.
  void addKernel(const KernelRecord& kernel, TraceRecords& out);
  // Writes the kernels whose samples are in (or whose grace has passed, by `horizonNs`) and
  // lets go of the samples no kernel may need: those ending before `completeNs`.
  void release(int64_t completeNs, int64_t horizonNs, TraceRecords& out);
  // No more samples: every kernel held is written with what there is.
  void finish(TraceRecords& out);
  // The memory cap is reached: the kernels held are written now with what samples there are,
  // and the samples they held back are let go.
  void shed(TraceRecords& out);

  std::size_t heldBytes() const;
  std::size_t samplesHeld() const;
  std::size_t kernelsHeld() const { return waiting_.size(); }

 private:
  struct Kept {
    int64_t startNs;
    int64_t endNs;
  };
  // One device's kept samples, oldest first, their values beside them (metricCount_ each).
  struct Device {
    std::deque<Kept> samples;
    std::deque<double> values;
    int64_t completeUntilNs = INT64_MIN;
    int64_t releasedUntilNs = INT64_MIN;  // samples ending at or before this were let go
  };
  // Whether every sample that may overlap a kernel is in when it is written; if not, it gets
  // none, counted by why.
  enum class Samples { Complete, Late, Shed };
  void write(KernelRecord kernel, TraceRecords& out, Samples state);
  void letGo(Device& device, int64_t beforeNs);

  LossCounters& losses_;
  std::size_t metricCount_ = 0;
  std::map<uint32_t, Device> devices_;  // the sampled devices only
  std::vector<KernelRecord> waiting_;   // in the order they came
  std::vector<double> sums_;            // scratch: one weighted sum per metric
};

}  // namespace kinetrace::detail
