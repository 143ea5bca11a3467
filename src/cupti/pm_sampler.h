#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cupti/pm_device.h"
#include "model/gpu_metrics.h"
#include "model/gpu_source.h"
#include "model/memory_budget.h"

namespace kinetrace::detail {

// GPU hardware metrics sampled over time on every device the program uses, decoded on a
// thread of its own ("kinetrace-pms") and handed to the pipeline's polls.
//
// Nothing is lost silently. Samples are contiguous in time, so a gap between one sample's
// end and the next one's start is samples lost (to a full hardware buffer, or to sampling
// made anew after one), counted by how many intervals it spans. The first sample after each
// start spans the set-up and is dropped, counted. A sample whose span or values cannot be
// right (ends before it starts, overlaps the last, a value not finite or negative, a share
// of peak far above 100%) is counted as corrupted and not kept. Samples that find the
// hand-over queue full (the pipeline not polling) are counted as lost.
//
// A device or driver that refuses (no PM sampling on this GPU, a metric the chip does not
// have, metrics needing more than one hardware pass) is said once, in the log and in the
// trace's metadata; tracing goes on without metrics.
//
// A device is set up (most of a second on an H100) as soon as the program uses it, window or
// not, and kept: a window finds it ready and starts sampling at once.
//
// Threads: start() and finish() from the session's thread; drain() from the
// pipeline's; every CUPTI call on the sampler's own thread, so that a window starting
// inside the driver's initialisation (CUDA injection) never calls back into the driver.
class PmSampler {
 public:
  struct Environment {
    // Makes a device's PM sampling (CUPTI's, or a test's stand-in).
    std::function<std::unique_ptr<PmDevice>(uint32_t device)> makeDevice;
    // The devices the program has used so far (called on the sampler's thread).
    std::function<std::vector<uint32_t>()> devicesInUse;
    // A sample's time in CUPTI's clock to the trace's.
    std::function<int64_t(uint64_t)> toTraceClock;
    // How often the thread decodes; 0: no thread (tests call runOnce()).
    int64_t decodePeriodNs = 50'000'000;
  };

  // hardwareBufferBytes: the raw sample buffer per device; 0: hardwareBufferBytes(intervalNs).
  PmSampler(Environment environment, std::vector<GpuMetric> metrics, int64_t intervalNs,
            std::size_t hardwareBufferBytes, MemoryBudget& budget);
  ~PmSampler();
  PmSampler(const PmSampler&) = delete;
  PmSampler& operator=(const PmSampler&) = delete;

  // A window starts: devices in use are sampled from now on (asynchronously).
  void start();
  // The window ends: sampling stops on every device and what the hardware holds is
  // decoded; returns when it is ready for drain().
  void finish();
  // Moves the samples decoded so far, with the metric set and what was lost, into `out`.
  void drain(GpuBatch& out);

  // One round of the thread's work, for tests without a thread.
  void runOnce();

  // The hand-over queue holds kQueuedNs of samples. The hardware buffer (raw samples, some
  // 170 KB each on a busy H100) holds kHardwareBufferedNs of a busy GPU's, within its
  // bounds, and the host image CUPTI decodes into as many (about 43 KB each with the
  // default metrics, reset after every decode). Decoding every 50 ms empties them five
  // times over; a decode later than that loses samples, counted, and doubles the buffer. Not
  // more: CUPTI pins the buffer while the device is set up, about 1.3 ms a MiB on an H100,
  // and the samples start only after it (a second's buffer, 192 MiB, took 0.2-0.3 s of the
  // set-up's 0.5-0.6 s).
  static constexpr int64_t kQueuedNs = 4'000'000'000;
  static constexpr int64_t kHardwareBufferedNs = 250'000'000;
  static std::size_t hardwareBufferBytes(int64_t intervalNs);
  static uint32_t imageSamples(int64_t intervalNs);
  static uint32_t queueSamples(int64_t intervalNs);

 private:
  struct Device {
    std::unique_ptr<PmDevice> pm;
    bool sampling = false;
    bool dropNext = false;   // the next sample spans the set-up
    bool restarted = false;  // sampling was made anew after an overflow: its gap is lost
    std::size_t hardwareBufferBytes = 0;  // as prepared; doubled after each overflow
    std::size_t hostBytes = 0;            // the images', as counted in the budget
    int64_t lastEndNs = INT64_MIN;
    // Said every kDecodeReportNs at debug level: how far decoding trails the GPU.
    int64_t reportFromNs = 0;
    int64_t decodingNs = 0;
    int64_t worstLagNs = 0;
    uint64_t decodedSamples = 0;
  };
  enum class Command { None, Start, Finish };

  void threadMain();
  void addNewDevices();
  void startDevice(uint32_t id, Device& device);
  void decodeDevice(uint32_t id, Device& device, bool finishing);
  void keep(uint32_t id, Device& device, const PmSampleSpan& span, const double* values);
  void reportDecoding(uint32_t id, Device& device, int64_t startedNs, std::size_t samples);
  bool plausible(const Device& device, int64_t startNs, int64_t endNs, const double* values) const;
  void refuse(const std::string& why);

  Environment env_;
  std::vector<GpuMetric> metrics_;
  std::vector<std::string> metricNames_;
  int64_t intervalNs_;
  std::size_t hardwareBufferBytes_;
  MemoryBudget& budget_;
  std::size_t budgetHeld_ = 0;

  // The sampler thread's own.
  std::map<uint32_t, Device> devices_;
  std::vector<uint32_t> refusedDevices_;
  bool windowOpen_ = false;
  std::vector<PmSampleSpan> spans_;  // scratch for decode()
  std::vector<double> values_;

  // Shared: commands in, samples out.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  Command command_ = Command::None;
  uint64_t finishedRounds_ = 0;  // finish() waits for this to move
  bool exiting_ = false;
  std::string refused_;  // set once: no metrics for the session
  bool refusalSent_ = false;
  std::vector<uint32_t> sampledDevices_;
  bool setChanged_ = false;
  GpuBatch queued_;  // samples, losses and marks waiting for drain()
  std::size_t queueCapacity_ = 0;

  std::thread thread_;
};

}  // namespace kinetrace::detail
