#include "output/perfetto_lanes.h"

#include <algorithm>
#include <optional>

namespace kinetrace::detail {

std::size_t SliceLanes::place(int64_t startNs, int64_t endNs) {
  const std::size_t lane = placeOnALane(startNs, endNs);
  if (++remembered_ > budget_) forgetOlderHalf();
  return lane;
}

std::size_t SliceLanes::placeOnALane(int64_t startNs, int64_t endNs) {
  for (std::size_t i = 0; i < kTriedLanes; ++i) {
    if (i == lanes_.size()) lanes_.emplace_back();
    Lane& lane = lanes_[i];
    if (startNs < lane.forgottenUntil) continue;
    if (nestsOn(lane.slices, startNs, endNs)) {
      lane.slices.insert({startNs, endNs, i});
      return i;
    }
  }
  // A slice apart from every slice of a lane nests there, whatever they are: the earlier
  // ones end at or before its start, or it ends before they start.
  std::size_t further = furtherSpans_.firstApart(/*endsBy=*/startNs, /*startsAfter=*/endNs);
  if (further == LaneSpans::kNone) {
    further = furtherSpans_.add(startNs, endNs);
  } else {
    furtherSpans_.widen(further, startNs, endNs);
  }
  const std::size_t lane = kTriedLanes + further;
  furtherSlices_.insert({startNs, endNs, lane});
  return lane;
}

// The two slices of the header's comment: the innermost open at the new one's start must
// end at or after its end, the innermost open at its end must start at or before its start.
// Both cases need a new slice that is not empty (s < e): an empty one nests on any lane.
bool SliceLanes::nestsOn(const SliceIndex& lane, int64_t startNs, int64_t endNs) {
  if (endNs == startNs) return true;
  const std::optional<SliceIndex::Slice> last = lane.last();
  if (!last) return true;
  if (last->start <= startNs) {
    // In time order, as most slices come: none starts after the new one, so only the first
    // case can arise, and the last slice, when open at the new one's start, is the innermost
    // open there (found without a search when the new one goes inside it).
    const std::optional<SliceIndex::Slice> open =
        last->end > startNs ? last : lane.innermostOpen(startNs);
    return !open || open->end >= endNs;
  }
  if (const std::optional<SliceIndex::Slice> open = lane.innermostOpen(startNs)) {
    if (open->end < endNs) return false;
  }
  if (const std::optional<SliceIndex::Slice> open = lane.innermostOpen(endNs)) {
    if (open->start > startNs) return false;
  }
  return true;
}

std::size_t SliceLanes::laneAt(int64_t timeNs) const {
  if (laneCount() <= 1) return 0;  // most tracks: nothing to choose from
  std::size_t lane = 0;
  int64_t bestStart = 0, bestEnd = 0;
  bool found = false;
  // Later start, then shorter (with one start, the one that ends first: no duration to
  // overflow at the extremes of time); ties go to the lower lane, met first.
  auto consider = [&](int64_t start, int64_t end, std::size_t onLane) {
    if (!found || start > bestStart || (start == bestStart && end < bestEnd)) {
      found = true;
      bestStart = start;
      bestEnd = end;
      lane = onLane;
    }
  };
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    if (const std::optional<SliceIndex::Slice> inner = lanes_[i].slices.innermost(timeNs)) {
      consider(inner->start, inner->end, i);
    }
  }
  if (const std::optional<SliceIndex::Slice> further = furtherSlices_.innermost(timeNs)) {
    consider(further->start, further->end, further->lane);
  }
  return lane;
}

// Forgets about half of what is remembered, the slices that ended first, and at least a
// quarter: at most once per quarter of a budget of slices placed, so that placing stays
// logarithmic on average.
void SliceLanes::forgetOlderHalf() {
  std::vector<int64_t> ends;
  for (const Lane& lane : lanes_) lane.slices.collectEnds(&ends);
  furtherSlices_.collectEnds(&ends);
  if (ends.empty()) return;
  auto middle = ends.begin() + static_cast<std::ptrdiff_t>(ends.size() / 2);
  std::nth_element(ends.begin(), middle, ends.end());
  const int64_t median = *middle;
  // The slices that end before the median end; where fewer than a quarter do (many end at
  // it), those that end at it too. Forgetting less would leave the budget nearly full: the
  // next few slices placed would forget again, each going through all that is remembered
  // (a quarter of a million slices ending together and one more each time, say).
  const auto before = static_cast<std::size_t>(
      std::count_if(ends.begin(), middle, [median](int64_t end) { return end < median; }));
  const int64_t last = before > 0 && 4 * before >= ends.size() ? median - 1 : median;
  // A slice that starts after the last end forgotten is apart from every slice forgotten
  // (one that starts at it too: at INT64_MAX there is no later time).
  const int64_t forgottenUntil = last == INT64_MAX ? last : last + 1;
  for (Lane& lane : lanes_) {
    remembered_ -= std::min(remembered_, lane.slices.forgetEndingBy(last));
    lane.forgottenUntil = std::max(lane.forgottenUntil, forgottenUntil);
  }
  remembered_ -= std::min(remembered_, furtherSlices_.forgetEndingBy(last));
}

}  // namespace kinetrace::detail
