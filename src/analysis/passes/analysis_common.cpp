#include "analysis/passes/analysis_common.h"

#include <cstdio>

namespace kinetrace::detail::passes {
namespace {

// The q-quantile's place among `count` sorted values.
uint64_t quantileIndex(uint64_t count, double q) {
  const auto index = static_cast<uint64_t>(q * static_cast<double>(count - 1) + 0.5);
  return std::min(index, count - 1);
}

}  // namespace

Intervals unionOf(Intervals items) {
  std::sort(items.begin(), items.end());
  Intervals merged;
  for (const Interval& item : items) {
    if (item.second <= item.first) continue;
    if (!merged.empty() && item.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, item.second);
    } else {
      merged.push_back(item);
    }
  }
  return merged;
}

int64_t overlapWith(const Intervals& items, int64_t from, int64_t to) {
  int64_t total = 0;
  auto first = std::lower_bound(items.begin(), items.end(), from,
                                [](const Interval& item, int64_t t) { return item.second <= t; });
  for (auto it = first; it != items.end() && it->first < to; ++it) {
    total += std::max<int64_t>(0, std::min(it->second, to) - std::max(it->first, from));
  }
  return total;
}

DistributionBuilder::DistributionBuilder(uint64_t count) {
  d_.count = count;
  if (count == 0) return;
  p50_ = quantileIndex(count, 0.5);
  p90_ = quantileIndex(count, 0.9);
  p99_ = quantileIndex(count, 0.99);
}

Distribution DistributionBuilder::finish() {
  if (d_.count > 0) d_.meanNs = d_.totalNs / static_cast<int64_t>(d_.count);
  return d_;
}

const char* kindName(GpuOpKind kind) {
  switch (kind) {
    case GpuOpKind::Compute:
      return "compute";
    case GpuOpKind::Communication:
      return "communication";
    case GpuOpKind::Memory:
      return "memory";
  }
  return "compute";
}

std::string shortName(std::string_view name) {
  // A signature's arguments, not a copy's "(Device -> Pinned)".
  const std::size_t paren = name.find('(');
  std::string out(paren != std::string_view::npos && paren > 0 && name[paren - 1] != ' '
                      ? name.substr(0, paren)
                      : name);
  return out.size() <= 60 ? out : out.substr(0, 57) + "...";
}

std::string shortDuration(int64_t ns) {
  char text[32];
  if (ns >= 1'000'000) {
    std::snprintf(text, sizeof text, "%.2f ms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.1f us", static_cast<double>(ns) / 1e3);
  }
  return text;
}

void addTimes(TimeBreakdown& to, const TimeBreakdown& from) {
  to.windowNs += from.windowNs;
  to.busyNs += from.busyNs;
  to.computeNs += from.computeNs;
  to.communicationNs += from.communicationNs;
  to.memoryNs += from.memoryNs;
  to.idleNs += from.idleNs;
  to.beforeFirstOpNs += from.beforeFirstOpNs;
  to.hostWaitNs += from.hostWaitNs;
  to.launchNs += from.launchNs;
  to.launchQueuedNs += from.launchQueuedNs;
  to.launchPreviousNs += from.launchPreviousNs;
  to.kernelWaitNs += from.kernelWaitNs;
  to.otherWorkWaitNs += from.otherWorkWaitNs;
  to.otherIdleNs += from.otherIdleNs;
  to.dataLoadingIdleNs += from.dataLoadingIdleNs;
}

void finishTimes(TimeBreakdown& t) {
  if (t.windowNs <= 0) {
    t = TimeBreakdown{};
    return;
  }
  t.memoryNs = t.busyNs - t.computeNs - t.communicationNs;
  t.idleNs = t.windowNs - t.busyNs;
}

}  // namespace kinetrace::detail::passes
