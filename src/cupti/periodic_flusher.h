#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

// Calls a function at a fixed period on a thread of its own ("kinetrace-flush") until
// destroyed. CUPTI hands an activity buffer over when it is full, whatever its flush period
// (cuptiActivityFlushPeriod returns full buffers only): a program that launches a few
// hundred kernels a second fills a 4 MiB buffer in minutes, and until then its launches
// wait for their records. Asking with cuptiActivityFlushAll(0) hands over every buffer
// whose records are complete, full or not; it is asked from here, not from the pipeline,
// because the call can wait on CUPTI while a program thread inside a CUPTI callback waits
// on the pipeline (cudaProfilerStop ending a window). Nothing waits on this thread but its
// destructor.
namespace kinetrace::detail {

class PeriodicFlusher {
 public:
  PeriodicFlusher(std::function<void()> flush, std::chrono::milliseconds period);
  // Wakes the thread and waits for it (for the flush in progress, if any).
  ~PeriodicFlusher();
  PeriodicFlusher(const PeriodicFlusher&) = delete;
  PeriodicFlusher& operator=(const PeriodicFlusher&) = delete;

 private:
  void run();

  std::function<void()> flush_;
  std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace kinetrace::detail
