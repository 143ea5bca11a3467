#include "correlate/graph_launches.h"

#include <algorithm>
#include <iterator>

namespace kinetrace::detail {

void GraphLaunches::onJoined(uint32_t graphId, int64_t startNs, uint32_t correlationId) {
  auto& launches = launches_[graphId];
  auto same = std::find_if(launches.rbegin(), launches.rend(),
                           [correlationId](const auto& l) { return l.second == correlationId; });
  if (same != launches.rend()) {
    same->first = std::min(same->first, startNs);
  } else {
    // Nodes arrive about in the order they ran: a new launch goes at or near the back.
    auto at =
        std::upper_bound(launches.begin(), launches.end(), std::make_pair(startNs, correlationId));
    launches.insert(at, {startNs, correlationId});
  }
  // A body's nodes arrive a few buffers after the node that joined their launch, not
  // thousands of launches later.
  while (!launches.empty() && (launches.size() > keptPerGraph_ ||
                               launches.front().first < launches.back().first - keptForNs_)) {
    launches.pop_front();
  }
}

uint32_t GraphLaunches::launchAt(uint32_t graphId, int64_t startNs) const {
  auto found = launches_.find(graphId);
  if (found == launches_.end()) return 0;
  const auto& launches = found->second;
  auto after = std::upper_bound(launches.begin(), launches.end(), startNs,
                                [](int64_t t, const auto& l) { return t < l.first; });
  return after == launches.begin() ? 0 : std::prev(after)->second;
}

std::size_t GraphLaunches::heldBytes() const {
  constexpr std::size_t kNode = 32;  // a hash-map node's cost besides its payload
  std::size_t bytes = 0;
  for (const auto& [graph, launches] : launches_) bytes += kNode + launches.size() * 16;
  return bytes;
}

}  // namespace kinetrace::detail
