#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace kinetrace::detail {

// Slices, each on a lane, that answer which one holds a time innermost, in time logarithmic
// in the slices however they overlap and in whatever order they come. SliceLanes keeps one
// for each lane it tries in turn (what tells whether a new slice nests there) and one for
// the lanes past those, which a hostile trace makes as many as its slices.
// An AVL tree in the order (start, the longest first, the highest lane first), each node
// knowing the latest end below it. Balanced by the heights of its subtrees rather than by
// chance: no order of slices, however chosen, makes it deeper than 1.44 log2 of its size
// (under 30 levels for the budget of slices SliceLanes remembers), so the searches below
// recurse that deep at most. 40 bytes a slice.
class SliceIndex {
 public:
  struct Slice {
    int64_t start = 0;
    int64_t end = 0;
    std::size_t lane = 0;
  };

  // The lane must be below 2^32: a writer holds a track for each lane, far more than the
  // 4 bytes here, and would run out of memory long before.
  void insert(const Slice& slice);
  // Of the slices that hold the time (from their start until before their end, or that
  // start at it), the one with the latest start, then the shortest, then on the lowest lane.
  std::optional<Slice> innermost(int64_t timeNs) const;
  // Of the slices open at the time (that start at or before it and end after it), the one
  // with the latest start, then the shortest, then on the lowest lane. Where the slices nest
  // (one lane's), the innermost of those open.
  std::optional<Slice> innermostOpen(int64_t timeNs) const;
  // The slice last in the order: of those with the latest start, the shortest, then on the
  // lowest lane.
  std::optional<Slice> last() const;
  // Forgets the slices that end at or before the time; returns how many.
  std::size_t forgetEndingBy(int64_t lastNs);
  void collectEnds(std::vector<int64_t>* ends) const;
  std::size_t size() const { return nodes_.size(); }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  // An AVL tree of fewer than 2^32 nodes is at most 46 levels high.
  static constexpr std::size_t kMaxHeight = 64;
  struct Node {
    int64_t start = 0;
    int64_t end = 0;
    int64_t latestEnd = 0;  // of the slices in this subtree
    uint32_t lane = 0;
    uint32_t left = kNil;
    uint32_t right = kNil;
    int8_t balance = 0;  // the right subtree's height less the left's: -1, 0 or 1
  };
  static_assert(sizeof(Node) == 40, "a slice remembered costs what SliceLanes says");

  static bool precedes(const Node& a, const Node& b);
  std::optional<Slice> sliceAt(uint32_t at) const;
  uint32_t& child(uint32_t at, int side) { return side == 0 ? nodes_[at].left : nodes_[at].right; }
  void append(uint32_t item);
  uint32_t rotateBack(uint32_t at, int side);
  void pull(uint32_t at);
  uint32_t lastOpen(uint32_t at, int64_t timeNs) const;
  uint32_t lastEndingAfter(uint32_t at, int64_t timeNs) const;
  void collectInOrder(uint32_t at, int64_t keepAfterNs, std::vector<Node>* kept) const;
  uint32_t build(const std::vector<Node>& sorted, std::size_t from, std::size_t to, int* height);

  std::vector<Node> nodes_;  // indexed by uint32_t: the budget keeps far fewer slices
  uint32_t root_ = kNil;
  uint32_t last_ = kNil;
  // The right spine, from the root to the last slice, while no rotation elsewhere may have
  // changed it (else empty, found again when next needed).
  std::vector<uint32_t> spine_;
};

}  // namespace kinetrace::detail
