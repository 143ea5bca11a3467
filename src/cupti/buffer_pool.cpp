#include "cupti/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace kinetrace::detail {
namespace {
// CUPTI requires activity buffers aligned to 8 bytes.
constexpr std::size_t kAlignment = 8;
}  // namespace

BufferPool::BufferPool(std::size_t bufferBytes, std::size_t capBytes)
    : bufferBytes_((std::max<std::size_t>(bufferBytes, 1024) + kAlignment - 1) / kAlignment * kAlignment),
      maxBuffers_(std::max<std::size_t>(capBytes / bufferBytes_, 1)) {}

BufferPool::~BufferPool() {
  for (uint8_t* buffer : all_) std::free(buffer);
}

uint8_t* BufferPool::acquire() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!free_.empty()) {
    uint8_t* buffer = free_.back();
    free_.pop_back();
    return buffer;
  }
  if (all_.size() < maxBuffers_) {
    auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, bufferBytes_));
    if (buffer != nullptr) {
      try {
        all_.push_back(buffer);
        free_.reserve(all_.size());  // release() then never allocates
        return buffer;
      } catch (const std::bad_alloc&) {
        std::free(buffer);
      }
    }
  }
  ++refused_;
  return nullptr;
}

void BufferPool::release(uint8_t* buffer) noexcept {
  if (buffer == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(buffer);
}

uint64_t BufferPool::refused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refused_;
}

std::size_t BufferPool::allocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return all_.size();
}

void BufferPool::resetRefused() {
  std::lock_guard<std::mutex> lock(mutex_);
  refused_ = 0;
}

}  // namespace kinetrace::detail
