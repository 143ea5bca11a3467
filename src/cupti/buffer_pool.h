#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "model/memory_budget.h"

// Activity buffers lent to CUPTI: fixed-size, 8-byte aligned, reused rather than freed and
// reallocated, and counted in the tracer's MemoryBudget. When every buffer is in use and the
// budget refuses another, a request is refused: CUPTI then drops records (and counts them),
// and the pool counts the refusal.
//
// Called from CUPTI's threads (request) and from the pipeline thread (release), never
// from the application's hot path; a mutex is fine here.

namespace kinetrace::detail {

class BufferPool {
 public:
  // At most `maxBuffers` buffers exist at once (at least one).
  BufferPool(std::size_t bufferBytes, std::size_t maxBuffers, MemoryBudget& budget);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of bufferBytes(), or nullptr when the budget or the count is exhausted (counted).
  uint8_t* acquire() noexcept;
  // Gives a buffer back for reuse.
  void release(uint8_t* buffer) noexcept;

  std::size_t bufferBytes() const { return bufferBytes_; }
  std::size_t maxBuffers() const { return maxBuffers_; }
  // Refusals since the last call (the count starts again from zero).
  uint64_t takeRefused();
  std::size_t allocated() const;

 private:
  const std::size_t bufferBytes_;
  const std::size_t maxBuffers_;
  MemoryBudget& budget_;
  mutable std::mutex mutex_;
  std::vector<uint8_t*> free_;
  std::vector<uint8_t*> all_;
  uint64_t refused_ = 0;
};

}  // namespace kinetrace::detail
