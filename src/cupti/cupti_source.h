#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cupti/activity_decoder.h"
#include "cupti/buffer_pool.h"
#include "cupti/cupti_api.h"
#include "cupti/driver_api.h"
#include "cupti/launch_callbacks.h"
#include "cupti/periodic_flusher.h"
#include "cupti/pm_sampler.h"
#include "model/gpu_source.h"

namespace kinetrace::detail {

// GPU activity through CUPTI: owns the subscription, the activity buffers and the set of
// contexts to synchronise when a window ends. One may be enabled per process (CUPTI's
// activity callbacks are process-wide); a second is refused with a message.
//
// Threads: enable/start/finishWindow/stopCollecting/disable from the session's thread;
// buffer callbacks from CUPTI's threads, which only queue a completed buffer; poll() on
// kinetrace's pipeline thread, which decodes the queued buffers and gives them back; the
// periodic flush on a thread of its own (PeriodicFlusher).
class CuptiSource final : public GpuSource {
 public:
  struct Environment {
    CuptiApi* cupti = nullptr;
    // Whether to open libcuda at all (tests run without a driver).
    bool useDriver = true;
    // Each device's PM sampling; null: CUPTI's.
    std::function<std::unique_ptr<PmDevice>(uint32_t device)> makePmDevice;
  };

  explicit CuptiSource(Environment environment);
  ~CuptiSource() override;

  Status enable(const GpuOptions& options, MemoryBudget& budget) override;
  void start(int64_t startNs) override;
  bool poll(GpuBatch& out, StringTable& strings) override;
  int64_t finishWindow() override;
  void stopCollecting() noexcept override;
  void disable() noexcept override;
  std::size_t decodeRoomBytes() const override;
  std::string describe() const override;
  Metadata metadata() const override;
  std::vector<DeviceInfo> devices(StringTable& strings) const override;
  std::string apiName(ApiDomain domain, uint32_t callbackId) const override;

  // ---- entry points for the C adapters (CUPTI's threads) ---------------------------
  void onBufferRequested(uint8_t** buffer, size_t* size, size_t* maxNumRecords) noexcept;
  void onBufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer, size_t size,
                         size_t validSize) noexcept;
  void onContextSeen(CUcontext context) noexcept;

  // How many CUDA contexts the source will synchronise when a window ends.
  std::size_t knownContexts();

 private:
  struct Completed {
    uint8_t* buffer;
    size_t validSize;
  };

  Status enableActivities();
  Status enableCallbacks();
  void makeMetricSampler(MemoryBudget& budget);
  std::vector<uint32_t> devicesInUse();
  void measureSampleClock();
  int64_t sampleTimeToTrace(uint64_t cuptiNs) const;
  void noteNewDevices(GpuBatch& out, StringTable& strings);
  void flushCompleteBuffers() noexcept;
  void reportBuffers(int64_t nowNs, int64_t allRecordsBeforeNs);

  Environment env_;
  GpuOptions options_;
  DriverApi driver_;
  bool enabled_ = false;     // subscribed, buffers registered
  bool collecting_ = false;  // activity kinds and callbacks on
  bool ownClock_ = false;    // CUPTI stamps records with kinetrace's clock
  uint32_t cuptiVersion_ = 0;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  CallbackTable callbacks_;
  std::atomic<uint32_t> collection_{0};  // bumped whenever callbacks are switched on
  std::vector<CUpti_ActivityKind> enabledKinds_;
  std::unique_ptr<BufferPool> pool_;

  std::mutex contextsMutex_;
  std::set<CUcontext> contexts_;
  // Contexts' devices, for the metric sampler's thread only.
  std::map<CUcontext, int> contextDevices_;

  // Asks CUPTI for complete buffers every flushPeriodMs, from enable() to disable().
  std::unique_ptr<PeriodicFlusher> flusher_;
  std::atomic<bool> flushRefusalSaid_{false};

  // GPU metrics, when asked for: started and finished with each window.
  std::unique_ptr<PmSampler> metrics_;
  std::atomic<int64_t> sampleClockOffsetNs_{0};

  // What CUPTI's completion callback shares with poll().
  std::mutex queueMutex_;
  std::vector<Completed> queue_;
  uint64_t droppedRecords_ = 0;
  std::atomic<bool> windowEnding_{false};  // the window's last flush has begun

  // The pipeline thread's own.
  std::vector<Completed> batch_;  // queue_'s contents, swapped out to decode without the lock
  std::size_t batchNext_ = 0;     // batch_'s next buffer to decode
  ActivityDecoder decoder_;
  StringTable* decoderStrings_ = nullptr;
  std::set<uint32_t> describedDevices_;
  int64_t buffersReportedNs_ = 0;  // when reportBuffers() last said something
};

}  // namespace kinetrace::detail
