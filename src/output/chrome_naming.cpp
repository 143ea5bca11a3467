#include "output/chrome_naming.h"

#include <algorithm>
#include <string>

namespace kinetrace::detail {

void noteLatestTrack(std::vector<OwnedTrack>& latest, const Track& track) {
  OwnedTrack owned{track.id,
                   track.parent,
                   track.kind,
                   std::string(track.name),
                   std::string(track.label),
                   track.sortIndex,
                   std::string(track.unit),
                   std::string(track.category),
                   track.pid,
                   track.tid,
                   track.sinceNs};
  // Tracks are few (threads, streams, lanes) and described again only when renamed.
  auto known = std::find_if(latest.begin(), latest.end(),
                            [&track](const OwnedTrack& t) { return t.id == track.id; });
  if (known != latest.end()) {
    *known = std::move(owned);
  } else {
    latest.push_back(std::move(owned));
  }
}

Track trackView(const OwnedTrack& kept) {
  Track track;
  track.id = kept.id;
  track.parent = kept.parent;
  track.kind = kept.kind;
  track.name = kept.name;
  track.label = kept.label;
  track.sortIndex = kept.sortIndex;
  track.unit = kept.unit;
  track.category = kept.category;
  track.pid = kept.pid;
  track.tid = kept.tid;
  track.sinceNs = kept.sinceNs;
  return track;
}

}  // namespace kinetrace::detail
