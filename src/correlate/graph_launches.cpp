#include "correlate/graph_launches.h"

#include <algorithm>
#include <iterator>
#include <vector>

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

// ---- launches found by elimination ------------------------------------------------------

void GraphLaunches::onInstantiated(uint32_t graphId) {
  if (graphs_.size() >= kGraphsKept) {
    // Forgetting a graph of no kept launch only makes its launches unseen: never a guess.
    for (auto it = graphs_.begin(); it != graphs_.end();) {
      it = it->second.calls.empty() ? graphs_.erase(it) : std::next(it);
    }
  }
  Graph& graph = graphs_[graphId];
  if (graph.calls.empty() && graph.hiddenDoneByNs == INT64_MAX) graph.hidden = false;
}

void GraphLaunches::onLaunch(const LaunchCall& launch) {
  if (launch.graphId == 0 || launch.correlationId == 0 || calls_.count(launch.correlationId)) {
    return;
  }
  Call& c = calls_[launch.correlationId];
  c.call = launch;
  graphs_[launch.graphId].calls.emplace_back(launch.callStartNs, launch.correlationId);
  if (launch.streamKnown) {
    Stream& stream = streams_[streamKey(launch.contextId, launch.streamId)];
    c.streamSeq = stream.frontSeq + stream.calls.size();
    stream.calls.push_back(launch.correlationId);
  }
  callOrder_.push_back(launch.correlationId);
  // Calls come in the order they were recorded: the oldest are at the front, and the
  // oldest of all is the oldest of its graph.
  while (!callOrder_.empty()) {
    const Call* oldest = find(callOrder_.front());
    if (oldest != nullptr && calls_.size() <= kCallsKept &&
        oldest->call.callStartNs >= launch.callStartNs - keptForNs_) {
      break;
    }
    const uint32_t id = callOrder_.front();
    callOrder_.pop_front();
    forget(id);
  }
}

void GraphLaunches::forget(uint32_t correlationId) {
  auto found = calls_.find(correlationId);
  if (found == calls_.end()) return;
  const Call c = found->second;
  calls_.erase(found);
  auto graph = graphs_.find(c.call.graphId);
  if (graph != graphs_.end()) {
    // It joins the launches nobody sees any more, which ran before every one kept.
    Graph& g = graph->second;
    while (!g.calls.empty() && !calls_.count(g.calls.front().second)) g.calls.pop_front();
    g.hiddenDoneByNs = g.hidden ? std::max(g.hiddenDoneByNs, c.doneByNs) : c.doneByNs;
    g.hidden = true;
  }
  if (c.call.streamKnown) {
    auto stream = streams_.find(streamKey(c.call.contextId, c.call.streamId));
    if (stream != streams_.end()) {
      Stream& s = stream->second;
      while (!s.calls.empty() && !calls_.count(s.calls.front())) {
        s.calls.pop_front();
        ++s.frontSeq;
      }
      if (s.calls.empty()) streams_.erase(stream);
    }
  }
}

const GraphLaunches::Call* GraphLaunches::find(uint32_t correlationId) const {
  auto found = calls_.find(correlationId);
  return found == calls_.end() ? nullptr : &found->second;
}

void GraphLaunches::onSync(uint32_t contextId, bool wholeContext, uint32_t streamId,
                           int64_t startNs, int64_t endNs) {
  // Newest first; one already proved complete by then has the older ones behind it proved
  // too (by the same or an earlier synchronisation).
  auto fence = [&](Stream& stream) {
    for (auto it = stream.calls.rbegin(); it != stream.calls.rend(); ++it) {
      auto found = calls_.find(*it);
      if (found == calls_.end()) continue;
      Call& c = found->second;
      if (c.doneByNs <= endNs) break;
      if (c.call.callEndNs <= startNs) c.doneByNs = endNs;
    }
  };
  if (!wholeContext) {
    auto stream = streams_.find(streamKey(contextId, streamId));
    if (stream != streams_.end()) fence(stream->second);
    return;
  }
  for (auto& [key, stream] : streams_) {
    if (static_cast<uint32_t>(key >> 32) == contextId) fence(stream);
  }
}

void GraphLaunches::onOperation(uint32_t correlationId, int64_t startNs, int64_t endNs) {
  auto found = calls_.find(correlationId);
  if (found == calls_.end()) return;
  Call& c = found->second;
  c.firstOpNs = std::min(c.firstOpNs, startNs);
  c.lastOpEndNs = std::max(c.lastOpEndNs, endNs);
}

bool GraphLaunches::streamAllows(const Call& c, int64_t startNs, int64_t endNs) const {
  if (!c.call.streamKnown) return true;
  auto found = streams_.find(streamKey(c.call.contextId, c.call.streamId));
  if (found == streams_.end()) return true;
  const Stream& stream = found->second;
  if (c.streamSeq < stream.frontSeq) return true;
  const auto at = static_cast<std::size_t>(c.streamSeq - stream.frontSeq);
  if (at >= stream.calls.size() || stream.calls[at] != c.call.correlationId) return true;
  // Work whose call overlaps L's (another thread's) is in no known order with it: skipped.
  for (std::size_t back = 1; back <= kStreamReach && back <= at; ++back) {
    const Call* w = find(stream.calls[at - back]);
    if (w != nullptr && w->call.callEndNs <= c.call.callStartNs && w->lastOpEndNs > startNs) {
      return false;
    }
  }
  for (std::size_t ahead = 1; ahead <= kStreamReach && at + ahead < stream.calls.size(); ++ahead) {
    const Call* w = find(stream.calls[at + ahead]);
    if (w != nullptr && c.call.callEndNs <= w->call.callStartNs && w->firstOpNs < endNs) {
      return false;
    }
  }
  return true;
}

GraphLaunches::Found GraphLaunches::onlyLaunchOf(uint32_t graphId, int64_t startNs,
                                                 int64_t endNs) const {
  constexpr Found kAmbiguous{0, 2};
  auto graph = graphs_.find(graphId);
  if (graph == graphs_.end()) return Found{};  // none of its launches seen
  const auto& launches = graph->second.calls;
  // Launches called after the operation started are not its, but they ran after its own:
  // the first few of them (the earliest to run) can rule out the earlier ones.
  const auto boundary = std::upper_bound(
      launches.begin(), launches.end(), startNs,
      [](int64_t t, const std::pair<int64_t, uint32_t>& l) { return t < l.first; });
  int64_t laterFirstNs = INT64_MAX;  // the earliest start of an operation of a later launch
  int64_t laterDoneNs = INT64_MAX;   // the earliest time a later launch was proved complete
  for (auto it = boundary; it != launches.end() && it - boundary < 8; ++it) {
    if (const Call* c = find(it->second)) {
      laterFirstNs = std::min(laterFirstNs, c->firstOpNs);
      laterDoneNs = std::min(laterDoneNs, c->doneByNs);
    }
  }
  // Newest first, until everything older is ruled out.
  Found found;
  std::size_t walked = 0;
  for (auto it = boundary; it != launches.begin();) {
    --it;
    if (laterFirstNs < endNs || laterDoneNs < endNs) return found;  // older ones and unseen too
    if (++walked > kWalk) return kAmbiguous;  // not looked at: some may be left
    const Call* c = find(it->second);
    if (c == nullptr) continue;
    // An operation of this launch ended after the operation started: no later launch is its.
    if (c->lastOpEndNs > startNs) found = Found{};
    if (std::min(c->doneByNs, laterDoneNs) >= endNs && laterFirstNs >= endNs &&
        streamAllows(*c, startNs, endNs)) {
      found.correlationId = found.candidates == 0 ? c->call.correlationId : 0;
      found.candidates = std::min<uint32_t>(found.candidates + 1, 2);
    }
    laterFirstNs = std::min(laterFirstNs, c->firstOpNs);
    laterDoneNs = std::min(laterDoneNs, c->doneByNs);
  }
  const Graph& g = graph->second;
  // An unseen launch may be its: then a seen one left is no longer the only one.
  if (g.hidden && found.candidates > 0 && laterFirstNs >= endNs &&
      std::min(g.hiddenDoneByNs, laterDoneNs) >= endNs) {
    return kAmbiguous;
  }
  return found;
}

void GraphLaunches::clear() {
  launches_.clear();
  calls_.clear();
  callOrder_.clear();
  graphs_.clear();
  streams_.clear();
}

std::size_t GraphLaunches::heldBytes() const {
  constexpr std::size_t kNode = 32;  // a hash-map node's cost besides its payload
  std::size_t bytes = 0;
  for (const auto& [graph, launches] : launches_) bytes += kNode + launches.size() * 16;
  bytes += calls_.size() * (sizeof(Call) + kNode + 3 * sizeof(uint32_t));
  bytes += graphs_.size() * (sizeof(Graph) + kNode) + streams_.size() * (sizeof(Stream) + kNode);
  return bytes;
}

}  // namespace kinetrace::detail
