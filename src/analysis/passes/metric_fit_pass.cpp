#include "analysis/passes/metric_fit_pass.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>

#include "analysis/metric_fit.h"

namespace kinetrace::detail::passes {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// A name needs this many samples' worth of occupancy before its values can be its own.
constexpr double kLeastSupportSamples = 3;
// The largest value of a % metric the fit takes from a sample.
constexpr double kMostSampleValue = 1e4;
// Below this many samples per column the fit does not speak at all: the kernels' own
// averages stand, as in a trace without samples.
constexpr std::size_t kLeastSamplesPerColumn = 5;
// The alignment probes: the fit is made again with every window moved by this share of the
// interval either way. With the samples' clock on the kernels', the windows as the trace has
// them explain the samples best: on a ResNet-18 loop on an H100 (150 steps, 1 ms samples),
// the SM, DRAM and tensor fits left 3.78% of their variance unexplained (summed) as
// recorded, 3.89-3.95% with the windows moved 10 us, 4.13-4.27% with 20 us and 4.9-5.2%
// with 50 us. So had the samples' clock been 50 us off, the windows moved back would leave
// 0.73-0.77 of what the recorded ones leave. A moved one that leaves less than
// kMisalignedShare of it says the clocks differ, a bias no standard error shows: then no
// name is resolved.
constexpr int64_t kProbeShareOfInterval = 20;  // 50 us at 1 ms
constexpr double kMisalignedShare = 0.9;

}  // namespace

MetricFitPass::MetricFitPass(const PassContext& context)
    : context_(context),
      kernels_(context.budget(), kAnalysisLists, context.trace.listBytes),
      names_(0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
             BudgetAllocator<char>(context.budget(), "distinct names")) {}

void MetricFitPass::add(const JoinedOp& op) {
  if (op.kind == GpuOpKind::Memory || context_.trace.gpuMetrics.metrics.empty()) return;
  kernels_.add({op.device, op.startNs, op.endNs, op.name});
  // Sums that saturate: a hostile trace's durations may add up past 64 bits.
  const auto add = [](int64_t& sum, int64_t ns) {
    if (__builtin_add_overflow(sum, ns, &sum)) sum = INT64_MAX;
  };
  Tally& tally = names_[op.name];
  ++tally.count;
  add(tally.ns, op.endNs - op.startNs);
  add(kernelNs_, op.endNs - op.startNs);
}

NameFits MetricFitPass::finish(RankReport& report) {
  CollectedTrace& trace = context_.trace;
  const std::vector<MetricName>& metrics = trace.gpuMetrics.metrics;
  NameFits fits;
  std::vector<std::size_t> fitted;  // the metrics fitted: those in % of a peak
  std::vector<bool> readsBound;      // of them, those the bound classes read
  for (std::size_t m = 0; m < metrics.size(); ++m) {
    if (metrics[m].unit != "%") continue;
    fitted.push_back(m);
    const std::string& name = metrics[m].name;
    readsBound.push_back(name == kMetricSmThroughput || name == kMetricDramThroughput ||
                         name == kMetricTensorActive);
  }
  // A trace whose % metrics are none of those: each one counts.
  if (std::none_of(readsBound.begin(), readsBound.end(), [](bool b) { return b; })) {
    readsBound.assign(readsBound.size(), true);
  }
  if (fitted.empty() || trace.metricSamples.size() == 0 || kernelNs_ <= 0) {
    trace.metricSamples.drain([](const MetricSampleValue&) {});
    return fits;
  }

  // The columns: the names making kFittedShare of kernel time, longest first; then the other
  // kernels; then idle.
  using Named = std::pair<uint32_t, Tally>;
  BudgetVector<Named> byTime(names_.begin(), names_.end(),
                             BudgetAllocator<Named>(context_.budget(), kAnalysisLists));
  std::sort(byTime.begin(), byTime.end(), [&](const auto& a, const auto& b) {
    if (a.second.ns != b.second.ns) return a.second.ns > b.second.ns;
    return trace.name(a.first) < trace.name(b.first);
  });
  std::unordered_map<uint32_t, std::size_t> columnOf;
  int64_t covered = 0;
  for (const auto& [name, tally] : byTime) {
    if (columnOf.size() == kMostFittedNames ||
        static_cast<double>(covered) >= kFittedShare * static_cast<double>(kernelNs_)) {
      break;
    }
    columnOf.emplace(name, columnOf.size());
    covered = tally.ns > INT64_MAX - covered ? INT64_MAX : covered + tally.ns;
  }
  const std::size_t otherColumn = columnOf.size();
  const std::size_t idleColumn = otherColumn + 1;
  const std::size_t columns = idleColumn + 1;
  // The windows as recorded, then moved earlier and later (the alignment probes).
  const int64_t intervalNs = trace.gpuMetrics.intervalNs;
  const int64_t probeNs = std::max<int64_t>(intervalNs / kProbeShareOfInterval, 0);
  const std::vector<int64_t> shifts =
      probeNs > 0 ? std::vector<int64_t>{0, -probeNs, probeNs} : std::vector<int64_t>{0};
  std::vector<std::vector<LinearFit>> fitsByShift(
      shifts.size(), std::vector<LinearFit>(fitted.size(), LinearFit(columns)));

  // The sweep, device by device: each sample's window against the kernels that ran in it.
  kernels_.sort();
  // Of the device, started before the window's end: as many as run at once.
  BudgetVector<Kernel> active(BudgetAllocator<Kernel>(context_.budget(), kAnalysisLists));
  int64_t activeDevice = INT64_MIN;
  std::vector<double> occupancy(columns);
  using Span = std::pair<int64_t, int64_t>;
  BudgetVector<Span> busy(BudgetAllocator<Span>(context_.budget(), kAnalysisLists));
  auto fitWindow = [&](int64_t device, int64_t startNs, int64_t endNs,
                       const std::vector<double>& values) {
    int64_t lengthNs = 0;
    if (endNs <= startNs || __builtin_sub_overflow(endNs, startNs, &lengthNs)) return;
    int64_t reachStart = 0;
    int64_t reachEnd = 0;  // the latest moved window's span
    if (__builtin_sub_overflow(startNs, probeNs, &reachStart) ||
        __builtin_add_overflow(endNs, probeNs, &reachEnd)) {
      return;
    }
    if (device != activeDevice) {
      active.clear();
      activeDevice = device;
    }
    while (!kernels_.done() && kernels_.front().device < device) kernels_.pop();
    while (!kernels_.done() && kernels_.front().device == device &&
           kernels_.front().startNs < reachEnd) {
      active.push_back(kernels_.front());
      kernels_.pop();
    }
    active.erase(std::remove_if(active.begin(), active.end(),
                                [&](const Kernel& k) { return k.endNs <= reachStart; }),
                 active.end());
    const double length = static_cast<double>(lengthNs);
    for (std::size_t s = 0; s < shifts.size(); ++s) {
      const int64_t from0 = startNs + shifts[s];
      const int64_t to0 = endNs + shifts[s];
      std::fill(occupancy.begin(), occupancy.end(), 0.0);
      busy.clear();
      for (const Kernel& k : active) {
        const int64_t from = std::max(k.startNs, from0);
        const int64_t to = std::min(k.endNs, to0);
        if (to <= from) continue;
        auto column = columnOf.find(k.name);
        occupancy[column != columnOf.end() ? column->second : otherColumn] +=
            static_cast<double>(to - from) / length;
        busy.emplace_back(from, to);
      }
      // Idle: the part of the window no kernel covered.
      std::sort(busy.begin(), busy.end());
      int64_t busyNs = 0;
      int64_t until = from0;
      for (const auto& [from, to] : busy) {
        if (to <= until) continue;
        busyNs += to - std::max(from, until);
        until = to;
      }
      occupancy[idleColumn] = static_cast<double>(lengthNs - busyNs) / length;
      for (std::size_t f = 0; f < fitted.size(); ++f) {
        // A share of a peak far outside 0..100 is no sample's (a hostile trace's 1e300 would
        // overflow the sums to infinity): left out of the fit.
        const double value = values[fitted[f]];
        if (std::isfinite(value) && std::abs(value) <= kMostSampleValue) {
          fitsByShift[s][f].add(occupancy, value);
        }
      }
    }
  };

  // Samples come as one value per metric, in order; a sample is whole when the next begins,
  // and its window ends at the device's next sample, or an interval after its start (a lost
  // sample leaves a hole, not a longer window). So a whole sample waits for the next.
  struct Sample {
    int64_t device = 0;
    int64_t startNs = 0;
    std::vector<double> values;
  };
  std::optional<Sample> waiting;  // whole, its end not known yet
  Sample filling{0, 0, std::vector<double>(metrics.size(), kNaN)};
  bool anyValue = false;
  auto whole = [&]() {
    if (waiting) {
      int64_t end = waiting->device == filling.device ? filling.startNs : INT64_MAX;
      int64_t intervalEnd = 0;
      if (intervalNs > 0 && !__builtin_add_overflow(waiting->startNs, intervalNs, &intervalEnd)) {
        end = std::min(end, intervalEnd);
      }
      if (end != INT64_MAX) fitWindow(waiting->device, waiting->startNs, end, waiting->values);
    }
    waiting = filling;
    std::fill(filling.values.begin(), filling.values.end(), kNaN);
  };
  trace.metricSamples.drain([&](const MetricSampleValue& v) {
    if (anyValue && (v.device != filling.device || v.startNs != filling.startNs)) whole();
    anyValue = true;
    filling.device = v.device;
    filling.startNs = v.startNs;
    if (v.metric < filling.values.size()) filling.values[v.metric] = v.value;
  });
  if (anyValue) {
    whole();
    filling.device = waiting->device + 1;  // none follows: the last window is an interval
    whole();
  }

  std::size_t fittedSamples = 0;
  for (const LinearFit& fit : fitsByShift[0])
    fittedSamples = std::max(fittedSamples, fit.samples());
  if (fittedSamples < kLeastSamplesPerColumn * columns) return fits;

  // The results, each fitted metric's, gathered per name.
  MetricFitSummary& summary = report.gpuMetrics.fit;
  summary.done = true;
  summary.names = columnOf.size();
  summary.r2.assign(metrics.size(), kNaN);
  summary.idle.assign(metrics.size(), kNaN);
  std::vector<LinearFit::Result> results;
  for (std::size_t f = 0; f < fitted.size(); ++f) {
    results.push_back(fitsByShift[0][f].solve());
    summary.samples = std::max<uint64_t>(summary.samples, results.back().samples);
    summary.r2[fitted[f]] = results.back().r2;
    summary.idle[fitted[f]] = results.back().values[idleColumn];
  }
  // The probes: a moved window that explains the metrics the classes read clearly better.
  for (std::size_t s = 1; s < shifts.size(); ++s) {
    double aligned = 0;
    double moved = 0;
    for (std::size_t f = 0; f < fitted.size(); ++f) {
      if (!readsBound[f] || !results[f].varies) continue;  // a constant says nothing of time
      aligned += 1 - results[f].r2;
      moved += 1 - fitsByShift[s][f].solve().r2;
    }
    // An exact fit (hand-made samples) cannot be bettered: only a clear gain counts.
    if (moved < kMisalignedShare * aligned && aligned - moved > 1e-9 &&
        (summary.misalignedNs == 0 || moved < summary.misalignedUnexplained)) {
      summary.misalignedNs = shifts[s];
      summary.misalignedUnexplained = moved;
    }
  }
  for (const auto& [name, column] : columnOf) {
    NameFit fit;
    const Tally& tally = names_[name];
    const int64_t meanNs = tally.ns / static_cast<int64_t>(std::max<uint64_t>(tally.count, 1));
    fit.shorterThanSample = intervalNs > 0 && meanNs < intervalNs;
    fit.values.assign(metrics.size(), kNaN);
    std::vector<double> errors(metrics.size(), kNaN);
    double ownVariation = std::numeric_limits<double>::infinity();
    fit.resolved = true;
    for (std::size_t f = 0; f < fitted.size(); ++f) {
      const LinearFit::Result& r = results[f];
      if (r.samples == 0) continue;
      const double value = r.values[column];
      const double own = r.ownVariation[column];
      ownVariation = std::min(ownVariation, own);
      const double error =
          own > 0 ? std::max(r.standardError[column], kModelErrorPoints / std::sqrt(own))
                  : std::numeric_limits<double>::infinity();
      fit.values[fitted[f]] = value;
      errors[fitted[f]] = error;
      // Told apart when the metrics the class is read from are: a name's share of a
      // whole-engine figure (GR active) says nothing of the name. A share of a peak past
      // 100% by more than its error is no value the samples could have: the sum model does
      // not hold for the name (work the trace does not show, clocks that drift).
      if (!readsBound[f]) continue;
      if (!(error <= kMostFitErrorPoints) || r.support[column] < kLeastSupportSamples ||
          value > 100 + 2 * error || summary.misalignedNs != 0) {
        fit.resolved = false;
      }
    }
    for (KernelRow& row : report.kernels) {
      if (row.name != trace.name(name)) continue;
      row.fit.fitted = true;
      row.fit.shorterThanSample = fit.shorterThanSample;
      row.fit.resolved = fit.resolved;
      row.fit.values = fit.values;
      row.fit.standardError = errors;
      row.fit.ownVariation = std::isfinite(ownVariation) ? ownVariation : 0;
    }
    if (fit.shorterThanSample) {
      ++summary.shortNames;
      summary.shortResolved += fit.resolved ? 1 : 0;
    }
    fits.emplace(name, std::move(fit));
  }
  return fits;
}

}  // namespace kinetrace::detail::passes
