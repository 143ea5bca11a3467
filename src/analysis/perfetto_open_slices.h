#pragma once

// The slices of a .pftrace begun (TYPE_SLICE_BEGIN) and not yet ended, a stack per track,
// each begin waiting for the end that makes it one complete event. Separate from the reader
// because it is the one part of a read whose memory a file controls without bound (a slice
// may stay open to the end): it keeps begins within half the read budget and counts the
// rest, so an endless nesting takes no memory and is reported, never dropped silently.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "analysis/perfetto_track_events.h"
#include "analysis/read_budget.h"

namespace kinetrace::detail {

inline constexpr const char* kOpenSlicesGrowth = "open slices";

class OpenSlices {
 public:
  // Begins are kept while they take at most half of `budget`'s cap.
  explicit OpenSlices(ReadBudget& budget);
  ~OpenSlices();
  OpenSlices(const OpenSlices&) = delete;
  OpenSlices& operator=(const OpenSlices&) = delete;

  // A slice's begin, on its track's stack: kept while it and the room its stack keeps for
  // it fit within half the budget (and the budget gives it), else counted as left out.
  void begin(DecodedEvent begin);
  // The end of the slice on top of `track`'s stack: its begin, or nullopt when that begin
  // was left out (the slice is lost; the caller counts it). An end with no begin on its
  // track is an error.
  std::optional<DecodedEvent> end(uint64_t track);
  // Slices begun and not (yet) ended, kept or left out.
  uint64_t unended() const;

  // What a begun slice holds in memory while it waits for its end: its strings, flows and
  // annotations, each allocation with malloc's overhead.
  static std::size_t bytesOf(const DecodedEvent& e);

 private:
  // A begun slice, kept, with the begins left out (for want of memory) after it on its track.
  struct OpenSlice {
    DecodedEvent begin;
    bool kept = false;
    uint64_t leftOut = 0;
    std::size_t bytes = 0;  // taken from the budget for `begin`
  };

  ReadBudget& budget_;
  BudgetUnorderedMap<uint64_t, BudgetVector<OpenSlice>> stacks_;
  const std::size_t budgetBytes_;
  std::size_t bytes_ = 0;  // of the open slices, with their stacks' room
  std::size_t taken_ = 0;  // of the open slices, taken from the budget
};

}  // namespace kinetrace::detail
