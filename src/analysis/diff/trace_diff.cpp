// Two runs' profiles side by side: the steps matched, then every figure per step on each side,
// with its step-to-step spread and whether it changed beyond noise (trace_diff.h).

#include "analysis/diff/trace_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace kinetrace::detail {
namespace {

// The parts of the step's GPU time compared, in the order the tables show them: analyze's
// breakdown (busy, then idle), then the idle time while data loading ran (a share of idle,
// mostly of host wait, said where it explains a change).
struct PartSpec {
  const char* id;
  const char* name;
  int64_t TimeBreakdown::*field;
};
constexpr PartSpec kDiffParts[] = {
    {"compute_ns", "compute", &TimeBreakdown::computeNs},
    {"communication_ns", "communication", &TimeBreakdown::communicationNs},
    {"memory_ns", "memory", &TimeBreakdown::memoryNs},
    {"before_first_op_ns", "before the first GPU operation", &TimeBreakdown::beforeFirstOpNs},
    {"host_wait_ns", "host wait", &TimeBreakdown::hostWaitNs},
    {"launch_ns", "launch", &TimeBreakdown::launchNs},
    {"kernel_wait_ns", "kernel wait", &TimeBreakdown::kernelWaitNs},
    {"other_work_wait_ns", "waiting on other work", &TimeBreakdown::otherWorkWaitNs},
    {"other_idle_ns", "other idle", &TimeBreakdown::otherIdleNs},
    {"data_loading_idle_ns", "idle while data loading ran", &TimeBreakdown::dataLoadingIdleNs},
};

// A mean and its spread, from values added one at a time (Welford's), or a group of zeros at
// once (a name absent from some steps).
class Spread {
 public:
  void add(double value) {
    ++count_;
    const double delta = value - mean_;
    mean_ += delta / static_cast<double>(count_);
    squares_ += delta * (value - mean_);
  }
  void addZeros(std::size_t zeros) {
    if (zeros == 0) return;
    const double n = static_cast<double>(count_);
    const double k = static_cast<double>(zeros);
    squares_ += mean_ * mean_ * n * k / (n + k);
    mean_ = mean_ * n / (n + k);
    count_ += zeros;
  }
  double mean() const { return mean_; }
  // The sample standard deviation; 0 of fewer than two values.
  double deviation() const {
    return count_ < 2 ? 0.0 : std::sqrt(std::max(0.0, squares_) / static_cast<double>(count_ - 1));
  }

 private:
  std::size_t count_ = 0;
  double mean_ = 0;
  double squares_ = 0;
};

// What one side compares: its steps (or the whole trace), and what a figure is divided by.
struct Side {
  const RunProfile* profile = nullptr;
  std::vector<const ProfileStep*> steps;  // compared; empty: the whole trace
  std::vector<bool> inSlot;               // by slot (step index): compared
  bool whole = true;
  double devices = 1;

  std::size_t count() const { return whole ? 1 : steps.size(); }
  bool compares(uint32_t slot) const {
    if (whole) return true;
    return slot != kOutsideSteps && slot < inSlot.size() && inSlot[slot];
  }
};

// The steps of `profile` to compare: those whose number is in `numbers` (every one when
// null), but for `leftOut`.
Side sideOf(const RunProfile& profile, bool whole, const std::set<int64_t>* numbers,
            const std::set<const ProfileStep*>& leftOut = {}) {
  Side side;
  side.profile = &profile;
  side.whole = whole;
  side.devices = static_cast<double>(std::max<std::size_t>(1, profile.report.devices.size()));
  side.inSlot.assign(profile.steps.size(), false);
  if (whole) return side;
  for (std::size_t i = 0; i < profile.steps.size(); ++i) {
    const ProfileStep& step = profile.steps[i];
    if (numbers != nullptr && (!step.number || numbers->count(*step.number) == 0)) continue;
    if (leftOut.count(&step) > 0) continue;
    side.steps.push_back(&step);
    side.inSlot[i] = true;
  }
  return side;
}

std::set<const ProfileStep*> stepsNumbered(const RunProfile& profile,
                                           const std::set<int64_t>& numbers) {
  std::set<const ProfileStep*> steps;
  for (const ProfileStep& step : profile.steps) {
    if (step.number && numbers.count(*step.number) > 0) steps.insert(&step);
  }
  return steps;
}

int64_t lengthOf(const ProfileStep& step) {
  return step.endNs - step.startNs;
}

// The steps of a side far from its others (trace_diff.h): further from the median than five
// robust standard deviations (1.4826 times the median absolute deviation) and a tenth of the
// median, and at most a quarter of them (at least one, of three steps or more); more such
// steps are the run's spread, not exceptions.
std::set<const ProfileStep*> outlyingSteps(const Side& side) {
  const std::size_t n = side.steps.size();
  if (side.whole || n < 3) return {};
  std::vector<double> lengths, deviations;
  for (const ProfileStep* step : side.steps)
    lengths.push_back(static_cast<double>(lengthOf(*step)));
  const auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
  };
  const double middle = median(lengths);
  for (double length : lengths) deviations.push_back(std::abs(length - middle));
  const double allowed = std::max(5 * 1.4826 * median(deviations), 0.1 * middle);
  std::set<const ProfileStep*> far;
  for (std::size_t i = 0; i < n; ++i) {
    if (deviations[i] > allowed) far.insert(side.steps[i]);
  }
  if (far.size() > std::max<std::size_t>(1, n / 4)) return {};
  return far;
}

FigureDiff figureOf(const Spread& base, const Spread& after) {
  FigureDiff f;
  f.base = base.mean();
  f.after = after.mean();
  f.baseSpread = base.deviation();
  f.afterSpread = after.deviation();
  return f;
}

// The noise rule (trace_diff.h): a change larger than `noise`, the step time's.
void judge(FigureDiff& f, double noise) {
  f.noise = noise;
  f.beyondNoise = std::abs(f.delta()) > noise;
}

Spread stepTimes(const Side& side) {
  Spread spread;
  if (side.whole) {
    spread.add(static_cast<double>(side.profile->report.host.windowNs));
  } else {
    for (const ProfileStep* step : side.steps) {
      spread.add(static_cast<double>(step->endNs - step->startNs));
    }
  }
  return spread;
}

Spread partTimes(const Side& side, int64_t TimeBreakdown::*field) {
  Spread spread;
  if (side.whole) {
    spread.add(static_cast<double>(side.profile->report.time.*field) / side.devices);
  } else {
    for (const ProfileStep* step : side.steps) {
      spread.add(static_cast<double>(step->time.*field) / side.devices);
    }
  }
  return spread;
}

// A name's figures over the steps one side compares.
struct NameTotals {
  uint64_t count = 0;
  int64_t ns = 0;
  Spread perStep;
};

NameTotals totalsOf(const NameProfile* name, const Side& side) {
  NameTotals totals;
  if (name == nullptr) {
    totals.perStep.addZeros(side.count());
    return totals;
  }
  std::size_t present = 0;
  double wholeNs = 0;
  for (const auto& [slot, figures] : name->slots) {
    if (!side.compares(slot)) continue;
    totals.count += figures.count;
    totals.ns += figures.ns;
    if (side.whole) {
      wholeNs += static_cast<double>(figures.ns);
    } else {
      totals.perStep.add(static_cast<double>(figures.ns));
      ++present;
    }
  }
  if (side.whole) {
    totals.perStep.add(wholeNs);
  } else {
    totals.perStep.addZeros(side.count() - present);
  }
  return totals;
}

// HTA's categories (ops_diff), by count per step: the sides may compare different numbers of
// steps.
NameChange changeOf(uint64_t base, std::size_t baseSteps, uint64_t after, std::size_t afterSteps) {
  if (base == 0 && after == 0) return NameChange::Unchanged;
  if (base == 0) return NameChange::Added;
  if (after == 0) return NameChange::Removed;
  const long double b = static_cast<long double>(base) * afterSteps;
  const long double a = static_cast<long double>(after) * baseSteps;
  return a > b ? NameChange::Increased : a < b ? NameChange::Decreased : NameChange::Unchanged;
}

std::vector<NameDiff> namesOf(const Side& base, const Side& after, double noise) {
  const auto key = [](const NameProfile& n) { return std::tie(n.kind, n.name); };
  const std::vector<NameProfile>& b = base.profile->names;
  const std::vector<NameProfile>& a = after.profile->names;
  std::vector<NameDiff> out;
  std::size_t i = 0, j = 0;
  while (i < b.size() || j < a.size()) {
    const NameProfile* inBase = nullptr;
    const NameProfile* inAfter = nullptr;
    if (j == a.size() || (i < b.size() && key(b[i]) < key(a[j]))) {
      inBase = &b[i++];
    } else if (i == b.size() || key(a[j]) < key(b[i])) {
      inAfter = &a[j++];
    } else {
      inBase = &b[i++];
      inAfter = &a[j++];
    }
    const NameProfile& any = inBase != nullptr ? *inBase : *inAfter;
    const NameTotals before = totalsOf(inBase, base);
    const NameTotals now = totalsOf(inAfter, after);
    if (before.count == 0 && now.count == 0) continue;  // ran only outside the steps compared
    NameDiff row;
    row.name = any.name;
    row.kind = any.kind;
    row.opKind = any.opKind;
    row.dataLoading = any.dataLoading;
    row.baseCount = before.count;
    row.afterCount = now.count;
    row.baseNs = before.ns;
    row.afterNs = now.ns;
    row.baseCountPerStep = static_cast<double>(before.count) / static_cast<double>(base.count());
    row.afterCountPerStep = static_cast<double>(now.count) / static_cast<double>(after.count());
    row.change = changeOf(before.count, base.count(), now.count, after.count());
    row.time = figureOf(before.perStep, now.perStep);
    judge(row.time, noise);
    out.push_back(std::move(row));
  }
  std::stable_sort(out.begin(), out.end(), [](const NameDiff& x, const NameDiff& y) {
    if (x.kind != y.kind) return x.kind < y.kind;
    return std::abs(x.time.delta()) > std::abs(y.time.delta());
  });
  return out;
}

SideSteps stepsOf(const Side& side, const std::set<const ProfileStep*>& leftOut) {
  const RunProfile& p = *side.profile;
  SideSteps s;
  s.path = p.path;
  s.steps = p.steps.size();
  for (const ProfileStep* step : leftOut) s.leftOut.push_back({step->name, lengthOf(*step)});
  if (!side.steps.empty()) {
    std::vector<int64_t> lengths;
    for (const ProfileStep* step : side.steps) lengths.push_back(lengthOf(*step));
    std::nth_element(lengths.begin(), lengths.begin() + lengths.size() / 2, lengths.end());
    s.medianStepNs = lengths[lengths.size() / 2];
  }
  for (const ProfileStep* step : side.steps) {
    if (step->number) s.compared.push_back(*step->number);
  }
  s.comparedCount = side.count();
  s.devices = p.report.devices.size();
  s.gpuOps = p.report.gpuOps;
  s.gpuOpsWithoutCall = p.gpuOpsWithoutCall;
  s.windowNs = p.report.host.windowNs;
  return s;
}

// analyze's host-wait gaps that began in a sync, per step over the trace's steps.
std::vector<std::pair<std::string, FigureDiff>> syncWaitsOf(const Side& base, const Side& after,
                                                            double noise) {
  std::map<std::string, FigureDiff> bySync;
  const auto perStep = [](const Side& side, const FoundRow& row) {
    const std::size_t steps = std::max<std::size_t>(1, side.profile->steps.size());
    return static_cast<double>(row.ns) / static_cast<double>(steps) / side.devices;
  };
  for (const FoundRow& row : base.profile->report.hostWaitAfterSync) {
    bySync[row.found].base = perStep(base, row);
  }
  for (const FoundRow& row : after.profile->report.hostWaitAfterSync) {
    bySync[row.found].after = perStep(after, row);
  }
  std::vector<std::pair<std::string, FigureDiff>> out(bySync.begin(), bySync.end());
  for (auto& [sync, figure] : out) judge(figure, noise);
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return std::abs(x.second.delta()) > std::abs(y.second.delta());
  });
  return out;
}

}  // namespace

const char* stepMatchName(StepMatch match) {
  switch (match) {
    case StepMatch::Matched:
      return "matched";
    case StepMatch::Averaged:
      return "averaged";
    case StepMatch::Whole:
      return "whole";
  }
  return "whole";
}

const char* nameChangeName(NameChange change) {
  switch (change) {
    case NameChange::Added:
      return "added";
    case NameChange::Removed:
      return "removed";
    case NameChange::Increased:
      return "increased";
    case NameChange::Decreased:
      return "decreased";
    case NameChange::Unchanged:
      return "unchanged";
  }
  return "unchanged";
}

RankDiff diffRank(const RunProfile& base, const RunProfile& after, const DiffOptions& options) {
  RankDiff r;
  r.rank = base.rank >= 0 ? base.rank : after.rank;
  std::set<int64_t> baseNumbers, common;
  for (const ProfileStep& step : base.steps) {
    if (step.number) baseNumbers.insert(*step.number);
  }
  for (const ProfileStep& step : after.steps) {
    if (step.number && baseNumbers.count(*step.number) > 0) common.insert(*step.number);
  }
  const bool whole = base.steps.empty() || after.steps.empty();
  r.match = whole ? StepMatch::Whole : common.empty() ? StepMatch::Averaged : StepMatch::Matched;
  const std::set<int64_t>* numbers = r.match == StepMatch::Matched ? &common : nullptr;
  // Steps far from the rest of their run are left out; of matched steps, the number on both
  // sides, so the steps compared stay matched.
  std::set<const ProfileStep*> baseFar = outlyingSteps(sideOf(base, whole, numbers));
  std::set<const ProfileStep*> afterFar = outlyingSteps(sideOf(after, whole, numbers));
  if (r.match == StepMatch::Matched && !(baseFar.empty() && afterFar.empty())) {
    std::set<int64_t> farNumbers;
    for (const auto* far : {&baseFar, &afterFar}) {
      for (const ProfileStep* step : *far) farNumbers.insert(*step->number);
    }
    for (int64_t number : farNumbers) common.erase(number);
    baseFar = stepsNumbered(base, farNumbers);
    afterFar = stepsNumbered(after, farNumbers);
  }
  const Side b = sideOf(base, whole, numbers, baseFar);
  const Side a = sideOf(after, whole, numbers, afterFar);
  r.base = stepsOf(b, baseFar);
  r.after = stepsOf(a, afterFar);

  r.stepTime = figureOf(stepTimes(b), stepTimes(a));
  const double noise =
      std::max(options.noiseSpreads * std::max(r.stepTime.baseSpread, r.stepTime.afterSpread),
               options.noiseFloorShare * std::max(0.0, r.stepTime.base));
  judge(r.stepTime, noise);
  for (const PartSpec& spec : kDiffParts) {
    PartDiff part{spec.id, spec.name, spec.field,
                  figureOf(partTimes(b, spec.field), partTimes(a, spec.field))};
    judge(part.time, noise);
    r.parts.push_back(part);
  }
  r.names = namesOf(b, a, noise);
  r.hostWaitAfterSync = syncWaitsOf(b, a, noise);
  return r;
}

DiffReport diffRuns(const std::vector<RunProfile>& base, const std::vector<RunProfile>& after,
                    const DiffOptions& options) {
  DiffReport report;
  for (std::size_t i = 0; i < base.size() && i < after.size(); ++i) {
    report.ranks.push_back(diffRank(base[i], after[i], options));
  }
  report.findings = diffFindingsOf(report, options);
  return report;
}

}  // namespace kinetrace::detail
