#include "analysis/passes/gap_table.h"

#include <algorithm>
#include <utility>

namespace kinetrace::detail::passes {

GapTable::GapTable(const PassContext& context)
    : context_(context),
      longest_(context.options.top, Longer{}),
      otherWork_(std::less<Found>(), BudgetAllocator<char>(context.budget(), kStreams)),
      hostSyncs_(std::less<Found>(), BudgetAllocator<char>(context.budget(), kStreams)) {}

bool GapTable::Longer::operator()(const KeptGap& a, const KeptGap& b) const {
  const int64_t x = a.gap.end - a.gap.start;
  const int64_t y = b.gap.end - b.gap.start;
  if (x != y) return x > y;
  return a.gap.start != b.gap.start ? a.gap.start < b.gap.start : a.device < b.device;
}

void GapTable::add(int64_t device, const Gap& gap) {
  if (gap.endedByOp) longest_.add({device, gap});
  if (gap.cause == Cause::OtherWork || gap.hostSync.any) {
    FoundTally& tally =
        gap.cause == Cause::OtherWork ? otherWork_[gap.found] : hostSyncs_[gap.hostSync];
    ++tally.gaps;
    tally.ns += gap.end - gap.start;
  }
}

void GapTable::finish(RankReport& report, bool severalDevices) {
  report.otherWork = foundRows(otherWork_, severalDevices);
  report.hostWaitAfterSync = foundRows(hostSyncs_, severalDevices);
  report.gaps = longestGaps(severalDevices);
}

// Longest first.
std::vector<FoundRow> GapTable::foundRows(const BudgetMap<Found, FoundTally>& tallies,
                                          bool severalDevices) const {
  std::vector<FoundRow> rows;
  for (const auto& [found, tally] : tallies) {
    rows.push_back({describe(found, severalDevices), tally.gaps, tally.ns});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const FoundRow& a, const FoundRow& b) { return a.ns > b.ns; });
  if (rows.size() > context_.options.top) rows.resize(context_.options.top);
  return rows;
}

// One pass over the host ranges finds the innermost range of every kept gap.
std::vector<GapReport> GapTable::longestGaps(bool severalDevices) {
  std::vector<KeptGap> gaps = longest_.take();
  std::sort(gaps.begin(), gaps.end(), Longer{});
  std::vector<CollectedRange> innermost(gaps.size());
  std::vector<bool> found(gaps.size(), false);
  context_.trace.hostRanges.forEach([&](const CollectedRange& r) {
    for (std::size_t i = 0; i < gaps.size(); ++i) {
      const Gap& gap = gaps[i].gap;
      const int64_t middle = (gap.start + gap.end) / 2;
      if (!gap.hasCall || r.tid != gap.callTid || r.startNs > middle || r.endNs < middle) {
        continue;
      }
      if (!found[i] || r.endNs - r.startNs < innermost[i].endNs - innermost[i].startNs) {
        innermost[i] = r;
        found[i] = true;
      }
    }
  });
  std::vector<GapReport> out;
  for (std::size_t i = 0; i < gaps.size(); ++i) {
    const Gap& gap = gaps[i].gap;
    GapReport g;
    g.device = gaps[i].device;
    g.startNs = gap.start;
    g.durationNs = gap.end - gap.start;
    g.cause = causeName(gap.cause);
    if (gap.inCallUntil > gap.start) {
      // Mostly spent in an earlier launch call: a launch that took long.
      const int64_t inCall = std::min(gap.inCallUntil, gap.callStartNs) - gap.start;
      if (2 * inCall >= gap.callStartNs - gap.start) g.cause = causeName(Cause::Launch);
      g.evidence = "the host was still in the launch call of " +
                   shortName(context_.trace.name(gap.inCallOf)) + " (it took " +
                   shortDuration(gap.inCallUntil - gap.inCallStart) + ")";
    }
    if (gap.cause == Cause::OtherWork) g.evidence = describe(gap.found, severalDevices);
    if (gap.hostSync.any) g.evidence = "the host was in " + describe(gap.hostSync, severalDevices);
    g.endedBy = context_.keptName(gap.endedBy);
    if (found[i]) g.hostWas = context_.keptName(innermost[i].name);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace kinetrace::detail::passes
