#pragma once

#include <cstdint>
#include <vector>

#include "kinetrace/event.h"
#include "kinetrace/sink.h"
#include "output/trace_vocabulary.h"

namespace kinetrace::detail {

// How the Chrome trace names a track, which knows processes and threads only: Metadata
// events at the track's pid and tid, each with one argument. A process gets process_name,
// process_labels (when it has a label) and process_sort_index; every other track but a
// counter gets thread_name and thread_sort_index; a counter gets none (its events carry its
// name). Calls `emit(const Event&)` for each, in that order; the event's views live during
// the call.
template <typename Emit>
void forEachChromeNamingEvent(const Track& track, Emit&& emit) {
  if (track.kind == TrackKind::Counter) return;
  Arg arg;
  Event event;
  event.phase = Phase::Metadata;
  event.pid = track.pid;
  event.tid = track.tid;
  event.timestampNs = track.sinceNs;
  event.args = &arg;
  event.argCount = 1;
  auto send = [&](const char* name, const char* key, ArgValue value) {
    event.name = name;
    arg = Arg{key, value};
    emit(static_cast<const Event&>(event));
  };
  if (track.kind == TrackKind::Process) {
    send(chrome::kProcessName, chrome::kNamingName, track.name);
    if (!track.label.empty()) send(chrome::kProcessLabels, chrome::kNamingLabels, track.label);
    send(chrome::kProcessSortIndex, chrome::kNamingSortIndex, track.sortIndex);
    return;
  }
  send(chrome::kThreadName, chrome::kNamingName, track.name);
  send(chrome::kThreadSortIndex, chrome::kNamingSortIndex, track.sortIndex);
}

// For sinks that write the Chrome trace's naming events once per track, at the end, with
// its final name: notes a description in `latest`, replacing an earlier one of the same id
// (kept in the order first described).
void noteLatestTrack(std::vector<OwnedTrack>& latest, const Track& track);
// A kept track as a Track, its views into `kept`.
Track trackView(const OwnedTrack& kept);

}  // namespace kinetrace::detail
