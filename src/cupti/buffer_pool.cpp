#include "cupti/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace kinetrace::detail {
namespace {
// CUPTI requires activity buffers aligned to 8 bytes.
constexpr std::size_t kAlignment = 8;
// A buffer handed back with more room than this left was not full: no CUPTI record is
// anywhere near this size (a kernel record is about 200 bytes).
constexpr std::size_t kRoomOfAFullBuffer = 4096;
}  // namespace

BufferPool::BufferPool(std::size_t bufferBytes, std::size_t maxBuffers, MemoryBudget& budget)
    : bufferBytes_((std::max<std::size_t>(bufferBytes, 1024) + kAlignment - 1) / kAlignment * kAlignment),
      maxBuffers_(std::max<std::size_t>(maxBuffers, 1)),
      budget_(budget) {
  // Reserved up front so that release() and the request path never allocate.
  freeIndices_.reserve(maxBuffers_);
  all_.reserve(maxBuffers_);
  lentAtNs_.reserve(maxBuffers_);
  out_.reserve(maxBuffers_);
}

BufferPool::~BufferPool() {
  for (uint8_t* buffer : all_) std::free(buffer);
  budget_.release(all_.size() * bufferBytes_);
}

uint8_t* BufferPool::acquire(int64_t nowNs) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!freeIndices_.empty()) {
    // No search here: CUPTI may ask on a program thread, when a launch fills a buffer.
    const std::size_t index = freeIndices_.back();
    freeIndices_.pop_back();
    lentAtNs_[index] = nowNs;
    out_[index] = true;
    return all_[index];
  }
  if (all_.size() < maxBuffers_ && budget_.tryAcquire(bufferBytes_)) {
    auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, bufferBytes_));
    if (buffer != nullptr) {
      all_.push_back(buffer);
      lentAtNs_.push_back(nowNs);
      out_.push_back(true);
      return buffer;
    }
    budget_.release(bufferBytes_);
  }
  ++refused_;
  return nullptr;
}

void BufferPool::release(uint8_t* buffer) noexcept {
  if (buffer == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t index = indexOf(buffer);
  if (index == all_.size() || !out_[index]) return;  // not one of ours, or not lent
  out_[index] = false;
  freeIndices_.push_back(index);
}

std::size_t BufferPool::indexOf(const uint8_t* buffer) const {
  // A search among the buffers allocated, twice per buffer of records, on CUPTI's and the
  // pipeline's threads: a few exist in steady state, at most maxBuffers_.
  return static_cast<std::size_t>(std::find(all_.begin(), all_.end(), buffer) - all_.begin());
}

void BufferPool::noteHandedBack(const uint8_t* buffer, std::size_t validSize, int64_t nowNs,
                                bool windowEnd) noexcept {
  if (buffer == nullptr || validSize == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t index = indexOf(buffer);
  if (index == all_.size()) return;  // not one of ours
  ++handOvers_.count;
  if (windowEnd) {
    ++handOvers_.atWindowEnd;
  } else if (validSize + kRoomOfAFullBuffer < bufferBytes_) {
    ++handOvers_.beforeFull;
  }
  const int64_t held = nowNs - lentAtNs_[index];
  handOvers_.longestHeldNs = std::max(handOvers_.longestHeldNs, held);
}

BufferPool::HandOvers BufferPool::handOvers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return handOvers_;
}

void BufferPool::resetHandOvers() {
  std::lock_guard<std::mutex> lock(mutex_);
  handOvers_ = {};
}

int64_t BufferPool::everythingBackBeforeNs(int64_t nowNs) const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t before = nowNs;
  for (std::size_t i = 0; i < all_.size(); ++i) {
    if (out_[i]) before = std::min(before, lentAtNs_[i]);
  }
  return before;
}

uint64_t BufferPool::takeRefused() {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t refused = refused_;
  refused_ = 0;
  return refused;
}

std::size_t BufferPool::allocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return all_.size();
}

std::size_t BufferPool::lentOut() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return all_.size() - freeIndices_.size();
}

}  // namespace kinetrace::detail
