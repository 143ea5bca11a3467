#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kinetrace::detail {

// What each of many lanes spans (the earliest start and the latest end of everything it was
// ever given), to find the first lane that a new interval lies wholly before or after, in
// time logarithmic in the lanes. The writers' lane placement (the assembler's LaneAllocator,
// the .pftrace writer's SliceLanes) tries its first lanes one by one, as closely as they
// pack; a trace whose intervals all overlap one another needs a lane for each, and trying
// them all for every interval would make the trace quadratic to place, so past the first
// lanes an interval goes on the first lane it is apart from, found here.
//
// Lanes are numbered from 0 in the order they were added. Spans only widen: nothing is
// forgotten, so the answer holds for every interval a lane was given. A segment tree of the
// smallest latest end and the largest earliest start below each node: 32 to 64 bytes a
// lane.
class LaneSpans {
 public:
  static constexpr std::size_t kNone = SIZE_MAX;

  std::size_t size() const { return size_; }

  // Adds a lane spanning [from, until]; returns its number.
  std::size_t add(int64_t from, int64_t until);
  // The lane now also spans [from, until].
  void widen(std::size_t lane, int64_t from, int64_t until);
  // The first lane whose span ends at or before `endsBy` or starts after `startsAfter`;
  // kNone when there is none.
  std::size_t firstApart(int64_t endsBy, int64_t startsAfter) const;

  std::size_t heldBytes() const { return (untils_.capacity() + froms_.capacity()) * 8; }

 private:
  bool apart(std::size_t node, int64_t endsBy, int64_t startsAfter) const {
    return untils_[node] <= endsBy || froms_[node] > startsAfter;
  }
  void grow();
  void update(std::size_t lane);

  // Node 1 is the root, node i has children 2i and 2i + 1, lane l is node capacity_ + l.
  std::vector<int64_t> untils_;  // the smallest latest end below
  std::vector<int64_t> froms_;   // the largest earliest start below
  std::size_t capacity_ = 0;     // leaves, a power of two
  std::size_t size_ = 0;
};

}  // namespace kinetrace::detail
