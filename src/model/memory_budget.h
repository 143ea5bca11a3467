#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kinetrace::detail {

// The one cap on what the tracer holds in a process: host event chunks, CUPTI activity
// buffers, records waiting to be assembled, and a trace kept in memory. Every holder asks
// before it allocates and gives back what it frees; a refused request is the holder's cue
// to drop (and count) records instead of growing.
//
// Lock-free: host threads ask from their refill path, CUPTI's threads from the buffer
// request callback, the pipeline thread for assembled records.
class MemoryBudget {
 public:
  explicit MemoryBudget(std::size_t capBytes = 0) : cap_(capBytes) {}

  // Takes `bytes` if that keeps the total within the cap.
  bool tryAcquire(std::size_t bytes) noexcept {
    const std::size_t cap = cap_.load(std::memory_order_relaxed);
    std::size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (used > cap || bytes > cap - used) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    notePeak(used + bytes);
    return true;
  }
  // Takes `bytes` whatever the cap: for memory already allocated that must be accounted.
  void forceAcquire(std::size_t bytes) noexcept {
    notePeak(used_.fetch_add(bytes, std::memory_order_relaxed) + bytes);
  }
  void release(std::size_t bytes) noexcept { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  void setCap(std::size_t capBytes) noexcept { cap_.store(capBytes, std::memory_order_relaxed); }
  // Starts a new peak measurement from what is held now.
  void resetPeak() noexcept { peak_.store(used_.load(std::memory_order_relaxed), std::memory_order_relaxed); }

  std::size_t cap() const noexcept { return cap_.load(std::memory_order_relaxed); }
  std::size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  std::size_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }

 private:
  void notePeak(std::size_t now) noexcept {
    std::size_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }

  std::atomic<std::size_t> cap_;
  std::atomic<std::size_t> used_{0};
  std::atomic<std::size_t> peak_{0};
};

}  // namespace kinetrace::detail
