#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>

namespace kinetrace::detail {

// Which launch of a CUDA graph ran a node of a conditional's body. Kernels, copies and
// memsets in the bodies of a graph's conditional nodes (IF, WHILE, SWITCH) come from CUPTI
// with correlation id 0, but with the id of the graph that ran them: the same id as the
// graph's other nodes, which carry their launch's correlation id. Launches of one executable
// graph run one after another, so such an operation belongs to the launch whose first joined
// node started last before it.
//
// Bounded: per graph, the last `keptPerGraph` launches, none older than `keptForNs` before
// the newest (its call is gone by then anyway).
class GraphLaunches {
 public:
  GraphLaunches(std::size_t keptPerGraph, int64_t keptForNs)
      : keptPerGraph_(keptPerGraph), keptForNs_(keptForNs) {}

  // A node of graph `graphId` started at `startNs` and joined launch `correlationId`.
  void onJoined(uint32_t graphId, int64_t startNs, uint32_t correlationId);
  // The launch of graph `graphId` that ran an operation starting at `startNs`; 0: none known.
  uint32_t launchAt(uint32_t graphId, int64_t startNs) const;

  void clear() { launches_.clear(); }
  // Roughly what it holds, for the memory budget.
  std::size_t heldBytes() const;

 private:
  std::size_t keptPerGraph_;
  int64_t keptForNs_;
  // Per graph id, (start of the launch's first joined node, launch correlation id), oldest
  // first.
  std::unordered_map<uint32_t, std::deque<std::pair<int64_t, uint32_t>>> launches_;
};

}  // namespace kinetrace::detail
