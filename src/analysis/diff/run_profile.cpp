#include "analysis/diff/run_profile.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include "analysis/passes/pass_context.h"
#include "output/trace_vocabulary.h"

namespace kinetrace::detail {
namespace {

constexpr const char* kNameTable = "the names of kernels, operators and annotations by step";

// Steps that overlap (one nested in another) are looked through this far back for the one
// a moment falls in: a trace's steps follow one another, and a hostile one's overlaps cost
// no more than this a lookup.
constexpr std::size_t kOverlappingStepsSearched = 4;

bool isProfilerStep(std::string_view name) {
  return name.rfind(chrome::kProfilerStepPrefix, 0) == 0;
}

// The steps a run is compared by: its ProfilerStep#N ranges, else its other step ranges; each
// name once, the longest range of it (as analyze's steps pass keeps them); by start.
std::vector<CollectedRange> chosenSteps(const CollectedTrace& trace) {
  const bool profilerSteps = std::any_of(
      trace.steps.begin(), trace.steps.end(),
      [&trace](const CollectedRange& step) { return isProfilerStep(trace.name(step.name)); });
  std::map<uint32_t, CollectedRange> byName;
  for (const CollectedRange& step : trace.steps) {
    if (profilerSteps && !isProfilerStep(trace.name(step.name))) continue;
    auto [it, added] = byName.emplace(step.name, step);
    if (!added && step.endNs - step.startNs > it->second.endNs - it->second.startNs) {
      it->second = step;
    }
  }
  std::vector<CollectedRange> steps;
  steps.reserve(byName.size());
  for (const auto& [name, step] : byName) steps.push_back(step);
  std::sort(steps.begin(), steps.end(), [&trace](const CollectedRange& a, const CollectedRange& b) {
    if (a.startNs != b.startNs) return a.startNs < b.startNs;
    if (a.endNs != b.endNs) return a.endNs > b.endNs;
    return trace.name(a.name) < trace.name(b.name);
  });
  return steps;
}

// The step a moment falls in, [start, end), or kOutsideSteps.
class StepFinder {
 public:
  explicit StepFinder(const std::vector<CollectedRange>& steps) : steps_(steps) {}

  uint32_t stepAt(int64_t ns) const {
    auto after = std::upper_bound(steps_.begin(), steps_.end(), ns,
                                  [](int64_t t, const CollectedRange& s) { return t < s.startNs; });
    for (std::size_t looked = 0; after != steps_.begin() && looked < kOverlappingStepsSearched;
         ++looked) {
      --after;
      if (ns < after->endNs) return static_cast<uint32_t>(after - steps_.begin());
    }
    return kOutsideSteps;
  }

 private:
  const std::vector<CollectedRange>& steps_;
};

struct SlotKey {
  uint32_t name = 0;
  uint32_t slot = 0;
  NameKind kind = NameKind::Kernel;
  bool operator==(const SlotKey& other) const {
    return name == other.name && slot == other.slot && kind == other.kind;
  }
};
struct SlotKeyHash {
  std::size_t operator()(const SlotKey& key) const {
    const uint64_t packed =
        (uint64_t{key.name} << 32) ^ key.slot ^ (uint64_t{static_cast<uint8_t>(key.kind)} << 62);
    return std::hash<uint64_t>()(packed);
  }
};
struct Tally {
  NameFigures figures;
  GpuOpKind opKind = GpuOpKind::Compute;
};
using Tallies = BudgetUnorderedMap<SlotKey, Tally, SlotKeyHash>;

void addTo(Tallies& tallies, NameKind kind, uint32_t name, uint32_t slot, int64_t ns,
           GpuOpKind opKind = GpuOpKind::Compute) {
  Tally& tally = tallies[SlotKey{name, slot, kind}];
  ++tally.figures.count;
  tally.figures.ns += ns;
  tally.opKind = opKind;
}

// Operators and annotations, by the step their start falls in. Host ranges are read without
// being consumed (the analysis reads them again).
void tallyHostRanges(const CollectedTrace& trace, const StepFinder& steps, Tallies& tallies) {
  std::unordered_set<uint32_t> stepNames;
  for (const CollectedRange& step : trace.steps) stepNames.insert(step.name);
  trace.hostRanges.forEach([&](const CollectedRange& range) {
    if (range.category == HostRangeCategory::Other || stepNames.count(range.name) > 0) return;
    const NameKind kind =
        range.category == HostRangeCategory::CpuOp ? NameKind::Op : NameKind::Annotation;
    addTo(tallies, kind, range.name, steps.stepAt(range.startNs), range.endNs - range.startNs);
  });
}

// Runtime and driver calls (the launches, the syncs: cudaStreamSynchronize), by the step
// their start falls in. The list is consumed in reading it, and written again as it was, for
// the operations' join below.
void tallyCalls(CollectedTrace& trace, const StepFinder& steps, Tallies& tallies) {
  ExternalSorter<CollectedCall, ByCorrelation> calls(*trace.budget, "the list of launch calls",
                                                     trace.listBytes);
  trace.calls.drain([&](const CollectedCall& call) {
    calls.add(call);
    addTo(tallies, NameKind::Call, call.name, steps.stepAt(call.startNs),
          call.endNs - call.startNs);
  });
  trace.calls = std::move(calls);
}

// GPU operations, by the step their launch call started in. Reading them joined to their
// calls consumes both lists, so each is written again, as it was, for the analysis to read:
// the operations in their order, and each call that an operation joined (the analysis reads
// calls only through that join).
uint64_t tallyOperations(CollectedTrace& trace, const StepFinder& steps, Tallies& tallies) {
  ExternalSorter<CollectedGpuOp, ByCorrelation> ops(*trace.budget, "the list of GPU operations",
                                                    trace.listBytes);
  ExternalSorter<CollectedCall, ByCorrelation> calls(*trace.budget, "the list of launch calls",
                                                     trace.listBytes);
  uint64_t withoutCall = 0;
  std::optional<uint64_t> lastCall;
  passes::joinOperations(trace, [&](const passes::JoinedOp& op) {
    ops.add(op);
    if (op.hasCall && lastCall != op.correlationId) {
      calls.add(CollectedCall{op.correlationId, op.callStartNs, op.callEndNs, op.callTid});
      lastCall = op.correlationId;
    }
    if (!op.hasCall) ++withoutCall;
    const uint32_t slot = op.hasCall ? steps.stepAt(op.callStartNs) : kOutsideSteps;
    addTo(tallies, NameKind::Kernel, op.name, slot, op.endNs - op.startNs, op.kind);
  });
  trace.gpuOps = std::move(ops);
  trace.calls = std::move(calls);
  return withoutCall;
}

// The tallies as one row per name, by kind then name, each with its slots in order.
std::vector<NameProfile> namesOf(const CollectedTrace& trace, const Tallies& tallies,
                                 BudgetHold& held) {
  std::unordered_set<uint32_t> dataLoading;
  for (const CollectedRange& range : trace.dataLoading) dataLoading.insert(range.name);
  BudgetHold sorting(held.budget());
  sorting.take(tallies.size() *
                   (sizeof(std::pair<SlotKey, Tally>) + sizeof(std::pair<uint32_t, NameFigures>)),
               kNameTable);
  std::vector<std::pair<SlotKey, Tally>> sorted(tallies.begin(), tallies.end());
  std::sort(sorted.begin(), sorted.end(), [&trace](const auto& a, const auto& b) {
    if (a.first.kind != b.first.kind) return a.first.kind < b.first.kind;
    if (a.first.name != b.first.name) {
      return trace.name(a.first.name) < trace.name(b.first.name);
    }
    return a.first.slot < b.first.slot;
  });
  std::vector<NameProfile> names;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const SlotKey& key = sorted[i].first;
    if (i == 0 || key.kind != sorted[i - 1].first.kind || key.name != sorted[i - 1].first.name) {
      const std::string_view name = trace.name(key.name);
      held.take(sizeof(NameProfile) + name.size() + kAllocationOverheadBytes, kNameTable);
      NameProfile row;
      row.name = std::string(name);
      row.kind = key.kind;
      row.opKind = sorted[i].second.opKind;
      row.dataLoading = dataLoading.count(key.name) > 0;
      names.push_back(std::move(row));
    }
    held.take(sizeof(std::pair<uint32_t, NameFigures>), kNameTable);
    names.back().slots.emplace_back(key.slot, sorted[i].second.figures);
  }
  return names;
}

}  // namespace

const char* nameKindName(NameKind kind) {
  switch (kind) {
    case NameKind::Kernel:
      return "kernel";
    case NameKind::Op:
      return "op";
    case NameKind::Annotation:
      return "annotation";
    case NameKind::Call:
      return "call";
  }
  return "kernel";
}

std::optional<int64_t> stepNumberOf(std::string_view name) {
  const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  const auto first = std::find_if(name.begin(), name.end(), digit);
  if (first == name.end()) return std::nullopt;
  int64_t number = 0;
  for (auto at = first; at != name.end() && digit(*at); ++at) {
    if (__builtin_mul_overflow(number, 10, &number) ||
        __builtin_add_overflow(number, *at - '0', &number)) {
      return std::nullopt;
    }
  }
  return number;
}

RunProfile profileRank(CollectedTrace trace, const AnalysisOptions& options) {
  RunProfile profile;
  profile.path = trace.path;
  profile.rank = trace.rank;
  profile.held = std::make_shared<BudgetHold>(*trace.budget);
  // The chosen steps while the names are read, then what the profile keeps of each.
  BudgetHold stepsHeld(*trace.budget);
  stepsHeld.take(trace.steps.size() * 2 * (sizeof(CollectedRange) + kAllocationOverheadBytes),
                 kNameTable);
  const std::vector<CollectedRange> steps = chosenSteps(trace);
  {
    Tallies tallies(0, SlotKeyHash(), std::equal_to<SlotKey>(),
                    BudgetAllocator<std::pair<const SlotKey, Tally>>(*trace.budget, kNameTable));
    const StepFinder finder(steps);
    tallyHostRanges(trace, finder, tallies);
    tallyCalls(trace, finder, tallies);
    profile.gpuOpsWithoutCall = tallyOperations(trace, finder, tallies);
    profile.names = namesOf(trace, tallies, *profile.held);
  }
  profile.held->take(steps.size() * (sizeof(ProfileStep) + kAllocationOverheadBytes), kNameTable);
  for (const CollectedRange& step : steps) {
    ProfileStep s;
    s.name = std::string(trace.name(step.name));
    s.number = stepNumberOf(s.name);
    s.startNs = step.startNs;
    s.endNs = step.endNs;
    profile.steps.push_back(std::move(s));
  }
  profile.report = analyzeTrace(std::move(trace), options);
  // analyze keeps each step name once, as the steps above: its figures join them by name.
  std::map<std::string_view, const StepReport*> byName;
  for (const StepReport& step : profile.report.steps) byName.emplace(step.name, &step);
  for (ProfileStep& step : profile.steps) {
    const auto found = byName.find(step.name);
    if (found != byName.end()) step.time = found->second->time;
  }
  return profile;
}

}  // namespace kinetrace::detail
