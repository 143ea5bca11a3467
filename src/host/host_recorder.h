#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "model/clock.h"
#include "model/trace_data.h"

// The host recorder: per-thread, lock-free recording for the application's threads.
//
// Each thread that records gets a ThreadBuffer and writes 32-byte records into chunks of
// it. Writing is: one relaxed load of the recording generation, a comparison with the
// thread's own, a tick read, a record write and a release store of the chunk's fill count.
// Chunks come from a pool under a lock, once per kChunkRecords events; the pool keeps them
// across sessions, so a warm thread allocates nothing. When the session's cap is reached
// events are dropped and counted.
//
// Buffers live as long as the process: a thread_local pointer to one can never dangle,
// whatever the order in which threads, sessions and static objects end.

namespace kinetrace::detail {

enum class HostEventKind : uint8_t {
  RangeBegin,
  RangeEnd,
  Instant,
  Counter,
  ApiCall,
  AsyncBegin,  // a range that may overlap others and end on any thread (nvtxRangeStart)
  AsyncEnd,
};

// One host event. Field use by kind:
//   RangeBegin  a = range id, b = name ref, c = name length (copied names)
//   AsyncBegin  a = range id, b = name ref, c = name length
//   AsyncEnd    a = range id (of the AsyncBegin, recorded on any thread)
//   Instant     b = name ref, c = name length
//   Counter     a = value (double bits), b = name ref, c = name length
//   ApiCall     a = end ticks, b = external id, c = correlation id, d = callback id,
//               flags = ApiCallFlags
struct HostEventRecord {
  uint64_t ticks;
  uint64_t a;
  uint64_t b;
  uint32_t c;
  uint16_t d;
  uint8_t flags;
  HostEventKind kind;
};
static_assert(sizeof(HostEventRecord) == 32, "host records are fixed at 32 bytes");

enum ApiCallFlags : uint8_t { kApiDriver = 1, kApiLaunchesGpuWork = 2 };

// A name is either the address of a string literal or, with the top bit set, the offset of
// a copy in the thread's name chunks.
constexpr uint64_t kCopiedNameBit = 1ull << 63;
constexpr std::size_t kMaxCopiedNameBytes = 4096;
constexpr std::size_t kChunkRecords = 4096;           // 128 KiB of records
constexpr std::size_t kNameChunkBytes = 64 * 1024;
constexpr uint32_t kMaxRangeDepth = 256;

struct RecordChunk {
  HostEventRecord records[kChunkRecords];
  std::atomic<uint32_t> published{0};
};

struct NameChunk {
  char bytes[kNameChunkBytes];
};

class HostRecorder;

class ThreadBuffer {
 public:
  // ---- written by the owning thread only -------------------------------------------
  HostEventRecord* cursor = nullptr;
  HostEventRecord* limit = nullptr;
  RecordChunk* chunk = nullptr;
  char* nameCursor = nullptr;
  char* nameLimit = nullptr;
  uint32_t nameChunkIndex = 0;
  uint32_t depth = 0;
  uint64_t nextRangeSeq = 0;
  uint64_t openRanges[kMaxRangeDepth];
  // Written under the recorder's lock (registration, collection), read lock-free by the
  // owning thread: atomic so the read is defined; relaxed loads cost nothing on x86.
  std::atomic<uint64_t> generation{0};
  bool full = false;  // cap reached this session: every further event is dropped
  uint64_t dropped = 0;
  uint64_t droppedNameBytes = 0;

  // ---- shared with the collector (under HostRecorder::mutex_) -----------------------
  uint32_t slot = 0;  // index in the recorder; high bits of range ids
  int64_t tid = 0;
  std::string threadName;
  bool exited = false;
  std::vector<RecordChunk*> chunks;
  std::vector<NameChunk*> nameChunks;
};

class HostRecorder {
 public:
  // The process-wide recorder (never destroyed: thread_local buffers point into it).
  static HostRecorder& instance();

  // Starts a recording generation with a cap on the bytes all threads may fill. Returns the
  // generation. Only one session records at a time (the caller ensures it).
  uint64_t startRecording(std::size_t capBytes);
  // Stops recording: new events are ignored from here on.
  void stopRecording();
  // Moves what the stopped generation recorded into `trace` (ranges, instants, counters,
  // API calls; threads named), keeping only events inside [trace.startNs, trace.stopNs].
  // Chunks go back to the pool.
  void collect(TraceData& trace, const Clock& clock);

  // ---- hot path ----------------------------------------------------------------------
  static std::atomic<uint64_t> recordingGeneration;

  // The calling thread's buffer for the current generation, or nullptr when not recording.
  static inline ThreadBuffer* threadBuffer() noexcept;

  // Reserves one record; nullptr when the cap is reached (the drop is counted).
  static inline HostEventRecord* reserve(ThreadBuffer& buffer) noexcept;
  // Makes the record just written visible to the collector.
  static inline void publish(ThreadBuffer& buffer) noexcept;
  // Copies a name into the thread's name chunks; returns its ref, or 0 when dropped.
  static uint64_t copyName(ThreadBuffer& buffer, std::string_view name, uint32_t& length) noexcept;

  // The external id of the innermost range open on the calling thread (0 if none).
  static inline uint64_t innermostOpenRange() noexcept;

  void setThreadName(std::string_view name);

  // How many thread buffers exist (live threads plus exited ones kept for reuse).
  std::size_t bufferCount();
  // Names a thread by its OS id, from any thread (nvtxNameOsThread). The name applies to
  // that thread's events in every later trace. Takes a lock.
  void nameOsThread(int64_t tid, std::string_view name);

  // Async ranges go on their own tracks ("lanes") in the trace, because they may overlap
  // without nesting; lane tids start here, above any Linux tid (pid_max <= 2^22).
  static constexpr int64_t kAsyncLaneTidBase = int64_t{1} << 30;

 private:
  struct AsyncEdge {
    int64_t timeNs;
    uint64_t id;
    StringId name;    // begins only
    uint32_t thread;  // the thread that recorded the edge
  };
  void pairAsyncRanges(TraceData& trace, std::vector<AsyncEdge>& begins,
                       std::vector<AsyncEdge>& ends);
  HostRecorder() = default;
  ThreadBuffer* registerThread() noexcept;
  ThreadBuffer* reusableBuffer() noexcept;
  bool refill(ThreadBuffer& buffer) noexcept;
  bool refillNames(ThreadBuffer& buffer) noexcept;
  void releaseThread(ThreadBuffer* buffer) noexcept;
  void collectBuffer(ThreadBuffer& buffer, TraceData& trace, const Clock& clock,
                     std::vector<AsyncEdge>& asyncBegins, std::vector<AsyncEdge>& asyncEnds);

  friend struct ThreadExitHook;
  friend ThreadBuffer* slowThreadBuffer() noexcept;

  std::mutex mutex_;
  std::vector<ThreadBuffer*> buffers_;
  std::vector<RecordChunk*> freeChunks_;
  std::vector<NameChunk*> freeNameChunks_;
  std::vector<std::pair<int64_t, std::string>> osThreadNames_;  // nameOsThread(), by tid
  std::size_t capBytes_ = 0;
  std::size_t usedBytes_ = 0;
  uint64_t lastGeneration_ = 0;
};

// ---- inline hot path ----------------------------------------------------------------

// The hot path reads a plain pointer: a thread_local with a constructor or destructor is
// reached through a TLS wrapper call on every access, which costs more than the rest of
// recording a range. The destructor that releases a buffer at thread exit lives in a
// separate object, touched only when the thread registers.
extern thread_local ThreadBuffer* tThreadBuffer;
struct ThreadExitHook {
  ~ThreadExitHook();
};
ThreadBuffer* slowThreadBuffer() noexcept;

inline ThreadBuffer* HostRecorder::threadBuffer() noexcept {
  uint64_t generation = recordingGeneration.load(std::memory_order_relaxed);
  if (generation == 0) return nullptr;
  ThreadBuffer* buffer = tThreadBuffer;
  if (__builtin_expect(buffer != nullptr && buffer->generation.load(std::memory_order_relaxed) == generation, 1)) return buffer;
  return slowThreadBuffer();
}

inline HostEventRecord* HostRecorder::reserve(ThreadBuffer& buffer) noexcept {
  if (__builtin_expect(buffer.cursor != buffer.limit, 1)) return buffer.cursor;
  if (!instance().refill(buffer)) {
    ++buffer.dropped;
    return nullptr;
  }
  return buffer.cursor;
}

inline void HostRecorder::publish(ThreadBuffer& buffer) noexcept {
  ++buffer.cursor;
  buffer.chunk->published.store(static_cast<uint32_t>(buffer.cursor - buffer.chunk->records),
                                std::memory_order_release);
}

inline uint64_t HostRecorder::innermostOpenRange() noexcept {
  if (recordingGeneration.load(std::memory_order_relaxed) == 0) return 0;
  ThreadBuffer* buffer = tThreadBuffer;
  if (buffer == nullptr || buffer->depth == 0 ||
      buffer->generation.load(std::memory_order_relaxed) !=
          recordingGeneration.load(std::memory_order_relaxed)) {
    return 0;
  }
  uint32_t top = buffer->depth <= kMaxRangeDepth ? buffer->depth : kMaxRangeDepth;
  return buffer->openRanges[top - 1];
}

}  // namespace kinetrace::detail
