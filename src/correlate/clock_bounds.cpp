#include "correlate/clock_bounds.h"

#include <algorithm>

namespace kinetrace::detail {
namespace {

uint64_t streamTrack(uint32_t device, uint32_t stream) { return uint64_t{device} << 32 | stream; }
uint64_t deviceTrack(uint32_t device) { return uint64_t{device} << 32 | 0xffffffffu; }

}  // namespace

void ClockBoundsTracker::addOperation(const GpuPlacement& op) {
  auto [latest, added] = latestOpEndNs_.try_emplace(op.deviceId, op.endNs);
  if (!added) latest->second = std::max(latest->second, op.endNs);
}

void ClockBoundsTracker::addLaunched(const GpuPlacement& op, int64_t callStartNs, int64_t callEndNs) {
  const int64_t lead = op.startNs - callStartNs;
  bounds_.atMost(lead);
  deviceBounds_[op.deviceId].atMost(lead);
  for (uint64_t key : {streamTrack(op.deviceId, op.streamId), deviceTrack(op.deviceId)}) {
    Track& track = tracks_[key];
    auto& launches = track.launches;
    // Launches arrive almost in order: insert from the back, then restore the running
    // maximum from the insertion point on.
    auto at = launches.end();
    while (at != launches.begin() && std::prev(at)->callEndNs > callEndNs) --at;
    at = launches.insert(at, Launch{callEndNs, op.endNs});
    int64_t running = at == launches.begin() ? INT64_MIN : std::prev(at)->opEndNs;
    for (auto it = at; it != launches.end(); ++it) {
      running = std::max(running, it->opEndNs);
      if (it != at && it->opEndNs == running) break;  // later maxima already include it
      it->opEndNs = running;
    }
  }
}

void ClockBoundsTracker::addSync(const SyncRecord& sync, int64_t callStartNs, int64_t callEndNs) {
  uint64_t track;
  switch (sync.kind) {
    case SyncKind::StreamSync: track = streamTrack(sync.at.deviceId, sync.at.streamId); break;
    case SyncKind::ContextSync: track = deviceTrack(sync.at.deviceId); break;
    default: return;  // an event's work is unknown here; a stream wait does not block the host
  }
  pending_.push_back(PendingSync{track, callStartNs, callEndNs});
}

void ClockBoundsTracker::lower(uint32_t device, int64_t lateNs) {
  bounds_.atLeast(lateNs);
  deviceBounds_[device].atLeast(lateNs);
}

void ClockBoundsTracker::judge(const PendingSync& sync) {
  auto found = tracks_.find(sync.track);
  if (found == tracks_.end()) return;
  const Track& track = found->second;
  // The latest end among launches whose call ended before the sync call began.
  auto after = std::upper_bound(track.launches.begin(), track.launches.end(), sync.callStartNs,
                                [](int64_t t, const Launch& l) { return t < l.callEndNs; });
  bool any = track.hasFolded;
  int64_t latest = track.foldedMaxEndNs;
  if (after != track.launches.begin()) {
    latest = std::max(latest, std::prev(after)->opEndNs);
    any = true;
  }
  if (any) lower(static_cast<uint32_t>(sync.track >> 32), latest - sync.callEndNs);
}

void ClockBoundsTracker::advance(int64_t completeBeforeNs) {
  // Judge the syncs whose every earlier launch is known.
  int64_t oldestWaiting = INT64_MAX;
  auto keep = pending_.begin();
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->callStartNs < completeBeforeNs) {
      judge(*it);
    } else {
      oldestWaiting = std::min(oldestWaiting, it->callStartNs);
      *keep++ = *it;
    }
  }
  pending_.erase(keep, pending_.end());
  // A later sync began after `completeBeforeNs` or after a waiting one: launches that
  // ended before both only ever count through their maximum.
  const int64_t foldBefore = std::min(completeBeforeNs, oldestWaiting);
  for (auto& [key, track] : tracks_) {
    while (!track.launches.empty() && track.launches.front().callEndNs < foldBefore) {
      track.foldedMaxEndNs = std::max(track.foldedMaxEndNs, track.launches.front().opEndNs);
      track.hasFolded = true;
      track.launches.pop_front();
    }
  }
}

void ClockBoundsTracker::shed() {
  for (const PendingSync& sync : pending_) judge(sync);
  pending_.clear();
  pending_.shrink_to_fit();
  for (auto& [key, track] : tracks_) {
    for (const Launch& launch : track.launches) {
      track.foldedMaxEndNs = std::max(track.foldedMaxEndNs, launch.opEndNs);
      track.hasFolded = true;
    }
    track.launches = {};
  }
}

ClockOffsetBounds ClockBoundsTracker::finish(int64_t syncReturnNs) {
  for (const PendingSync& sync : pending_) judge(sync);
  pending_.clear();
  if (syncReturnNs != 0) {
    for (const auto& [device, latest] : latestOpEndNs_) lower(device, latest - syncReturnNs);
  }
  ClockOffsetBounds bounds;
  static_cast<ClockOffsetBound&>(bounds) = bounds_;
  bounds.devices.assign(deviceBounds_.begin(), deviceBounds_.end());
  return bounds;
}

std::size_t ClockBoundsTracker::heldBytes() const {
  std::size_t bytes = pending_.capacity() * sizeof(PendingSync) +
                      (deviceBounds_.size() + latestOpEndNs_.size()) * 64;
  for (const auto& [key, track] : tracks_) bytes += track.launches.size() * sizeof(Launch) + 64;
  return bytes;
}

}  // namespace kinetrace::detail
