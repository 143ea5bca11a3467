// The public host-recording entry points (kinetrace/host.h): the application's hot path.

#include <algorithm>
#include <cstring>

#include "host/host_recorder.h"
#include "kinetrace/host.h"

namespace kinetrace {
namespace detail {
namespace {

struct Name {
  const char* data;
  uint32_t size;
  bool literal;
};

Name literalName(const char* data, std::size_t size) {
  return Name{data, static_cast<uint32_t>(std::min(size, kMaxCopiedNameBytes)), true};
}
Name copiedName(std::string_view name) {
  return Name{name.data(), static_cast<uint32_t>(std::min(name.size(), kMaxCopiedNameBytes)), false};
}

// Writes one record with its name: a literal by address, anything else copied into the
// slots right after the record. Returns false when the record was dropped.
inline bool record(ThreadBuffer& buffer, HostEventKind kind, uint64_t a, Name name) noexcept {
  const uint32_t extra = name.literal ? 0 : nameSlots(name.size);
  HostEventRecord* r = HostRecorder::reserve(buffer, 1 + extra);
  if (r == nullptr) return false;
  r->ticks = Clock::ticks();
  r->a = a;
  r->c = name.size;
  r->kind = kind;
  if (name.literal) {
    r->b = reinterpret_cast<uint64_t>(name.data);
    r->flags = kNameStatic;
  } else {
    r->b = 0;
    r->flags = kNameInline;
    std::memcpy(r + 1, name.data, name.size);
  }
  HostRecorder::publish(buffer, 1 + extra);
  return true;
}

inline void beginRange(ThreadBuffer& buffer, Name name) noexcept {
  // The depth moves even when the record is dropped, so the matching end closes this range
  // and not its parent; the end names the range it closes, so a dropped begin is never
  // paired with another range's end.
  uint64_t id = buffer.nextRangeSeq++;
  if (buffer.depth < kMaxRangeDepth) buffer.openRanges[buffer.depth] = id;
  ++buffer.depth;
  record(buffer, HostEventKind::RangeBegin, id, name);
}

inline uint64_t bitsOf(double value) noexcept {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace

void beginRangeStatic(const char* literal, std::size_t size) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) beginRange(*buffer, literalName(literal, size));
}

void beginRangeCopy(std::string_view name) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) beginRange(*buffer, copiedName(name));
}

void endRangeNow() noexcept {
  ThreadBuffer* buffer = HostRecorder::threadBuffer();
  // An end without a begin in this recording (the range opened before start()) is not
  // recorded: the collector would have nothing to pair it with.
  if (buffer == nullptr || buffer->depth == 0) return;
  --buffer->depth;
  const uint64_t id = buffer->depth < kMaxRangeDepth ? buffer->openRanges[buffer->depth] : 0;
  HostEventRecord* r = HostRecorder::reserve(*buffer);
  if (r == nullptr) return;  // its begin may be recorded; the range then ends at stop
  r->ticks = Clock::ticks();
  r->a = id;
  r->flags = 0;
  r->kind = HostEventKind::RangeEnd;
  HostRecorder::publish(*buffer);
}

void instantStatic(const char* literal, std::size_t size) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    record(*buffer, HostEventKind::Instant, 0, literalName(literal, size));
  }
}

void instantCopy(std::string_view name) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    record(*buffer, HostEventKind::Instant, 0, copiedName(name));
  }
}

void counterStatic(const char* literal, std::size_t size, double value) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    record(*buffer, HostEventKind::Counter, bitsOf(value), literalName(literal, size));
  }
}

void counterCopy(std::string_view name, double value) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    record(*buffer, HostEventKind::Counter, bitsOf(value), copiedName(name));
  }
}

uint64_t startAsyncRangeCopy(std::string_view name) noexcept {
  ThreadBuffer* buffer = HostRecorder::threadBuffer();
  if (buffer == nullptr) return 0;
  // Ids come from the thread's range sequence: unique across threads, usable as the
  // External id that links GPU work to the range, and they name the starting thread.
  const uint64_t id = buffer->nextRangeSeq++;
  buffer->openAsync[buffer->asyncNext++ % kOpenAsyncSlots].store(id, std::memory_order_relaxed);
  record(*buffer, HostEventKind::AsyncBegin, id, copiedName(name));
  return id;
}

void endAsyncRangeNow(uint64_t id) noexcept {
  if (id == 0) return;
  ThreadBuffer* buffer = HostRecorder::threadBuffer();
  if (buffer == nullptr) return;
  HostRecorder::instance().forgetAsyncRange(id);
  HostEventRecord* r = HostRecorder::reserve(*buffer);
  if (r == nullptr) return;
  r->ticks = Clock::ticks();
  r->a = id;
  r->flags = 0;
  r->kind = HostEventKind::AsyncEnd;
  HostRecorder::publish(*buffer);
}

}  // namespace detail

bool recording() noexcept {
  return detail::HostRecorder::recordingGeneration.load(std::memory_order_relaxed) != 0;
}

void setThreadName(std::string_view name) { detail::HostRecorder::instance().setThreadName(name); }

}  // namespace kinetrace
