#pragma once

// A GPU backend that records nothing and remembers how the session drove it: for tests of
// front-ends (the injection's controller) that need a GPU source without CUPTI or a GPU.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model/gpu_source.h"

namespace kinetrace::testing {

// What the session asked of every FakeGpuSource made with it. Counters are atomic: the
// session drives the source from whichever thread starts and stops it (a test's, the
// controller's control thread).
struct FakeGpuCalls {
  std::atomic<int> enables{0};
  std::atomic<int> starts{0};
  std::atomic<int> finishedWindows{0};
  std::atomic<int> stoppedCollecting{0};
  std::atomic<int> disables{0};

  // The options of the last enable().
  detail::GpuOptions options() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return options_;
  }
  void noteEnable(const detail::GpuOptions& options) {
    std::lock_guard<std::mutex> lock(mutex_);
    options_ = options;
    ++enables;
  }

 private:
  mutable std::mutex mutex_;
  detail::GpuOptions options_;
};

class FakeGpuSource final : public detail::GpuSource {
 public:
  explicit FakeGpuSource(FakeGpuCalls& calls) : calls_(calls) {}

  detail::Status enable(const detail::GpuOptions& options, detail::MemoryBudget&) override {
    calls_.noteEnable(options);
    return {};
  }
  void start(int64_t) override { ++calls_.starts; }
  bool poll(detail::GpuBatch&, detail::StringTable&) override { return false; }
  std::size_t decodeRoomBytes() const override { return 0; }
  int64_t finishWindow() override {
    ++calls_.finishedWindows;
    return 0;
  }
  void stopCollecting() noexcept override { ++calls_.stoppedCollecting; }
  void disable() noexcept override { ++calls_.disables; }
  std::string describe() const override { return "fake GPU"; }
  Metadata metadata() const override { return {}; }
  std::vector<detail::DeviceInfo> devices(detail::StringTable&) const override { return {}; }
  std::string apiName(detail::ApiDomain, uint32_t callbackId) const override {
    return "cudaFake" + std::to_string(callbackId);
  }

 private:
  FakeGpuCalls& calls_;
};

}  // namespace kinetrace::testing
