#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/lane_spans.h"
#include "output/slice_index.h"

// Lanes for the slices of one thread track of a .pftrace, so that every lane's slices nest
// as Perfetto's trace processor reads them. It sorts packets by time, keeping file order
// between equal times, and closes the innermost open slice of a track at each SLICE_END:
// two slices that overlap without nesting (kernels on one stream in a torch.profiler
// trace) would end each other's slices, showing wrong durations. PerfettoSink writes each
// slice's BEGIN and END one after the other, so a slice placed on a lane nests with those
// already there when, for every slice already there (earlier in the file):
//   - they are apart (the earlier ends at or before the new one starts, or the new one
//     ends before the earlier starts);
//   - the new one is inside it (same start allowed: the earlier BEGIN opens first);
//   - it is inside the new one with a later start (with the same start it would open first
//     and the new one would close it), or both cover the same span;
//   - it is empty and sits at the new one's start or end (it opens and closes before the
//     new one opens, or, after, before the new one's END, which closes the new one).
// A slice goes on the first lane where it nests (lane 0 is the track itself) among the first
// kTriedLanes; where it nests on none of them, on the first further lane whose slices all
// end by its start or all start after its end, else on a new lane. Trying every lane in turn
// would make a hostile trace quadratic: kernels on one stream that all cross one another
// need a lane each. Past the first lanes a slice may thus go on a later lane than the first
// where it would nest; lanes still always nest.
//
// Whether a slice nests on a lane is told by two of its slices, not by all of them. The
// rules above fail for an earlier slice [a, b] and a new one [s, e] exactly when
//   a <= s < b < e   (open at the new one's start, it ends inside it), or
//   s < a <= e < b   (it starts inside the new one, or where it ends, and is open past it).
// A lane's slices nest, so those open at a time (from their start until before their end)
// hold one another: the innermost of them has both the latest start and the earliest end.
// The first case exists when the innermost slice open at s ends before e, the second when
// the innermost open at e starts after s. Each lane keeps its slices in a search tree by
// start that knows the latest end below each node (SliceIndex), where either is found in
// time logarithmic in the lane's slices.

namespace kinetrace::detail {

class SliceLanes {
 public:
  // Slices remembered over the track's lanes (40 bytes each) before the older half is
  // forgotten.
  static constexpr std::size_t kDefaultBudget = std::size_t{1} << 18;
  // Lanes a slice is tried on, one by one, for the first where it nests: a stream's kernels
  // overlap a few at a time (programmatic dependent launch), a thread's ranges nest, so a
  // trace needs more only when it is pathological.
  static constexpr std::size_t kTriedLanes = 16;

  explicit SliceLanes(std::size_t budget = kDefaultBudget) : budget_(budget) {}
  SliceLanes(const SliceLanes&) = delete;
  SliceLanes& operator=(const SliceLanes&) = delete;

  // The lane for a slice [startNs, endNs], written after every slice placed before.
  // Memory: every slice placed, up to the budget; past it the slices that ended before a
  // horizon (the median end of those remembered, or just after it where fewer than a
  // quarter end before it) are forgotten, and a slice that starts before a lane's horizon
  // goes on another lane (none of the forgotten can touch one that starts after it): lanes
  // always nest; a very long trace may get more lanes than it needs (a range written after
  // a quarter of a million slices inside it, say). A further lane keeps the span of all it
  // was given, forgotten or not (32 to 64 bytes a lane).
  // Time: logarithmic in the slices remembered on each of up to kTriedLanes lanes tried,
  // then in the lanes and the slices, whatever order the slices come in (slices in time
  // order mostly take a few steps); a forgetting goes through what is remembered, at most
  // once per quarter of a budget placed.
  std::size_t place(int64_t startNs, int64_t endNs);

  // The lane of the innermost slice placed so far that holds the time (the latest start,
  // then the shortest), where an instant or a flow event at that time belongs; 0 when none.
  // A slice holds a time from its start until before its end (at its end its SLICE_END,
  // written before whatever comes at that time, has closed it), and an empty one its start.
  // Time: logarithmic in the slices, on each of the first kTriedLanes lanes and past them.
  std::size_t laneAt(int64_t timeNs) const;

  std::size_t laneCount() const { return lanes_.size() + furtherSpans_.size(); }
  // Slices remembered now.
  std::size_t remembered() const { return remembered_; }
  // Forgets about half of what is remembered, the slices that ended first (as when the
  // budget is reached), and at least a quarter: how a writer with many tracks bounds their
  // lanes' memory together.
  void forgetOlderHalf();

 private:
  struct Lane {
    SliceIndex slices;  // each on this lane
    int64_t forgottenUntil = INT64_MIN;
  };

  std::size_t placeOnALane(int64_t startNs, int64_t endNs);
  static bool nestsOn(const SliceIndex& lane, int64_t startNs, int64_t endNs);

  std::vector<Lane> lanes_;  // the first kTriedLanes
  // The further lanes: what each spans, to find one that a slice is apart from, and their
  // slices for laneAt (their slices are all apart: the spans tell where one nests).
  LaneSpans furtherSpans_;
  SliceIndex furtherSlices_;
  std::size_t budget_;
  std::size_t remembered_ = 0;
};

}  // namespace kinetrace::detail
