// The public host-recording entry points (kinetrace/host.h): the application's hot path.

#include <cstring>

#include "host/host_recorder.h"
#include "kinetrace/host.h"

namespace kinetrace {
namespace detail {
namespace {

inline void beginRange(uint64_t nameRef, uint32_t nameLength, ThreadBuffer& buffer) noexcept {
  // The depth moves even when the record is dropped, so the matching end pops this range
  // and not its parent. Drops are sticky for the session (the cap stays reached), so a
  // dropped begin is never paired with a recorded end.
  uint64_t id = buffer.nextRangeSeq++;
  if (buffer.depth < kMaxRangeDepth) buffer.openRanges[buffer.depth] = id;
  ++buffer.depth;
  HostEventRecord* r = HostRecorder::reserve(buffer);
  if (r == nullptr) return;
  r->ticks = Clock::ticks();
  r->a = id;
  r->b = nameRef;
  r->c = nameLength;
  r->kind = HostEventKind::RangeBegin;
  HostRecorder::publish(buffer);
}

inline void point(HostEventKind kind, uint64_t nameRef, uint32_t nameLength, uint64_t payload,
                  ThreadBuffer& buffer) noexcept {
  HostEventRecord* r = HostRecorder::reserve(buffer);
  if (r == nullptr) return;
  r->ticks = Clock::ticks();
  r->a = payload;
  r->b = nameRef;
  r->c = nameLength;
  r->kind = kind;
  HostRecorder::publish(buffer);
}

inline uint64_t bitsOf(double value) noexcept {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace

void beginRangeStatic(const char* literal) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    beginRange(reinterpret_cast<uint64_t>(literal), 0, *buffer);
  }
}

void beginRangeCopy(std::string_view name) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    uint32_t length = 0;
    uint64_t ref = HostRecorder::copyName(*buffer, name, length);
    beginRange(ref, length, *buffer);
  }
}

void endRangeNow() noexcept {
  ThreadBuffer* buffer = HostRecorder::threadBuffer();
  // An end without a begin in this recording (the range opened before start()) is not
  // recorded: the collector would have nothing to pair it with.
  if (buffer == nullptr || buffer->depth == 0) return;
  --buffer->depth;
  HostEventRecord* r = HostRecorder::reserve(*buffer);
  if (r == nullptr) return;  // its begin may be recorded; the range then ends at stop
  r->ticks = Clock::ticks();
  r->kind = HostEventKind::RangeEnd;
  HostRecorder::publish(*buffer);
}

void instantStatic(const char* literal) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    point(HostEventKind::Instant, reinterpret_cast<uint64_t>(literal), 0, 0, *buffer);
  }
}

void instantCopy(std::string_view name) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    uint32_t length = 0;
    uint64_t ref = HostRecorder::copyName(*buffer, name, length);
    point(HostEventKind::Instant, ref, length, 0, *buffer);
  }
}

void counterStatic(const char* literal, double value) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    point(HostEventKind::Counter, reinterpret_cast<uint64_t>(literal), 0, bitsOf(value), *buffer);
  }
}

void counterCopy(std::string_view name, double value) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    uint32_t length = 0;
    uint64_t ref = HostRecorder::copyName(*buffer, name, length);
    point(HostEventKind::Counter, ref, length, bitsOf(value), *buffer);
  }
}

uint64_t startAsyncRangeCopy(std::string_view name) noexcept {
  ThreadBuffer* buffer = HostRecorder::threadBuffer();
  if (buffer == nullptr) return 0;
  // Ids come from the thread's range sequence: unique across threads, and usable as the
  // External id that links GPU work to the range.
  uint64_t id = buffer->nextRangeSeq++;
  uint32_t length = 0;
  uint64_t ref = HostRecorder::copyName(*buffer, name, length);
  point(HostEventKind::AsyncBegin, ref, length, id, *buffer);
  return id;
}

void endAsyncRangeNow(uint64_t id) noexcept {
  if (id == 0) return;
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    point(HostEventKind::AsyncEnd, 0, 0, id, *buffer);
  }
}

}  // namespace detail

void setThreadName(std::string_view name) { detail::HostRecorder::instance().setThreadName(name); }

}  // namespace kinetrace
