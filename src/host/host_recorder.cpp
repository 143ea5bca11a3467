#include "host/host_recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <new>
#include <queue>
#include <unordered_map>

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
    buffer = reusableBuffer();
    if (buffer == nullptr) {
      try {
        buffer = new ThreadBuffer();
        buffer->slot = static_cast<uint32_t>(buffers_.size());
        buffers_.push_back(buffer);
      } catch (const std::bad_alloc&) {
        delete buffer;
        return nullptr;
      }
    }
    buffer->exited = false;
    buffer->tid = currentTid();
    buffer->threadName = tPendingThreadName;
    tThreadBuffer = buffer;
  }
  // A buffer from an earlier generation starts clean: ranges left open then are not
  // closed by this generation's endRange() calls.
  buffer->generation.store(generation, std::memory_order_relaxed);
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

// Programs that start short-lived threads over and over (data loaders, thread pools that
// resize) would otherwise add a buffer per thread for the life of the process. A buffer
// whose thread has exited and whose events have been collected is handed to the next new
// thread; its range ids continue, so they stay unique.
ThreadBuffer* HostRecorder::reusableBuffer() noexcept {
  for (ThreadBuffer* buffer : buffers_) {
    if (buffer->exited && buffer->chunks.empty() && buffer->nameChunks.empty()) return buffer;
  }
  return nullptr;
}

bool HostRecorder::refill(ThreadBuffer& buffer) noexcept {
  if (buffer.full) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (buffer.generation.load(std::memory_order_relaxed) !=
      recordingGeneration.load(std::memory_order_relaxed)) {
    return false;
  }
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

std::size_t HostRecorder::bufferCount() {
  std::lock_guard<std::mutex> lock(mutex_);
  return buffers_.size();
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

void HostRecorder::collect(TraceData& trace, const Clock& clock) {
  std::lock_guard<std::mutex> lock(mutex_);
  // An async range may begin on one thread and end on another: its edges are gathered
  // from every buffer first and paired afterwards.
  std::vector<AsyncEdge> asyncBegins;
  std::vector<AsyncEdge> asyncEnds;
  for (ThreadBuffer* buffer : buffers_) {
    if (buffer->generation.load(std::memory_order_relaxed) != lastGeneration_) continue;
    collectBuffer(*buffer, trace, clock, asyncBegins, asyncEnds);
    for (RecordChunk* chunk : buffer->chunks) freeChunks_.push_back(chunk);
    for (NameChunk* chunk : buffer->nameChunks) freeNameChunks_.push_back(chunk);
    buffer->chunks.clear();
    buffer->nameChunks.clear();
    // The generation stays, so the thread's next event (if any) sees a stale buffer
    // only once recording restarts and re-registers cleanly.
    buffer->generation.store(0, std::memory_order_relaxed);
  }
  usedBytes_ = 0;
  if (!asyncBegins.empty()) pairAsyncRanges(trace, asyncBegins, asyncEnds);
}

void HostRecorder::pairAsyncRanges(TraceData& trace, std::vector<AsyncEdge>& begins,
                                   std::vector<AsyncEdge>& ends) {
  auto inWindow = [&](int64_t t) { return t >= trace.startNs && t <= trace.stopNs; };
  struct Async {
    int64_t startNs;
    int64_t endNs;
    uint64_t id;
    StringId name;
    uint32_t origin;  // the thread that started it
    bool unfinished;
  };
  std::unordered_map<uint64_t, std::size_t> beginById;
  beginById.reserve(begins.size());
  for (std::size_t i = 0; i < begins.size(); ++i) beginById.emplace(begins[i].id, i);
  std::vector<int64_t> endOf(begins.size(), -1);
  for (const AsyncEdge& end : ends) {
    auto found = beginById.find(end.id);
    // An end without a begin belongs to a range started before this recording.
    if (found == beginById.end() || endOf[found->second] >= 0) continue;
    endOf[found->second] = end.timeNs;
  }
  std::vector<Async> ranges;
  ranges.reserve(begins.size());
  for (std::size_t i = 0; i < begins.size(); ++i) {
    const AsyncEdge& b = begins[i];
    bool unfinished = endOf[i] < 0;
    int64_t end = unfinished ? trace.stopNs : endOf[i];
    if (!inWindow(b.timeNs) || !inWindow(end) || end < b.timeNs) {
      ++trace.losses.outOfWindowEvents;
      continue;
    }
    if (unfinished) ++trace.losses.unfinishedRanges;
    ranges.push_back(Async{b.timeNs, end, b.id, b.name, b.thread, unfinished});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Async& x, const Async& y) {
    return x.startNs != y.startNs ? x.startNs < y.startNs : x.endNs > y.endNs;
  });

  // Lanes: in start order, each range goes on the lane that became free earliest, if it is
  // free by the range's start, else on a new lane. Slices on one track then never overlap
  // (Perfetto needs a track's slices properly nested), with as few tracks as the deepest
  // overlap needs, in O(n log n).
  using Lane = std::pair<int64_t, uint32_t>;  // (free from, lane index)
  std::priority_queue<Lane, std::vector<Lane>, std::greater<Lane>> lanes;
  std::vector<uint32_t> laneThread;
  for (const Async& r : ranges) {
    uint32_t lane;
    if (!lanes.empty() && lanes.top().first <= r.startNs) {
      lane = lanes.top().second;
      lanes.pop();
    } else {
      lane = static_cast<uint32_t>(laneThread.size());
      uint32_t thread = trace.threadIndex(trace.pid, kAsyncLaneTidBase + lane);
      std::string name = lane == 0 ? "async ranges" : "async ranges " + std::to_string(lane + 1);
      trace.threads[thread].name = trace.strings.intern(name);
      laneThread.push_back(thread);
    }
    lanes.emplace(r.endNs, lane);
    trace.ranges.push_back(RangeRecord{r.startNs, r.endNs, r.id, 0, r.name, laneThread[lane],
                                       RangeCategory::UserAnnotation, r.unfinished});
  }

  // GPU work launched on the thread that started an async range, while no push/pop range
  // was open there, belongs to the latest-started async range still open at the launch.
  std::unordered_map<uint32_t, std::vector<const Async*>> byOrigin;
  for (const Async& r : ranges) byOrigin[r.origin].push_back(&r);  // sorted by start
  constexpr int kMaxCandidates = 64;
  for (ApiCallRecord& call : trace.apiCalls) {
    if (call.externalId != 0) continue;
    auto origin = byOrigin.find(call.thread);
    if (origin == byOrigin.end()) continue;
    const auto& list = origin->second;
    auto after = std::upper_bound(list.begin(), list.end(), call.startNs,
                                  [](int64_t t, const Async* r) { return t < r->startNs; });
    int looked = 0;
    for (auto it = after; it != list.begin() && looked < kMaxCandidates; ++looked) {
      --it;
      if ((*it)->endNs >= call.startNs) {
        call.externalId = (*it)->id;
        break;
      }
    }
  }
}

void HostRecorder::collectBuffer(ThreadBuffer& buffer, TraceData& trace, const Clock& clock,
                                 std::vector<AsyncEdge>& asyncBegins,
                                 std::vector<AsyncEdge>& asyncEnds) {
  trace.losses.droppedHostEvents += buffer.dropped;
  trace.losses.droppedHostNameBytes += buffer.droppedNameBytes;
  if (buffer.chunks.empty()) return;

  uint32_t thread = trace.threadIndex(trace.pid, buffer.tid);
  if (!buffer.threadName.empty()) {
    trace.threads[thread].name = trace.strings.intern(buffer.threadName);
  } else {
    for (const auto& [tid, name] : osThreadNames_) {
      if (tid == buffer.tid) trace.threads[thread].name = trace.strings.intern(name);
    }
  }

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
        case HostEventKind::AsyncBegin:
          asyncBegins.push_back(AsyncEdge{t, r.a, resolveName(r.b, r.c), thread});
          break;
        case HostEventKind::AsyncEnd:
          asyncEnds.push_back(AsyncEdge{t, r.a, 0, thread});
          break;
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
