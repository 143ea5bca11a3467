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
//     kinetrace::Range step("train_step");          // a string literal: stored by address
//     kinetrace::Range named(std::string("layer ") + std::to_string(i));  // copied
//     kinetrace::counter("loss", loss);
//   }
//
// Names: a string literal (a `const char[N]`) is taken to live for the whole program and is
// stored by address, which is the cheapest form. Anything else (std::string, string_view,
// a `const char*` variable) is copied into the thread's buffer.

namespace kinetrace {

namespace detail {
KINETRACE_API void beginRangeStatic(const char* literal) noexcept;
KINETRACE_API void beginRangeCopy(std::string_view name) noexcept;
KINETRACE_API void endRangeNow() noexcept;
KINETRACE_API void instantStatic(const char* literal) noexcept;
KINETRACE_API void instantCopy(std::string_view name) noexcept;
KINETRACE_API void counterStatic(const char* literal, double value) noexcept;
KINETRACE_API void counterCopy(std::string_view name, double value) noexcept;
KINETRACE_API uint64_t startAsyncRangeCopy(std::string_view name) noexcept;
KINETRACE_API void endAsyncRangeNow(uint64_t id) noexcept;
}  // namespace detail

// Opens a range on this thread; close it with endRange() on the same thread. Ranges nest.
template <std::size_t N>
inline void beginRange(const char (&literal)[N]) noexcept { detail::beginRangeStatic(literal); }
inline void beginRange(std::string_view name) noexcept { detail::beginRangeCopy(name); }
// Closes the innermost open range of this thread. Without an open range it does nothing.
inline void endRange() noexcept { detail::endRangeNow(); }

// A range for the lifetime of the object (RAII).
class Range {
 public:
  template <std::size_t N>
  explicit Range(const char (&literal)[N]) noexcept { detail::beginRangeStatic(literal); }
  explicit Range(std::string_view name) noexcept { detail::beginRangeCopy(name); }
  ~Range() { detail::endRangeNow(); }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;
};

// A range that need not nest: it may overlap other ranges and end on any thread (a request
// handed between threads, an nvtxRangeStart/End pair). Returns its id for endAsyncRange();
// 0 when not recording (ending id 0 does nothing). The name is copied. Async ranges appear
// on tracks of their own ("async ranges"), and GPU work launched on the starting thread
// while no nested range is open there is linked to them.
//
//   uint64_t request = kinetrace::startAsyncRange("request 42");
//   ...                                            // later, on any thread
//   kinetrace::endAsyncRange(request);
inline uint64_t startAsyncRange(std::string_view name) noexcept {
  return detail::startAsyncRangeCopy(name);
}
inline void endAsyncRange(uint64_t id) noexcept { detail::endAsyncRangeNow(id); }

// A point in time on this thread ("checkpoint saved").
template <std::size_t N>
inline void instant(const char (&literal)[N]) noexcept { detail::instantStatic(literal); }
inline void instant(std::string_view name) noexcept { detail::instantCopy(name); }

// One sample of a named series ("loss", "queue depth"); shown as a counter track.
template <std::size_t N>
inline void counter(const char (&literal)[N], double value) noexcept {
  detail::counterStatic(literal, value);
}
inline void counter(std::string_view name, double value) noexcept { detail::counterCopy(name, value); }

// Names the calling thread in traces ("data loader"). Not for hot paths: takes a lock.
KINETRACE_API void setThreadName(std::string_view name);

}  // namespace kinetrace
