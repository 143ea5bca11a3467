#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cupti/activity_decoder.h"
#include "cupti/buffer_pool.h"
#include "cupti/cupti_api.h"
#include "cupti/driver_api.h"
#include "cupti/launch_callbacks.h"
#include "model/gpu_source.h"

namespace kinetrace::detail {

// GPU activity through CUPTI: owns the subscription, the activity buffers, the decoder
// thread and the set of contexts to synchronise at stop. One may be enabled per process
// (CUPTI's activity callbacks are process-wide); a second is refused with a message.
//
// Threads: enable/start/stop/disable from the session's thread; buffer callbacks from
// CUPTI's threads; the decoder on its own thread, so CUPTI's completion callback only
// queues a buffer and returns.
class CuptiSource final : public GpuSource {
 public:
  struct Environment {
    CuptiApi* cupti = nullptr;
    // Whether kinetrace may start the CUDA driver itself (false inside CUDA injection,
    // which runs within the driver's own initialisation).
    bool initializeDriver = true;
    // Whether to open libcuda at all (tests run without a driver).
    bool useDriver = true;
  };

  explicit CuptiSource(Environment environment);
  ~CuptiSource() override;

  std::string enable(const GpuOptions& options) override;
  void start(int64_t startNs) override;
  void stop(TraceData& trace) override;
  void disable() noexcept override;
  std::string describe() const override;

  // ---- entry points for the C adapters (CUPTI's threads) ---------------------------
  void onBufferRequested(uint8_t** buffer, size_t* size, size_t* maxNumRecords) noexcept;
  void onBufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer, size_t size,
                         size_t validSize) noexcept;
  void onContextSeen(CUcontext context) noexcept;

  // How many CUDA contexts the source will synchronise at stop.
  std::size_t knownContexts();

 private:
  struct Completed {
    uint8_t* buffer;
    size_t validSize;
  };

  std::string enableActivities();
  std::string enableCallbacks();
  void disableCollection() noexcept;
  void decoderLoop();
  void drainDecoder();
  void moveDecodedInto(TraceData& trace);
  void nameApiCalls(TraceData& trace);
  void addDeviceMetadata(TraceData& trace);

  Environment env_;
  GpuOptions options_;
  DriverApi driver_;
  bool enabled_ = false;      // subscribed, buffers registered
  bool collecting_ = false;   // activity kinds and callbacks on
  bool ownClock_ = false;     // CUPTI stamps records with kinetrace's clock
  uint32_t cuptiVersion_ = 0;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  CallbackTable callbacks_;
  std::vector<CUpti_ActivityKind> enabledKinds_;
  std::unique_ptr<BufferPool> pool_;
  int64_t windowStartNs_ = 0;

  std::mutex contextsMutex_;
  std::set<CUcontext> contexts_;

  // Decoder thread and what it shares with CUPTI's completion callback.
  std::mutex queueMutex_;
  std::condition_variable queueChanged_;
  std::vector<Completed> queue_;
  std::vector<Completed> batch_;  // the decoder's side of queue_, swapped to avoid allocation
  bool decoding_ = false;
  bool quit_ = false;
  uint64_t droppedRecords_ = 0;
  std::thread decoderThread_;

  std::mutex decodedMutex_;
  TraceData decoded_;
  ActivityDecoder decoder_{decoded_};
};

}  // namespace kinetrace::detail
