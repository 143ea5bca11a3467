#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kinetrace::detail {

// Slices, each on a lane, that answer which one holds a time innermost, in time logarithmic
// in the slices (expected) however they overlap: SliceLanes keeps here the slices of the
// lanes it does not search one by one, which a hostile trace makes as many as its slices.
// A treap in the order (start, the longest first, the highest lane first), each node knowing
// the latest end below it; priorities from a fixed seed, so a trace is always written the
// same way. About 48 bytes a slice.
class SliceIndex {
 public:
  struct Slice {
    int64_t start = 0;
    int64_t end = 0;
    std::size_t lane = 0;
  };

  void insert(const Slice& slice);
  // Of the slices that hold the time (from their start until before their end, or that
  // start at it), the one with the latest start, then the shortest, then on the lowest lane;
  // nullptr when none. Valid until the next insert or forget.
  const Slice* innermost(int64_t timeNs) const;
  // Forgets the slices that end before the horizon; returns how many.
  std::size_t forgetEndingBefore(int64_t horizonNs);
  void collectEnds(std::vector<int64_t>* ends) const;
  std::size_t size() const { return nodes_.size(); }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  struct Node {
    Slice slice;
    int64_t latestEnd = 0;  // of the slices in this subtree
    uint32_t priority = 0;  // a parent's is at least its children's
    uint32_t left = kNil;
    uint32_t right = kNil;
  };

  static bool precedes(const Slice& a, const Slice& b);
  uint32_t insertAt(uint32_t at, uint32_t item);
  void split(uint32_t at, const Slice& key, uint32_t* before, uint32_t* rest);
  void pull(uint32_t at);
  uint32_t lastHolding(uint32_t at, int64_t timeNs) const;
  uint32_t nextPriority();

  std::vector<Node> nodes_;  // indexed by uint32_t: the budget keeps far fewer slices
  uint32_t root_ = kNil;
  uint64_t random_ = 0x9e3779b97f4a7c15ull;
};

}  // namespace kinetrace::detail
