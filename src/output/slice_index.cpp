#include "output/slice_index.h"

#include <algorithm>
#include <array>

namespace kinetrace::detail {

void SliceIndex::insert(const Slice& slice) {
  const auto item = static_cast<uint32_t>(nodes_.size());
  Node node;
  node.start = slice.start;
  node.end = slice.end;
  node.latestEnd = slice.end;
  node.lane = static_cast<uint32_t>(slice.lane);
  nodes_.push_back(node);
  if (root_ == kNil) {
    root_ = item;
    last_ = item;
    spine_.clear();
    return;
  }
  // One equal to the last goes after it, as below.
  if (!precedes(node, nodes_[last_])) {
    append(item);
    return;
  }
  // Down to where it goes, each node on the way holding its end below it from now on. Where
  // the right spine is known, its nodes above the one whose left subtree takes the new one
  // (the first after it in the order) are the top of the way, read side by side: a slice
  // out of time order usually belongs among the last placed (a range written after those
  // inside it).
  std::array<uint32_t, kMaxHeight> path;
  std::size_t depth = 0;
  std::size_t onSpine = 0;  // path[0, onSpine) are spine nodes
  uint32_t down = root_;
  if (!spine_.empty()) {
    std::size_t i = spine_.size() - 1;  // the last, after the new one
    while (i > 0 && precedes(node, nodes_[spine_[i - 1]])) --i;
    for (std::size_t j = 0; j < i; ++j) {
      path[depth++] = spine_[j];
      nodes_[spine_[j]].latestEnd = std::max(nodes_[spine_[j]].latestEnd, node.end);
    }
    down = spine_[i];
    onSpine = i + 1;
  }
  int side = 0;
  for (; down != kNil; down = child(down, side)) {
    path[depth++] = down;
    nodes_[down].latestEnd = std::max(nodes_[down].latestEnd, node.end);
    side = precedes(node, nodes_[down]) ? 0 : 1;
  }
  child(path[depth - 1], side) = item;
  // Up again while a subtree grew taller. The first that leans two levels to one side is
  // rotated back to the height it had, and nothing above it changes.
  for (uint32_t grown = item; depth > 0;) {
    const uint32_t at = path[--depth];
    Node& n = nodes_[at];
    n.balance = static_cast<int8_t>(n.balance + (n.left == grown ? -1 : 1));
    if (n.balance == 0) return;
    if (n.balance == 1 || n.balance == -1) {
      grown = at;
      continue;
    }
    const uint32_t top = rotateBack(at, n.balance > 0 ? 1 : 0);
    if (depth == 0) {
      root_ = top;
    } else {
      const uint32_t up = path[depth - 1];
      child(up, nodes_[up].left == at ? 0 : 1) = top;
    }
    if (depth < onSpine) spine_.clear();  // a spine node went down: found again when needed
    return;
  }
}

// After the last slice, where slices in time order go: down the right spine, kept as a list
// so that its nodes are read side by side rather than one link after another, and up again
// while a subtree grew taller, always on its right.
void SliceIndex::append(uint32_t item) {
  if (spine_.empty()) {
    for (uint32_t at = root_; at != kNil; at = nodes_[at].right) spine_.push_back(at);
  }
  // Up the spine, latest ends only grow: the first that holds the new end has it above too
  // (at once for a slice inside the last).
  const int64_t end = nodes_[item].end;
  for (std::size_t i = spine_.size(); i-- > 0 && nodes_[spine_[i]].latestEnd < end;) {
    nodes_[spine_[i]].latestEnd = end;
  }
  nodes_[spine_.back()].right = item;
  spine_.push_back(item);
  last_ = item;
  for (std::size_t i = spine_.size() - 1; i-- > 0;) {
    Node& n = nodes_[spine_[i]];
    n.balance = static_cast<int8_t>(n.balance + 1);
    if (n.balance == 0) return;
    if (n.balance == 1) continue;
    // Its right child leans right too: one rotation lifts that child to its place on the
    // spine, and this one goes to the child's left.
    const uint32_t top = rotateBack(spine_[i], 1);
    if (i == 0) {
      root_ = top;
    } else {
      nodes_[spine_[i - 1]].right = top;
    }
    spine_.erase(spine_.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

// The order of the tree: by start, a longer slice before a shorter one with the same start,
// then the higher lane first, so that the last slice holding a time is the innermost and,
// between equals, the one on the lowest lane.
bool SliceIndex::precedes(const Node& a, const Node& b) {
  if (a.start != b.start) return a.start < b.start;
  if (a.end != b.end) return a.end > b.end;
  return a.lane > b.lane;
}

// The subtree at `at` leans two levels to `side` (0 left, 1 right) after an insert below
// its child there: rotated (once, or twice when the insert went below that child's inner
// side) back to the height it had before; returns its new root.
uint32_t SliceIndex::rotateBack(uint32_t at, int side) {
  const int other = 1 - side;
  const int8_t lean = side == 1 ? 1 : -1;
  const int64_t latestEnd = nodes_[at].latestEnd;  // the subtree keeps its slices
  const uint32_t below = child(at, side);
  uint32_t top = below;
  if (nodes_[below].balance == lean) {
    child(at, side) = child(below, other);
    child(below, other) = at;
    nodes_[at].balance = 0;
    nodes_[below].balance = 0;
  } else {
    top = child(below, other);
    const int8_t topLean = nodes_[top].balance;
    child(at, side) = child(top, other);
    child(below, other) = child(top, side);
    child(top, other) = at;
    child(top, side) = below;
    nodes_[at].balance = topLean == lean ? static_cast<int8_t>(-lean) : int8_t{0};
    nodes_[below].balance = topLean == -lean ? lean : int8_t{0};
    nodes_[top].balance = 0;
    pull(below);
  }
  pull(at);
  nodes_[top].latestEnd = latestEnd;
  return top;
}

void SliceIndex::pull(uint32_t at) {
  Node& node = nodes_[at];
  node.latestEnd = node.end;
  if (node.left != kNil) node.latestEnd = std::max(node.latestEnd, nodes_[node.left].latestEnd);
  if (node.right != kNil) node.latestEnd = std::max(node.latestEnd, nodes_[node.right].latestEnd);
}

std::optional<SliceIndex::Slice> SliceIndex::sliceAt(uint32_t at) const {
  if (at == kNil) return std::nullopt;
  const Node& node = nodes_[at];
  return Slice{node.start, node.end, node.lane};
}

std::optional<SliceIndex::Slice> SliceIndex::last() const {
  return sliceAt(last_);
}

std::optional<SliceIndex::Slice> SliceIndex::innermost(int64_t timeNs) const {
  // All ended before the time (as on most lanes, most of the time): none holds it.
  if (root_ == kNil || nodes_[root_].latestEnd < timeNs) return std::nullopt;
  const Node& latest = nodes_[last_];
  if (latest.start <= timeNs) {
    // Every slice starts by the time (a time at the end of those placed, as most are asked
    // about): the last holds it if it starts then or is open then, and is innermost.
    if (latest.start == timeNs || latest.end > timeNs) return sliceAt(last_);
    return innermostOpen(timeNs);
  }
  // The last slice to start at or before the time: when it starts at the time it holds it,
  // and is innermost (empty, or the shortest of those starting then).
  uint32_t last = kNil;
  for (uint32_t at = root_; at != kNil;) {
    if (nodes_[at].start <= timeNs) {
      last = at;
      at = nodes_[at].right;
    } else {
      at = nodes_[at].left;
    }
  }
  if (last == kNil) return std::nullopt;
  if (nodes_[last].start == timeNs) return sliceAt(last);
  return innermostOpen(timeNs);
}

std::optional<SliceIndex::Slice> SliceIndex::innermostOpen(int64_t timeNs) const {
  if (root_ == kNil || nodes_[root_].latestEnd <= timeNs) return std::nullopt;
  if (spine_.empty()) return sliceAt(lastOpen(root_, timeNs));
  // From the end of the order, up the right spine: slices in time order find the one they
  // go in (or beside) among those placed last, in a few steps. In order, the tree is the
  // left subtree of the first spine node, that node, the left subtree of the second, ...
  // Of the spine nodes that start after the time, only the left subtree of the highest
  // may hold slices that start by it; from there up, every slice does.
  std::size_t i = spine_.size();
  while (i > 0 && nodes_[spine_[i - 1]].start > timeNs) --i;
  if (i < spine_.size()) {
    const uint32_t found = lastOpen(nodes_[spine_[i]].left, timeNs);
    if (found != kNil) return sliceAt(found);
  }
  while (i-- > 0) {
    const Node& node = nodes_[spine_[i]];
    if (node.end > timeNs) return sliceAt(spine_[i]);
    if (node.left != kNil && nodes_[node.left].latestEnd > timeNs) {
      return sliceAt(lastEndingAfter(node.left, timeNs));
    }
  }
  return std::nullopt;
}

// The last slice of the subtree that ends after the time, which one of them does: down one
// path.
uint32_t SliceIndex::lastEndingAfter(uint32_t at, int64_t timeNs) const {
  for (;;) {
    const Node& node = nodes_[at];
    if (node.right != kNil && nodes_[node.right].latestEnd > timeNs) {
      at = node.right;
    } else if (node.end > timeNs) {
      return at;
    } else {
      at = node.left;
    }
  }
}

// The last slice of the subtree that starts at or before the time and ends after it. A
// subtree whose slices all start by the time is searched down one path (a child whose
// latest end is after the time has the answer), and only the subtrees along the path to
// the time are not: O(height).
uint32_t SliceIndex::lastOpen(uint32_t at, int64_t timeNs) const {
  if (at == kNil || nodes_[at].latestEnd <= timeNs) return kNil;
  const Node& node = nodes_[at];
  if (node.start > timeNs) return lastOpen(node.left, timeNs);
  const uint32_t later = lastOpen(node.right, timeNs);
  if (later != kNil) return later;
  if (node.end > timeNs) return at;
  return lastOpen(node.left, timeNs);
}

std::size_t SliceIndex::forgetEndingBy(int64_t lastNs) {
  std::vector<Node> kept;
  kept.reserve(nodes_.size());  // touched only as far as it is filled
  collectInOrder(root_, lastNs, &kept);
  const std::size_t forgotten = nodes_.size() - kept.size();
  if (forgotten == 0) return 0;
  // Built again, balanced, from what is kept (in order already), like the forgetting itself
  // once per share of the budget placed at most. In the memory held already, which the
  // slices placed next take again (about half of what a tree that still grows holds, as
  // much as it forgets); a tree that kept less than a quarter (a lane that slices no longer
  // go on) gives back all but twice what it kept.
  if (nodes_.capacity() > 4 * kept.size()) {
    std::vector<Node> smaller;
    smaller.reserve(2 * kept.size());
    nodes_.swap(smaller);
  } else {
    nodes_.clear();
  }
  spine_.clear();
  int height = 0;
  root_ = build(kept, 0, kept.size(), &height);
  last_ = root_;
  while (last_ != kNil && nodes_[last_].right != kNil) last_ = nodes_[last_].right;
  return forgotten;
}

// Appends the subtree's slices that end after the time, in order.
void SliceIndex::collectInOrder(uint32_t at, int64_t keepAfterNs, std::vector<Node>* kept) const {
  if (at == kNil) return;
  const Node& node = nodes_[at];
  collectInOrder(node.left, keepAfterNs, kept);
  if (node.end > keepAfterNs) kept->push_back(node);
  collectInOrder(node.right, keepAfterNs, kept);
}

// A balanced tree of sorted[from, to): the middle at its root, as high as log2 of their
// number, which it sets `height` to.
uint32_t SliceIndex::build(const std::vector<Node>& sorted, std::size_t from, std::size_t to,
                           int* height) {
  if (from == to) {
    *height = 0;
    return kNil;
  }
  const std::size_t middle = from + (to - from) / 2;
  int leftHeight = 0, rightHeight = 0;
  const uint32_t left = build(sorted, from, middle, &leftHeight);
  const auto at = static_cast<uint32_t>(nodes_.size());
  Node node = sorted[middle];
  node.left = left;
  node.right = kNil;
  nodes_.push_back(node);
  const uint32_t right = build(sorted, middle + 1, to, &rightHeight);
  nodes_[at].right = right;
  nodes_[at].balance = static_cast<int8_t>(rightHeight - leftHeight);
  pull(at);
  *height = 1 + std::max(leftHeight, rightHeight);
  return at;
}

void SliceIndex::collectEnds(std::vector<int64_t>* ends) const {
  for (const Node& node : nodes_) ends->push_back(node.end);
}

}  // namespace kinetrace::detail
