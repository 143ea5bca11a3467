#pragma once

// What the session suites share: configurations, a stand-in GPU source, launch calls written
// the way CUPTI's launch callback writes them, and reading traces back.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "host/host_recorder.h"
#include "kinetrace/config.h"
#include "kinetrace/sink.h"
#include "kinetrace/trace.h"
#include "model/clock.h"
#include "model/gpu_source.h"
#include "model/trace_data.h"

namespace kinetrace::testing {

// Under ThreadSanitizer (GCC's), a child forked from a multi-threaded process cannot start
// threads: it dies ("starting new threads after multi-threaded fork is not supported") or,
// with die_after_fork=0, trips over the parent's thread ids ("dup thread with used id").
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kForkedChildMayStartThreads = false;
#else
inline constexpr bool kForkedChildMayStartThreads = true;
#endif
// Under AddressSanitizer (GCC 12's), fork() does not take the allocator's locks: a child of a
// process whose other threads allocate (kinetrace's pipeline thread) may hang in its first
// malloc, holding a lock a thread of the parent held.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kForkedChildMayAllocate = false;
#else
inline constexpr bool kForkedChildMayAllocate = true;
#endif

inline Config hostOnly() {
  Config config;
  config.activities = ActivitySet::parse("host");
  return config;
}

inline const detail::TraceData& dataOf(const Trace& trace) {
  return detail::dataOf(trace);
}

inline std::string nameOf(const detail::TraceData& trace, detail::StringId id) {
  return std::string(trace.tables.strings.get(id));
}

// The first range of that name, or nullptr.
inline const detail::RangeRecord* findRange(const detail::TraceData& trace,
                                            const std::string& name) {
  for (const auto& range : trace.records.ranges) {
    if (nameOf(trace, range.name) == name) return &range;
  }
  return nullptr;
}

// The last value of `key` in top-level metadata (a JSON reader keeps the last), or null.
inline Value metadataValue(const Metadata& metadata, const std::string& key) {
  Value found;
  for (const Value::Member& member : metadata) {
    if (member.key == key) found = member.value;
  }
  return found;
}

// A whole number in metadata, whichever integer kind holds it; UINT64_MAX for anything else.
inline uint64_t unsignedOf(const Value& value) {
  if (value.kind() == Value::Kind::Uint) return value.asUint();
  if (value.kind() == Value::Kind::Int && value.asInt() >= 0)
    return static_cast<uint64_t>(value.asInt());
  return UINT64_MAX;
}

// Captures what the process writes to stderr (any thread) from construction to text().
class StderrCapture {
 public:
  StderrCapture() { ::testing::internal::CaptureStderr(); }
  ~StderrCapture() {
    if (!ended_) text();
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;
  // Ends the capture (once) and returns what was written.
  std::string text() {
    if (!ended_) {
      ended_ = true;
      text_ = ::testing::internal::GetCapturedStderr();
    }
    return text_;
  }

 private:
  bool ended_ = false;
  std::string text_;
};

// Polls `condition` until it holds or `limit` passes; true when it held.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// HostRecorder::innermostOpenRange() for the calling thread's buffer.
inline uint64_t innermostOpenRangeOf(const detail::ThreadBuffer& buffer) {
  if (buffer.depth > 0) {
    return buffer.openRanges[std::min(buffer.depth, detail::kMaxRangeDepth) - 1];
  }
  for (std::size_t back = 1; back <= detail::kOpenAsyncSlots; ++back) {
    const uint64_t id =
        buffer.openAsync[(buffer.asyncNext - back) % detail::kOpenAsyncSlots].load();
    if (id != 0) return id;
  }
  return 0;
}

// A launch-side CUDA call as src/cupti/launch_callbacks.cpp records it on the calling thread:
// one ApiCall record with the entry and exit ticks, the pushed correlation id or else the
// innermost open range, CUPTI's
// correlation id and callback id, and what the call produces on the GPU. Returns the call's
// [start, end] in epoch ns (0, 0 when not recording).
inline std::pair<int64_t, int64_t> recordApiCall(uint32_t correlationId, uint16_t callbackId,
                                                 detail::CallEffect effect) {
  using detail::HostRecorder;
  detail::ThreadBuffer* buffer = HostRecorder::threadBuffer();
  if (buffer == nullptr) return {0, 0};
  const uint64_t entry = detail::Clock::ticks();
  uint64_t exit = detail::Clock::ticks();
  while (exit == entry) exit = detail::Clock::ticks();
  detail::HostEventRecord* r = HostRecorder::reserve(*buffer);
  if (r == nullptr) return {0, 0};
  r->ticks = entry;
  r->a = exit;
  // What HostRecorder::innermostOpenRange() reads, from the buffer at hand: GCC 12 with
  // -fsanitize=null tests the address of the thread_local a second inlined read computes
  // with flags it never set, a false "load of null pointer" under ASan + UBSan.
  const uint64_t pushed = HostRecorder::pushedCorrelationOutOfLine();
  r->b = pushed != 0 ? pushed : innermostOpenRangeOf(*buffer);
  r->c = correlationId;
  r->d = callbackId;
  r->flags = static_cast<uint8_t>(static_cast<uint8_t>(effect) << detail::kApiEffectShift);
  r->kind = detail::HostEventKind::ApiCall;
  HostRecorder::publish(*buffer);
  const detail::Clock& clock = detail::Clock::instance();
  return {clock.toEpochNs(entry), clock.toEpochNs(exit)};
}

// Stands in for CUPTI: counts the session's calls, refuses when told to, and hands over the
// batches a test queues. Queued batches are handed over by the poll after finishWindow() (the
// one the stop makes), so what a test sees does not depend on the pipeline's timing.
class FakeGpuSource final : public detail::GpuSource {
 public:
  // What the test sees of the source; outlives it (the session owns the source).
  struct State {
    std::string refusal;
    std::atomic<int> enables{0}, starts{0}, polls{0}, finishes{0}, stops{0}, disables{0};
    detail::GpuOptions seenOptions;
    std::map<uint32_t, std::string> apiNames;  // callback id -> name
    std::mutex mutex;
    // Each batch's names are interned into the trace's table at the final poll.
    std::vector<std::function<void(detail::GpuBatch&, detail::StringTable&)>> batches;
    bool windowFinished = false;
    std::size_t decodeRoom = 0;  // what decodeRoomBytes() says

    void queue(std::function<void(detail::GpuBatch&, detail::StringTable&)> batch) {
      std::lock_guard<std::mutex> lock(mutex);
      batches.push_back(std::move(batch));
    }
  };

  explicit FakeGpuSource(std::shared_ptr<State> state) : state_(std::move(state)) {}

  detail::Status enable(const detail::GpuOptions& options, detail::MemoryBudget&) override {
    ++state_->enables;
    state_->seenOptions = options;
    if (state_->refusal.empty()) return {};
    return detail::Failure{state_->refusal};
  }
  void start(int64_t) override {
    ++state_->starts;
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->windowFinished = false;
  }
  bool poll(detail::GpuBatch& out, detail::StringTable& strings) override {
    ++state_->polls;
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->windowFinished) return false;
    for (auto& batch : state_->batches) batch(out, strings);
    state_->batches.clear();
    return false;
  }
  int64_t finishWindow() override {
    ++state_->finishes;
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->windowFinished = true;
    return 0;
  }
  void stopCollecting() noexcept override { ++state_->stops; }
  void disable() noexcept override { ++state_->disables; }
  std::size_t decodeRoomBytes() const override { return state_->decodeRoom; }
  std::string describe() const override { return "fake GPU"; }
  Metadata metadata() const override { return {{"cupti_version", 0}}; }
  std::vector<detail::DeviceInfo> devices(detail::StringTable&) const override { return {}; }
  std::string apiName(detail::ApiDomain, uint32_t callbackId) const override {
    auto found = state_->apiNames.find(callbackId);
    return found != state_->apiNames.end() ? found->second : "cudaUnknown";
  }

 private:
  std::shared_ptr<State> state_;
};

// Every slice of a track must nest: on one (pid, tid), two complete events either are
// disjoint or one holds the other. Returns the first violation in words, "" when none.
inline std::string firstPartialOverlap(const std::vector<OwnedEvent>& events) {
  std::map<std::pair<int64_t, int64_t>, std::vector<const OwnedEvent*>> tracks;
  for (const OwnedEvent& e : events) {
    if (e.phase == Phase::Complete) tracks[{e.pid, e.tid}].push_back(&e);
  }
  for (auto& [track, slices] : tracks) {
    // Outer slices first: by start, then the longer one.
    std::sort(slices.begin(), slices.end(), [](const OwnedEvent* a, const OwnedEvent* b) {
      return std::make_tuple(a->timestampNs, -a->durationNs) <
             std::make_tuple(b->timestampNs, -b->durationNs);
    });
    std::vector<const OwnedEvent*> open;
    for (const OwnedEvent* slice : slices) {
      const int64_t end = slice->timestampNs + slice->durationNs;
      while (!open.empty() &&
             open.back()->timestampNs + open.back()->durationNs <= slice->timestampNs) {
        open.pop_back();
      }
      if (!open.empty() && end > open.back()->timestampNs + open.back()->durationNs) {
        return "on pid " + std::to_string(track.first) + " tid " + std::to_string(track.second) +
               ", \"" + slice->name + "\" overlaps the end of \"" + open.back()->name + "\"";
      }
      open.push_back(slice);
    }
  }
  return "";
}

}  // namespace kinetrace::testing
