#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "model/memory_budget.h"

// Activity buffers lent to CUPTI: fixed-size, 8-byte aligned, reused rather than freed and
// reallocated, and counted in the tracer's MemoryBudget. When every buffer is in use and the
// budget refuses another, a request is refused: CUPTI then drops records (and counts them),
// and the pool counts the refusal. It also keeps how CUPTI handed buffers back: a record
// waits in its buffer until then, and a launch waits for its record (HandOvers).
//
// Called from CUPTI's threads (request) and from the pipeline thread (release), never
// from the application's hot path; a mutex is fine here.

namespace kinetrace::detail {

class BufferPool {
 public:
  // Buffers CUPTI handed back holding records, since resetHandOvers().
  struct HandOvers {
    uint64_t count = 0;
    uint64_t beforeFull = 0;    // with room for more records: a flush asked for them
    uint64_t atWindowEnd = 0;   // by the flush that ends a window (counted apart from those)
    int64_t longestHeldNs = 0;  // the longest one stayed with CUPTI, lent to handed back
  };

  // At most `maxBuffers` buffers exist at once (at least one).
  BufferPool(std::size_t bufferBytes, std::size_t maxBuffers, MemoryBudget& budget);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of bufferBytes(), or nullptr when the budget or the count is exhausted (counted),
  // lent at `nowNs`.
  uint8_t* acquire(int64_t nowNs) noexcept;
  // CUPTI handed `buffer` back at `nowNs` with `validSize` bytes of records; `windowEnd`: by
  // the flush that ends a window. An empty buffer is not counted.
  void noteHandedBack(const uint8_t* buffer, std::size_t validSize, int64_t nowNs,
                      bool windowEnd) noexcept;
  HandOvers handOvers() const;
  void resetHandOvers();
  // The time before which every buffer lent has come back through release(): a record is
  // written into a buffer lent before it, so every record written before then has been
  // handed over and decoded. `nowNs` when no buffer is out.
  int64_t everythingBackBeforeNs(int64_t nowNs) const;
  // Gives a buffer back for reuse; one the pool did not lend, or lent no more, is ignored.
  void release(uint8_t* buffer) noexcept;

  std::size_t bufferBytes() const { return bufferBytes_; }
  std::size_t maxBuffers() const { return maxBuffers_; }
  // Refusals since the last call (the count starts again from zero).
  uint64_t takeRefused();
  std::size_t allocated() const;
  // Buffers lent and not yet released: with CUPTI, or handed back and not yet decoded.
  std::size_t lentOut() const;

 private:
  // all_'s index of `buffer`; all_.size() when it is not one of the pool's. Under mutex_.
  std::size_t indexOf(const uint8_t* buffer) const;

  const std::size_t bufferBytes_;
  const std::size_t maxBuffers_;
  MemoryBudget& budget_;
  mutable std::mutex mutex_;
  std::vector<uint8_t*> all_;
  std::vector<std::size_t> freeIndices_;  // all_'s buffers not lent, by index
  std::vector<int64_t> lentAtNs_;         // all_[i] was last lent at lentAtNs_[i]
  std::vector<bool> out_;                 // all_[i] is lent (with CUPTI or not yet decoded)
  uint64_t refused_ = 0;
  HandOvers handOvers_;
};

}  // namespace kinetrace::detail
