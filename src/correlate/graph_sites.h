#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/records.h"
#include "model/trace_data.h"

namespace kinetrace::detail {

// Where each CUDA graph node was created, so that work replayed from a graph names the call
// that captured or added its node and the host range open then (TraceTables::graphNodeSites;
// records' graphNodeSite is an index into it + 1).
//
// CUPTI announces a node as created while the creating call runs, but the call's own record
// comes when it returns: a thread's new sites wait for its next call, and those created
// within that call's time are its. Instantiation clones every node: a clone is announced as
// created and then as cloned from its original, and its site is the original's. Clones are
// resolved when replayed work asks, since the original may have been created on a thread
// whose events are drained later (PyTorch captures the backward pass on its autograd thread
// and instantiates on the main thread).
//
// Bounded: past `maxNodes` nodes (a clone counts as one) new ones get no site.
class GraphSites {
 public:
  GraphSites(TraceTables& tables, std::size_t maxNodes) : tables_(tables), maxNodes_(maxNodes) {}

  // Node `nodeId` was created (clonedFrom == 0) or cloned from `clonedFrom`, on thread
  // `instance` at `timeNs`, inside the host range `externalId` (0: none) whose name is
  // `range` when kinetrace recorded it. Returns false when it was not kept (past the cap).
  bool onNode(uint32_t instance, int64_t timeNs, uint64_t nodeId, uint64_t externalId,
              StringId range, uint64_t clonedFrom);

  // A call of thread `instance` returned: the sites created on that thread since its previous
  // call and within this one's time are this call's; `callName` names it (asked only then).
  // Returns whether the call created any: a launch into a stream being captured, which runs
  // nothing.
  bool onCall(uint32_t instance, int64_t startNs, int64_t endNs, uint32_t correlationId,
              const std::function<StringId()>& callName);

  // The site of the node that ran a replayed operation (its original's, for a clone); 0: not
  // known.
  uint32_t siteOf(uint64_t graphNodeId) const;

  // The recording has ended: forgets every node (the sites stay in the tables).
  void clear();

  // Roughly what it holds, the tables' sites included, for the memory budget.
  std::size_t heldBytes() const;

 private:
  TraceTables& tables_;
  std::size_t maxNodes_;
  std::unordered_map<uint64_t, uint32_t> sites_;   // node id -> index + 1
  std::unordered_map<uint64_t, uint64_t> clones_;  // clone -> the node it was cloned from
  // Per thread instance, the sites created since its last call, (time, index + 1).
  std::unordered_map<uint32_t, std::vector<std::pair<int64_t, uint32_t>>> awaitingCall_;
};

}  // namespace kinetrace::detail
