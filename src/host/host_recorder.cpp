#include "host/host_recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <new>

namespace kinetrace::detail {

std::atomic<uint64_t> HostRecorder::recordingGeneration{0};
thread_local ThreadBuffer* tThreadBuffer = nullptr;
thread_local ThreadExitHook tThreadExitHook;
thread_local PushedCorrelations tPushedCorrelations = {};

namespace {

// After the budget refuses a chunk, a thread drops this many events before asking again:
// the collector frees chunks as it drains, but asking takes a lock, and a thread that is
// out of room should not take it for every event.
constexpr uint32_t kDropsBeforeRetry = 512;

uint64_t rangeIdBase(uint32_t slot) {
  return static_cast<uint64_t>(slot + 1) << HostRecorder::kRangeSeqBits;
}

int64_t currentTid() {
  return static_cast<int64_t>(::syscall(SYS_gettid));
}

double doubleOf(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace

// Thread names set before the thread records anything wait here.
thread_local std::string tPendingThreadName;

uint64_t HostRecorder::pushedCorrelationOutOfLine() noexcept {
  return pushedCorrelation();
}

ThreadExitHook::~ThreadExitHook() {
  if (tThreadBuffer != nullptr) HostRecorder::instance().releaseThread(tThreadBuffer);
}

// fork() copies only the calling thread: a lock another thread held stays locked in the
// child forever. The recorder's lock is taken around fork() so the child inherits it free,
// and the child starts with no recording and none of the parent's events.
void forkPrepare() noexcept {
  HostRecorder::instance().mutex_.lock();
}
void forkParent() noexcept {
  HostRecorder::instance().mutex_.unlock();
}
void forkChild() noexcept {
  HostRecorder& recorder = HostRecorder::instance();
  recorder.resetInForkedChild();
  recorder.mutex_.unlock();
}

HostRecorder::HostRecorder() : bySlot_(new std::atomic<ThreadBuffer*>[kMaxThreadBuffers]) {
  for (std::size_t i = 0; i < kMaxThreadBuffers; ++i)
    bySlot_[i].store(nullptr, std::memory_order_relaxed);
  pthread_atfork(&forkPrepare, &forkParent, &forkChild);
}

HostRecorder& HostRecorder::instance() {
  static HostRecorder* recorder = new HostRecorder();  // never destroyed, by design
  return *recorder;
}

ThreadBuffer* slowThreadBuffer() noexcept {
  return HostRecorder::instance().registerThread();
}

ThreadBuffer* HostRecorder::registerThread() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t generation = recordingGeneration.load(std::memory_order_relaxed);
  if (generation == 0) return nullptr;
  ThreadBuffer* buffer = tThreadBuffer;
  if (buffer == nullptr) {
    (void)&tThreadExitHook;  // odr-use: constructs the hook, so its destructor runs at exit
    buffer = reusableBuffer();
    if (buffer == nullptr) {
      if (buffers_.size() >= kMaxThreadBuffers) return nullptr;
      try {
        buffers_.reserve(buffers_.size() + 1);
        buffer = new ThreadBuffer();
      } catch (const std::bad_alloc&) {
        return nullptr;
      }
      buffer->slot = static_cast<uint32_t>(buffers_.size());
      buffers_.push_back(buffer);
      bySlot_[buffer->slot].store(buffer, std::memory_order_release);
      buffer->nextRangeSeq = rangeIdBase(buffer->slot) + 1;
    }
    buffer->exited = false;
    buffer->instance = nextInstance_++;
    buffer->tid = currentTid();
    buffer->threadName = tPendingThreadName;
    tThreadBuffer = buffer;
  }
  // A buffer from an earlier generation starts clean: its chunk is sealed (the collector of
  // that generation recycles it), and ranges left open then are not closed by this
  // generation's endRange() calls.
  if (buffer->chunk != nullptr) buffer->chunk->sealed.store(true, std::memory_order_release);
  buffer->chunk = nullptr;
  buffer->cursor = buffer->limit = nullptr;
  buffer->depth = 0;
  buffer->retryAfterDrops = 0;
  // The drop count is per recording: a buffer reused within the recording it last recorded
  // in (its thread exited) keeps the drops of its earlier thread, which the collector has
  // not necessarily read yet.
  if (buffer->generation.load(std::memory_order_relaxed) != generation) {
    buffer->dropped.store(0, std::memory_order_relaxed);
    buffer->namesCut.store(0, std::memory_order_relaxed);
  }
  for (auto& id : buffer->openAsync) id.store(0, std::memory_order_relaxed);
  buffer->generation.store(generation, std::memory_order_relaxed);
  return buffer;
}

// Programs that start short-lived threads over and over (data loaders, thread pools that
// resize) would otherwise add a buffer per thread for the life of the process. A buffer
// whose thread has exited and whose chunks have all been collected is handed to the next
// new thread; its range ids continue, so they stay unique.
ThreadBuffer* HostRecorder::reusableBuffer() noexcept {
  for (ThreadBuffer* buffer : buffers_) {
    if (buffer->exited && buffer->chunks.empty()) return buffer;
  }
  return nullptr;
}

RecordChunk* HostRecorder::takeChunk() noexcept {
  if (!freeChunks_.empty()) {
    RecordChunk* chunk = freeChunks_.back();
    freeChunks_.pop_back();
    return chunk;
  }
  if (budget_ == nullptr || !budget_->tryAcquire(sizeof(RecordChunk))) return nullptr;
  // Not value-initialised: 128 KiB of zeroes nobody reads.
  auto* chunk = new (std::nothrow) RecordChunk;
  if (chunk == nullptr) {
    budget_->release(sizeof(RecordChunk));
    return nullptr;
  }
  ++chunksAllocated_;
  return chunk;
}

bool HostRecorder::refill(ThreadBuffer& buffer, uint32_t slots) noexcept {
  if (buffer.retryAfterDrops > 0) {
    --buffer.retryAfterDrops;
    buffer.dropped.store(buffer.dropped.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  // The recording this thread registered for has ended: the event is outside every window,
  // not a drop.
  if (buffer.generation.load(std::memory_order_relaxed) !=
      recordingGeneration.load(std::memory_order_relaxed)) {
    return false;
  }
  RecordChunk* chunk = slots <= kChunkSlots ? takeChunk() : nullptr;
  if (chunk == nullptr) {
    // The full chunk goes to the collector now. Kept unsealed it could never be recycled:
    // threads that each held a full one while the cap refused more would drop forever.
    if (buffer.chunk != nullptr) {
      buffer.chunk->sealed.store(true, std::memory_order_release);
      buffer.chunk = nullptr;
      buffer.cursor = buffer.limit = nullptr;
    }
    buffer.retryAfterDrops = kDropsBeforeRetry;
    buffer.dropped.store(buffer.dropped.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
    return false;
  }
  try {
    buffer.chunks.push_back(chunk);
  } catch (const std::bad_alloc&) {
    freeChunks_.push_back(chunk);  // capacity exists: it came from there or was counted
    buffer.retryAfterDrops = kDropsBeforeRetry;
    buffer.dropped.store(buffer.dropped.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
    return false;
  }
  if (buffer.chunk != nullptr) buffer.chunk->sealed.store(true, std::memory_order_release);
  chunk->generation = buffer.generation.load(std::memory_order_relaxed);
  chunk->published.store(0, std::memory_order_relaxed);
  chunk->sealed.store(false, std::memory_order_relaxed);
  buffer.chunk = chunk;
  buffer.cursor = chunk->slots;
  buffer.limit = chunk->slots + kChunkSlots;
  return true;
}

uint64_t HostRecorder::startRecording(MemoryBudget& budget) {
  std::lock_guard<std::mutex> lock(mutex_);
  budget_ = &budget;
  // Chunks an earlier recording left sealed in a buffer (its thread moved on or exited
  // after the last drain) hold nothing any drain will read: back to the pool.
  for (ThreadBuffer* buffer : buffers_) {
    while (!buffer->chunks.empty() &&
           buffer->chunks.front()->sealed.load(std::memory_order_acquire)) {
      if (buffer->consumedChunk == buffer->chunks.front()) {
        buffer->consumedChunk = nullptr;
        buffer->consumedSlots = 0;
      }
      freeChunks_.push_back(buffer->chunks.front());
      buffer->chunks.pop_front();
    }
  }
  // Chunks kept from earlier recordings (pooled, or still attached to a thread) are memory
  // the tracer holds: they count from the start, beside what the budget holds already (a
  // sink's buffer). Pooled ones beyond this recording's cap are freed, so a small cap after
  // a larger one does not start out over it.
  while (!freeChunks_.empty() &&
         budget.used() + chunksAllocated_ * sizeof(RecordChunk) > budget.cap()) {
    delete freeChunks_.back();
    freeChunks_.pop_back();
    --chunksAllocated_;
  }
  budget.forceAcquire(chunksAllocated_ * sizeof(RecordChunk));
  const uint64_t generation = ++lastGeneration_;
  recordingGeneration.store(generation, std::memory_order_release);
  return generation;
}

void HostRecorder::stopRecording() {
  // Without the lock: threads that refill take it often, and a stop queued behind them
  // (the lock is not fair) would let them record on. A refill or registration that read
  // the generation before this store ends like a writer already past the recording check.
  recordingGeneration.store(0, std::memory_order_release);
}

std::size_t HostRecorder::releasePooled(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t freed = 0;
  while (freed < bytes && !freeChunks_.empty()) {
    delete freeChunks_.back();
    freeChunks_.pop_back();
    --chunksAllocated_;
    if (budget_ != nullptr) budget_->release(sizeof(RecordChunk));
    freed += sizeof(RecordChunk);
  }
  return freed;
}

void HostRecorder::trimPool() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Every chunk is pooled or attached to a thread; all of them were counted in the
  // recording's budget, and those kept are counted again by the next recording.
  if (budget_ != nullptr) budget_->release(chunksAllocated_ * sizeof(RecordChunk));
  budget_ = nullptr;
  while (freeChunks_.size() > kChunkPoolReserve) {
    delete freeChunks_.back();
    freeChunks_.pop_back();
    --chunksAllocated_;
  }
}

void HostRecorder::releaseThread(ThreadBuffer* buffer) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (buffer->chunk != nullptr) buffer->chunk->sealed.store(true, std::memory_order_release);
  buffer->chunk = nullptr;
  buffer->cursor = buffer->limit = nullptr;
  buffer->exited = true;
}

void HostRecorder::resetInForkedChild() noexcept {
  // Only the forking thread exists in the child. Every event in the buffers is the
  // parent's: the chunks go back to the pool unread.
  recordingGeneration.store(0, std::memory_order_relaxed);
  for (ThreadBuffer* buffer : buffers_) {
    for (RecordChunk* chunk : buffer->chunks) freeChunks_.push_back(chunk);
    buffer->chunks.clear();
    buffer->chunk = nullptr;
    buffer->cursor = buffer->limit = nullptr;
    buffer->consumedChunk = nullptr;
    buffer->consumedSlots = 0;
    buffer->depth = 0;
    buffer->generation.store(0, std::memory_order_relaxed);
    if (buffer != tThreadBuffer) buffer->exited = true;
  }
  if (tThreadBuffer != nullptr) tThreadBuffer->tid = currentTid();
  budget_ = nullptr;
}

void HostRecorder::forgetAsyncRange(uint64_t id) noexcept {
  const uint64_t slot = (id >> kRangeSeqBits);
  if (slot == 0 || slot > kMaxThreadBuffers) return;
  ThreadBuffer* origin = bySlot_[slot - 1].load(std::memory_order_acquire);
  if (origin == nullptr) return;
  for (auto& open : origin->openAsync) {
    uint64_t expected = id;
    if (open.compare_exchange_strong(expected, 0, std::memory_order_relaxed)) return;
  }
}

uint64_t HostRecorder::namesCut(uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t cut = 0;
  for (const ThreadBuffer* buffer : buffers_) {
    if (buffer->generation.load(std::memory_order_relaxed) == generation) {
      cut += buffer->namesCut.load(std::memory_order_relaxed);
    }
  }
  return cut;
}

std::size_t HostRecorder::bufferCount() {
  std::lock_guard<std::mutex> lock(mutex_);
  return buffers_.size();
}

std::size_t HostRecorder::chunksAllocated() {
  std::lock_guard<std::mutex> lock(mutex_);
  return chunksAllocated_;
}

void HostRecorder::setThreadName(std::string_view name) {
  tPendingThreadName.assign(name);
  if (ThreadBuffer* buffer = tThreadBuffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    buffer->threadName.assign(name);
  }
}

void HostRecorder::nameOsThread(int64_t tid, std::string_view name) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : osThreadNames_) {
    if (entry.first == tid) {
      entry.second.assign(name);
      return;
    }
  }
  osThreadNames_.emplace_back(tid, std::string(name));
}

uint64_t HostRecorder::drain(uint64_t generation, HostEventVisitor& visitor, const Clock& clock,
                             int64_t untilNs) {
  // What each buffer holds, copied under the lock; decoding happens without it, so
  // threads that refill meanwhile are not held up.
  struct Work {
    ThreadBuffer* buffer;
    uint32_t instance;
    int64_t tid;
    std::string name;
    std::vector<RecordChunk*> chunks;
  };
  std::vector<Work> work;
  uint64_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    work.reserve(buffers_.size());
    for (ThreadBuffer* buffer : buffers_) {
      if (buffer->generation.load(std::memory_order_relaxed) == generation) {
        dropped += buffer->dropped.load(std::memory_order_relaxed);
      }
      if (buffer->chunks.empty()) continue;
      std::string name = buffer->threadName;
      if (name.empty()) {
        for (const auto& [tid, given] : osThreadNames_) {
          if (tid == buffer->tid) name = given;
        }
      }
      work.push_back(Work{buffer, buffer->instance, buffer->tid, std::move(name),
                          std::vector<RecordChunk*>(buffer->chunks.begin(), buffer->chunks.end())});
    }
  }

  std::vector<std::pair<ThreadBuffer*, std::size_t>> finished;  // chunks done, per buffer
  for (Work& w : work) {
    ThreadBuffer& buffer = *w.buffer;
    bool announced = false;
    std::size_t done = 0;
    for (RecordChunk* chunk : w.chunks) {
      // Acquire the seal before the count: once sealed, the count read after it is final.
      const bool sealed = chunk->sealed.load(std::memory_order_acquire);
      if (chunk->generation != generation) {
        // A stopped generation's chunk: recycled once its owner has moved on. Chunks are
        // recycled in order, so a chunk still being written keeps the ones after it.
        if (!sealed) break;
        ++done;
        continue;
      }
      const uint32_t published = chunk->published.load(std::memory_order_acquire);
      const uint32_t from = buffer.consumedChunk == chunk ? buffer.consumedSlots : 0;
      uint32_t reached = from;
      if (published > from) {
        if (!announced) {
          visitor.onThread(w.instance, w.tid, w.name);
          announced = true;
        }
        reached = decodeChunk(buffer, *chunk, from, published, visitor, clock, untilNs);
      }
      buffer.consumedChunk = chunk;
      buffer.consumedSlots = reached;
      if (!sealed || reached < published) break;
      ++done;
    }
    if (done > 0) finished.emplace_back(w.buffer, done);
  }

  if (!finished.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [buffer, count] : finished) {
      for (std::size_t i = 0; i < count && !buffer->chunks.empty(); ++i) {
        RecordChunk* chunk = buffer->chunks.front();
        buffer->chunks.pop_front();
        if (buffer->consumedChunk == chunk) {
          buffer->consumedChunk = nullptr;
          buffer->consumedSlots = 0;
        }
        freeChunks_.push_back(chunk);
      }
    }
  }
  return dropped;
}

uint32_t HostRecorder::decodeChunk(ThreadBuffer& buffer, const RecordChunk& chunk, uint32_t from,
                                   uint32_t to, HostEventVisitor& visitor, const Clock& clock,
                                   int64_t untilNs) {
  const uint32_t instance = buffer.instance;
  auto nameOf = [&](const HostEventRecord& r) {
    if (r.flags & kNameStatic) {
      const char* literal = reinterpret_cast<const char*>(r.b);
      return HostName{std::string_view(literal, r.c), literal, {}};
    }
    if (r.flags & kNameInline) {
      const char* bytes = reinterpret_cast<const char*>(&r + 1);
      HostName name{std::string_view(bytes, r.c), nullptr, {}};
      if (r.flags & kHasArgs) name.args = std::string_view(bytes + r.c, r.d);
      return name;
    }
    return HostName{};
  };
  uint32_t i = from;
  while (i < to) {
    const HostEventRecord& r = chunk.slots[i];
    const int64_t t = clock.toEpochNs(r.ticks);
    if (t > untilNs) return i;
    i += 1 + inlineSlots(r);
    switch (r.kind) {
      case HostEventKind::RangeBegin:
        visitor.onRangeBegin(instance, t, r.a, nameOf(r));
        break;
      case HostEventKind::RangeEnd:
        if (r.flags & kHasArgs) visitor.onEndArgs(instance, r.a, nameOf(r).args);
        visitor.onRangeEnd(instance, t, r.a);
        break;
      case HostEventKind::Instant:
        visitor.onInstant(instance, t, nameOf(r));
        break;
      case HostEventKind::Counter:
        visitor.onCounter(instance, t, nameOf(r), doubleOf(r.a));
        break;
      case HostEventKind::ApiCall: {
        ApiCallRecord call;
        call.startNs = t;
        call.endNs = clock.toEpochNs(r.a);
        call.externalId = r.b;
        call.correlationId = r.c;
        call.callbackId = r.d;
        call.thread = instance;
        call.domain = (r.flags & kApiDriver) ? ApiDomain::Driver : ApiDomain::Runtime;
        call.effect = static_cast<CallEffect>((r.flags >> kApiEffectShift) & 7u);
        visitor.onApiCall(call);
        break;
      }
      case HostEventKind::AsyncBegin:
        visitor.onAsyncBegin(instance, t, r.a, nameOf(r));
        break;
      case HostEventKind::AsyncEnd:
        if (r.flags & kHasArgs) visitor.onEndArgs(instance, r.a, nameOf(r).args);
        visitor.onAsyncEnd(instance, t, r.a);
        break;
      case HostEventKind::LaunchTarget: {
        LaunchTarget target;
        target.correlationId = r.c;
        target.graphExecId = static_cast<uint32_t>(r.a);
        target.contextId = static_cast<uint32_t>(r.b >> 32);
        target.streamId = static_cast<uint32_t>(r.b);
        target.graphLaunched = (r.d & kTargetGraphLaunched) != 0;
        target.graphInstantiated = (r.d & kTargetGraphInstantiated) != 0;
        target.streamKnown = (r.d & kTargetStream) != 0;
        target.contextKnown = (r.d & kTargetContext) != 0;
        visitor.onLaunchTarget(instance, target);
        break;
      }
      case HostEventKind::GraphNode:
        if (r.flags & kGraphNodeCloned) {
          visitor.onGraphNode(instance, t, r.a, 0, r.b);
        } else {
          visitor.onGraphNode(instance, t, r.a, r.b, 0);
        }
        break;
    }
  }
  return to;
}

}  // namespace kinetrace::detail
