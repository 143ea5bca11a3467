#include "analysis/passes/communication_pass.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "analysis/passes/analysis_common.h"

namespace kinetrace::detail::passes {
namespace {

constexpr const char* kCollectiveStarts = "collective starts";

}  // namespace

CommunicationPass::CommunicationPass(const PassContext& context)
    : context_(context), kernelStarts_(context.budget(), kAnalysisLists, context.trace.listBytes) {}

void CommunicationPass::add(const JoinedOp& op) {
  if (op.kind != GpuOpKind::Communication) return;
  ++communicationKernels_;
  kernelStarts_.add({op.startNs, op.sequence, op.name});
}

// By GPU time, longest first.
void CommunicationPass::finish(RankReport& report) {
  report.communicationKernels = communicationKernels_;
  std::vector<NcclCallRow>& rows = report.ncclCalls;
  for (const auto& [call, totals] : context_.trace.ncclCalls) {
    NcclCallRow row;
    context_.reportHold->take(call.size() + sizeof(NcclCallRow), "NCCL calls");
    row.call = std::string(call.data(), call.size());
    row.operations = totals.operations;
    row.bytes = totals.bytes;
    row.gpuNs = totals.gpuNs;
    // Bytes per nanosecond are gigabytes per second.
    row.gigabytesPerSecond =
        totals.gpuNs > 0 ? static_cast<double>(totals.bytes) / static_cast<double>(totals.gpuNs)
                         : 0.0;
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const NcclCallRow& a, const NcclCallRow& b) { return a.gpuNs > b.gpuNs; });
}

// A start each, a name once, taken from the budget.
RankCollectives CommunicationPass::collectives() {
  RankCollectives out;
  out.rank = context_.trace.rank;
  out.held = std::make_shared<BudgetHold>(context_.budget());
  auto add = [&](std::map<std::string, std::vector<int64_t>>& starts, const CollectiveStart& c) {
    std::vector<int64_t>* found = nullptr;
    const std::string_view name = context_.trace.name(c.name);
    if (auto it = starts.find(std::string(name)); it != starts.end()) {
      found = &it->second;
    } else {
      out.held->take(name.size() + 96, kCollectiveStarts);
      found = &starts[std::string(name)];
    }
    if (found->size() == found->capacity()) {
      out.held->take(std::max<std::size_t>(found->capacity(), 4) * sizeof(int64_t),
                     kCollectiveStarts);
    }
    found->push_back(c.startNs);
  };
  kernelStarts_.drain([&](const CollectiveStart& c) { add(out.kernelStarts, c); });
  context_.trace.collectiveCalls.drain([&](const CollectiveStart& c) { add(out.callStarts, c); });
  return out;
}

// On one host, ranks share a clock; across hosts the skew adds. NCCL kernels when every rank
// has them; else torch.distributed's calls (gloo's collectives run on the host, and a rank
// that calls late is as late to the collective).
std::vector<StragglerReport> stragglers(const std::vector<RankCollectives>& ranks,
                                        const AnalysisOptions& options) {
  if (ranks.size() < 2) return {};
  using Starts = std::map<std::string, std::vector<int64_t>>;
  auto everyRankHas = [&ranks](Starts RankCollectives::*starts) {
    return std::all_of(ranks.begin(), ranks.end(),
                       [starts](const RankCollectives& r) { return !(r.*starts).empty(); });
  };
  Starts RankCollectives::*starts = nullptr;
  StragglerReport::Source source = StragglerReport::Source::Kernel;
  if (everyRankHas(&RankCollectives::kernelStarts)) {
    starts = &RankCollectives::kernelStarts;
  } else if (everyRankHas(&RankCollectives::callStarts)) {
    starts = &RankCollectives::callStarts;
    source = StragglerReport::Source::HostCall;
  } else {
    return {};
  }
  // Only the worst are kept: a job has as many occurrences as collectives, and each would
  // copy its name.
  auto worse = [](const StragglerReport& a, const StragglerReport& b) {
    return a.lateByNs > b.lateByNs;
  };
  TopN<StragglerReport, decltype(worse)> worst(options.top, worse);
  for (const auto& [name, first] : ranks[0].*starts) {
    for (std::size_t k = 0; k < first.size(); ++k) {
      int64_t earliest = first[k], latest = first[k];
      std::size_t slow = 0;
      bool everywhere = true;
      for (std::size_t r = 1; r < ranks.size(); ++r) {
        const Starts& other = ranks[r].*starts;
        auto found = other.find(name);
        if (found == other.end() || found->second.size() <= k) {
          everywhere = false;
          break;
        }
        const int64_t start = found->second[k];
        earliest = std::min(earliest, start);
        if (start > latest) {
          latest = start;
          slow = r;
        }
      }
      if (!everywhere || latest - earliest <= 0) continue;
      StragglerReport s;
      s.source = source;
      s.occurrence = k + 1;
      s.slowRank = ranks[slow].rank >= 0 ? ranks[slow].rank : static_cast<int64_t>(slow);
      s.lateByNs = latest - earliest;
      if (!worst.admits(s)) continue;
      s.collective = name;
      worst.add(std::move(s));
    }
  }
  std::vector<StragglerReport> out = worst.take();
  std::stable_sort(out.begin(), out.end(), worse);
  return out;
}

}  // namespace kinetrace::detail::passes
