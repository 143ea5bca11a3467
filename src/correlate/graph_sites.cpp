#include "correlate/graph_sites.h"

namespace kinetrace::detail {

bool GraphSites::onNode(uint32_t instance, int64_t timeNs, uint64_t nodeId, uint64_t externalId,
                        StringId range, uint64_t clonedFrom) {
  if (sites_.size() + clones_.size() >= maxNodes_) return false;
  if (clonedFrom != 0) {
    clones_[nodeId] = clonedFrom;
    return true;
  }
  if (sites_.count(nodeId) != 0) return true;  // node ids are never reused
  GraphNodeSite site;
  site.externalId = externalId;
  site.range = range;
  tables_.graphNodeSites.push_back(site);
  const auto index = static_cast<uint32_t>(tables_.graphNodeSites.size());
  sites_[nodeId] = index;
  awaitingCall_[instance].emplace_back(timeNs, index);
  return true;
}

// Sites created on the thread before this call began were created by a call kinetrace does
// not record: they are left without one.
bool GraphSites::onCall(uint32_t instance, int64_t startNs, int64_t endNs, uint32_t correlationId,
                        const std::function<StringId()>& callName) {
  if (awaitingCall_.empty()) return false;
  auto awaiting = awaitingCall_.find(instance);
  if (awaiting == awaitingCall_.end()) return false;
  bool created = false;
  for (const auto& [timeNs, index] : awaiting->second) {
    if (timeNs < startNs || timeNs > endNs) continue;
    GraphNodeSite& site = tables_.graphNodeSites[index - 1];
    site.correlationId = correlationId;
    site.call = callName();
    created = true;
  }
  awaitingCall_.erase(awaiting);
  return created;
}

// A clone is also announced as created (by the instantiating call): its original's site is
// the one that says where the work came from. A clone whose original was not seen created
// has no site.
uint32_t GraphSites::siteOf(uint64_t graphNodeId) const {
  uint64_t node = graphNodeId;
  for (int hops = 0; node != 0 && hops < 16; ++hops) {
    auto clone = clones_.find(node);
    if (clone != clones_.end()) {
      node = clone->second;
      continue;
    }
    auto found = sites_.find(node);
    return found == sites_.end() ? 0 : found->second;
  }
  return 0;
}

void GraphSites::clear() {
  sites_.clear();
  clones_.clear();
  awaitingCall_.clear();
}

std::size_t GraphSites::heldBytes() const {
  constexpr std::size_t kNode = 32;  // a hash-map node's cost besides its payload
  std::size_t bytes = (sites_.size() + clones_.size()) * (16 + kNode) +
                      tables_.graphNodeSites.capacity() * sizeof(GraphNodeSite);
  for (const auto& [instance, sites] : awaitingCall_) bytes += kNode + sites.capacity() * 16;
  return bytes;
}

}  // namespace kinetrace::detail
