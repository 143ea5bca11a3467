#pragma once

#include <climits>
#include <cstdint>

#include "analysis/passes/critical_path_graph.h"

// The longest path of a step's graph, by dynamic programming over the nodes in topological
// order: linear in nodes and edges, and again for each other weighting asked (HTA's weights,
// a contributor taking no time, a contributor left out). Every node may start a path, as in
// networkx's dag_longest_path, which HTA calls.
//
// A graph from consistent timestamps has no cycle; a hostile trace's may. Within each strongly
// connected component (Tarjan's algorithm) only the edges to a later node (by time, then
// number) are kept, which breaks every cycle where it runs against time and leaves every
// edge outside cycles; Kahn's algorithm then orders the nodes. An edge left out is left out
// of every path, counted.

namespace kinetrace::detail::passes {

class PathSolver {
 public:
  // Orders the graph's nodes; memory from `budget` (about 40 bytes a node, 4 an edge).
  PathSolver(const StepGraph& graph, ReadBudget& budget);

  // Edges left out because they close a cycle.
  uint64_t cycleEdges() const { return cycleEdges_; }

  // The longest path's length when edge e weighs weight(e) (negative: left out).
  template <typename Weight>
  int64_t length(Weight&& weight) {
    relax(weight);
    int64_t best = 0;
    for (int64_t d : dist_) best = std::max(best, d);
    return best;
  }

  // The longest path's length, and its edges from first to last in `edges`. Of paths of one
  // length, one that goes on through edges of no weight is preferred, so the path runs from
  // its first cause to the last node that waited for it.
  template <typename Weight>
  int64_t path(Weight&& weight, BudgetVector<uint32_t>& edges) {
    relax(weight);
    edges.clear();
    if (order_.empty()) return 0;
    uint32_t last = order_.front();
    for (uint32_t n : order_) {
      if (dist_[n] >= dist_[last]) last = n;
    }
    for (uint32_t n = last; via_[n] != kNoIndex; n = graph_.edges[via_[n]].from) {
      edges.push_back(via_[n]);
    }
    std::reverse(edges.begin(), edges.end());
    return dist_[last];
  }

 private:
  BudgetVector<uint32_t> components(const StepGraph& graph, ReadBudget& budget) const;

  template <typename Weight>
  void relax(Weight& weight) {
    std::fill(dist_.begin(), dist_.end(), 0);
    std::fill(via_.begin(), via_.end(), kNoIndex);
    for (uint32_t u : order_) {
      for (uint32_t k = firstOut_[u]; k < firstOut_[u + 1]; ++k) {
        const uint32_t e = outEdges_[k];
        const uint32_t v = graph_.edges[e].to;
        if (position_[v] <= position_[u]) continue;  // closes a cycle
        const int64_t w = weight(e);
        if (w < 0) continue;
        int64_t candidate = 0;
        if (__builtin_add_overflow(dist_[u], w, &candidate)) candidate = INT64_MAX;
        if (candidate > dist_[v] || (candidate == dist_[v] && via_[v] == kNoIndex)) {
          dist_[v] = candidate;
          via_[v] = e;
        }
      }
    }
  }

  const StepGraph& graph_;
  BudgetVector<uint32_t> order_;     // the nodes, every kept edge going forward
  BudgetVector<uint32_t> position_;  // each node's place in order_
  BudgetVector<uint32_t> firstOut_;  // node n's out-edges: outEdges_[firstOut_[n], firstOut_[n+1])
  BudgetVector<uint32_t> outEdges_;
  BudgetVector<int64_t> dist_;  // the longest path ending at each node
  BudgetVector<uint32_t> via_;  // its last edge; kNoIndex: the path starts there
  uint64_t cycleEdges_ = 0;
};

}  // namespace kinetrace::detail::passes
