// The public host-recording entry points (kinetrace/host.h): the application's hot path.

#include <algorithm>
#include <cstring>

#include "host/host_recorder.h"
#include "kinetrace/host.h"
#include "model/event_args.h"

namespace kinetrace {
namespace detail {
namespace {

struct Name {
  const char* data;
  uint32_t size;
  bool literal;
  bool cut = false;  // longer than kMaxNameBytes: cut, and counted when recorded
};

// A name longer than kMaxNameBytes is cut before the character that crosses the limit: a
// UTF-8 character's continuation bytes (10xxxxxx) never start the part cut off, so the name
// kept stays valid UTF-8 (at most three bytes shorter than the limit).
[[gnu::noinline]] uint32_t cutLength(const char* data) noexcept {
  std::size_t cut = kMaxNameBytes;
  while (cut > kMaxNameBytes - 3 && (static_cast<unsigned char>(data[cut]) & 0xC0) == 0x80) --cut;
  return static_cast<uint32_t>(cut);
}

inline Name nameOf(const char* data, std::size_t size, bool literal) noexcept {
  if (__builtin_expect(size <= kMaxNameBytes, 1))
    return Name{data, static_cast<uint32_t>(size), literal};
  return Name{data, cutLength(data), literal, true};
}
Name literalName(const char* data, std::size_t size) {
  return nameOf(data, size, true);
}
Name copiedName(std::string_view name) {
  return nameOf(name.data(), name.size(), false);
}

inline void countIfCut(ThreadBuffer& buffer, const Name& name) noexcept {
  if (__builtin_expect(name.cut, 0)) {
    buffer.namesCut.store(buffer.namesCut.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
  }
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
  countIfCut(buffer, name);
  return true;
}

// A copied name followed by its arguments, encoded straight into the thread's buffer.
// `args` empty: written as record() would. Out of line: the plain calls' frames stay small.
[[gnu::noinline]] bool recordWithArgs(ThreadBuffer& buffer, HostEventKind kind, uint64_t a,
                                      Name name, const EventArg* args, std::size_t count) noexcept {
  if (count == 0) return record(buffer, kind, a, name);
  // Encoded on the stack first: the slots to reserve depend on the encoded length.
  char encoded[kMaxEventArgBytes];
  const std::size_t bytes = encodeEventArgs(args, count, encoded, sizeof encoded);
  const uint32_t extra = nameSlots(name.size + bytes);
  HostEventRecord* r = HostRecorder::reserve(buffer, 1 + extra);
  if (r == nullptr) return false;
  r->ticks = Clock::ticks();
  r->a = a;
  r->b = 0;
  r->c = name.size;
  r->d = static_cast<uint16_t>(bytes);
  r->kind = kind;
  r->flags = kNameInline | kHasArgs;
  char* inlineBytes = reinterpret_cast<char*>(r + 1);
  std::memcpy(inlineBytes, name.data, name.size);
  std::memcpy(inlineBytes + name.size, encoded, bytes);
  HostRecorder::publish(buffer, 1 + extra);
  countIfCut(buffer, name);
  return true;
}

// The end of range `id`, with the arguments known only at its end (NVTX's
// nvtxRangePopPayload: NCCL gives a new communicator's id once it is made).
inline void recordEnd(ThreadBuffer& buffer, HostEventKind kind, uint64_t id, const EventArg* args,
                      std::size_t count) noexcept {
  if (count > 0) {
    recordWithArgs(buffer, kind, id, Name{"", 0, false}, args, count);
    return;
  }
  HostEventRecord* r = HostRecorder::reserve(buffer);
  if (r == nullptr) return;
  r->ticks = Clock::ticks();
  r->a = id;
  r->flags = 0;
  r->kind = kind;
  HostRecorder::publish(buffer);
}

inline uint64_t beginRangeId(ThreadBuffer& buffer) noexcept {
  // The depth moves even when the record is dropped, so the matching end closes this range
  // and not its parent; the end names the range it closes, so a dropped begin is never
  // paired with another range's end.
  uint64_t id = buffer.nextRangeSeq++;
  if (buffer.depth < kMaxRangeDepth) buffer.openRanges[buffer.depth] = id;
  ++buffer.depth;
  return id;
}

inline void beginRange(ThreadBuffer& buffer, Name name) noexcept {
  record(buffer, HostEventKind::RangeBegin, beginRangeId(buffer), name);
}

// Async range ids come from the thread's range sequence: unique across threads, usable as
// the External id that links GPU work to the range, and they name the starting thread.
inline uint64_t startAsyncRangeId(ThreadBuffer& buffer) noexcept {
  const uint64_t id = buffer.nextRangeSeq++;
  buffer.openAsync[buffer.asyncNext++ % kOpenAsyncSlots].store(id, std::memory_order_relaxed);
  return id;
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
  endRangeWithArgs(nullptr, 0);
}

void endRangeWithArgs(const EventArg* args, std::size_t count) noexcept {
  ThreadBuffer* buffer = HostRecorder::threadBuffer();
  // An end without a begin in this recording (the range opened before start()) is not
  // recorded: the collector would have nothing to pair it with.
  if (buffer == nullptr || buffer->depth == 0) return;
  --buffer->depth;
  const uint64_t id = buffer->depth < kMaxRangeDepth ? buffer->openRanges[buffer->depth] : 0;
  // Its begin may be recorded even when the end is dropped: the range then ends at stop.
  recordEnd(*buffer, HostEventKind::RangeEnd, id, args, count);
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
  const uint64_t id = startAsyncRangeId(*buffer);
  record(*buffer, HostEventKind::AsyncBegin, id, copiedName(name));
  return id;
}

void beginRangeWithArgs(std::string_view name, const EventArg* args, std::size_t count) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    recordWithArgs(*buffer, HostEventKind::RangeBegin, beginRangeId(*buffer), copiedName(name),
                   args, count);
  }
}

uint64_t startAsyncRangeWithArgs(std::string_view name, const EventArg* args,
                                 std::size_t count) noexcept {
  ThreadBuffer* buffer = HostRecorder::threadBuffer();
  if (buffer == nullptr) return 0;
  const uint64_t id = startAsyncRangeId(*buffer);
  recordWithArgs(*buffer, HostEventKind::AsyncBegin, id, copiedName(name), args, count);
  return id;
}

void instantWithArgs(std::string_view name, const EventArg* args, std::size_t count) noexcept {
  if (ThreadBuffer* buffer = HostRecorder::threadBuffer()) {
    recordWithArgs(*buffer, HostEventKind::Instant, 0, copiedName(name), args, count);
  }
}

void endAsyncRangeNow(uint64_t id) noexcept {
  endAsyncRangeWithArgs(id, nullptr, 0);
}

void endAsyncRangeWithArgs(uint64_t id, const EventArg* args, std::size_t count) noexcept {
  if (id == 0) return;
  ThreadBuffer* buffer = HostRecorder::threadBuffer();
  if (buffer == nullptr) return;
  HostRecorder::instance().forgetAsyncRange(id);
  recordEnd(*buffer, HostEventKind::AsyncEnd, id, args, count);
}

}  // namespace detail

bool recording() noexcept {
  return detail::HostRecorder::recordingGeneration.load(std::memory_order_relaxed) != 0;
}

void setThreadName(std::string_view name) { detail::HostRecorder::instance().setThreadName(name); }

}  // namespace kinetrace
