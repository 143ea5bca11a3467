#include "host/host_recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <new>

namespace kinetrace::detail {

std::atomic<uint64_t> HostRecorder::recordingGeneration{0};
thread_local ThreadBuffer* tThreadBuffer = nullptr;
thread_local ThreadExitHook tThreadExitHook;

namespace {

// Range ids double as the "External id" that links GPU work to its range. The thread's
// slot in the high bits keeps them unique across threads without shared counters, and
// below 2^53 so JSON readers that parse numbers as doubles keep them exact.
constexpr int kRangeSeqBits = 40;
uint64_t rangeIdBase(uint32_t slot) { return static_cast<uint64_t>(slot + 1) << kRangeSeqBits; }

int64_t currentTid() { return static_cast<int64_t>(::syscall(SYS_gettid)); }

}  // namespace

// Thread names set before the thread records anything wait here.
thread_local std::string tPendingThreadName;

ThreadExitHook::~ThreadExitHook() {
  if (tThreadBuffer != nullptr) HostRecorder::instance().releaseThread(tThreadBuffer);
}

HostRecorder& HostRecorder::instance() {
  static HostRecorder* recorder = new HostRecorder();  // never destroyed, by design
  return *recorder;
}

ThreadBuffer* slowThreadBuffer() noexcept { return HostRecorder::instance().registerThread(); }

ThreadBuffer* HostRecorder::registerThread() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t generation = recordingGeneration.load(std::memory_order_relaxed);
  if (generation == 0) return nullptr;
  ThreadBuffer* buffer = tThreadBuffer;
  if (buffer == nullptr) {
    (void)&tThreadExitHook;  // odr-use: constructs the hook, so its destructor runs at exit
    try {
      buffer = new ThreadBuffer();
      buffer->slot = static_cast<uint32_t>(buffers_.size());
      buffers_.push_back(buffer);
    } catch (const std::bad_alloc&) {
      delete buffer;
      return nullptr;
    }
    buffer->tid = currentTid();
    buffer->threadName = tPendingThreadName;
    tThreadBuffer = buffer;
  }
  // A buffer from an earlier generation starts clean: ranges left open then are not
  // closed by this generation's endRange() calls.
  buffer->generation = generation;
  buffer->depth = 0;
  buffer->full = false;
  buffer->dropped = 0;
  buffer->droppedNameBytes = 0;
  buffer->cursor = buffer->limit = nullptr;
  buffer->chunk = nullptr;
  buffer->nameCursor = buffer->nameLimit = nullptr;
  if (buffer->nextRangeSeq == 0) buffer->nextRangeSeq = rangeIdBase(buffer->slot) + 1;
  return buffer;
}

bool HostRecorder::refill(ThreadBuffer& buffer) noexcept {
  if (buffer.full) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (buffer.generation != recordingGeneration.load(std::memory_order_relaxed)) return false;
  RecordChunk* chunk = nullptr;
  if (usedBytes_ + sizeof(RecordChunk) <= capBytes_) {
    if (!freeChunks_.empty()) {
      chunk = freeChunks_.back();
      freeChunks_.pop_back();
    } else {
      chunk = new (std::nothrow) RecordChunk();
    }
  }
  if (chunk == nullptr) {
    buffer.full = true;
    return false;
  }
  try {
    buffer.chunks.push_back(chunk);
  } catch (const std::bad_alloc&) {
    freeChunks_.push_back(chunk);
    buffer.full = true;
    return false;
  }
  usedBytes_ += sizeof(RecordChunk);
  chunk->published.store(0, std::memory_order_relaxed);
  buffer.chunk = chunk;
  buffer.cursor = chunk->records;
  buffer.limit = chunk->records + kChunkRecords;
  return true;
}

bool HostRecorder::refillNames(ThreadBuffer& buffer) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  NameChunk* chunk = nullptr;
  if (usedBytes_ + sizeof(NameChunk) <= capBytes_) {
    if (!freeNameChunks_.empty()) {
      chunk = freeNameChunks_.back();
      freeNameChunks_.pop_back();
    } else {
      chunk = new (std::nothrow) NameChunk();
    }
  }
  if (chunk == nullptr) return false;
  try {
    buffer.nameChunks.push_back(chunk);
  } catch (const std::bad_alloc&) {
    freeNameChunks_.push_back(chunk);
    return false;
  }
  usedBytes_ += sizeof(NameChunk);
  buffer.nameChunkIndex = static_cast<uint32_t>(buffer.nameChunks.size() - 1);
  buffer.nameCursor = chunk->bytes;
  buffer.nameLimit = chunk->bytes + kNameChunkBytes;
  return true;
}

uint64_t HostRecorder::copyName(ThreadBuffer& buffer, std::string_view name,
                                uint32_t& length) noexcept {
  std::size_t size = std::min(name.size(), kMaxCopiedNameBytes);
  if (size == 0) {
    length = 0;
    return reinterpret_cast<uint64_t>("");
  }
  if (static_cast<std::size_t>(buffer.nameLimit - buffer.nameCursor) < size) {
    if (!instance().refillNames(buffer)) {
      buffer.droppedNameBytes += size;
      length = 0;
      return 0;
    }
  }
  std::memcpy(buffer.nameCursor, name.data(), size);
  uint64_t offset = static_cast<uint64_t>(buffer.nameCursor - buffer.nameChunks[buffer.nameChunkIndex]->bytes);
  buffer.nameCursor += size;
  length = static_cast<uint32_t>(size);
  return kCopiedNameBit | (static_cast<uint64_t>(buffer.nameChunkIndex) << 32) | offset;
}

uint64_t HostRecorder::startRecording(std::size_t capBytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  capBytes_ = capBytes;
  usedBytes_ = 0;
  uint64_t generation = ++lastGeneration_;
  recordingGeneration.store(generation, std::memory_order_release);
  return generation;
}

void HostRecorder::stopRecording() {
  recordingGeneration.store(0, std::memory_order_release);
}

void HostRecorder::releaseThread(ThreadBuffer* buffer) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  buffer->exited = true;
}

void HostRecorder::setThreadName(std::string_view name) {
  tPendingThreadName.assign(name);
  if (ThreadBuffer* buffer = tThreadBuffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    buffer->threadName.assign(name);
  }
}

void HostRecorder::collect(TraceData& trace, const Clock& clock) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (ThreadBuffer* buffer : buffers_) {
    if (buffer->generation != lastGeneration_) continue;
    collectBuffer(*buffer, trace, clock);
    for (RecordChunk* chunk : buffer->chunks) freeChunks_.push_back(chunk);
    for (NameChunk* chunk : buffer->nameChunks) freeNameChunks_.push_back(chunk);
    buffer->chunks.clear();
    buffer->nameChunks.clear();
    // The generation stays, so the thread's next event (if any) sees a stale buffer
    // only once recording restarts and re-registers cleanly.
    buffer->generation = 0;
  }
  usedBytes_ = 0;
}

void HostRecorder::collectBuffer(ThreadBuffer& buffer, TraceData& trace, const Clock& clock) {
  trace.losses.droppedHostEvents += buffer.dropped;
  trace.losses.droppedHostNameBytes += buffer.droppedNameBytes;
  if (buffer.chunks.empty()) return;

  uint32_t thread = trace.threadIndex(trace.pid, buffer.tid);
  if (!buffer.threadName.empty()) trace.threads[thread].name = trace.strings.intern(buffer.threadName);

  auto resolveName = [&](uint64_t ref, uint32_t length) -> StringId {
    if (ref == 0) return trace.strings.intern("<name dropped: host buffer full>");
    if (ref & kCopiedNameBit) {
      uint32_t index = static_cast<uint32_t>((ref & ~kCopiedNameBit) >> 32);
      uint32_t offset = static_cast<uint32_t>(ref & 0xffffffffu);
      return trace.strings.intern(std::string_view(buffer.nameChunks[index]->bytes + offset, length));
    }
    return trace.strings.intern(reinterpret_cast<const char*>(ref));
  };
  auto inWindow = [&](int64_t t) { return t >= trace.startNs && t <= trace.stopNs; };

  struct Open {
    int64_t startNs;
    uint64_t id;
    StringId name;
  };
  auto parentOf = [](const std::vector<Open>& stack) { return stack.empty() ? 0 : stack.back().id; };
  std::vector<Open> open;
  for (RecordChunk* chunk : buffer.chunks) {
    uint32_t count = chunk->published.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < count; ++i) {
      const HostEventRecord& r = chunk->records[i];
      int64_t t = clock.toEpochNs(r.ticks);
      switch (r.kind) {
        case HostEventKind::RangeBegin:
          open.push_back(Open{t, r.a, resolveName(r.b, r.c)});
          break;
        case HostEventKind::RangeEnd: {
          if (open.empty()) break;
          Open o = open.back();
          open.pop_back();
          if (!inWindow(o.startNs) || !inWindow(t)) {
            ++trace.losses.outOfWindowEvents;
            break;
          }
          trace.ranges.push_back(RangeRecord{o.startNs, t, o.id, parentOf(open), o.name, thread,
                                             RangeCategory::UserAnnotation, false});
          break;
        }
        case HostEventKind::Instant:
          if (!inWindow(t)) {
            ++trace.losses.outOfWindowEvents;
            break;
          }
          trace.instants.push_back(InstantRecord{t, resolveName(r.b, r.c), thread});
          break;
        case HostEventKind::Counter: {
          if (!inWindow(t)) {
            ++trace.losses.outOfWindowEvents;
            break;
          }
          double value;
          std::memcpy(&value, &r.a, sizeof value);
          trace.counters.push_back(CounterRecord{t, value, resolveName(r.b, r.c), thread});
          break;
        }
        case HostEventKind::ApiCall: {
          int64_t end = clock.toEpochNs(r.a);
          if (!inWindow(t) || !inWindow(end)) {
            ++trace.losses.outOfWindowEvents;
            break;
          }
          ApiCallRecord call;
          call.startNs = t;
          call.endNs = end;
          call.externalId = r.b;
          call.correlationId = r.c;
          call.callbackId = r.d;
          call.thread = thread;
          call.domain = (r.flags & kApiDriver) ? ApiDomain::Driver : ApiDomain::Runtime;
          call.launchesGpuWork = (r.flags & kApiLaunchesGpuWork) != 0;
          trace.apiCalls.push_back(call);
          break;
        }
      }
    }
  }
  // Ranges still open at stop end there, marked so nobody mistakes them for finished work.
  while (!open.empty()) {
    Open o = open.back();
    open.pop_back();
    if (!inWindow(o.startNs)) {
      ++trace.losses.outOfWindowEvents;
      continue;
    }
    trace.ranges.push_back(RangeRecord{o.startNs, trace.stopNs, o.id, parentOf(open), o.name,
                                       thread, RangeCategory::UserAnnotation, true});
    ++trace.losses.unfinishedRanges;
  }
}

}  // namespace kinetrace::detail
