#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kinetrace/export.h"

// Host-side recording: ranges, instants, counters, thread names.
//
// All of these may be called from any thread at any time, with or without a running
// Profiler; without one they return after one relaxed atomic load. While recording, each
// call reads the clock and writes a fixed-size record into the calling thread's own buffer:
// no lock, no system call, no allocation once the thread's buffer is warm.
//
//   {
//     kinetrace::Range step("train_step");            // the name is copied
//     kinetrace::Range layer("layer " + std::to_string(i));
//     kinetrace::counter("loss", loss);
//   }
//
// Names are copied into the thread's buffer (a few nanoseconds for short names), so any
// string may be passed and may be freed right after the call. A string literal can skip
// the copy by being marked as one, with the `_kt` suffix: only a true literal can carry it,
// so a name stored by address can never point into a stack buffer.
//
// A name may be up to 4,096 bytes. A longer one is cut before the UTF-8 character that
// crosses that limit (so what is kept stays valid UTF-8), and the trace counts it
// (TraceStats::namesCut, metadata kinetrace_names_cut).
//
//   using namespace kinetrace::literals;
//   kinetrace::Range step("train_step"_kt);            // stored by address

namespace kinetrace {

class StaticName;
inline namespace literals {
constexpr StaticName operator""_kt(const char* data, std::size_t size);
}

// The name of a string literal, made only by the `_kt` suffix: it lives for the whole
// program, so kinetrace keeps its address instead of copying it.
class StaticName {
 public:
  const char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  constexpr StaticName(const char* data, std::size_t size) : data_(data), size_(size) {}
  friend constexpr StaticName literals::operator""_kt(const char* data, std::size_t size);
  const char* data_;
  std::size_t size_;
};

inline namespace literals {
// "train_step"_kt: a name stored by address. A user-defined literal operator receives only
// string literals, which is what makes this safe.
constexpr StaticName operator""_kt(const char* data, std::size_t size) {
  return StaticName(data, size);
}
}  // namespace literals

namespace detail {
KINETRACE_API void beginRangeStatic(const char* literal, std::size_t size) noexcept;
KINETRACE_API void beginRangeCopy(std::string_view name) noexcept;
KINETRACE_API void endRangeNow() noexcept;
KINETRACE_API void instantStatic(const char* literal, std::size_t size) noexcept;
KINETRACE_API void instantCopy(std::string_view name) noexcept;
KINETRACE_API void counterStatic(const char* literal, std::size_t size, double value) noexcept;
KINETRACE_API void counterCopy(std::string_view name, double value) noexcept;
KINETRACE_API uint64_t startAsyncRangeCopy(std::string_view name) noexcept;
KINETRACE_API void endAsyncRangeNow(uint64_t id) noexcept;
}  // namespace detail

// Whether a session is recording in this process (one relaxed atomic load).
KINETRACE_API bool recording() noexcept;

// Opens a range on this thread; close it with endRange() on the same thread. Ranges nest.
inline void beginRange(StaticName name) noexcept { detail::beginRangeStatic(name.data(), name.size()); }
inline void beginRange(std::string_view name) noexcept { detail::beginRangeCopy(name); }
// Closes the innermost open range of this thread. Without an open range it does nothing.
inline void endRange() noexcept { detail::endRangeNow(); }

// A range for the lifetime of the object (RAII).
class Range {
 public:
  explicit Range(StaticName name) noexcept { detail::beginRangeStatic(name.data(), name.size()); }
  explicit Range(std::string_view name) noexcept { detail::beginRangeCopy(name); }
  ~Range() { detail::endRangeNow(); }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;
};

// A range that need not nest: it may overlap other ranges and end on any thread (a request
// handed between threads, an nvtxRangeStart/End pair). Returns its id for endAsyncRange();
// 0 when not recording (ending id 0 does nothing). The name is copied. Async ranges appear
// on tracks of their own ("async ranges"), and GPU work launched on the starting thread
// while no nested range is open there is linked to the latest such range still open.
//
//   uint64_t request = kinetrace::startAsyncRange("request 42");
//   ...                                            // later, on any thread
//   kinetrace::endAsyncRange(request);
inline uint64_t startAsyncRange(std::string_view name) noexcept {
  return detail::startAsyncRangeCopy(name);
}
inline void endAsyncRange(uint64_t id) noexcept { detail::endAsyncRangeNow(id); }

// A point in time on this thread ("checkpoint saved").
inline void instant(StaticName name) noexcept { detail::instantStatic(name.data(), name.size()); }
inline void instant(std::string_view name) noexcept { detail::instantCopy(name); }

// One sample of a named series ("loss", "queue depth"); shown as a counter track.
inline void counter(StaticName name, double value) noexcept {
  detail::counterStatic(name.data(), name.size(), value);
}
inline void counter(std::string_view name, double value) noexcept { detail::counterCopy(name, value); }

// Names the calling thread in traces ("data loader"). Not for hot paths: takes a lock.
KINETRACE_API void setThreadName(std::string_view name);

}  // namespace kinetrace
