#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kinetrace/config.h"
#include "kinetrace/value.h"
#include "model/gpu_metrics.h"
#include "model/memory_budget.h"
#include "model/records.h"
#include "model/string_table.h"
#include "support/result.h"

namespace kinetrace::detail {

// What the session asks a GPU source to record.
struct GpuOptions {
  // The GPU activities to record (Activity::Host is not the source's): each activity's
  // CUPTI record kinds, and for Launch, RuntimeAll and DriverAll the call callbacks.
  ActivitySet activities;
  // Graph launches as one record each (CUPTI_ACTIVITY_KIND_GRAPH_TRACE), instead of a record
  // per node: with kernels, copies or memsets only.
  bool graphLevel = false;
  // When set: called on the program's thread when it calls cudaProfilerStart() (start =
  // true, after the call) or cudaProfilerStop() (start = false, before the call), from
  // enable() to disable(). It runs inside a CUPTI callback: it may start and stop the
  // session (NVIDIA's injection sample enables and flushes CUPTI there too) but must not
  // block on other threads that may be inside CUDA calls.
  void (*profilerControl)(bool start) = nullptr;
  // enable() subscribes but records nothing until start(): the program may run for long
  // before its first cudaProfilerStart(), and records of that time would only be dropped.
  bool deferCollection = false;
  // Under CUDA injection enable() runs inside the driver's own initialisation and must not
  // call into the driver to initialise it.
  bool insideDriverInit = false;
  std::size_t bufferBytes = 4 << 20;       // one activity buffer
  std::size_t maxBufferBytes = 256 << 20;  // all activity buffers together, at most
  // How often a thread of kinetrace's own asks CUPTI for every buffer whose records are
  // complete, full or not (cuptiActivityFlushAll(0)), so the records of a program that
  // launches little wait about this long, not until a buffer fills; CUPTI's own period
  // (cuptiActivityFlushPeriod, which hands over full buffers only) is set the same. 0: not
  // asked, CUPTI's heuristics.
  uint32_t flushPeriodMs = 0;
  // GPU hardware metrics to sample over time on every device the program uses (none: no
  // sampling), and how often.
  std::vector<GpuMetric> metrics;
  int64_t metricIntervalNs = 0;
  std::size_t metricHardwareBufferBytes = 0;  // per device; 0: sized from the interval
};

// What one poll of a GPU source hands over: decoded records of the GPU kinds (kernels,
// copies, memsets, syncs, memory, overhead, metric samples; names interned), and what goes
// with them.
//
// GPU metric samples (records.metricSamples, their values in records.metricValues) come
// in time order per device. Kernels of a sampled device wait in the assembler until the
// samples that may overlap them are in, so a source says how far each device's samples
// are complete: the end of its latest sample, or further with metricsCompleteUntil when
// samples were lost or sampling ended on a device (INT64_MAX: no more will come).
struct GpuBatch {
  TraceRecords records;
  // correlation id -> external id, from CUPTI's external correlation records.
  std::vector<std::pair<uint32_t, uint64_t>> externalIds;
  // Devices seen for the first time (their limits are needed for occupancy).
  std::vector<DeviceInfo> newDevices;
  uint64_t droppedRecords = 0;  // CUPTI dropped since the last poll
  uint64_t buffersRefused = 0;  // buffer requests refused since the last poll
  uint64_t undecoded = 0;       // record kinds kinetrace does not decode
  // Every GPU record written before this time is in this batch or an earlier one: CUPTI has
  // handed back every buffer it was lent before then. INT64_MAX: the source cannot tell.
  int64_t allRecordsBeforeNs = INT64_MAX;
  // The session's metrics, in the first batch after start() of a window that samples them.
  std::optional<GpuMetricSet> metricSet;
  GpuMetricLosses metricLosses;  // since the last poll
  // (device, ns): no sample of that device ends at or before ns that has not been handed over.
  std::vector<std::pair<uint32_t, int64_t>> metricsCompleteUntil;

  void clear();
};

// The seam between the session and the GPU backend (CUPTI in src/cupti). The session
// drives it: enable() once, then start() / poll()... / finishWindow() / poll() /
// stopCollecting() per recording, disable() at the end. poll() runs on the pipeline
// thread, the others on the thread that starts and stops the session.
class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // Turns collection on (or arms it, GpuOptions::deferCollection). Buffers are accounted
  // in `budget`, which outlives the source. Returns "" on success, else why GPU activity
  // cannot be recorded (no GPU, no driver, CUPTI held by another tool...), in words for
  // the user.
  virtual Status enable(const GpuOptions& options, MemoryBudget& budget) = 0;
  // A recording window starts (epoch ns): collection on, loss counters from zero.
  virtual void start(int64_t startNs) = 0;
  // Decodes the oldest buffer CUPTI has handed over into `out`, interning names in
  // `strings`, and returns whether more wait: one buffer at a time, so that records
  // decoded but not yet accounted fit in decodeRoomBytes(). Buffers are asked for by the
  // source itself (GpuOptions::flushPeriodMs), never from here.
  virtual bool poll(GpuBatch& out, StringTable& strings) = 0;
  // What the records of one poll may take before the pipeline accounts them: it sets this
  // much aside in the budget while it records.
  virtual std::size_t decodeRoomBytes() const = 0;
  // The window ends: waits for GPU work still running (every context the program used is
  // synchronised) and forces CUPTI to hand over everything. Returns when the
  // synchronisation returned (epoch ns; 0 when none could be made). A final poll() follows.
  virtual int64_t finishWindow() = 0;
  // After the final poll: collection off until the next start().
  virtual void stopCollecting() noexcept = 0;
  // Turns collection off and releases what enable() took.
  virtual void disable() noexcept = 0;
  // One line describing the backend ("CUPTI 130001 on 1 device").
  virtual std::string describe() const = 0;
  // Versions and clock source, for the trace's metadata.
  virtual Metadata metadata() const = 0;
  // Every visible device, names interned in `strings`.
  virtual std::vector<DeviceInfo> devices(StringTable& strings) const = 0;
  // The name of a CUDA API function by its callback id ("cudaLaunchKernel").
  virtual std::string apiName(ApiDomain domain, uint32_t callbackId) const = 0;
};

}  // namespace kinetrace::detail
