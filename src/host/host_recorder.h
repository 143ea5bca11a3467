#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "model/clock.h"
#include "model/event_args.h"
#include "model/memory_budget.h"
#include "model/records.h"

// The host recorder: per-thread, lock-free recording for the application's threads, drained
// while recording by one collector (kinetrace's pipeline thread).
//
// Each thread that records owns a ThreadBuffer and writes 32-byte records into chunks of
// it; a copied name follows its record in the same chunk, so a chunk holds everything its
// records need. Writing is: one relaxed load of the recording generation, a comparison with
// the thread's own, a tick read, a record write and a release store of the chunk's fill
// count. A full chunk is sealed by its owner (which never writes to it again) and a new
// one taken from a pool under a lock, once per few thousand events. The collector reads
// what was published, and only sealed chunks go back to the pool: a chunk is never reused
// while a writer may still be in it, whatever the timing of start() and stop().
//
// Every chunk counts against the process's MemoryBudget; when the budget refuses a chunk,
// events are dropped and counted (and retried after a while, since the collector frees
// chunks as it goes).
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
  GraphNode,     // a CUDA graph node was created (captured or added) or cloned
  LaunchTarget,  // what the ApiCall recorded right after it acted on (model/records.h)
};

// One host event. Field use by kind:
//   RangeBegin  a = range id, name
//   RangeEnd    a = id of the range it closes (0 when deeper than kMaxRangeDepth)
//   AsyncBegin  a = range id, name
//   AsyncEnd    a = range id (of the AsyncBegin, recorded on any thread)
//   Instant     name
//   Counter     a = value (double bits), name
//   ApiCall     a = end ticks, b = external id, c = correlation id, d = callback id,
//               flags = kApiDriver | effect << kApiEffectShift
//   GraphNode   a = node id; created: b = external id (the innermost range open); cloned
//               (flags & kGraphNodeCloned, when a graph is instantiated): b = the id of the
//               node it was cloned from
//   LaunchTarget a = graph exec id, b = context id << 32 | stream id, c = correlation id,
//               d = kTarget* bits; ticks as the ApiCall's that follows it
// A name is either a literal (flags & kNameStatic: b = its address, c = its length) or
// copied (flags & kNameInline: c = its length, the bytes fill the next nameSlots(c) slots).
// A RangeBegin, AsyncBegin or Instant with arguments (flags & kHasArgs, always copied) has
// them encoded (model/event_args.h) right after its name: d = their length, and the name
// and arguments fill the next nameSlots(c + d) slots. A RangeEnd or AsyncEnd with arguments
// (added at the range's end) has them the same way, after an empty name (c = 0).
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

enum HostRecordFlags : uint8_t {
  kNameStatic = 1,
  kNameInline = 2,
  kApiDriver = 4,
  kApiEffectShift = 3,  // bits 3..5: CallEffect
  kGraphNodeCloned = 64,
  kHasArgs = 128,
};

// LaunchTarget's d: which of its fields are known.
enum LaunchTargetBits : uint16_t {
  kTargetGraphLaunched = 1,
  kTargetGraphInstantiated = 2,
  kTargetStream = 4,
  kTargetContext = 8,
};

constexpr std::size_t kChunkSlots = 4096;          // 128 KiB of records
// Longer names are cut at a UTF-8 character boundary and counted (ThreadBuffer::namesCut):
// a copied name must fit its chunk with its record.
constexpr std::size_t kMaxNameBytes = 4096;
constexpr uint32_t kMaxRangeDepth = 256;
constexpr std::size_t kOpenAsyncSlots = 8;  // async ranges remembered per thread
constexpr uint32_t kMaxPushedCorrelations = 64;

// Correlation ids a framework pushes around its own ops on this thread (libkineto's
// pushCorrelationId, which PyTorch calls for every op it records). Kept whether or not a
// recording runs, so that pushes and pops stay balanced across start and stop; below
// kMaxPushedCorrelations deep only the depth is counted.
struct PushedCorrelations {
  uint64_t ids[kMaxPushedCorrelations];
  uint32_t depth;
};
constexpr std::size_t kMaxThreadBuffers = 16384;
constexpr std::size_t kChunkPoolReserve = 16;  // chunks kept free between sessions

inline constexpr uint32_t nameSlots(std::size_t bytes) {
  return static_cast<uint32_t>((bytes + sizeof(HostEventRecord) - 1) / sizeof(HostEventRecord));
}

struct RecordChunk {
  HostEventRecord slots[kChunkSlots];
  // Written by the owner with release stores; the collector reads them with acquire loads.
  std::atomic<uint32_t> published{0};
  std::atomic<bool> sealed{false};  // the owner has moved on: `published` is final
  uint64_t generation = 0;          // the recording the owner wrote it for
};

// A name as the collector sees it: valid during the visitor's call only. `literal` is the
// address of a string literal (stable for the whole program, a good cache key) or nullptr
// for a copied name.
struct HostName {
  std::string_view text;
  const char* literal = nullptr;
  std::string_view args;  // the event's encoded arguments (model/event_args.h); empty: none
};

// How many slots after a record its name and arguments fill.
inline uint32_t inlineSlots(const HostEventRecord& r) {
  if (!(r.flags & kNameInline)) return 0;
  return nameSlots(r.c + ((r.flags & kHasArgs) ? uint32_t{r.d} : 0u));
}

// Receives the events of one drain, in the order each thread recorded them (threads one
// after the other). Times are epoch nanoseconds. `instance` identifies a thread for the
// whole process lifetime (a buffer reused by a new thread gets a new instance).
class HostEventVisitor {
 public:
  virtual ~HostEventVisitor() = default;
  virtual void onThread(uint32_t instance, int64_t tid, std::string_view name) = 0;
  virtual void onRangeBegin(uint32_t instance, int64_t timeNs, uint64_t id, HostName name) = 0;
  virtual void onRangeEnd(uint32_t instance, int64_t timeNs, uint64_t id) = 0;
  virtual void onInstant(uint32_t instance, int64_t timeNs, HostName name) = 0;
  virtual void onCounter(uint32_t instance, int64_t timeNs, HostName name, double value) = 0;
  // `call.thread` holds the instance.
  virtual void onApiCall(const ApiCallRecord& call) = 0;
  virtual void onAsyncBegin(uint32_t instance, int64_t timeNs, uint64_t id, HostName name) = 0;
  virtual void onAsyncEnd(uint32_t instance, int64_t timeNs, uint64_t id) = 0;
  // Arguments added at the end of range `id` (encoded, model/event_args.h): called just
  // before that end's onRangeEnd or onAsyncEnd.
  virtual void onEndArgs(uint32_t /*instance*/, uint64_t /*id*/, std::string_view /*args*/) {}
  // A CUDA graph node was created (`clonedFrom` 0; `externalId`: the innermost host range
  // open on the thread, 0 when none) or cloned from node `clonedFrom` (`externalId` 0).
  virtual void onGraphNode(uint32_t /*instance*/, int64_t /*timeNs*/, uint64_t /*nodeId*/,
                           uint64_t /*externalId*/, uint64_t /*clonedFrom*/) {}
  // What the call of the onApiCall that follows acted on (a graph launch, instantiation or
  // synchronisation; same correlation id).
  virtual void onLaunchTarget(uint32_t /*instance*/, const LaunchTarget& /*target*/) {}
};

class ThreadBuffer {
 public:
  // ---- written by the owning thread only -------------------------------------------
  HostEventRecord* cursor = nullptr;
  HostEventRecord* limit = nullptr;
  RecordChunk* chunk = nullptr;
  uint32_t depth = 0;
  uint32_t retryAfterDrops = 0;  // events to drop before asking the budget again
  uint64_t nextRangeSeq = 0;
  uint64_t openRanges[kMaxRangeDepth];
  uint32_t asyncNext = 0;
  // Written by the owner under the recorder's lock (registration) and read lock-free by it.
  std::atomic<uint64_t> generation{0};
  // Counted by the owner, read by the collector (relaxed: a count, not a hand-off).
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> namesCut{0};  // names longer than kMaxNameBytes, cut
  // Async ranges started on this thread and not known to have ended: set by the owner,
  // cleared by whichever thread ends the range. The launch callback links GPU work to the
  // latest one still set.
  std::atomic<uint64_t> openAsync[kOpenAsyncSlots] = {};

  // ---- shared with the collector (under HostRecorder's mutex) -----------------------
  uint32_t slot = 0;      // index in the recorder; high bits of range ids
  uint32_t instance = 0;  // which thread currently owns the buffer
  int64_t tid = 0;
  std::string threadName;
  bool exited = false;
  std::deque<RecordChunk*> chunks;  // in the order written; the last may be the current one

  // ---- the collector's own ----------------------------------------------------------
  RecordChunk* consumedChunk = nullptr;  // the chunk `consumedSlots` refers to
  uint32_t consumedSlots = 0;
};

class HostRecorder {
 public:
  // The process-wide recorder (never destroyed: thread_local buffers point into it).
  static HostRecorder& instance();

  // Starts a recording generation whose chunks are accounted in `budget` (which must
  // outlive the recording's last drain). Returns the generation. The caller ensures one
  // recording at a time.
  uint64_t startRecording(MemoryBudget& budget);
  // Stops recording: events from here on are ignored (a writer already past its check may
  // still finish one record; it lands in a chunk of the stopped generation).
  void stopRecording();
  // Hands every event of `generation` published so far to `visitor`, in each thread's
  // order, and recycles the chunks that are finished. Called by one collector at a time,
  // while recording and once after stopRecording(). Returns the events dropped so far in
  // that generation (the budget refused a chunk).
  //
  // A thread's events stamped after `untilNs` (epoch) stay where they are, with those
  // after them, for a later drain: a collector that does not yet know where the window
  // ends takes nothing a late writer stamped after it.
  uint64_t drain(uint64_t generation, HostEventVisitor& visitor, const Clock& clock,
                 int64_t untilNs = INT64_MAX);
  // Names longer than kMaxNameBytes recorded in `generation`, cut (read after its last
  // drain, with the threads' drop counts).
  uint64_t namesCut(uint64_t generation);
  // After the last drain of a generation: frees pooled chunks beyond a small reserve.
  void trimPool();
  // Frees pooled chunks (counted in the budget, holding nothing) until about `bytes` went
  // back to the budget, or none is left; returns what went back. For a pipeline that needs
  // room under the cap.
  std::size_t releasePooled(std::size_t bytes);

  // ---- hot path ----------------------------------------------------------------------
  static std::atomic<uint64_t> recordingGeneration;

  // The calling thread's buffer for the current generation, or nullptr when not recording.
  static inline ThreadBuffer* threadBuffer() noexcept;

  // Reserves `slots` contiguous records; nullptr when the budget refused (the drop is
  // counted) or the recording ended.
  static inline HostEventRecord* reserve(ThreadBuffer& buffer, uint32_t slots = 1) noexcept;
  // Makes the records just written (`slots` of them) visible to the collector.
  static inline void publish(ThreadBuffer& buffer, uint32_t slots = 1) noexcept;

  // The external id of the innermost range open on the calling thread, else of the latest
  // async range started on it and still open (0 if none).
  static inline uint64_t innermostOpenRange() noexcept;
  // The external id GPU work launched now on the calling thread is linked to: the newest
  // correlation id a framework pushed (its op is the finer-grained owner of the launch),
  // else innermostOpenRange(). Range ids start at 2^40, far above a framework's ids.
  static inline uint64_t launchExternalId() noexcept;
  static inline void pushCorrelation(uint64_t id) noexcept;
  static inline void popCorrelation() noexcept;
  // The newest pushed correlation id on the calling thread; 0 when none.
  static inline uint64_t pushedCorrelation() noexcept;
  // The same, out of line: for code off the hot path (tests), where an inlined second read
  // of a thread_local trips GCC 12's -fsanitize=null.
  static uint64_t pushedCorrelationOutOfLine() noexcept;
  // Clears an ended async range from the thread that started it (any thread may call).
  void forgetAsyncRange(uint64_t id) noexcept;

  void setThreadName(std::string_view name);
  // Names a thread by its OS id, from any thread (nvtxNameOsThread). The name applies to
  // that thread's events in every later trace. Takes a lock.
  void nameOsThread(int64_t tid, std::string_view name);

  // How many thread buffers exist (live threads plus exited ones kept for reuse).
  std::size_t bufferCount();
  // Chunks allocated (in use and pooled), for tests and the leak check.
  std::size_t chunksAllocated();

  // Range ids double as the "External id" that links GPU work to its range. The thread's
  // slot in the high bits keeps them unique across threads without shared counters, and
  // below 2^53 so JSON readers that parse numbers as doubles keep them exact.
  static constexpr int kRangeSeqBits = 40;

 private:
  HostRecorder();
  ThreadBuffer* registerThread() noexcept;
  ThreadBuffer* reusableBuffer() noexcept;
  bool refill(ThreadBuffer& buffer, uint32_t slots) noexcept;
  RecordChunk* takeChunk() noexcept;
  void releaseThread(ThreadBuffer* buffer) noexcept;
  void resetInForkedChild() noexcept;
  // Decodes slots [from, to) up to the first event stamped after `untilNs`; returns the slot
  // it stopped at (`to` when it decoded them all).
  uint32_t decodeChunk(ThreadBuffer& buffer, const RecordChunk& chunk, uint32_t from, uint32_t to,
                       HostEventVisitor& visitor, const Clock& clock, int64_t untilNs);

  friend struct ThreadExitHook;
  friend ThreadBuffer* slowThreadBuffer() noexcept;
  friend void forkPrepare() noexcept;
  friend void forkParent() noexcept;
  friend void forkChild() noexcept;

  std::mutex mutex_;
  std::vector<ThreadBuffer*> buffers_;
  // Lock-free lookup by slot, for ending an async range from another thread.
  std::atomic<ThreadBuffer*>* bySlot_;
  std::vector<RecordChunk*> freeChunks_;
  std::size_t chunksAllocated_ = 0;
  std::vector<std::pair<int64_t, std::string>> osThreadNames_;  // nameOsThread(), by tid
  MemoryBudget* budget_ = nullptr;
  uint64_t lastGeneration_ = 0;
  uint32_t nextInstance_ = 1;
};

// A range, async range or instant with typed arguments (an NVTX payload), on the calling
// thread; the name and the arguments are copied. Like kinetrace::beginRange,
// startAsyncRange and instant otherwise (the range is ended by kinetrace::endRange, the
// async range by endAsyncRange).
void beginRangeWithArgs(std::string_view name, const EventArg* args, std::size_t count) noexcept;
uint64_t startAsyncRangeWithArgs(std::string_view name, const EventArg* args,
                                 std::size_t count) noexcept;
void instantWithArgs(std::string_view name, const EventArg* args, std::size_t count) noexcept;
// Ends the calling thread's innermost range, or async range `id`, adding `args` to the
// range's own (NVTX's nvtxRangePopPayload and nvtxRangeEndPayload).
void endRangeWithArgs(const EventArg* args, std::size_t count) noexcept;
void endAsyncRangeWithArgs(uint64_t id, const EventArg* args, std::size_t count) noexcept;

// ---- inline hot path ----------------------------------------------------------------

// The hot path reads a plain pointer: a thread_local with a constructor or destructor is
// reached through a TLS wrapper call on every access, which costs more than the rest of
// recording a range. The destructor that releases a buffer at thread exit lives in a
// separate object, touched only when the thread registers.
extern thread_local ThreadBuffer* tThreadBuffer;
// Plain data with no constructor: read without a TLS wrapper call, like tThreadBuffer.
extern thread_local PushedCorrelations tPushedCorrelations;
struct ThreadExitHook {
  ~ThreadExitHook();
};
ThreadBuffer* slowThreadBuffer() noexcept;

inline ThreadBuffer* HostRecorder::threadBuffer() noexcept {
  uint64_t generation = recordingGeneration.load(std::memory_order_relaxed);
  if (generation == 0) return nullptr;
  ThreadBuffer* buffer = tThreadBuffer;
  if (__builtin_expect(
          buffer != nullptr && buffer->generation.load(std::memory_order_relaxed) == generation, 1))
    return buffer;
  return slowThreadBuffer();
}

inline HostEventRecord* HostRecorder::reserve(ThreadBuffer& buffer, uint32_t slots) noexcept {
  if (__builtin_expect(static_cast<std::size_t>(buffer.limit - buffer.cursor) >= slots, 1))
    return buffer.cursor;
  if (!instance().refill(buffer, slots)) return nullptr;
  return buffer.cursor;
}

inline void HostRecorder::publish(ThreadBuffer& buffer, uint32_t slots) noexcept {
  buffer.cursor += slots;
  buffer.chunk->published.store(static_cast<uint32_t>(buffer.cursor - buffer.chunk->slots),
                                std::memory_order_release);
}

inline uint64_t HostRecorder::innermostOpenRange() noexcept {
  const uint64_t generation = recordingGeneration.load(std::memory_order_relaxed);
  if (generation == 0) return 0;
  ThreadBuffer* buffer = tThreadBuffer;
  if (buffer == nullptr || buffer->generation.load(std::memory_order_relaxed) != generation)
    return 0;
  if (buffer->depth > 0) {
    uint32_t top = buffer->depth <= kMaxRangeDepth ? buffer->depth : kMaxRangeDepth;
    return buffer->openRanges[top - 1];
  }
  for (std::size_t back = 1; back <= kOpenAsyncSlots; ++back) {
    uint64_t id = buffer->openAsync[(buffer->asyncNext - back) % kOpenAsyncSlots].load(
        std::memory_order_relaxed);
    if (id != 0) return id;
  }
  return 0;
}

inline void HostRecorder::pushCorrelation(uint64_t id) noexcept {
  PushedCorrelations& pushed = tPushedCorrelations;
  if (pushed.depth < kMaxPushedCorrelations) pushed.ids[pushed.depth] = id;
  ++pushed.depth;
}

inline void HostRecorder::popCorrelation() noexcept {
  PushedCorrelations& pushed = tPushedCorrelations;
  if (pushed.depth > 0) --pushed.depth;
}

inline uint64_t HostRecorder::pushedCorrelation() noexcept {
  const PushedCorrelations& pushed = tPushedCorrelations;
  if (pushed.depth == 0) return 0;
  return pushed
      .ids[(pushed.depth <= kMaxPushedCorrelations ? pushed.depth : kMaxPushedCorrelations) - 1];
}

inline uint64_t HostRecorder::launchExternalId() noexcept {
  const uint64_t pushed = pushedCorrelation();
  return pushed != 0 ? pushed : innermostOpenRange();
}

}  // namespace kinetrace::detail
