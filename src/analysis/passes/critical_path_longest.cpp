#include "analysis/passes/critical_path_longest.h"

#include <algorithm>
#include <tuple>

namespace kinetrace::detail::passes {
namespace {

constexpr const char* kSolver = "the critical path's graph";

}  // namespace

// Tarjan's algorithm without recursion (a step's graph may be millions of nodes deep): each
// node's strongly connected component, as a number.
BudgetVector<uint32_t> PathSolver::components(const StepGraph& graph, ReadBudget& budget) const {
  const uint32_t n = graph.nodes();
  BudgetVector<uint32_t> component(n, kNoIndex, BudgetAllocator<uint32_t>(budget, kSolver));
  BudgetVector<uint32_t> index(n, kNoIndex, BudgetAllocator<uint32_t>(budget, kSolver));
  BudgetVector<uint32_t> low(n, 0, BudgetAllocator<uint32_t>(budget, kSolver));
  BudgetVector<uint32_t> stack(BudgetAllocator<uint32_t>(budget, kSolver));
  struct Frame {
    uint32_t node;
    uint32_t next;  // its next out-edge to follow, in outEdges_
  };
  BudgetVector<Frame> calls(BudgetAllocator<Frame>(budget, kSolver));
  uint32_t counter = 0;
  uint32_t components = 0;
  for (uint32_t root = 0; root < n; ++root) {
    if (index[root] != kNoIndex) continue;
    calls.push_back({root, firstOut_[root]});
    index[root] = low[root] = counter++;
    stack.push_back(root);
    while (!calls.empty()) {
      Frame& f = calls.back();
      if (f.next < firstOut_[f.node + 1]) {
        const uint32_t v = graph.edges[outEdges_[f.next++]].to;
        if (index[v] == kNoIndex) {
          index[v] = low[v] = counter++;
          stack.push_back(v);
          calls.push_back({v, firstOut_[v]});
        } else if (component[v] == kNoIndex) {
          low[f.node] = std::min(low[f.node], index[v]);  // on the stack
        }
        continue;
      }
      const uint32_t u = f.node;
      calls.pop_back();
      if (!calls.empty()) low[calls.back().node] = std::min(low[calls.back().node], low[u]);
      if (low[u] != index[u]) continue;
      uint32_t w = kNoIndex;
      do {
        w = stack.back();
        stack.pop_back();
        component[w] = components;
      } while (w != u);
      ++components;
    }
  }
  return component;
}

PathSolver::PathSolver(const StepGraph& graph, ReadBudget& budget)
    : graph_(graph),
      order_(BudgetAllocator<uint32_t>(budget, kSolver)),
      position_(graph.nodes(), kNoIndex, BudgetAllocator<uint32_t>(budget, kSolver)),
      firstOut_(graph.nodes() + std::size_t{1}, 0, BudgetAllocator<uint32_t>(budget, kSolver)),
      outEdges_(graph.edges.size(), 0, BudgetAllocator<uint32_t>(budget, kSolver)),
      dist_(graph.nodes(), 0, BudgetAllocator<int64_t>(budget, kSolver)),
      via_(graph.nodes(), kNoIndex, BudgetAllocator<uint32_t>(budget, kSolver)) {
  const uint32_t n = graph.nodes();
  // Out-edges by source (a counting sort).
  for (const PathEdge& e : graph.edges) ++firstOut_[e.from + 1];
  for (uint32_t i = 0; i < n; ++i) firstOut_[i + 1] += firstOut_[i];
  {
    BudgetVector<uint32_t> next(firstOut_.begin(), firstOut_.end() - 1,
                                BudgetAllocator<uint32_t>(budget, kSolver));
    for (uint32_t e = 0; e < graph.edges.size(); ++e) outEdges_[next[graph.edges[e].from]++] = e;
  }
  // A cycle (only a hostile trace's timestamps make one) is broken where it runs against
  // time: within each strongly connected component, only edges to a later node are kept.
  const BudgetVector<uint32_t> component = components(graph, budget);
  auto kept = [&](const PathEdge& e) {
    if (component[e.from] != component[e.to]) return true;
    return std::tie(graph.nodeTime[e.from], e.from) < std::tie(graph.nodeTime[e.to], e.to);
  };
  BudgetVector<uint32_t> waiting(n, 0, BudgetAllocator<uint32_t>(budget, kSolver));
  for (const PathEdge& e : graph.edges) {
    if (kept(e)) ++waiting[e.to];
  }
  // Kahn's algorithm over the kept edges; order_ doubles as its queue.
  order_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) order_.push_back(i);
  }
  for (std::size_t head = 0; head < order_.size(); ++head) {
    const uint32_t u = order_[head];
    for (uint32_t k = firstOut_[u]; k < firstOut_[u + 1]; ++k) {
      const PathEdge& e = graph.edges[outEdges_[k]];
      if (kept(e) && --waiting[e.to] == 0) order_.push_back(e.to);
    }
  }
  for (uint32_t i = 0; i < order_.size(); ++i) position_[order_[i]] = i;
  for (const PathEdge& e : graph.edges) {
    if (position_[e.to] <= position_[e.from]) ++cycleEdges_;
  }
}

}  // namespace kinetrace::detail::passes
