#include "output/perfetto_lanes.h"

#include <algorithm>
#include <iterator>

namespace kinetrace::detail {

std::size_t SliceLanes::place(int64_t startNs, int64_t endNs) {
  for (std::size_t i = 0;; ++i) {
    if (i == lanes_.size()) lanes_.emplace_back();
    Lane& lane = lanes_[i];
    if (startNs < lane.forgottenUntil) continue;
    if (!tryPlace(lane.roots, startNs, endNs)) continue;
    if (budget_->remaining == 0) forgetOldest(lane);
    if (budget_->remaining > 0) --budget_->remaining;
    return i;
  }
}

// Places [start, end] in a level of slices that are apart, or says it does not nest.
bool SliceLanes::tryPlace(std::vector<Node>& level, int64_t start, int64_t end) {
  // The last slice that starts at or before the new one: the only one that can hold it.
  auto after = std::upper_bound(level.begin(), level.end(), start,
                                [](int64_t t, const Node& n) { return t < n.start; });
  if (after != level.begin()) {
    Node& before = *std::prev(after);
    if ((before.start <= start && end <= before.end && before.end > start) ||
        (before.start == start && before.end == start && end == start)) {  // both empty
      return !before.opaque && tryPlace(before.children, start, end);
    }
    // It started first and ends inside the new one: they cross.
    if (before.end > start && !(before.start == start && before.end == start)) return false;
  }
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
  std::size_t lane = 0;
  const Node* best = nullptr;
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    const Node* found = nullptr;
    innermost(lanes_[i].roots, timeNs, &found);
    if (found == nullptr) continue;
    if (best == nullptr || found->start > best->start ||
        (found->start == best->start && found->end - found->start < best->end - best->start)) {
      best = found;
      lane = i;
    }
  }
  return lane;
}

// A slice holds a time from its start until before its end: at its end its SLICE_END,
// written before whatever comes at that time, has closed it already.
void SliceLanes::innermost(const std::vector<Node>& level, int64_t timeNs, const Node** best) {
  auto after = std::upper_bound(level.begin(), level.end(), timeNs,
                                [](int64_t t, const Node& n) { return t < n.start; });
  if (after == level.begin()) return;
  const Node& n = *std::prev(after);
  if (timeNs < n.end || n.start == timeNs) {
    *best = &n;
    innermost(n.children, timeNs, best);
  }
}

// Frees room: what is inside the lane's oldest top-level slice that still holds anything,
// or, when none does, that slice itself.
void SliceLanes::forgetOldest(Lane& lane) {
  for (Node& root : lane.roots) {
    if (root.children.empty()) continue;
    std::size_t count = 0;
    std::vector<const Node*> stack;
    for (const Node& c : root.children) stack.push_back(&c);
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      ++count;
      for (const Node& c : n->children) stack.push_back(&c);
    }
    root.children.clear();
    root.children.shrink_to_fit();
    root.opaque = true;
    budget_->remaining += count;
    return;
  }
  if (lane.roots.empty()) return;
  lane.forgottenUntil = std::max(lane.forgottenUntil, lane.roots.front().end);
  lane.roots.erase(lane.roots.begin());
  ++budget_->remaining;
}

}  // namespace kinetrace::detail
