#include "analysis/passes/kernel_pass.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/passes/analysis_common.h"

namespace kinetrace::detail::passes {

KernelPass::KernelPass(const PassContext& context)
    : context_(context),
      durations_(context.budget(), kAnalysisLists, context.trace.listBytes),
      issuedBy_(context.budget(), kAnalysisLists, context.trace.listBytes),
      names_(0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
             BudgetAllocator<char>(context.budget(), "distinct names")),
      issuers_(0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
               BudgetAllocator<char>(context.budget(), "distinct names")) {}

void KernelPass::add(const JoinedOp& op) {
  const int64_t duration = op.endNs - op.startNs;
  durations_.add({op.name, duration});
  durations_.add({kKindKey + static_cast<uint32_t>(op.kind), duration});
  Tally& tally = names_[op.name];
  ++tally.count;
  if (tally.count == 1 || op.sequence >= tally.kindSequence) {
    tally.kind = op.kind;
    tally.kindSequence = op.sequence;
  }
  ++kinds_[op.kind].count;
  totalNs_ += duration;
  ++gpuOps_;
  if (op.kind != GpuOpKind::Memory) {
    ++kernelCount_;
    kernelNs_ += duration;
  }

  const bool isTiny = op.kind != GpuOpKind::Memory && duration < context_.options.tinyKernelNs;
  if (op.externalId != 0) {
    issuedBy_.add({op.externalId, isTiny});
  } else if (isTiny) {
    ++issuers_[kNoRange];
  }
  if (isTiny) {
    ++tiny_.count;
    tiny_.kernelNs += duration;
    if (op.hasCall) {
      const int64_t launch = op.callEndNs - op.callStartNs;
      tiny_.launchNs += launch;
      if (launch > duration) ++tiny_.launchLongerCount;
    }
  }
}

void KernelPass::finish(RankReport& report) {
  report.gpuOps = gpuOps_;
  report.kernelCount = kernelCount_;
  report.kernelNs = kernelNs_;
  kernelTable(report);
  tinyKernelIssuers(report);
}

// Every name's distribution, of which the top ones are kept with their names (a name may be
// megabytes; each is copied only if its row is kept).
void KernelPass::kernelTable(RankReport& report) {
  auto share = [this](int64_t ns) {
    return totalNs_ > 0 ? static_cast<double>(ns) / static_cast<double>(totalNs_) : 0.0;
  };
  struct Row {
    uint32_t key = 0;
    Distribution duration;
  };
  // Longest total first, then by name: the order the table is shown in.
  auto before = [this](const Row& a, const Row& b) {
    if (a.duration.totalNs != b.duration.totalNs) return a.duration.totalNs > b.duration.totalNs;
    return context_.trace.name(a.key) < context_.trace.name(b.key);
  };
  TopN<Row, decltype(before)> top(context_.options.top, before);
  std::optional<DistributionBuilder> building;
  uint32_t key = 0;
  auto finishKey = [&]() {
    if (!building) return;
    Row row{key, building->finish()};
    if (key >= kKindKey) {
      KernelRow kind;
      kind.name = kindName(static_cast<GpuOpKind>(key - kKindKey));
      kind.kind = kind.name;
      kind.duration = row.duration;
      kind.share = share(row.duration.totalNs);
      report.kinds.push_back(std::move(kind));
    } else {
      top.add(row);
    }
  };
  durations_.drain([&](const KeyedDuration& d) {
    if (!building || d.key != key) {
      finishKey();
      key = d.key;
      building.emplace(key >= kKindKey ? kinds_[static_cast<GpuOpKind>(key - kKindKey)].count
                                       : names_[key].count);
    }
    building->add(d.ns);
  });
  finishKey();
  std::vector<Row> rows = top.take();
  std::sort(rows.begin(), rows.end(), before);
  for (const Row& row : rows) {
    KernelRow kernel;
    kernel.name = context_.keptName(row.key);
    kernel.kind = kindName(names_[row.key].kind);
    kernel.duration = row.duration;
    kernel.share = share(row.duration.totalNs);
    report.kernels.push_back(std::move(kernel));
  }
}

// The host ranges that issued the tiny kernels: their External ids joined to the ranges'.
void KernelPass::tinyKernelIssuers(RankReport& report) {
  TinyKernelReport& tiny = report.tiny;
  tiny = tiny_;
  tiny.thresholdNs = context_.options.tinyKernelNs;
  tiny.shareOfKernels =
      report.kernelCount > 0 ? static_cast<double>(tiny.count) / report.kernelCount : 0;
  CollectedTrace& trace = context_.trace;
  ExternalSorter<ExternalIdRange, ByExternalId>& ranges = trace.rangeOfExternalId;
  ranges.sort();
  issuedBy_.drain([&](const IssuedBy& op) {
    while (!ranges.done() && ranges.front().externalId < op.externalId) ranges.pop();
    const bool found = !ranges.done() && ranges.front().externalId == op.externalId;
    if (found) ++report.opsWithHostRange;
    if (op.tiny) ++issuers_[found ? ranges.front().name : kNoRange];
  });
  while (!ranges.done()) ranges.pop();
  // The most frequent first, then by name; only those kept have their names copied.
  auto nameOf = [&trace](uint32_t name) {
    return name == kNoRange ? std::string_view("(no host range)") : trace.name(name);
  };
  auto before = [&](const std::pair<uint32_t, uint64_t>& a,
                    const std::pair<uint32_t, uint64_t>& b) {
    return a.second != b.second ? a.second > b.second : nameOf(a.first) < nameOf(b.first);
  };
  TopN<std::pair<uint32_t, uint64_t>, decltype(before)> top(context_.options.top, before);
  for (const auto& issuer : issuers_) top.add(issuer);
  std::vector<std::pair<uint32_t, uint64_t>> rows = top.take();
  std::sort(rows.begin(), rows.end(), before);
  for (const auto& [name, count] : rows) {
    tiny.issuers.emplace_back(
        name == kNoRange ? std::string(nameOf(name)) : context_.keptName(name), count);
  }
}

}  // namespace kinetrace::detail::passes
