#include "analysis/trace_analysis.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace kinetrace::detail {
namespace {

using Interval = std::pair<int64_t, int64_t>;  // [start, end)
using Intervals = std::vector<Interval>;

// Sorted, non-overlapping, non-empty.
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

// How much of [from, to) the (sorted, merged) items cover: found by binary search, so a
// gap costs the intervals it meets only.
int64_t overlapWith(const Intervals& items, int64_t from, int64_t to) {
  int64_t total = 0;
  auto first = std::lower_bound(items.begin(), items.end(), from,
                                [](const Interval& item, int64_t t) { return item.second <= t; });
  for (auto it = first; it != items.end() && it->first < to; ++it) {
    total += std::max<int64_t>(0, std::min(it->second, to) - std::max(it->first, from));
  }
  return total;
}

// The q-quantile's place among `count` sorted values.
uint64_t quantileIndex(uint64_t count, double q) {
  const auto index = static_cast<uint64_t>(q * static_cast<double>(count - 1) + 0.5);
  return std::min(index, count - 1);
}

// A distribution from its values, read once in ascending order; `count` of them.
class DistributionBuilder {
 public:
  explicit DistributionBuilder(uint64_t count) {
    d_.count = count;
    if (count == 0) return;
    p50_ = quantileIndex(count, 0.5);
    p90_ = quantileIndex(count, 0.9);
    p99_ = quantileIndex(count, 0.99);
  }
  void add(int64_t value) {
    d_.totalNs += value;
    if (seen_ == p50_) d_.p50Ns = value;
    if (seen_ == p90_) d_.p90Ns = value;
    if (seen_ == p99_) d_.p99Ns = value;
    d_.maxNs = value;
    ++seen_;
  }
  Distribution finish() {
    if (d_.count > 0) d_.meanNs = d_.totalNs / static_cast<int64_t>(d_.count);
    return d_;
  }

 private:
  Distribution d_;
  uint64_t seen_ = 0;
  uint64_t p50_ = 0, p90_ = 0, p99_ = 0;
};

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

void add(TimeBreakdown& to, const TimeBreakdown& from) {
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

// A GPU operation joined to its launch call.
struct JoinedOp : CollectedGpuOp {
  int64_t callStartNs = 0;
  int64_t callEndNs = 0;
  int64_t callTid = 0;
  bool hasCall = false;
};

struct ByDeviceThenStart {
  bool operator()(const JoinedOp& a, const JoinedOp& b) const {
    return std::tie(a.device, a.startNs, a.sequence) < std::tie(b.device, b.startNs, b.sequence);
  }
};

// An operation's duration under a key: its name's id, or kKindKey + its kind.
struct KeyedDuration {
  uint32_t key = 0;
  int64_t ns = 0;
};
constexpr uint32_t kKindKey = ~uint32_t{0} - 3;
struct ByKeyThenDuration {
  bool operator()(const KeyedDuration& a, const KeyedDuration& b) const {
    return a.key != b.key ? a.key < b.key : a.ns < b.ns;
  }
};

// A stream's queue: +1 at a launch call's start, -1 at its operation's start.
struct QueueChange {
  int64_t device = 0;
  int64_t stream = 0;
  int64_t timeNs = 0;
  int32_t delta = 0;
};
struct ByStreamThenTime {
  bool operator()(const QueueChange& a, const QueueChange& b) const {
    // At equal times, starts (-1) first.
    return std::tie(a.device, a.stream, a.timeNs, a.delta) <
           std::tie(b.device, b.stream, b.timeNs, b.delta);
  }
};

enum class Cause { BeforeFirstOp, HostWait, Launch, KernelWait, OtherWork, Other };

// A kernel's name for a sentence: a C++ signature up to its arguments, at most 60 letters.
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

const char* causeName(Cause cause) {
  switch (cause) {
    case Cause::BeforeFirstOp:
      return "before the first GPU operation";
    case Cause::HostWait:
      return "host wait";
    case Cause::Launch:
      return "launch";
    case Cause::KernelWait:
      return "kernel wait";
    case Cause::OtherWork:
      return "waiting on other work";
    case Cause::Other:
      return "other";
  }
  return "other";
}

// What a queued operation was found waiting on: a synchronisation record.
struct Found {
  bool any = false;
  SyncKind kind = SyncKind::Other;
  int64_t device = 0;
  int64_t stream = -1;
  int64_t waitOnStream = -1;
  bool operator<(const Found& o) const {
    return std::tie(any, kind, device, stream, waitOnStream) <
           std::tie(o.any, o.kind, o.device, o.stream, o.waitOnStream);
  }
};

// "Stream Wait Event on stream 7 (for stream 12's work)", "Context Sync on GPU 1".
std::string describe(const Found& found, bool severalDevices) {
  const char* kind = found.kind == SyncKind::StreamWaitEvent ? "Stream Wait Event"
                     : found.kind == SyncKind::EventSync     ? "Event Sync"
                     : found.kind == SyncKind::StreamSync    ? "Stream Sync"
                     : found.kind == SyncKind::ContextSync   ? "Context Sync"
                                                             : "a synchronisation";
  std::string text = kind;
  const std::string gpu = severalDevices ? "GPU " + std::to_string(found.device) + " " : "";
  if (found.stream >= 0) {
    text += " on " + gpu + "stream " + std::to_string(found.stream);
  } else if (severalDevices) {
    text += " on GPU " + std::to_string(found.device);
  }
  if (found.waitOnStream >= 0) {
    text += " (for stream " + std::to_string(found.waitOnStream) + "'s work)";
  }
  return text;
}

// A stretch of a device's idle time, and the operation that ended it (none: the stretch
// after the last one).
struct Gap {
  int64_t start = 0;
  int64_t end = 0;
  bool endedByOp = false;
  bool first = false;    // before the device's first operation
  uint32_t endedBy = 0;  // its name
  bool hasCall = false;  // whether that operation's launch call is known
  int64_t callStartNs = 0;
  int64_t callEndNs = 0;
  int64_t callTid = 0;
  Found found;     // what a queued operation was found waiting on
  Found hostSync;  // for host wait: the sync the host was in when the gap opened
  // For host wait: the launch call (of an operation that already ran) the launching thread
  // was still in when the gap opened; inCallUntil 0: none.
  int64_t inCallStart = 0;
  int64_t inCallUntil = 0;
  uint32_t inCallOf = 0;
  Cause cause = Cause::Other;
};

// The longest gaps of the trace, with why.
struct KeptGap {
  int64_t device = 0;
  Gap gap;
  Cause cause = Cause::Other;
};

struct StreamState {
  StreamBreakdown report;
  bool open = false;  // a busy interval being merged
  int64_t busyStart = 0;
  int64_t busyEnd = 0;
};
// Stream Wait Events a stream keeps until the launch after them, at most: few (a wait
// precedes a launch).
constexpr std::size_t kMaxWaits = 16;
// Synchronisations that may still meet a gap, at most: those running at one time.
constexpr std::size_t kMaxOpenSyncs = 64;

// An operation's External id, to join to the host range that issued it.
struct IssuedBy {
  uint64_t externalId = 0;
  bool tiny = false;
};
struct ByIssuer {
  bool operator()(const IssuedBy& a, const IssuedBy& b) const {
    return a.externalId != b.externalId ? a.externalId < b.externalId : a.tiny < b.tiny;
  }
};

struct FoundTally {
  uint64_t gaps = 0;
  int64_t ns = 0;
};

// What the kernel table needs of each name, and of each kind.
struct Tally {
  uint64_t count = 0;
  GpuOpKind kind = GpuOpKind::Compute;  // the last operation's of that name
  uint64_t kindSequence = 0;
};

// One rank's trace, analysed in a few passes over its lists of records (spill.h), each read
// in the order it needs: operations by correlation id, joined to their launch calls; then
// by device and start, swept once per device for busy and idle time; durations by name;
// queue changes by stream and time. Memory holds a share of the budget per list, whatever
// the trace's length.
class Analyzer {
 public:
  Analyzer(CollectedTrace& trace, const AnalysisOptions& options)
      : trace_(trace),
        options_(options),
        budget_(*trace.budget),
        working_(budget_),
        reportHold_(std::make_shared<BudgetHold>(budget_)),
        byDevice_(budget_, kLists, trace.listBytes),
        durations_(budget_, kLists, trace.listBytes),
        latencies_(budget_, kLists, trace.listBytes),
        queueChanges_(budget_, kLists, trace.listBytes),
        issuedBy_(budget_, kLists, trace.listBytes),
        collectiveStarts_(budget_, kLists, trace.listBytes),
        names_(0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
               BudgetAllocator<char>(budget_, "distinct names")),
        issuers_(0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
                 BudgetAllocator<char>(budget_, "distinct names")),
        otherWork_(std::less<Found>(), BudgetAllocator<char>(budget_, kStreams)),
        hostSyncs_(std::less<Found>(), BudgetAllocator<char>(budget_, kStreams)) {
    working_.take(trace.dataLoading.size() * sizeof(Interval) * 2, "data-loading ranges");
    Intervals loading;
    for (const CollectedRange& r : trace.dataLoading) loading.emplace_back(r.startNs, r.endNs);
    dataLoading_ = unionOf(std::move(loading));
  }

  RankAnalysis run() {
    RankAnalysis out;
    RankReport& report = out.report;
    report.held = reportHold_;
    report.path = trace_.path;
    report.rank = trace_.rank;
    report.events = trace_.events;
    report.tiny.thresholdNs = options_.tinyKernelNs;
    report.launchLatencyHistogram.assign(RankReport::kLatencyBuckets, 0);
    report.steps = steps();
    stepTimes_.assign(report.steps.size(), TimeBreakdown{});

    join(report);
    sweepDevices(report);
    severalDevices_ = report.devices.size() > 1;
    report.otherWork = foundRows(otherWork_);
    report.hostWaitAfterSync = foundRows(hostSyncs_);
    for (std::size_t i = 0; i < report.steps.size(); ++i) {
      StepReport& step = report.steps[i];
      TimeBreakdown& t = stepTimes_[i];
      t.windowNs = (step.endNs - step.startNs) * static_cast<int64_t>(report.devices.size());
      finish(t);
      step.time = t;
    }
    kernels(report);
    analyzeGpuBounds(trace_, report);
    launchLatency(report);
    queueDepths(report);
    tinyKernelIssuers(report);
    report.gaps = longestGaps();
    report.memory = memory(report.steps, &report.memoryCurve);
    report.ncclCalls = ncclCalls();
    out.collectives = collectives();
    return out;
  }

 private:
  // ---- pass 1: operations joined to their launch calls ----------------------------------

  void join(RankReport& report) {
    ExternalSorter<CollectedGpuOp, ByCorrelation>& ops = trace_.gpuOps;
    ExternalSorter<CollectedCall, ByCorrelation>& calls = trace_.calls;
    ops.sort();
    calls.sort();
    for (; !ops.done(); ops.pop()) {
      const CollectedGpuOp& op = ops.front();
      JoinedOp j;
      static_cast<CollectedGpuOp&>(j) = op;
      if (op.correlationId != 0) {
        while (!calls.done() && calls.front().correlationId < op.correlationId) calls.pop();
        // Of calls with one id (never, in practice), the first sorted is taken.
        if (!calls.done() && calls.front().correlationId == op.correlationId) {
          const CollectedCall& call = calls.front();
          j.hasCall = true;
          j.callStartNs = call.startNs;
          j.callEndNs = call.endNs;
          j.callTid = call.tid;
        }
      }
      consume(j, report);
    }
    while (!calls.done()) calls.pop();  // lets the calls' memory and file go
  }

  // What each operation adds, in any order.
  void consume(const JoinedOp& op, RankReport& report) {
    byDevice_.add(op);
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
    ++report.gpuOps;
    if (op.kind != GpuOpKind::Memory) {
      ++report.kernelCount;
      report.kernelNs += duration;
    }
    if (op.kind == GpuOpKind::Communication) {
      ++report.communicationKernels;
      collectiveStarts_.add({op.startNs, op.sequence, op.name});
    }

    const bool isTiny = op.kind != GpuOpKind::Memory && duration < options_.tinyKernelNs;
    if (op.externalId != 0) {
      issuedBy_.add({op.externalId, isTiny});
    } else if (isTiny) {
      ++issuers_[kNoRange];
    }
    if (isTiny) {
      TinyKernelReport& tiny = report.tiny;
      ++tiny.count;
      tiny.kernelNs += duration;
      if (op.hasCall) {
        const int64_t launch = op.callEndNs - op.callStartNs;
        tiny.launchNs += launch;
        if (launch > duration) ++tiny.launchLongerCount;
      }
    }

    if (op.hasCall) {
      if (op.callEndNs - op.callStartNs > report.slowestCallNs) {
        report.slowestCallNs = op.callEndNs - op.callStartNs;
        report.slowestCallOf = keptName(op.name);
      }
      const int64_t latency = op.startNs - op.callStartNs;
      latencies_.add(latency);
      int bucket = 0;
      for (int64_t us = latency / 1000; us > 0 && bucket < RankReport::kLatencyBuckets - 1;
           us >>= 1)
        ++bucket;
      ++report.launchLatencyHistogram[static_cast<std::size_t>(bucket)];
      keepLongestLatency(op, latency);
      queueChanges_.add({op.device, op.stream, op.callStartNs, +1});
      queueChanges_.add({op.device, op.stream, op.startNs, -1});
    }
  }

  // Launch outliers, worst first: the longer latency, then the earlier start.
  static bool worseLatency(const LaunchOutlier& a, const LaunchOutlier& b) {
    return a.latencyNs != b.latencyNs ? a.latencyNs > b.latencyNs : a.startNs < b.startNs;
  }

  // The options_.top worst launch latencies, in a heap whose top is the least bad kept.
  void keepLongestLatency(const JoinedOp& op, int64_t latency) {
    LaunchOutlier outlier{{}, op.startNs, latency};
    if (outliers_.size() < options_.top) {
      outlier.name = keptName(op.name);
      outliers_.push_back(std::move(outlier));
      std::push_heap(outliers_.begin(), outliers_.end(), worseLatency);
    } else if (!outliers_.empty() && worseLatency(outlier, outliers_.front())) {
      outlier.name = keptName(op.name);
      std::pop_heap(outliers_.begin(), outliers_.end(), worseLatency);
      outliers_.back() = std::move(outlier);
      std::push_heap(outliers_.begin(), outliers_.end(), worseLatency);
    }
  }

  // ---- pass 2: each device's operations by start ----------------------------------------

  // A device's state during its sweep: the operations running (their ends, by kind), where
  // time has got to, and the busy interval being merged.
  struct Sweep {
    explicit Sweep(ReadBudget& budget)
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

  void sweepDevices(RankReport& report) {
    std::optional<Sweep> sweep;
    byDevice_.sort();
    report.syncRecords = trace_.syncs.size();
    trace_.syncs.sort();
    for (; !byDevice_.done(); byDevice_.pop()) {
      const JoinedOp& op = byDevice_.front();
      if (!sweep || sweep->report.device != op.device) {
        if (sweep) endDevice(*sweep, report);
        sweep.emplace(budget_);
        beginDevice(*sweep, op.device);
      }
      addOp(*sweep, op);
    }
    if (sweep) endDevice(*sweep, report);
    while (!trace_.syncs.done()) trace_.syncs.pop();
  }

  // A device's report (its timeline's bins) is kept with the report: a trace that names
  // more devices than the budget holds is an error naming them.
  void beginDevice(Sweep& s, int64_t device) {
    reportHold_->take(sizeof(DeviceReport) + DeviceReport::kTimelineBins * sizeof(double) +
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

  void addOp(Sweep& s, const JoinedOp& op) {
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
        gap.cause = causeOf(gap);
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

  static void noteCall(Sweep& s, const JoinedOp& op) {
    if (!op.hasCall || (s.lastCall && op.callEndNs <= s.lastCallEnd)) return;
    s.lastCall = true;
    s.lastCallStart = op.callStartNs;
    s.lastCallEnd = op.callEndNs;
    s.lastCallTid = op.callTid;
    s.lastCallOf = op.name;
  }

  // Ends the operations that end by `until`, in order, and the busy time up to each end.
  void advance(Sweep& s, int64_t until) {
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
  void takeSyncs(Sweep& s, int64_t until) {
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

  Found foundOf(const CollectedSync& sync) const {
    Found found;
    found.any = true;
    found.kind = sync.kind;
    found.device = sync.device;
    found.stream = sync.stream;
    found.waitOnStream = sync.waitOnStream;
    return found;
  }

  // The host's sync on the device that was running when the gap [from, to) opened and
  // ended within it: the host waited for the GPU to drain, and launched again only after.
  Found hostSyncAt(const Sweep& s, int64_t from, int64_t to) const {
    const CollectedSync* first = nullptr;
    for (const CollectedSync& sync : s.openSyncs) {
      if (sync.kind == SyncKind::StreamWaitEvent || sync.kind == SyncKind::Other) continue;
      if (sync.startNs > from || sync.endNs < from || sync.endNs > to) continue;
      if (first == nullptr || sync.endNs < first->endNs) first = &sync;
    }
    return first != nullptr ? foundOf(*first) : Found{};
  }

  void endDevice(Sweep& s, RankReport& report) {
    advance(s, INT64_MAX);
    if (s.at < trace_.lastNs) {
      Gap gap;
      gap.start = s.at;
      gap.end = trace_.lastNs;
      gap.cause = causeOf(gap);
      idle(s, gap);
    }
    // Each stream's row stays in the report.
    reportHold_->take(s.streams.size() * (sizeof(StreamBreakdown) * 2), kStreams);
    for (auto& [id, stream] : s.streams) {
      if (stream.open) stream.report.busyNs += stream.busyEnd - stream.busyStart;
      stream.report.device = s.report.device;
      stream.report.stream = id;
      s.report.streams.push_back(stream.report);
    }
    s.report.time.windowNs = std::max<int64_t>(0, trace_.lastNs - trace_.firstNs);
    finish(s.report.time);
    add(report.time, s.report.time);
    report.devices.push_back(std::move(s.report));
  }

  // [from, to) with at least one operation running: for the whole trace and each step.
  void busy(Sweep& s, int64_t from, int64_t to) {
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

  // An idle stretch: for the whole trace and each step; the longest are kept.
  void idle(Sweep& s, const Gap& gap) {
    auto addTo = [&](TimeBreakdown& t, int64_t a, int64_t b) { addIdle(t, gap, a, b); };
    if (trace_.lastNs > trace_.firstNs) {
      addTo(s.report.time, gap.start, gap.end);
      if (gap.endedByOp) keepLongestGap({s.report.device, gap, gap.cause});
      if (gap.cause == Cause::OtherWork || gap.hostSync.any) {
        FoundTally& tally =
            gap.cause == Cause::OtherWork ? otherWork_[gap.found] : hostSyncs_[gap.hostSync];
        ++tally.gaps;
        tally.ns += gap.end - gap.start;
      }
    }
    forStepsIn(s, gap.start, gap.end, addTo);
  }

  // Calls addTo(step's time, from, to) clipped to each step that [from, to) meets; `from`
  // never goes back within a device.
  template <typename AddTo>
  void forStepsIn(Sweep& s, int64_t from, int64_t to, AddTo&& addTo) {
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

  // Why the device was idle in `gap` (the definitions in trace_analysis.h).
  Cause causeOf(const Gap& gap) const {
    if (gap.endedByOp && gap.first) return Cause::BeforeFirstOp;
    if (!gap.endedByOp || !gap.hasCall) return Cause::Other;
    if (gap.callStartNs >= gap.start) return Cause::HostWait;
    if (gap.end - gap.start < options_.consecutiveKernelNs) return Cause::KernelWait;
    if (gap.callEndNs > gap.start) return Cause::Launch;
    if (gap.found.any) return Cause::OtherWork;
    return Cause::Other;
  }

  // The part [from, to) of `gap` within a window: by the operation that ended the gap, if
  // it ends within the window; the time before the first operation whatever the window.
  void addIdle(TimeBreakdown& t, const Gap& gap, int64_t from, int64_t to) const {
    const int64_t length = to - from;
    t.dataLoadingIdleNs += overlapWith(dataLoading_, from, to);
    const Cause cause =
        gap.cause != Cause::BeforeFirstOp && gap.end > to ? Cause::Other : gap.cause;
    switch (cause) {
      case Cause::BeforeFirstOp:
        t.beforeFirstOpNs += length;
        break;
      case Cause::HostWait: {
        // [gap start, in call) the host was still in an earlier launch call, [in call,
        // call start) host wait, [call start, end) launching.
        const int64_t callStart = std::clamp(gap.callStartNs, from, to);
        const int64_t inCall = std::clamp(
            gap.inCallUntil > gap.start ? std::min(gap.inCallUntil, gap.callStartNs) : gap.start,
            from, callStart);
        t.launchPreviousNs += inCall - from;
        t.hostWaitNs += callStart - inCall;
        t.launchNs += (inCall - from) + (to - callStart);
        break;
      }
      case Cause::Launch:
        t.launchNs += length;
        t.launchQueuedNs += length;
        break;
      case Cause::KernelWait:
        t.kernelWaitNs += length;
        break;
      case Cause::OtherWork:
        t.otherWorkWaitNs += length;
        break;
      case Cause::Other:
        t.otherIdleNs += length;
        break;
    }
  }

  // The derived figures, once busy and idle time are in.
  static void finish(TimeBreakdown& t) {
    if (t.windowNs <= 0) {
      t = TimeBreakdown{};
      return;
    }
    t.memoryNs = t.busyNs - t.computeNs - t.communicationNs;
    t.idleNs = t.windowNs - t.busyNs;
  }

  // A merged busy interval: the timeline's bins.
  void busyInterval(Sweep& s, int64_t from, int64_t to) const {
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

  // Gaps, longest first; then the earlier, then the lower device.
  static bool longerGap(const KeptGap& a, const KeptGap& b) {
    const int64_t x = a.gap.end - a.gap.start;
    const int64_t y = b.gap.end - b.gap.start;
    if (x != y) return x > y;
    return a.gap.start != b.gap.start ? a.gap.start < b.gap.start : a.device < b.device;
  }

  // The options_.top longest gaps, in a heap whose top is the shortest kept: a trace has
  // as many gaps as operations.
  void keepLongestGap(const KeptGap& gap) {
    if (gaps_.size() < options_.top) {
      gaps_.push_back(gap);
      std::push_heap(gaps_.begin(), gaps_.end(), longerGap);
    } else if (!gaps_.empty() && longerGap(gap, gaps_.front())) {
      std::pop_heap(gaps_.begin(), gaps_.end(), longerGap);
      gaps_.back() = gap;
      std::push_heap(gaps_.begin(), gaps_.end(), longerGap);
    }
  }

  // ---- the passes after ----------------------------------------------------------------

  // What a step takes while the report is made (sorted, its time summed, its bounds, its
  // memory sample), and what its report keeps (with its name, counted apart): a file of
  // millions of steps is refused naming them rather than taking gigabytes.
  static constexpr std::size_t kStepWorkingBytes =
      2 * (sizeof(CollectedRange) + sizeof(TimeBreakdown) + sizeof(Interval) + sizeof(std::size_t) +
           sizeof(int64_t) + 1) +
      sizeof(std::pair<const uint32_t, CollectedRange>) + 32 + kAllocationOverheadBytes;
  static constexpr std::size_t kStepReportBytes = 2 * sizeof(StepReport);

  // Steps in time order, each name once (the longest range of that name: a step marked on
  // several threads counts once). Steps that start together: the longer (an outer step)
  // first, then by name, so the order never depends on how the sort met them.
  std::vector<StepReport> steps() {
    std::vector<StepReport> out;
    BudgetMap<uint32_t, CollectedRange> byName(std::less<uint32_t>(),
                                               BudgetAllocator<char>(budget_, kStepRanges));
    for (const CollectedRange& step : trace_.steps) {
      auto [it, inserted] = byName.emplace(step.name, step);
      if (!inserted && step.endNs - step.startNs > it->second.endNs - it->second.startNs)
        it->second = step;
    }
    working_.take(byName.size() * kStepWorkingBytes, kStepRanges);
    std::vector<CollectedRange> sorted;
    sorted.reserve(byName.size());
    for (const auto& [name, step] : byName) sorted.push_back(step);
    std::sort(sorted.begin(), sorted.end(),
              [this](const CollectedRange& a, const CollectedRange& b) {
                if (a.startNs != b.startNs) return a.startNs < b.startNs;
                if (a.endNs != b.endNs) return a.endNs > b.endNs;
                return trace_.name(a.name) < trace_.name(b.name);
              });
    out.reserve(sorted.size());
    stepBounds_.reserve(sorted.size());
    for (const CollectedRange& step : sorted) {
      const std::string_view name = trace_.name(step.name);
      reportHold_->take(kStepReportBytes + (name.size() > 15 ? name.size() + 1 : 0), kStepRanges);
      StepReport s;
      s.name = std::string(name);
      s.startNs = step.startNs;
      s.endNs = step.endNs;
      out.push_back(std::move(s));
      stepBounds_.emplace_back(step.startNs, step.endNs);
    }
    return out;
  }

  // The kernel table: every name's distribution, of which the top ones are kept with their
  // names (a name may be megabytes; each is copied only if its row is kept).
  void kernels(RankReport& report) {
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
      return trace_.name(a.key) < trace_.name(b.key);
    };
    std::vector<Row> top;  // a heap whose top is the last kept
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
      } else if (top.size() < options_.top) {
        top.push_back(row);
        std::push_heap(top.begin(), top.end(), before);
      } else if (!top.empty() && before(row, top.front())) {
        std::pop_heap(top.begin(), top.end(), before);
        top.back() = row;
        std::push_heap(top.begin(), top.end(), before);
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
    std::sort(top.begin(), top.end(), before);
    for (const Row& row : top) {
      KernelRow kernel;
      kernel.name = keptName(row.key);
      kernel.kind = kindName(names_[row.key].kind);
      kernel.duration = row.duration;
      kernel.share = share(row.duration.totalNs);
      report.kernels.push_back(std::move(kernel));
    }
  }

  void launchLatency(RankReport& report) {
    DistributionBuilder latency(latencies_.size());
    latencies_.drain([&latency](int64_t ns) { latency.add(ns); });
    report.launchLatency = latency.finish();
    std::sort(
        outliers_.begin(), outliers_.end(),
        [](const LaunchOutlier& a, const LaunchOutlier& b) { return a.latencyNs > b.latencyNs; });
    report.launchOutliers = std::move(outliers_);
  }

  // The most operations launched and not yet started, per stream, and per bin of the
  // device's timeline: a depth counts in every bin it held in, from its change to the next.
  void queueDepths(RankReport& report) {
    BudgetMap<std::pair<int64_t, int64_t>, int> deepest(std::less<std::pair<int64_t, int64_t>>(),
                                                        BudgetAllocator<char>(budget_, kStreams));
    std::pair<int64_t, int64_t> stream;
    int depth = 0;
    int64_t since = 0;
    int* most = nullptr;
    QueueDepthTimeline* timeline = nullptr;
    const DeviceReport* streamDevice = nullptr;
    auto binOf = [&streamDevice](int64_t ns) {
      const int64_t bin = (ns - streamDevice->timelineStartNs) / streamDevice->timelineBinNs;
      return std::clamp<int64_t>(bin, 0, DeviceReport::kTimelineBins - 1);
    };
    auto held = [&](int64_t until) {  // `depth` held from `since` to `until`
      if (timeline == nullptr || depth <= 0) return;
      for (int64_t b = binOf(since), last = binOf(std::max(since, until - 1)); b <= last; ++b) {
        int& slot = timeline->maxDepth[static_cast<std::size_t>(b)];
        slot = std::max(slot, depth);
      }
    };
    queueChanges_.drain([&](const QueueChange& change) {
      if (most == nullptr || stream != std::make_pair(change.device, change.stream)) {
        stream = {change.device, change.stream};
        most = &deepest[stream];
        depth = 0;
        timeline = nullptr;
        streamDevice = nullptr;
        for (const DeviceReport& d : report.devices) {
          if (d.device == change.device && !d.busyTimeline.empty()) streamDevice = &d;
        }
        if (streamDevice != nullptr) {
          reportHold_->take(sizeof(QueueDepthTimeline) + DeviceReport::kTimelineBins * sizeof(int) +
                                2 * kAllocationOverheadBytes,
                            kStreams);
          timeline = &report.queueDepthTimelines.emplace_back();
          timeline->device = change.device;
          timeline->stream = change.stream;
          timeline->maxDepth.assign(DeviceReport::kTimelineBins, 0);
        }
      }
      held(change.timeNs);
      depth += change.delta;
      since = change.timeNs;
      *most = std::max(*most, depth);
      held(change.timeNs + 1);  // a depth reached for an instant counts in its bin
    });
    for (DeviceReport& device : report.devices) {
      for (StreamBreakdown& s : device.streams) {
        auto found = deepest.find({s.device, s.stream});
        if (found != deepest.end()) s.maxQueueDepth = found->second;
      }
    }
  }

  // The host ranges that issued the tiny kernels: their External ids joined to the ranges'.
  void tinyKernelIssuers(RankReport& report) {
    TinyKernelReport& tiny = report.tiny;
    tiny.shareOfKernels =
        report.kernelCount > 0 ? static_cast<double>(tiny.count) / report.kernelCount : 0;
    ExternalSorter<ExternalIdRange, ByExternalId>& ranges = trace_.rangeOfExternalId;
    ranges.sort();
    issuedBy_.drain([&](const IssuedBy& op) {
      while (!ranges.done() && ranges.front().externalId < op.externalId) ranges.pop();
      const bool found = !ranges.done() && ranges.front().externalId == op.externalId;
      if (found) ++report.opsWithHostRange;
      if (op.tiny) ++issuers_[found ? ranges.front().name : kNoRange];
    });
    while (!ranges.done()) ranges.pop();
    // The most frequent first, then by name; only those kept have their names copied.
    auto nameOf = [this](uint32_t name) {
      return name == kNoRange ? std::string_view("(no host range)") : trace_.name(name);
    };
    auto before = [&](const std::pair<uint32_t, uint64_t>& a,
                      const std::pair<uint32_t, uint64_t>& b) {
      return a.second != b.second ? a.second > b.second : nameOf(a.first) < nameOf(b.first);
    };
    std::vector<std::pair<uint32_t, uint64_t>> top;  // a heap whose top is the last kept
    for (const auto& issuer : issuers_) {
      if (top.size() < options_.top) {
        top.push_back(issuer);
        std::push_heap(top.begin(), top.end(), before);
      } else if (!top.empty() && before(issuer, top.front())) {
        std::pop_heap(top.begin(), top.end(), before);
        top.back() = issuer;
        std::push_heap(top.begin(), top.end(), before);
      }
    }
    std::sort(top.begin(), top.end(), before);
    for (const auto& [name, count] : top) {
      tiny.issuers.emplace_back(name == kNoRange ? std::string(nameOf(name)) : keptName(name),
                                count);
    }
  }

  // Gaps by what was found in them, longest first.
  std::vector<FoundRow> foundRows(const BudgetMap<Found, FoundTally>& tallies) const {
    std::vector<FoundRow> rows;
    for (const auto& [found, tally] : tallies) {
      rows.push_back({describe(found, severalDevices_), tally.gaps, tally.ns});
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const FoundRow& a, const FoundRow& b) { return a.ns > b.ns; });
    if (rows.size() > options_.top) rows.resize(options_.top);
    return rows;
  }

  // The longest gaps, each with the innermost host range open on the launching thread at
  // its middle: one pass over the host ranges for all of them.
  std::vector<GapReport> longestGaps() {
    std::sort(gaps_.begin(), gaps_.end(), longerGap);
    std::vector<CollectedRange> innermost(gaps_.size());
    std::vector<bool> found(gaps_.size(), false);
    trace_.hostRanges.forEach([&](const CollectedRange& r) {
      for (std::size_t i = 0; i < gaps_.size(); ++i) {
        const Gap& gap = gaps_[i].gap;
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
    for (std::size_t i = 0; i < gaps_.size(); ++i) {
      const KeptGap& kept = gaps_[i];
      GapReport g;
      g.device = kept.device;
      g.startNs = kept.gap.start;
      g.durationNs = kept.gap.end - kept.gap.start;
      g.cause = causeName(kept.cause);
      const Gap& gap = kept.gap;
      if (gap.inCallUntil > gap.start) {
        // Mostly spent in an earlier launch call: a launch that took long.
        const int64_t inCall = std::min(gap.inCallUntil, gap.callStartNs) - gap.start;
        if (2 * inCall >= gap.callStartNs - gap.start) g.cause = causeName(Cause::Launch);
        g.evidence = "the host was still in the launch call of " +
                     shortName(trace_.name(gap.inCallOf)) + " (it took " +
                     shortDuration(gap.inCallUntil - gap.inCallStart) + ")";
      }
      if (kept.cause == Cause::OtherWork) g.evidence = describe(kept.gap.found, severalDevices_);
      if (kept.gap.hostSync.any) {
        g.evidence = "the host was in " + describe(kept.gap.hostSync, severalDevices_);
      }
      g.endedBy = keptName(kept.gap.endedBy);
      if (found[i]) g.hostWas = keptName(innermost[i].name);
      out.push_back(std::move(g));
    }
    return out;
  }

  MemoryReport memory(std::vector<StepReport>& steps, std::vector<MemorySample>* curve) {
    MemoryReport m;
    m.samples = trace_.memory.size();
    if (m.samples == 0) return m;
    // The curve: the highest sample of each of kMemoryCurvePoints stretches.
    const uint64_t stride =
        (m.samples + RankReport::kMemoryCurvePoints - 1) / RankReport::kMemoryCurvePoints;
    // Each step's allocation at its end: the last sample at or before it.
    std::vector<std::size_t> byEnd(steps.size());
    for (std::size_t i = 0; i < byEnd.size(); ++i) byEnd[i] = i;
    std::stable_sort(byEnd.begin(), byEnd.end(), [&steps](std::size_t a, std::size_t b) {
      return steps[a].endNs < steps[b].endNs;
    });
    std::vector<bool> sampled(steps.size(), false);
    std::size_t nextStep = 0;
    uint64_t index = 0;
    MemorySample last;
    MemorySample highest;
    trace_.memory.drain([&](const SequencedSample& sequenced) {
      const MemorySample& s = sequenced.sample;
      for (; nextStep < byEnd.size() && steps[byEnd[nextStep]].endNs < s.timeNs; ++nextStep) {
        if (index == 0) continue;
        steps[byEnd[nextStep]].allocatedAtEndBytes = last.allocatedBytes;
        sampled[byEnd[nextStep]] = true;
      }
      if (index == 0) m.firstBytes = s.allocatedBytes;
      if (s.allocatedBytes > m.peakBytes) {
        m.peakBytes = s.allocatedBytes;
        m.peakAtNs = s.timeNs;
      }
      if (index % stride == 0 || s.allocatedBytes > highest.allocatedBytes) highest = s;
      if (index % stride == stride - 1 || index + 1 == m.samples) curve->push_back(highest);
      last = s;
      ++index;
    });
    m.lastBytes = last.allocatedBytes;
    for (; nextStep < byEnd.size(); ++nextStep) {
      steps[byEnd[nextStep]].allocatedAtEndBytes = last.allocatedBytes;
      sampled[byEnd[nextStep]] = true;
    }
    std::vector<int64_t> atStepEnd;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (sampled[i]) atStepEnd.push_back(steps[i].allocatedAtEndBytes);
    }
    if (atStepEnd.size() >= 3) {
      m.growsEveryStep = true;
      for (std::size_t i = 1; i < atStepEnd.size(); ++i) {
        if (atStepEnd[i] <= atStepEnd[i - 1]) m.growsEveryStep = false;
      }
      m.growthPerStepBytes =
          (atStepEnd.back() - atStepEnd.front()) / static_cast<int64_t>(atStepEnd.size() - 1);
    }
    return m;
  }

  std::vector<NcclCallRow> ncclCalls() {
    std::vector<NcclCallRow> rows;
    for (const auto& [call, totals] : trace_.ncclCalls) {
      NcclCallRow row;
      reportHold_->take(call.size() + sizeof(NcclCallRow), "NCCL calls");
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
    return rows;
  }

  // The starts of the rank's collectives, by name, in order: its NCCL kernels, and its
  // torch.distributed calls.
  // They wait for the other ranks' in the budget: a start each, a name once.
  RankCollectives collectives() {
    RankCollectives out;
    out.rank = trace_.rank;
    out.held = std::make_shared<BudgetHold>(budget_);
    auto add = [&](std::map<std::string, std::vector<int64_t>>& starts, const CollectiveStart& c) {
      std::vector<int64_t>* found = nullptr;
      const std::string_view name = trace_.name(c.name);
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
    collectiveStarts_.drain([&](const CollectiveStart& c) { add(out.kernelStarts, c); });
    trace_.collectiveCalls.drain([&](const CollectiveStart& c) { add(out.callStarts, c); });
    return out;
  }

  // A name the report keeps a copy of (a top kernel's, a gap's): a name may be megabytes.
  std::string keptName(uint32_t id) {
    const std::string_view name = trace_.name(id);
    reportHold_->take(name.size() > 15 ? name.size() + 1 + kAllocationOverheadBytes : 0,
                      "the report's names");
    return std::string(name);
  }

  static constexpr uint32_t kNoRange = ~uint32_t{0};
  static constexpr const char* kLists = "the analysis's lists";
  static constexpr const char* kStreams = "streams";
  static constexpr const char* kStepRanges = "step ranges";
  static constexpr const char* kCollectiveStarts = "collective starts";

  CollectedTrace& trace_;
  const AnalysisOptions& options_;
  ReadBudget& budget_;
  BudgetHold working_;                      // what the analysis holds until it is done
  std::shared_ptr<BudgetHold> reportHold_;  // what the report keeps
  Intervals dataLoading_;
  std::vector<std::pair<int64_t, int64_t>> stepBounds_;  // the steps', in their order
  std::vector<TimeBreakdown> stepTimes_;                 // summed over the devices

  ExternalSorter<JoinedOp, ByDeviceThenStart> byDevice_;
  ExternalSorter<KeyedDuration, ByKeyThenDuration> durations_;
  ExternalSorter<int64_t, std::less<>> latencies_;
  ExternalSorter<QueueChange, ByStreamThenTime> queueChanges_;
  ExternalSorter<IssuedBy, ByIssuer> issuedBy_;
  ExternalSorter<CollectiveStart, ByStart> collectiveStarts_;

  BudgetUnorderedMap<uint32_t, Tally> names_;
  std::map<GpuOpKind, Tally> kinds_;
  int64_t totalNs_ = 0;                             // every operation's duration
  BudgetUnorderedMap<uint32_t, uint64_t> issuers_;  // range name (or kNoRange) -> count
  std::vector<LaunchOutlier> outliers_;             // options_.top
  std::vector<KeptGap> gaps_;                       // options_.top
  // Gaps by what was found: a few kinds, and the streams.
  BudgetMap<Found, FoundTally> otherWork_;
  BudgetMap<Found, FoundTally> hostSyncs_;
  bool severalDevices_ = false;
};
// The Nth collective of each name across ranks: the rank that started it last kept the
// others waiting (on one host, ranks share a clock; across hosts the skew adds). NCCL
// kernels when every rank has them; else torch.distributed's calls (gloo's collectives run
// on the host, and a rank that calls late is as late to the collective).
std::vector<StragglerReport> stragglers(const std::vector<RankCollectives>& ranks,
                                        const AnalysisOptions& options) {
  std::vector<StragglerReport> out;
  if (ranks.size() < 2) return out;
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
    return out;
  }
  // The worst options.top, in a heap whose top is the least late kept: a job has as many
  // occurrences as collectives, and each would copy its name.
  auto worse = [](const StragglerReport& a, const StragglerReport& b) {
    return a.lateByNs > b.lateByNs;
  };
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
      if (out.size() == options.top) {
        if (out.empty() || !worse(s, out.front())) continue;
        std::pop_heap(out.begin(), out.end(), worse);
        out.pop_back();
      }
      s.collective = name;
      out.push_back(std::move(s));
      std::push_heap(out.begin(), out.end(), worse);
    }
  }
  std::stable_sort(out.begin(), out.end(), worse);
  return out;
}

}  // namespace

RankAnalysis analyzeRank(CollectedTrace trace, const AnalysisOptions& options) {
  return Analyzer(trace, options).run();
}

RankReport analyzeTrace(CollectedTrace trace, const AnalysisOptions& options) {
  return analyzeRank(std::move(trace), options).report;
}

AnalysisReport combineRanks(std::vector<RankReport> ranks,
                            const std::vector<RankCollectives>& collectives,
                            const AnalysisOptions& options) {
  AnalysisReport report;
  report.ranks = std::move(ranks);
  report.stragglers = stragglers(collectives, options);
  report.findings = findingsOf(report, options);
  return report;
}

AnalysisReport analyzeTraces(std::vector<CollectedTrace> traces, const AnalysisOptions& options) {
  std::vector<RankReport> ranks;
  std::vector<RankCollectives> collectives;
  for (CollectedTrace& trace : traces) {
    RankAnalysis rank = analyzeRank(std::move(trace), options);
    ranks.push_back(std::move(rank.report));
    collectives.push_back(std::move(rank.collectives));
  }
  return combineRanks(std::move(ranks), collectives, options);
}

}  // namespace kinetrace::detail
