#include "analysis/passes/critical_path_longest.h"

#include <algorithm>
#include <tuple>

namespace kinetrace::detail::passes {
namespace {

constexpr const char* kSolver = "the critical path's graph";

}  // namespace

PathSolver::PathSolver(const StepGraph& graph, ReadBudget& budget)
    : graph_(graph),
      order_(BudgetAllocator<uint32_t>(budget, kSolver)),
      position_(graph.nodes(), kNoIndex, BudgetAllocator<uint32_t>(budget, kSolver)),
      firstOut_(graph.nodes() + std::size_t{1}, 0, BudgetAllocator<uint32_t>(budget, kSolver)),
      outEdges_(graph.edges.size(), 0, BudgetAllocator<uint32_t>(budget, kSolver)),
      dist_(graph.nodes(), 0, BudgetAllocator<int64_t>(budget, kSolver)),
      via_(graph.nodes(), kNoIndex, BudgetAllocator<uint32_t>(budget, kSolver)) {
  const uint32_t n = graph.nodes();
  // Out-edges by source (a counting sort), and each node's count of edges into it.
  BudgetVector<uint32_t> waiting(n, 0, BudgetAllocator<uint32_t>(budget, kSolver));
  for (const PathEdge& e : graph.edges) {
    ++firstOut_[e.from + 1];
    ++waiting[e.to];
  }
  for (uint32_t i = 0; i < n; ++i) firstOut_[i + 1] += firstOut_[i];
  {
    BudgetVector<uint32_t> next(firstOut_.begin(), firstOut_.end() - 1,
                                BudgetAllocator<uint32_t>(budget, kSolver));
    for (uint32_t e = 0; e < graph.edges.size(); ++e) outEdges_[next[graph.edges[e].from]++] = e;
  }
  // Kahn's algorithm; order_ doubles as its queue.
  order_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) order_.push_back(i);
  }
  for (const uint32_t u : order_) position_[u] = 0;  // placed (their places are set below)
  BudgetVector<uint32_t> byTime(BudgetAllocator<uint32_t>(budget, kSolver));
  std::size_t nextByTime = 0;
  for (std::size_t head = 0; order_.size() < n || head < order_.size();) {
    if (head == order_.size()) {
      // Every node left waits for another: a cycle. The earliest of them goes next.
      if (byTime.empty()) {
        byTime.resize(n);
        for (uint32_t i = 0; i < n; ++i) byTime[i] = i;
        std::sort(byTime.begin(), byTime.end(), [&graph](uint32_t a, uint32_t b) {
          return std::tie(graph.nodeTime[a], a) < std::tie(graph.nodeTime[b], b);
        });
      }
      while (position_[byTime[nextByTime]] != kNoIndex) ++nextByTime;
      position_[byTime[nextByTime]] = 0;
      order_.push_back(byTime[nextByTime]);
    }
    const uint32_t u = order_[head++];
    for (uint32_t k = firstOut_[u]; k < firstOut_[u + 1]; ++k) {
      const uint32_t v = graph.edges[outEdges_[k]].to;
      if (--waiting[v] == 0 && position_[v] == kNoIndex) {
        position_[v] = 0;
        order_.push_back(v);
      }
    }
  }
  for (uint32_t i = 0; i < order_.size(); ++i) position_[order_[i]] = i;
  for (const PathEdge& e : graph.edges) {
    if (position_[e.to] <= position_[e.from]) ++cycleEdges_;
  }
}

}  // namespace kinetrace::detail::passes
