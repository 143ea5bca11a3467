#include "analysis/passes/time_pass.h"

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

namespace kinetrace::detail::passes {
namespace {

// Stream Wait Events a stream keeps until the launch after them, at most: few (a wait
// precedes a launch).
constexpr std::size_t kMaxWaits = 16;
// Synchronisations that may still meet a gap, at most: those running at one time.
constexpr std::size_t kMaxOpenSyncs = 64;

struct StreamState {
  StreamBreakdown report;
  bool open = false;  // a busy interval being merged
  int64_t busyStart = 0;
  int64_t busyEnd = 0;
};

// A device's state during its sweep: the operations running (their ends, by kind), where
// time has got to, and the busy interval being merged.
struct DeviceState {
  explicit DeviceState(ReadBudget& budget)
      : streams(std::less<int64_t>(), BudgetAllocator<char>(budget, kStreams)),
        waits(std::less<int64_t>(), BudgetAllocator<char>(budget, kStreams)) {}
  DeviceReport report;
  std::priority_queue<std::pair<int64_t, GpuOpKind>, std::vector<std::pair<int64_t, GpuOpKind>>,
                      std::greater<>>
      running;
  std::array<int, 3> counts{};
  int active = 0;
  int64_t at = 0;
  int64_t busyStart = 0;
  BudgetMap<int64_t, StreamState> streams;
  bool sawOp = false;  // an operation that takes time has started
  // Of the operations started so far, the launch call that ended last.
  bool lastCall = false;
  int64_t lastCallStart = 0;
  int64_t lastCallEnd = 0;
  int64_t lastCallTid = 0;
  uint32_t lastCallOf = 0;
  std::vector<CollectedSync> openSyncs;  // begun, and not ended before `at`: kMaxOpenSyncs
  // By stream, the Stream Wait Events not yet matched to the launch after them, by time:
  // kMaxWaits each.
  BudgetMap<int64_t, std::vector<CollectedSync>> waits;
  // The steps that [from, to) may still meet: those begun (by start, up to nextStep) and
  // not ended before `from`, which never goes back within a device. A segment visits
  // only these, so a long step overlapping thousands of short ones costs a visit each,
  // not a scan of every short step begun since it started.
  std::size_t nextStep = 0;
  std::vector<std::size_t> openSteps;
};

// The sweep of every device, one after the other: the operations by device and start, the
// trace's synchronisations by device and start beside them.
class Sweep {
 public:
  Sweep(const PassContext& context, const Intervals& dataLoading, GapTable& gaps,
        const std::vector<StepReport>& steps)
      : trace_(context.trace),
        options_(context.options),
        budget_(context.budget()),
        reportHold_(*context.reportHold),
        dataLoading_(dataLoading),
        gaps_(gaps),
        stepTimes_(steps.size()) {
    stepBounds_.reserve(steps.size());
    for (const StepReport& step : steps) stepBounds_.emplace_back(step.startNs, step.endNs);
  }

  void run(ExternalSorter<JoinedOp, ByDeviceThenStart>& byDevice, RankReport& report) {
    std::optional<DeviceState> device;
    byDevice.sort();
    report.syncRecords = trace_.syncs.size();
    trace_.syncs.sort();
    for (; !byDevice.done(); byDevice.pop()) {
      const JoinedOp& op = byDevice.front();
      if (!device || device->report.device != op.device) {
        if (device) endDevice(*device, report);
        device.emplace(budget_);
        beginDevice(*device, op.device);
      }
      addOp(*device, op);
    }
    if (device) endDevice(*device, report);
    while (!trace_.syncs.done()) trace_.syncs.pop();
  }

  // Summed over the devices, each step's window is its length on every device.
  void finishSteps(std::vector<StepReport>& steps, std::size_t devices) {
    for (std::size_t i = 0; i < steps.size(); ++i) {
      TimeBreakdown& t = stepTimes_[i];
      t.windowNs = (steps[i].endNs - steps[i].startNs) * static_cast<int64_t>(devices);
      finishTimes(t);
      steps[i].time = t;
    }
  }

 private:
  // A device's report (its timeline's bins) is kept with the report: a trace that names
  // more devices than the budget holds is an error naming them.
  void beginDevice(DeviceState& s, int64_t device) {
    reportHold_.take(sizeof(DeviceReport) + DeviceReport::kTimelineBins * sizeof(double) +
                         2 * kAllocationOverheadBytes,
                     "devices");
    s.report.device = device;
    s.at = trace_.firstNs;
    const int64_t window = trace_.lastNs - trace_.firstNs;
    if (window > 0) {
      const int bins = DeviceReport::kTimelineBins;
      s.report.timelineStartNs = trace_.firstNs;
      s.report.timelineBinNs = std::max<int64_t>(1, (window + bins - 1) / bins);
      s.report.busyTimeline.assign(bins, 0.0);
    }
  }

  void addOp(DeviceState& s, const JoinedOp& op) {
    StreamState& stream = s.streams[op.stream];
    ++stream.report.operations;
    takeSyncs(s, op.startNs);
    // The Stream Wait Events issued on its stream before its launch (and after the
    // previous launch's, which took those before it): what it was made to wait on.
    Found waitedOn;
    if (op.hasCall) {
      auto& waits = s.waits[op.stream];
      auto upTo = std::find_if(waits.begin(), waits.end(),
                               [&](const CollectedSync& w) { return w.startNs > op.callStartNs; });
      if (upTo != waits.begin()) waitedOn = foundOf(*(upTo - 1));
      waits.erase(waits.begin(), upTo);
    }
    if (op.endNs <= op.startNs) {  // takes no time: neither busy nor ending a gap
      noteCall(s, op);
      return;
    }
    if (stream.open && op.startNs <= stream.busyEnd) {
      stream.busyEnd = std::max(stream.busyEnd, op.endNs);
    } else {
      if (stream.open) stream.report.busyNs += stream.busyEnd - stream.busyStart;
      stream.open = true;
      stream.busyStart = op.startNs;
      stream.busyEnd = op.endNs;
    }

    advance(s, op.startNs);
    if (s.active == 0) {
      if (op.startNs > s.at) {
        Gap gap;
        gap.start = s.at;
        gap.end = op.startNs;
        gap.endedByOp = true;
        gap.endedBy = op.name;
        gap.first = !s.sawOp;
        gap.hasCall = op.hasCall;
        gap.callStartNs = op.callStartNs;
        gap.callEndNs = op.callEndNs;
        gap.callTid = op.callTid;
        gap.found = waitedOn;
        gap.cause = causeOf(gap, options_.consecutiveKernelNs);
        if (gap.cause == Cause::HostWait) {
          gap.hostSync = hostSyncAt(s, gap.start, gap.end);
          if (s.lastCall && s.lastCallTid == op.callTid && s.lastCallEnd > gap.start) {
            gap.inCallStart = s.lastCallStart;
            gap.inCallUntil = s.lastCallEnd;
            gap.inCallOf = s.lastCallOf;
          }
        }
        idle(s, gap);
      }
      s.busyStart = op.startNs;
    } else if (op.startNs > s.at) {
      busy(s, s.at, op.startNs);
    }
    s.at = std::max(s.at, op.startNs);
    s.sawOp = true;
    s.running.emplace(op.endNs, op.kind);
    ++s.counts[static_cast<std::size_t>(op.kind)];
    ++s.active;
    noteCall(s, op);
  }

  static void noteCall(DeviceState& s, const JoinedOp& op) {
    if (!op.hasCall || (s.lastCall && op.callEndNs <= s.lastCallEnd)) return;
    s.lastCall = true;
    s.lastCallStart = op.callStartNs;
    s.lastCallEnd = op.callEndNs;
    s.lastCallTid = op.callTid;
    s.lastCallOf = op.name;
  }

  // Ends the operations that end by `until`, in order, and the busy time up to each end.
  void advance(DeviceState& s, int64_t until) {
    while (!s.running.empty() && s.running.top().first <= until) {
      const auto [end, kind] = s.running.top();
      s.running.pop();
      if (end > s.at) {
        busy(s, s.at, end);
        s.at = end;
      }
      --s.counts[static_cast<std::size_t>(kind)];
      if (--s.active == 0) busyInterval(s, s.busyStart, end);
    }
  }

  // Reads the device's synchronisations that begin before `until`: Stream Wait Events
  // wait on their stream for the next launch; every one may meet a gap while it runs.
  void takeSyncs(DeviceState& s, int64_t until) {
    auto& syncs = trace_.syncs;
    while (!syncs.done() && syncs.front().device < s.report.device) syncs.pop();
    for (;
         !syncs.done() && syncs.front().device == s.report.device && syncs.front().startNs < until;
         syncs.pop()) {
      const CollectedSync& sync = syncs.front();
      if (sync.kind == SyncKind::StreamWaitEvent && sync.stream >= 0) {
        auto& waits = s.waits[sync.stream];
        if (waits.size() == kMaxWaits) waits.erase(waits.begin());
        waits.push_back(sync);
      }
      if (s.openSyncs.size() == kMaxOpenSyncs) {
        s.openSyncs.erase(std::min_element(
            s.openSyncs.begin(), s.openSyncs.end(),
            [](const CollectedSync& a, const CollectedSync& b) { return a.endNs < b.endNs; }));
      }
      s.openSyncs.push_back(sync);
    }
    // Those over before where the sweep has got to meet no later gap (a sync of no
    // length counts as one nanosecond, so one at a gap's start is in it).
    s.openSyncs.erase(std::remove_if(s.openSyncs.begin(), s.openSyncs.end(),
                                     [&](const CollectedSync& sync) {
                                       return std::max(sync.endNs, sync.startNs + 1) <= s.at;
                                     }),
                      s.openSyncs.end());
  }

  // The host's sync on the device that was running when the gap [from, to) opened and
  // ended within it: the host waited for the GPU to drain, and launched again only after.
  static Found hostSyncAt(const DeviceState& s, int64_t from, int64_t to) {
    const CollectedSync* first = nullptr;
    for (const CollectedSync& sync : s.openSyncs) {
      if (sync.kind == SyncKind::StreamWaitEvent || sync.kind == SyncKind::Other) continue;
      if (sync.startNs > from || sync.endNs < from || sync.endNs > to) continue;
      if (first == nullptr || sync.endNs < first->endNs) first = &sync;
    }
    return first != nullptr ? foundOf(*first) : Found{};
  }

  void endDevice(DeviceState& s, RankReport& report) {
    advance(s, INT64_MAX);
    if (s.at < trace_.lastNs) {
      Gap gap;
      gap.start = s.at;
      gap.end = trace_.lastNs;
      gap.cause = causeOf(gap, options_.consecutiveKernelNs);
      idle(s, gap);
    }
    // Each stream's row stays in the report.
    reportHold_.take(s.streams.size() * (sizeof(StreamBreakdown) * 2), kStreams);
    for (auto& [id, stream] : s.streams) {
      if (stream.open) stream.report.busyNs += stream.busyEnd - stream.busyStart;
      stream.report.device = s.report.device;
      stream.report.stream = id;
      s.report.streams.push_back(stream.report);
    }
    s.report.time.windowNs = std::max<int64_t>(0, trace_.lastNs - trace_.firstNs);
    finishTimes(s.report.time);
    addTimes(report.time, s.report.time);
    report.devices.push_back(std::move(s.report));
  }

  // [from, to) with at least one operation running: for the whole trace and each step.
  void busy(DeviceState& s, int64_t from, int64_t to) {
    const bool compute = s.counts[static_cast<std::size_t>(GpuOpKind::Compute)] > 0;
    const bool communication = s.counts[static_cast<std::size_t>(GpuOpKind::Communication)] > 0;
    if (compute && communication) s.report.communicationOverlapNs += to - from;
    auto addTo = [&](TimeBreakdown& t, int64_t a, int64_t b) {
      t.busyNs += b - a;
      if (compute) {
        t.computeNs += b - a;
      } else if (communication) {
        t.communicationNs += b - a;
      }
    };
    if (trace_.lastNs > trace_.firstNs) addTo(s.report.time, from, to);
    forStepsIn(s, from, to, addTo);
  }

  // An idle stretch: for the whole trace and each step; the gap tables get the trace's.
  void idle(DeviceState& s, const Gap& gap) {
    auto addTo = [&](TimeBreakdown& t, int64_t a, int64_t b) {
      addIdle(t, gap, a, b, dataLoading_);
    };
    if (trace_.lastNs > trace_.firstNs) {
      addTo(s.report.time, gap.start, gap.end);
      gaps_.add(s.report.device, gap);
    }
    forStepsIn(s, gap.start, gap.end, addTo);
  }

  // Calls addTo(step's time, from, to) clipped to each step that [from, to) meets; `from`
  // never goes back within a device.
  template <typename AddTo>
  void forStepsIn(DeviceState& s, int64_t from, int64_t to, AddTo&& addTo) {
    for (; s.nextStep < stepBounds_.size() && stepBounds_[s.nextStep].first < to; ++s.nextStep) {
      s.openSteps.push_back(s.nextStep);
    }
    for (std::size_t k = 0; k < s.openSteps.size();) {
      const std::size_t i = s.openSteps[k];
      const auto [start, end] = stepBounds_[i];
      if (end <= from) {  // over for the rest of this device
        s.openSteps[k] = s.openSteps.back();
        s.openSteps.pop_back();
        continue;
      }
      const int64_t a = std::max(from, start);
      const int64_t b = std::min(to, end);
      if (b > a) addTo(stepTimes_[i], a, b);
      ++k;
    }
  }

  // A merged busy interval: the timeline's bins.
  void busyInterval(DeviceState& s, int64_t from, int64_t to) const {
    DeviceReport& device = s.report;
    if (device.busyTimeline.empty()) return;
    const int bins = DeviceReport::kTimelineBins;
    const double binNs = static_cast<double>(device.timelineBinNs);
    for (int64_t at = from; at < to;) {
      const int64_t bin = (at - trace_.firstNs) / device.timelineBinNs;
      if (bin >= bins) break;
      const int64_t binEnd = trace_.firstNs + (bin + 1) * device.timelineBinNs;
      const int64_t until = std::min(to, binEnd);
      device.busyTimeline[static_cast<std::size_t>(bin)] += static_cast<double>(until - at) / binNs;
      at = until;
    }
  }

  CollectedTrace& trace_;
  const AnalysisOptions& options_;
  ReadBudget& budget_;
  BudgetHold& reportHold_;
  const Intervals& dataLoading_;
  GapTable& gaps_;
  Intervals stepBounds_;                  // the steps', in their order
  std::vector<TimeBreakdown> stepTimes_;  // summed over the devices
};

}  // namespace

TimePass::TimePass(const PassContext& context)
    : context_(context),
      byDevice_(context.budget(), kAnalysisLists, context.trace.listBytes),
      gaps_(context) {
  context.working.take(context.trace.dataLoading.size() * sizeof(Interval) * 2,
                       "data-loading ranges");
  Intervals loading;
  for (const CollectedRange& r : context.trace.dataLoading)
    loading.emplace_back(r.startNs, r.endNs);
  dataLoading_ = unionOf(std::move(loading));
}

void TimePass::finish(RankReport& report) {
  Sweep sweep(context_, dataLoading_, gaps_, report.steps);
  sweep.run(byDevice_, report);
  sweep.finishSteps(report.steps, report.devices.size());
  gaps_.finish(report, report.devices.size() > 1);
}

}  // namespace kinetrace::detail::passes
