#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>
#include <vector>

#include "model/records.h"
#include "model/trace_data.h"

namespace kinetrace::detail {

// Measures, while records stream past, what the trace proves about the offset between GPU
// and host timestamps (ClockOffsetBounds), for the trace and for each device:
//  - high: GPU work cannot start before its launch call began;
//  - low: when a stream (or context) synchronisation returns, everything launched on that
//    stream (or device) before the call began has ended; and nothing ends after the
//    synchronisation kinetrace itself makes when the window ends.
// Keeps, per stream and device, the launches it may still need (those after `forgetBefore`)
// and the synchronisations it cannot judge yet, so memory stays bounded.
class ClockBoundsTracker {
 public:
  // A GPU operation joined with its launch call.
  void addLaunched(const GpuPlacement& op, int64_t callStartNs, int64_t callEndNs);
  // A GPU operation whatever its call (for the end-of-window synchronisation).
  void addOperation(const GpuPlacement& op);
  // A program's synchronisation joined with its call.
  void addSync(const SyncRecord& sync, int64_t callStartNs, int64_t callEndNs);
  // Every launch call that began before `completeBeforeNs` has had its operations added:
  // synchronisations whose call began before it are judged, and launches no later
  // judgement can need are folded away.
  void advance(int64_t completeBeforeNs);
  // The window ended; `syncReturnNs` is when kinetrace's own synchronisation returned (0:
  // none was made). Judges everything still waiting.
  ClockOffsetBounds finish(int64_t syncReturnNs);
  // Memory is short: judges every waiting synchronisation now (with the launches known so
  // far, which can only loosen its bound) and folds every launch away.
  void shed();

  std::size_t heldBytes() const;

 private:
  struct Launch {
    int64_t callEndNs;
    int64_t opEndNs;
  };
  // Launches on one stream (or device) by call end, each with the latest op end so far.
  struct Track {
    std::deque<Launch> launches;  // sorted by callEndNs; opEndNs is a running maximum
    int64_t foldedMaxEndNs = INT64_MIN;  // of launches folded away
    bool hasFolded = false;
  };
  struct PendingSync {
    uint64_t track;
    int64_t callStartNs;
    int64_t callEndNs;
  };
  void judge(const PendingSync& sync);
  void lower(uint32_t device, int64_t lateNs);

  std::unordered_map<uint64_t, Track> tracks_;
  std::vector<PendingSync> pending_;
  ClockOffsetBound bounds_;
  std::map<uint32_t, ClockOffsetBound> deviceBounds_;
  std::map<uint32_t, int64_t> latestOpEndNs_;  // by device
};

}  // namespace kinetrace::detail
