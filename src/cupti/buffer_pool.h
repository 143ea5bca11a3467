#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

// Activity buffers lent to CUPTI: fixed-size, 8-byte aligned, capped in number, and reused
// rather than freed and reallocated. When all are in use and the cap is reached, a request
// is refused: CUPTI then drops records (and counts them), and the pool counts the refusal.
//
// Called from CUPTI's threads (request) and from the thread that flushes (complete), never
// from the application's hot path; a mutex is fine here.

namespace kinetrace::detail {

class BufferPool {
 public:
  BufferPool(std::size_t bufferBytes, std::size_t capBytes);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of bufferBytes(), or nullptr when the cap is reached (counted).
  uint8_t* acquire() noexcept;
  // Gives a buffer back for reuse.
  void release(uint8_t* buffer) noexcept;

  std::size_t bufferBytes() const { return bufferBytes_; }
  std::size_t maxBuffers() const { return maxBuffers_; }
  uint64_t refused() const;
  std::size_t allocated() const;
  void resetRefused();

 private:
  const std::size_t bufferBytes_;
  const std::size_t maxBuffers_;
  mutable std::mutex mutex_;
  std::vector<uint8_t*> free_;
  std::vector<uint8_t*> all_;
  uint64_t refused_ = 0;
};

}  // namespace kinetrace::detail
