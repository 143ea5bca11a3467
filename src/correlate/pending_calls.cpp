#include "correlate/pending_calls.h"

#include <algorithm>

namespace kinetrace::detail {

void PendingCalls::add(uint32_t correlationId, const PendingCall& call) {
  calls_[correlationId] = call;
  byStart_.emplace(call.startNs, correlationId);
}

PendingCall* PendingCalls::find(uint32_t correlationId) {
  if (correlationId == 0) return nullptr;
  auto found = calls_.find(correlationId);
  return found == calls_.end() ? nullptr : &found->second;
}

void PendingCalls::forget(uint32_t correlationId, const PendingCall& call) {
  if (call.effect != CallEffect::Graph) calls_.erase(correlationId);
}

int64_t PendingCalls::watermark() {
  while (!byStart_.empty()) {
    auto [start, id] = byStart_.top();
    auto found = calls_.find(id);
    if (found != calls_.end() && found->second.startNs == start) return start;
    byStart_.pop();  // joined or expired
  }
  return INT64_MAX;
}

void PendingCalls::expire(int64_t horizonNs) {
  // The records of a call that began before `due` were written (30 s is long enough for
  // its work to run) into buffers CUPTI has handed back: they came, or they never will.
  const int64_t due = std::min(horizonNs, allRecordsBeforeNs_) - kExpiryNs;
  const int64_t overdue = horizonNs - kExpiryNs;
  while (!byStart_.empty()) {
    auto [start, id] = byStart_.top();
    const bool givenUp = start < due || start < horizonNs - kLongestNs ||
                         (start < overdue && calls_.size() > kKeptPastExpiry);
    if (!givenUp) break;
    byStart_.pop();
    auto found = calls_.find(id);
    if (found != calls_.end() && found->second.startNs == start) calls_.erase(found);
  }
  // The heap keeps joined calls until they reach its top; rebuild it when they dominate.
  if (byStart_.size() > 4 * calls_.size() + 1024) {
    decltype(byStart_) rebuilt;
    for (const auto& [id, call] : calls_) rebuilt.emplace(call.startNs, id);
    byStart_ = std::move(rebuilt);
  }
}

void PendingCalls::shed(std::size_t bytes) {
  constexpr std::size_t kPerCall = sizeof(PendingCall) + 48;
  std::size_t freed = 0;
  while (freed < bytes && !byStart_.empty()) {
    auto [start, id] = byStart_.top();
    byStart_.pop();
    auto found = calls_.find(id);
    if (found == calls_.end() || found->second.startNs != start) continue;
    calls_.erase(found);
    freed += kPerCall;
  }
  if (calls_.empty()) {
    calls_ = {};  // gives back the buckets too
    byStart_ = {};
  }
}

std::size_t PendingCalls::heldBytes() const {
  // Hash-map nodes cost about their payload plus two pointers and a hash.
  constexpr std::size_t kNode = 32;
  return calls_.size() * (sizeof(PendingCall) + kNode) + byStart_.size() * 16;
}

}  // namespace kinetrace::detail
