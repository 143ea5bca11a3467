#include "analysis/passes/copy_bandwidth_pass.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/passes/analysis_common.h"

namespace kinetrace::detail::passes {
namespace {

// A copy of no duration lasts a microsecond in the time series, as in HTA's (a bandwidth
// that rose and fell at one moment would leave no step).
constexpr int64_t kShortestCopyNs = 1000;

// The values of one kind, read once in ascending order: count, mean and standard deviation
// (Welford's), and the quartiles interpolated linearly between the values around each, as
// pandas' describe() gives them.
class SummaryBuilder {
 public:
  explicit SummaryBuilder(uint64_t count) : count_(count) {
    for (int q = 0; q < 3; ++q) {
      const double at = static_cast<double>(count - 1) * 0.25 * (q + 1);
      below_[q] = static_cast<uint64_t>(std::floor(at));
      fraction_[q] = at - std::floor(at);
    }
  }
  void add(double v) {
    if (seen_ == 0) min_ = v;
    max_ = v;
    ++seen_;
    const double delta = v - mean_;
    mean_ += delta / static_cast<double>(seen_);
    squares_ += delta * (v - mean_);
    for (int q = 0; q < 3; ++q) {
      if (seen_ - 1 == below_[q]) low_[q] = v;
      if (seen_ - 1 == below_[q] + 1) high_[q] = v;
    }
  }
  void finish(CopyKindBandwidth& kind) const {
    kind.samples = seen_;
    if (seen_ == 0) return;
    kind.meanGbps = mean_;
    kind.stdGbps = seen_ > 1 ? std::sqrt(squares_ / static_cast<double>(seen_ - 1)) : 0.0;
    kind.minGbps = min_;
    kind.maxGbps = max_;
    double* quartiles[3] = {&kind.p25Gbps, &kind.p50Gbps, &kind.p75Gbps};
    for (int q = 0; q < 3; ++q) {
      const double high = below_[q] + 1 < count_ ? high_[q] : low_[q];
      *quartiles[q] = low_[q] + (high - low_[q]) * fraction_[q];
    }
  }

 private:
  uint64_t count_;
  uint64_t seen_ = 0;
  double mean_ = 0;
  double squares_ = 0;
  double min_ = 0;
  double max_ = 0;
  uint64_t below_[3] = {};
  double fraction_[3] = {};
  double low_[3] = {};
  double high_[3] = {};
};

}  // namespace

bool CopyBandwidthPass::ByKindThenTime::operator()(const Change& a, const Change& b) const {
  return std::tie(a.kind, a.timeNs, a.start, a.sequence) <
         std::tie(b.kind, b.timeNs, b.start, b.sequence);
}

void CopyBandwidthPass::finish(RankReport& report) {
  CopyBandwidthReport& out = report.copyBandwidth;
  out = CopyBandwidthReport{};
  CollectedTrace& trace = context_.trace;
  const int64_t window = trace.events > 0 ? trace.lastNs - trace.firstNs : 0;
  out.timelineStartNs = trace.firstNs;
  out.timelineBinNs = std::max<int64_t>(
      1, (window + CopyBandwidthReport::kTimelineBins - 1) / CopyBandwidthReport::kTimelineBins);
  ExternalSorter<Change, ByKindThenTime> changes(context_.budget(), kAnalysisLists,
                                                 trace.listBytes);
  std::vector<uint32_t> kindNames;  // the kinds' name ids, at most kMaxKinds
  trace.copies.forEach([&](const CollectedCopy& copy) {
    auto found = std::find(kindNames.begin(), kindNames.end(), copy.kind);
    if (found == kindNames.end()) {
      if (kindNames.size() == CopyBandwidthReport::kMaxKinds) {
        ++out.leftOut[fmt::format("copies of kinds past the first {}",
                                  CopyBandwidthReport::kMaxKinds)];
        return;
      }
      kindNames.push_back(copy.kind);
      found = kindNames.end() - 1;
      out.kinds.emplace_back().kind = context_.keptName(copy.kind);
    }
    const auto kind = static_cast<uint32_t>(found - kindNames.begin());
    CopyKindBandwidth& k = out.kinds[kind];
    ++k.operations;
    if (copy.bytes > 0)
      k.bytes = copy.bytes > INT64_MAX - k.bytes ? INT64_MAX : k.bytes + copy.bytes;
    k.gpuNs += copy.endNs - copy.startNs;
    const int64_t end = copy.endNs > copy.startNs ? copy.endNs : copy.startNs + kShortestCopyNs;
    changes.add({copy.startNs, copy.sequence, copy.gigabytesPerSecond, kind, true});
    changes.add({end, copy.sequence, copy.gigabytesPerSecond, kind, false});
  });
  for (CopyKindBandwidth& k : out.kinds) {
    context_.reportHold->take(CopyBandwidthReport::kTimelineBins * sizeof(double), kAnalysisLists);
    k.timeline.assign(CopyBandwidthReport::kTimelineBins, 0.0);
  }
  ExternalSorter<Value, ByKindThenValue> values(context_.budget(), kAnalysisLists, trace.listBytes);
  sweep(out, changes, values);
  summarize(out, values);
  // By name, as HTA's summary lists them.
  std::sort(out.kinds.begin(), out.kinds.end(),
            [](const CopyKindBandwidth& a, const CopyKindBandwidth& b) { return a.kind < b.kind; });
}

// Each kind's bandwidth from change to change: its values above 0 (one after every change,
// as HTA's time series has a point per change) and its time-weighted mean per slice. The
// running sum is set to exactly 0 when no copy of the kind runs, so a sum of fractions that
// does not cancel exactly leaves no value of 1e-16 GB/s behind.
void CopyBandwidthPass::sweep(CopyBandwidthReport& out,
                              ExternalSorter<Change, ByKindThenTime>& changes,
                              ExternalSorter<Value, ByKindThenValue>& values) {
  uint32_t kind = 0;
  bool any = false;
  double gbps = 0;
  int64_t running = 0;
  int64_t since = 0;
  auto spread = [&](int64_t from, int64_t to) {  // `gbps` held over [from, to)
    if (gbps <= 0 || to <= from) return;
    std::vector<double>& timeline = out.kinds[kind].timeline;
    const int64_t bin = out.timelineBinNs;
    for (int64_t at = from; at < to;) {
      const int64_t b = std::clamp<int64_t>((at - out.timelineStartNs) / bin, 0,
                                            CopyBandwidthReport::kTimelineBins - 1);
      const int64_t binEnd = b == CopyBandwidthReport::kTimelineBins - 1
                                 ? to
                                 : std::max(at + 1, out.timelineStartNs + (b + 1) * bin);
      const int64_t until = std::min(to, binEnd);
      timeline[static_cast<std::size_t>(b)] +=
          gbps * static_cast<double>(until - at) / static_cast<double>(bin);
      at = until;
    }
  };
  changes.drain([&](const Change& change) {
    if (!any || change.kind != kind) {
      kind = change.kind;
      any = true;
      gbps = 0;
      running = 0;
      since = change.timeNs;
    }
    spread(since, change.timeNs);
    since = change.timeNs;
    running += change.start ? 1 : -1;
    gbps = running == 0 ? 0.0 : gbps + (change.start ? change.gbps : -change.gbps);
    if (gbps > 0) {
      values.add({kind, gbps});
      ++out.kinds[kind].samples;
    }
  });
}

void CopyBandwidthPass::summarize(CopyBandwidthReport& out,
                                  ExternalSorter<Value, ByKindThenValue>& values) {
  std::optional<SummaryBuilder> building;
  uint32_t kind = 0;
  auto finishKind = [&]() {
    if (building) building->finish(out.kinds[kind]);
  };
  values.sort();
  // Each kind's count (its samples, counted by the sweep) places its quartiles.
  for (; !values.done(); values.pop()) {
    const Value& v = values.front();
    if (!building || v.kind != kind) {
      finishKind();
      kind = v.kind;
      building.emplace(out.kinds[kind].samples);
    }
    building->add(v.gbps);
  }
  finishKind();
}

}  // namespace kinetrace::detail::passes
