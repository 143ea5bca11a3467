#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace kinetrace::detail {

// Places intervals on as few tracks ("lanes") as keeps every lane's intervals disjoint,
// because a viewer (Perfetto) mis-draws slices that overlap on one track without nesting:
// CUDA kernels that overlap on one stream (programmatic dependent launch), GPU spans of
// ranges launched from several threads, async ranges.
//
// Intervals may arrive in any order. Each lane remembers its last kKeep intervals; an
// interval that starts before what a lane has forgotten never goes on that lane, so a
// placement is always correct, and memory stays bounded however long the trace.
class LaneAllocator {
 public:
  static constexpr std::size_t kKeep = 32;

  // The lane of [startNs, endNs]: the first lane where it overlaps nothing, else a new one.
  // An empty or reversed interval is treated as a point.
  uint16_t place(int64_t startNs, int64_t endNs);
  std::size_t laneCount() const { return lanes_.size(); }

 private:
  struct Lane {
    std::deque<std::pair<int64_t, int64_t>> intervals;  // disjoint, by start
    int64_t forgottenUntil = INT64_MIN;                 // intervals before this were dropped
  };
  static int64_t freeFrom(int64_t startNs, int64_t endNs);
  static bool fits(const Lane& lane, int64_t startNs, int64_t endNs);
  static void insert(Lane& lane, int64_t startNs, int64_t endNs);

  std::vector<Lane> lanes_;
};

}  // namespace kinetrace::detail
