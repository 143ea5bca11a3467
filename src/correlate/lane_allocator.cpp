#include "correlate/lane_allocator.h"

#include <algorithm>
#include <limits>

namespace kinetrace::detail {

bool LaneAllocator::fits(const Lane& lane, int64_t startNs, int64_t endNs) {
  if (startNs < lane.forgottenUntil) return false;
  // The first interval starting at or after ours, and the one before it.
  auto next = std::lower_bound(lane.intervals.begin(), lane.intervals.end(), startNs,
                               [](const auto& interval, int64_t t) { return interval.first < t; });
  if (next != lane.intervals.end() && next->first < endNs) return false;
  if (next != lane.intervals.end() && next->first == startNs) return false;
  if (next != lane.intervals.begin() && std::prev(next)->second > startNs) return false;
  return true;
}

// The earliest start of an interval that may follow [startNs, endNs] on its lane: its end,
// or the next nanosecond after a point (two intervals may not start together).
int64_t LaneAllocator::freeFrom(int64_t startNs, int64_t endNs) {
  return endNs > startNs ? endNs : startNs + 1;
}

void LaneAllocator::insert(Lane& lane, int64_t startNs, int64_t endNs) {
  auto at = std::lower_bound(lane.intervals.begin(), lane.intervals.end(), startNs,
                             [](const auto& interval, int64_t t) { return interval.first < t; });
  lane.intervals.insert(at, {startNs, endNs});
  if (lane.intervals.size() > kKeep) {
    const auto& [start, end] = lane.intervals.front();
    lane.forgottenUntil = std::max(lane.forgottenUntil, freeFrom(start, end));
    lane.intervals.pop_front();
  }
}

uint16_t LaneAllocator::place(int64_t startNs, int64_t endNs) {
  if (endNs < startNs) endNs = startNs;
  // A point at the end of time goes where [INT64_MAX - 1, INT64_MAX] would, which clashes
  // with all it clashes with: then freeFrom() can say the nanosecond after any point.
  if (startNs == INT64_MAX) startNs = INT64_MAX - 1;
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    if (fits(lanes_[i], startNs, endNs)) {
      insert(lanes_[i], startNs, endNs);
      return static_cast<uint16_t>(i);
    }
  }
  if (lanes_.size() < kTriedLanes) {
    lanes_.emplace_back();
    insert(lanes_.back(), startNs, endNs);
    return static_cast<uint16_t>(lanes_.size() - 1);
  }
  // A further lane's span ends where what it holds leaves it free (freeFrom()): the new
  // interval fits after all of it from there, and before all of it when it ends by their
  // start and does not start with them (a point).
  const int64_t until = freeFrom(startNs, endNs);
  const int64_t startsAfter = endNs > startNs ? endNs - 1 : startNs;
  const std::size_t further = further_.firstApart(/*endsBy=*/startNs, startsAfter);
  if (further != LaneSpans::kNone) {
    further_.widen(further, startNs, until);
    return static_cast<uint16_t>(kTriedLanes + further);
  }
  // More lanes than a track id can say is a pathological input: the last lane takes the
  // rest (and may overlap) rather than growing without bound.
  if (laneCount() >= std::numeric_limits<uint16_t>::max()) {
    return static_cast<uint16_t>(laneCount() - 1);
  }
  return static_cast<uint16_t>(kTriedLanes + further_.add(startNs, until));
}

std::size_t LaneAllocator::heldBytes() const {
  return lanes_.capacity() * sizeof(Lane) + lanes_.size() * kKeep * 16 + further_.heldBytes();
}

uint16_t StreamLanes::place(uint32_t deviceId, uint32_t streamId, StreamTrack track,
                            int64_t startNs, int64_t endNs) {
  const uint64_t stream = uint64_t{deviceId} << 32 | streamId;
  return lanes_[{stream, track}].place(startNs, endNs);
}

std::size_t StreamLanes::heldBytes() const {
  constexpr std::size_t kNode = 32;  // a map node's links and key
  std::size_t bytes = 0;
  for (const auto& [key, lanes] : lanes_) bytes += lanes.heldBytes() + kNode;
  return bytes;
}

}  // namespace kinetrace::detail
