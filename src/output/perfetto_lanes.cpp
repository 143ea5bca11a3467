#include "output/perfetto_lanes.h"

#include <algorithm>
#include <iterator>
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
    if (tryPlace(lane.roots, startNs, endNs)) return i;
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

// Places [start, end] among a lane's slices, or says it does not nest. Down the slices that
// hold it in a loop, not by recursion: nested slices can be as deep as the budget is long.
bool SliceLanes::tryPlace(std::vector<Node>& roots, int64_t start, int64_t end) {
  std::vector<Node>* down = &roots;
  std::vector<Node>::iterator after;
  for (;;) {
    std::vector<Node>& level = *down;
    // The last slice that starts at or before the new one: the only one that can hold it.
    // Most slices come in time order: after the last one, found without a search.
    after = !level.empty() && level.back().start <= start
                ? level.end()
                : std::upper_bound(level.begin(), level.end(), start,
                                   [](int64_t t, const Node& n) { return t < n.start; });
    if (after == level.begin()) break;
    Node& before = *std::prev(after);
    if (before.start == start && before.end == start && end == start) {
      // Both empty at one time: beside the others inside it (all empty at that time), not
      // inside the last of them, or many at one time would nest as deep as they are many.
      before.children.push_back(Node{start, end, {}});
      return true;
    }
    if (before.start <= start && end <= before.end && before.end > start) {
      // The next slice may start where `before` ends (written after it, before the new
      // one): a new one ending there too would close that one, whose BEGIN comes first at
      // that time. Nothing inside `before` tells.
      if (end == before.end && end > start && after != level.end() && after->start == end &&
          after->end > after->start) {
        return false;
      }
      down = &before.children;
      continue;
    }
    // It started first and ends inside the new one: they cross.
    if (before.end > start && !(before.start == start && before.end == start)) return false;
    break;
  }
  std::vector<Node>& level = *down;
  // Those that start inside the new one must end inside it, and start after its start
  // unless they are empty or cover the same span.
  auto first = after;
  while (first != level.begin() && std::prev(first)->start == start) --first;
  auto last = first;
  for (; last != level.end() && last->start <= end; ++last) {
    const Node& n = *last;
    if (n.start == end && n.start != start) {
      if (n.end != n.start) return false;  // opens before the new one's END, which closes it
      continue;
    }
    if (n.end > end) return false;
    if (n.start == start && n.end != start && n.end != end) return false;
  }
  // The slices from `first` that lie inside become its children; an empty one at its end
  // stays beside it.
  auto inside = first;
  while (inside != last && (inside->start < end || inside->start == start)) ++inside;
  Node node;
  node.start = start;
  node.end = end;
  node.children.assign(std::make_move_iterator(first), std::make_move_iterator(inside));
  const auto at = level.erase(first, inside);
  level.insert(at, std::move(node));
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
    if (const Node* inner = innermost(lanes_[i].roots, timeNs)) {
      consider(inner->start, inner->end, i);
    }
  }
  if (const std::optional<SliceIndex::Slice> further = furtherSlices_.innermost(timeNs)) {
    consider(further->start, further->end, further->lane);
  }
  return lane;
}

// A slice holds a time from its start until before its end: at its end its SLICE_END,
// written before whatever comes at that time, has closed it already.
const SliceLanes::Node* SliceLanes::innermost(const std::vector<Node>& roots, int64_t timeNs) {
  const Node* best = nullptr;
  for (const std::vector<Node>* level = &roots;;) {
    auto after = std::upper_bound(level->begin(), level->end(), timeNs,
                                  [](int64_t t, const Node& n) { return t < n.start; });
    if (after == level->begin()) return best;
    const Node& n = *std::prev(after);
    if (!(timeNs < n.end || n.start == timeNs)) return best;
    best = &n;
    level = &n.children;
  }
}

// The traversals below keep the levels still to visit on a list of their own rather than
// recursing: nested slices can be as deep as the budget is long, far deeper than a stack.
void SliceLanes::collectEnds(const std::vector<Node>& roots, std::vector<int64_t>* ends) {
  std::vector<const std::vector<Node>*> levels{&roots};
  while (!levels.empty()) {
    const std::vector<Node>* level = levels.back();
    levels.pop_back();
    for (const Node& n : *level) {
      ends->push_back(n.end);
      if (!n.children.empty()) levels.push_back(&n.children);
    }
  }
}

// Drops the slices that end before the horizon (with what is inside them, which ends no
// later); returns how many.
std::size_t SliceLanes::forgetBefore(std::vector<Node>& roots, int64_t horizonNs) {
  std::size_t dropped = 0;
  std::vector<std::vector<Node>*> levels{&roots};
  while (!levels.empty()) {
    std::vector<Node>& level = *levels.back();
    levels.pop_back();
    std::vector<Node> kept;
    kept.reserve(level.size());
    for (Node& n : level) {
      if (n.end < horizonNs) {
        dropped += 1 + dismantle(std::move(n.children));
      } else {
        kept.push_back(std::move(n));
      }
    }
    level = std::move(kept);
    for (Node& n : level) {
      if (!n.children.empty()) levels.push_back(&n.children);
    }
  }
  return dropped;
}

// Destroys slices and what is inside them, each level's slices emptied of theirs before
// they go, so that no destructor recurses; returns how many.
std::size_t SliceLanes::dismantle(std::vector<Node> nodes) {
  std::size_t count = 0;
  std::vector<std::vector<Node>> levels;
  levels.push_back(std::move(nodes));
  while (!levels.empty()) {
    std::vector<Node> level = std::move(levels.back());
    levels.pop_back();
    count += level.size();
    for (Node& n : level) {
      if (!n.children.empty()) levels.push_back(std::move(n.children));
    }
  }
  return count;
}

SliceLanes::~SliceLanes() {
  for (Lane& lane : lanes_) dismantle(std::move(lane.roots));
}

// Forgets about half of what is remembered, the slices that ended first: once per half a
// budget of slices placed, so placing stays constant time on average.
void SliceLanes::forgetOlderHalf() {
  std::vector<int64_t> ends;
  for (const Lane& lane : lanes_) collectEnds(lane.roots, &ends);
  furtherSlices_.collectEnds(&ends);
  if (ends.empty()) return;
  auto middle = ends.begin() + static_cast<std::ptrdiff_t>(ends.size() / 2);
  std::nth_element(ends.begin(), middle, ends.end());
  // Past the median end: slices ending before it, and at it when that is all of them (many
  // equal ends), so something is always forgotten.
  int64_t horizon = *middle;
  if (*std::min_element(ends.begin(), ends.end()) == horizon) ++horizon;
  for (Lane& lane : lanes_) {
    remembered_ -= std::min(remembered_, forgetBefore(lane.roots, horizon));
    lane.forgottenUntil = std::max(lane.forgottenUntil, horizon);
  }
  remembered_ -= std::min(remembered_, furtherSlices_.forgetEndingBy(horizon - 1));
}

}  // namespace kinetrace::detail
