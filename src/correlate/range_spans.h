#pragma once

// GPU spans: for each host range and each stream it launched work on, the GPU time from the
// first to the last operation launched inside it (or inside a range nested in it). A range's
// state is kept from its begin until its spans can grow no more: it has ended, and every
// launch before its end has been joined (the Assembler says when, as a completion time).
//
// Separate from the Assembler because it is one concern with its own state and lifetime:
// which ranges may still gain GPU time, how an operation extends its range and every range
// enclosing it, and when a span is final.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "correlate/lane_allocator.h"
#include "model/records.h"

namespace kinetrace::detail {

class RangeSpans {
 public:
  // Spans go on the span tracks of `lanes`' streams.
  explicit RangeSpans(StreamLanes& lanes) : lanes_(lanes) {}

  // A range began, nested in `parentId` (0: none) on its thread: its operations count
  // toward the parent's spans too.
  void onBegin(uint64_t id, uint64_t parentId, StringId name);
  // An async range began: named, nested in nothing it did not say.
  void onAsyncBegin(uint64_t id, StringId name);
  // A range ended: its spans are final once the completion time passes `endNs`.
  void onEnd(uint64_t id, int64_t endNs);
  // A GPU operation joined to its launch, `at.externalId` the range open at the launch: the
  // op counts toward its own range and every range enclosing it on the launching thread.
  void extend(const GpuPlacement& at);

  // Moves out the spans of the ranges that ended before `completeNs`, every launch before
  // it having been joined. Ranges end in roughly the order they are drained; one that ended
  // later than the next holds the queue up for a moment, never wrongly.
  void release(int64_t completeNs, std::vector<GpuSpanRecord>& out);
  // Moves out every span, ended or not (the recording is over).
  void finish(std::vector<GpuSpanRecord>& out);

  // Roughly what the ranges hold, for the memory budget.
  std::size_t heldBytes() const;

 private:
  // A range's GPU time on one stream.
  struct SpanState {
    uint32_t deviceId;
    uint32_t streamId;
    int64_t startNs;
    int64_t endNs;
  };
  struct RangeState {
    uint64_t parentId = 0;
    StringId name = 0;
    int64_t endNs = INT64_MAX;  // INT64_MAX while open
    std::vector<SpanState> spans;
  };

  void finalize(uint64_t id, const RangeState& state, std::vector<GpuSpanRecord>& out);

  StreamLanes& lanes_;
  std::unordered_map<uint64_t, RangeState> ranges_;  // by range id
  std::deque<uint64_t> closed_;                      // in the order they ended
};

}  // namespace kinetrace::detail
