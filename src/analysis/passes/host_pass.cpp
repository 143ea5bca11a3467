#include "analysis/passes/host_pass.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

namespace kinetrace::detail::passes {
namespace {

struct ByThreadThenStart {
  bool operator()(const CollectedRange& a, const CollectedRange& b) const {
    return std::tie(a.tid, a.startNs, a.endNs) < std::tie(b.tid, b.startNs, b.endNs);
  }
};

}  // namespace

void HostPass::finish(RankReport& report) {
  HostReport& host = report.host;
  const CollectedTrace& trace = context_.trace;
  host.windowNs = trace.events > 0 ? trace.lastNs - trace.firstNs : 0;
  host.ranges = trace.hostRanges.size();
  host.gpuRecorded = trace.gpuRecorded;
  if (!trace.gpuRecorded) host.gpuStatus = trace.gpuStatus;
  rangesByName(host);
  threads(host);
}

void HostPass::rangesByName(HostReport& host) {
  struct Tally {
    uint64_t count = 0;
    int64_t totalNs = 0;
    int64_t maxNs = 0;
  };
  BudgetUnorderedMap<uint32_t, Tally> byName(
      0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
      BudgetAllocator<char>(context_.budget(), "distinct names"));
  context_.trace.hostRanges.forEach([&](const CollectedRange& range) {
    Tally& tally = byName[range.name];
    const int64_t ns = range.endNs - range.startNs;
    ++tally.count;
    tally.totalNs = ns > INT64_MAX - tally.totalNs ? INT64_MAX : tally.totalNs + ns;
    tally.maxNs = std::max(tally.maxNs, ns);
  });
  using Entry = std::pair<uint32_t, Tally>;
  BudgetVector<Entry> rows(byName.begin(), byName.end(),
                           BudgetAllocator<Entry>(context_.budget(), kAnalysisLists));
  // Longest total first, then by name: the order the table is shown in.
  auto before = [this](const Entry& a, const Entry& b) {
    if (a.second.totalNs != b.second.totalNs) return a.second.totalNs > b.second.totalNs;
    return context_.trace.name(a.first) < context_.trace.name(b.first);
  };
  const std::size_t shown = std::min(rows.size(), context_.options.top);
  std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(shown), rows.end(),
                    before);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& [name, tally] = rows[i];
    host.top.push_back({context_.keptName(name), tally.count, tally.totalNs, tally.maxNs});
  }
}

// Each thread's busy time is the union of its ranges: nested ranges count once, so a thread
// is never busier than the window.
void HostPass::threads(HostReport& host) {
  ExternalSorter<CollectedRange, ByThreadThenStart> sorted(context_.budget(), kAnalysisLists,
                                                           context_.trace.listBytes);
  context_.trace.hostRanges.forEach([&](const CollectedRange& range) { sorted.add(range); });
  sorted.sort();
  BudgetVector<HostThreadRow> threads(
      BudgetAllocator<HostThreadRow>(context_.budget(), kAnalysisLists));
  int64_t coveredUntil = 0;
  for (; !sorted.done(); sorted.pop()) {
    const CollectedRange& range = sorted.front();
    if (threads.empty() || threads.back().tid != range.tid) {
      threads.push_back({range.tid, "", 0, 0});
      coveredUntil = range.startNs;
    }
    HostThreadRow& thread = threads.back();
    ++thread.ranges;
    const int64_t from = std::max(coveredUntil, range.startNs);
    if (range.endNs > from) {
      thread.busyNs += range.endNs - from;
      coveredUntil = range.endNs;
    }
  }
  host.threadCount = threads.size();
  std::stable_sort(threads.begin(), threads.end(),
                   [](const HostThreadRow& a, const HostThreadRow& b) {
                     if (a.busyNs != b.busyNs) return a.busyNs > b.busyNs;
                     return a.tid < b.tid;
                   });
  const std::size_t shown = std::min(threads.size(), context_.options.top);
  for (std::size_t i = 0; i < shown; ++i) {
    HostThreadRow row = threads[i];
    // The last name a thread was given is the one it had.
    std::optional<uint32_t> named;
    for (const auto& [tid, name] : context_.trace.threadNames) {
      if (tid == row.tid) named = name;
    }
    if (named) row.name = context_.keptName(*named);
    host.threads.push_back(std::move(row));
  }
}

}  // namespace kinetrace::detail::passes
