#include "output/slice_index.h"

#include <algorithm>

namespace kinetrace::detail {

void SliceIndex::insert(const Slice& slice) {
  const auto item = static_cast<uint32_t>(nodes_.size());
  Node node;
  node.slice = slice;
  node.latestEnd = slice.end;
  node.priority = nextPriority();
  nodes_.push_back(node);
  root_ = insertAt(root_, item);
}

// The order of the treap: by start, a longer slice before a shorter one with the same
// start, then the higher lane first, so that the last slice holding a time is the innermost
// and, between equals, the one on the lowest lane.
bool SliceIndex::precedes(const Slice& a, const Slice& b) {
  if (a.start != b.start) return a.start < b.start;
  if (a.end != b.end) return a.end > b.end;
  return a.lane > b.lane;
}

uint32_t SliceIndex::insertAt(uint32_t at, uint32_t item) {
  if (at == kNil) return item;
  if (nodes_[item].priority > nodes_[at].priority) {
    split(at, nodes_[item].slice, &nodes_[item].left, &nodes_[item].right);
    pull(item);
    return item;
  }
  if (precedes(nodes_[item].slice, nodes_[at].slice)) {
    nodes_[at].left = insertAt(nodes_[at].left, item);
  } else {
    nodes_[at].right = insertAt(nodes_[at].right, item);
  }
  pull(at);
  return at;
}

// Splits the subtree at `at` into the slices that precede `key` and the rest.
void SliceIndex::split(uint32_t at, const Slice& key, uint32_t* before, uint32_t* rest) {
  if (at == kNil) {
    *before = kNil;
    *rest = kNil;
    return;
  }
  Node& node = nodes_[at];
  if (precedes(node.slice, key)) {
    split(node.right, key, &node.right, rest);
    *before = at;
  } else {
    split(node.left, key, before, &node.left);
    *rest = at;
  }
  pull(at);
}

void SliceIndex::pull(uint32_t at) {
  Node& node = nodes_[at];
  node.latestEnd = node.slice.end;
  if (node.left != kNil) node.latestEnd = std::max(node.latestEnd, nodes_[node.left].latestEnd);
  if (node.right != kNil) node.latestEnd = std::max(node.latestEnd, nodes_[node.right].latestEnd);
}

const SliceIndex::Slice* SliceIndex::innermost(int64_t timeNs) const {
  // The last slice to start at or before the time: when it starts at the time it holds it,
  // and is innermost (empty, or the shortest of those starting then).
  uint32_t last = kNil;
  for (uint32_t at = root_; at != kNil;) {
    if (nodes_[at].slice.start <= timeNs) {
      last = at;
      at = nodes_[at].right;
    } else {
      at = nodes_[at].left;
    }
  }
  if (last == kNil) return nullptr;
  if (nodes_[last].slice.start == timeNs) return &nodes_[last].slice;
  const uint32_t found = lastHolding(root_, timeNs);
  return found == kNil ? nullptr : &nodes_[found].slice;
}

// The last slice of the subtree that starts at or before the time and ends after it. A
// subtree whose slices all start by the time is searched down one path (a child whose
// latest end is after the time has the answer), and only the subtrees along the path to
// the time are not: O(depth).
uint32_t SliceIndex::lastHolding(uint32_t at, int64_t timeNs) const {
  if (at == kNil || nodes_[at].latestEnd <= timeNs) return kNil;
  const Node& node = nodes_[at];
  if (node.slice.start > timeNs) return lastHolding(node.left, timeNs);
  const uint32_t later = lastHolding(node.right, timeNs);
  if (later != kNil) return later;
  if (node.slice.end > timeNs) return at;
  return lastHolding(node.left, timeNs);
}

std::size_t SliceIndex::forgetEndingBefore(int64_t horizonNs) {
  std::vector<Slice> kept;
  for (const Node& node : nodes_) {
    if (node.slice.end >= horizonNs) kept.push_back(node.slice);
  }
  const std::size_t dropped = nodes_.size() - kept.size();
  if (dropped == 0) return 0;
  // Built again from what is kept: once per half a budget of slices placed, like the
  // forgetting itself.
  std::vector<Node>().swap(nodes_);
  nodes_.reserve(kept.size());
  root_ = kNil;
  for (const Slice& slice : kept) insert(slice);
  return dropped;
}

void SliceIndex::collectEnds(std::vector<int64_t>* ends) const {
  for (const Node& node : nodes_) ends->push_back(node.slice.end);
}

// xorshift64*: the upper half of its output.
uint32_t SliceIndex::nextPriority() {
  random_ ^= random_ >> 12;
  random_ ^= random_ << 25;
  random_ ^= random_ >> 27;
  return static_cast<uint32_t>((random_ * 0x2545f4914f6cdd1dull) >> 32);
}

}  // namespace kinetrace::detail
