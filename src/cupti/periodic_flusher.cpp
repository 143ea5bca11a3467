#include "cupti/periodic_flusher.h"

#include <pthread.h>

namespace kinetrace::detail {

PeriodicFlusher::PeriodicFlusher(std::function<void()> flush, std::chrono::milliseconds period)
    : flush_(std::move(flush)), period_(period), thread_([this] { run(); }) {}

PeriodicFlusher::~PeriodicFlusher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void PeriodicFlusher::run() {
  pthread_setname_np(pthread_self(), "kinetrace-flush");
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period_, [this] { return quit_; })) {
    lock.unlock();
    flush_();
    lock.lock();
  }
}

}  // namespace kinetrace::detail
