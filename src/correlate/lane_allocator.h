#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "model/lane_spans.h"

namespace kinetrace::detail {

// Places intervals on as few tracks ("lanes") as keeps every lane's intervals disjoint,
// because a viewer (Perfetto) mis-draws slices that overlap on one track without nesting:
// CUDA kernels that overlap on one stream (programmatic dependent launch), GPU spans of
// ranges launched from several threads, async ranges.
//
// Intervals may arrive in any order. Each of the first kTriedLanes lanes remembers its last
// kKeep intervals; an interval that starts before what a lane has forgotten never goes on
// that lane, so a placement is always correct, and memory stays bounded however long the
// trace. An interval that fits none of them goes on the first further lane whose intervals
// all end by its start or all start after its end (kept as each lane's span, 32 to 64
// bytes a lane, at most 65,535 lanes), else on a new one: intervals that all overlap one
// another need a lane each, and trying every lane in turn would make placing them quadratic.
class LaneAllocator {
 public:
  static constexpr std::size_t kKeep = 32;
  // Lanes tried one by one: kernels overlap on a stream a few at a time, so more than these
  // are met only in pathological traces.
  static constexpr std::size_t kTriedLanes = 16;

  // The lane of [startNs, endNs]: the first lane where it overlaps nothing among the first
  // kTriedLanes, else the first further lane it is apart from, else a new one; the tries,
  // then time logarithmic in the lanes. An empty or reversed interval is treated as a point.
  uint16_t place(int64_t startNs, int64_t endNs);
  std::size_t laneCount() const { return lanes_.size() + further_.size(); }
  // Roughly what the lanes hold, for the memory budget.
  std::size_t heldBytes() const;

 private:
  struct Lane {
    std::deque<std::pair<int64_t, int64_t>> intervals;  // disjoint, by start
    int64_t forgottenUntil = INT64_MIN;                 // intervals before this were dropped
  };
  static int64_t freeFrom(int64_t startNs, int64_t endNs);
  static bool fits(const Lane& lane, int64_t startNs, int64_t endNs);
  static void insert(Lane& lane, int64_t startNs, int64_t endNs);

  std::vector<Lane> lanes_;  // the first kTriedLanes
  LaneSpans further_;        // the spans of lanes kTriedLanes, kTriedLanes + 1, ...
};

// The lanes of every GPU stream, one LaneAllocator per (device, stream) and kind of track a
// stream has in a trace: its operations, its synchronisations, and the GPU spans of the host
// ranges that launched work on it each nest on tracks of their own.
enum class StreamTrack { Ops = 0, Syncs = 1, Spans = 2 };

class StreamLanes {
 public:
  // The lane of [startNs, endNs] among `track`'s of the stream (LaneAllocator::place).
  uint16_t place(uint32_t deviceId, uint32_t streamId, StreamTrack track, int64_t startNs,
                 int64_t endNs);
  // Roughly what the lanes hold, for the memory budget.
  std::size_t heldBytes() const;

 private:
  std::map<std::pair<uint64_t, StreamTrack>, LaneAllocator> lanes_;
};

}  // namespace kinetrace::detail
