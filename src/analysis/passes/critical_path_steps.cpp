#include "analysis/passes/critical_path_steps.h"

#include <algorithm>
#include <tuple>

namespace kinetrace::detail::passes {
namespace {

constexpr const char* kJoinLists = "the critical path's lists";

StepEvent stepEventOf(const CriticalPathEvent& e) {
  StepEvent out;
  out.ordinal = e.ordinal;
  out.startNs = e.startNs;
  out.endNs = e.endNs;
  out.pid = e.pid;
  out.tid = e.tid;
  out.name = e.name;
  out.kind = e.kind;
  out.detail = e.detail;
  return out;
}

bool isEventWait(uint8_t detail) {
  const auto kind = static_cast<SyncKind>(detail);
  return kind == SyncKind::StreamWaitEvent || kind == SyncKind::EventSync;
}

// A sync that names the event record it waits on, and that record's stream.
bool namesItsRecord(const CriticalPathEvent& e) {
  return e.kind == PathEventKind::Sync && isEventWait(e.detail) && e.eventRecordCorrelation != 0 &&
         e.waitOnStream >= 0;
}

}  // namespace

bool isQueueCountingLaunch(std::string_view call) {
  return call == "cudaLaunchKernel" || call == "cudaLaunchKernelExC" || call == "cuLaunchKernel" ||
         call == "cuLaunchKernelEx" || call == "cudaMemcpyAsync" || call == "cudaMemsetAsync";
}

bool StepEvents::ByKey::operator()(const Joining& a, const Joining& b) const {
  return std::tie(a.key, a.role, a.event.ordinal) < std::tie(b.key, b.role, b.event.ordinal);
}

bool StepEvents::ByStreamThenTime::operator()(const Queued& a, const Queued& b) const {
  // At one time: starts, then launches, then records (which follow a launch at their time),
  // then waits (which precede one).
  return std::tie(a.device, a.stream, a.timeNs, a.what, a.op.ordinal, a.sync) <
         std::tie(b.device, b.stream, b.timeNs, b.what, b.op.ordinal, b.sync);
}

bool StepEvents::BySync::operator()(const Resolving& a, const Resolving& b) const {
  return std::tie(a.sync, a.role, a.op) < std::tie(b.sync, b.role, b.op);
}

StepEvents::StepEvents(const PassContext& context)
    : context_(context),
      byCorrelation_(context.budget(), kJoinLists, context.trace.listBytes),
      byStream_(context.budget(), kJoinLists, context.trace.listBytes),
      bySync_(context.budget(), kJoinLists, context.trace.listBytes),
      byStep_(context.budget(), kJoinLists, context.trace.listBytes) {}

void StepEvents::collect(const std::vector<PathWindow>& windows) {
  windows_ = windows;
  latestEnd_.resize(windows_.size());
  for (std::size_t i = 0; i < windows_.size(); ++i) {
    latestEnd_[i] = std::max(windows_[i].endNs, i > 0 ? latestEnd_[i - 1] : windows_[i].endNs);
  }
  counts_.assign(windows_.size(), 0);
  context_.trace.criticalPathEvents.forEach([this](const CriticalPathEvent& e) {
    if (e.kind == PathEventKind::HostRange ||
        (e.kind == PathEventKind::Call && e.correlationId == 0)) {
      assign(stepEventOf(e), e.startNs);
      return;
    }
    if (e.correlationId == 0) {
      ++leftOut_["GPU operations and syncs without a correlation id (no launch call to join)"];
      return;
    }
    byCorrelation_.add(
        {e.correlationId, e.kind == PathEventKind::Call ? Joining::kCall : Joining::kOfCall, e});
    if (namesItsRecord(e)) byCorrelation_.add({e.eventRecordCorrelation, Joining::kWantsRecord, e});
  });
  join();
  sweepStreams();
  resolveSyncs();
  byStep_.sort();
}

// Each call, then its operations and syncs; and the syncs waiting on an event it recorded.
void StepEvents::join() {
  bool haveKey = false;
  uint64_t key = 0;
  bool haveCall = false;
  CriticalPathEvent call;
  byCorrelation_.drain([&](const Joining& j) {
    if (!haveKey || j.key != key) {
      haveKey = true;
      key = j.key;
      haveCall = false;
    }
    const CriticalPathEvent& e = j.event;
    if (j.role == Joining::kCall) {
      if (!haveCall) call = e;  // of calls sharing an id (never, in practice), the first
      haveCall = true;
      assign(stepEventOf(e), e.startNs);
      return;
    }
    if (!haveCall) {
      if (j.role == Joining::kOfCall) {
        ++leftOut_["GPU operations and syncs whose call is not in the trace (no edge to them)"];
      }
      return;
    }
    const std::string_view callName = context_.trace.name(call.name);
    if (j.role == Joining::kWantsRecord) {
      if (callName == "cudaEventRecord") {
        Queued record;
        record.device = e.pid;
        record.stream = e.waitOnStream;
        record.timeNs = call.startNs;
        record.what = Queued::kRecord;
        record.sync = e.ordinal;
        byStream_.add(record);
      }
      return;
    }
    if (call.endNs <= call.startNs) {
      // HTA clips a step by its calls' start and keeps only those that last.
      ++leftOut_["GPU operations and syncs whose call has no duration (out of the graph)"];
      return;
    }
    StepEvent joined = stepEventOf(e);
    joined.callStartNs = call.startNs;
    joined.callEndNs = call.endNs;
    joined.callOrdinal = call.ordinal;
    if (e.kind == PathEventKind::GpuOp) {
      if (!isQueueCountingLaunch(callName)) {
        assign(joined, call.startNs);
        return;
      }
      Queued queued;
      queued.device = e.pid;
      queued.stream = e.tid;
      queued.pid = call.pid;
      queued.tid = call.tid;
      queued.op = joined;
      queued.what = Queued::kLaunch;
      queued.timeNs = call.startNs;
      byStream_.add(queued);
      queued.what = Queued::kStart;
      queued.timeNs = e.startNs;
      byStream_.add(queued);
      return;
    }
    if (!namesItsRecord(e)) {
      assign(joined, call.startNs);
      return;
    }
    if (static_cast<SyncKind>(e.detail) == SyncKind::StreamWaitEvent) {
      Queued wait;
      wait.device = e.pid;
      wait.stream = e.tid;
      wait.timeNs = call.startNs;
      wait.what = Queued::kWait;
      wait.pid = call.pid;
      wait.tid = call.tid;
      wait.sync = e.ordinal;
      byStream_.add(wait);
    }
    bySync_.add({e.ordinal, Resolving::kSync, 0, joined});
  });
}

// Stream by stream in time order: HTA's queue length around each operation, the operation
// launched last before each event record, the next one launched after each wait.
void StepEvents::sweepStreams() {
  struct Flight {
    bool launched = false;
    bool started = false;
    bool emptyAtLaunch = false;
    bool emptyAtStart = false;
  };
  // Waits not yet met by a launch: by the waiting thread, then the sync.
  using Wait = std::tuple<int64_t, int64_t, uint64_t>;
  BudgetMap<uint64_t, Flight> inFlight(std::less<uint64_t>(),
                                       BudgetAllocator<char>(context_.budget(), kJoinLists));
  BudgetSet<Wait> waits(std::less<Wait>(), BudgetAllocator<Wait>(context_.budget(), kJoinLists));
  bool any = false;
  int64_t device = 0;
  int64_t stream = 0;
  int64_t queued = 0;
  uint64_t lastLaunch = kNoEvent;
  auto landed = [&](const StepEvent& op, const Flight& f) {
    StepEvent out = op;
    if (f.emptyAtLaunch && f.emptyAtStart) out.flags |= StepEvent::kQueueEmpty;
    assign(out, out.callStartNs);
    inFlight.erase(op.ordinal);
  };
  byStream_.drain([&](const Queued& q) {
    if (!any || q.device != device || q.stream != stream) {
      any = true;
      device = q.device;
      stream = q.stream;
      queued = 0;
      lastLaunch = kNoEvent;
      inFlight.clear();
      waits.clear();
    }
    switch (q.what) {
      case Queued::kStart: {
        Flight& f = inFlight[q.op.ordinal];
        f.started = true;
        f.emptyAtStart = --queued == 0;
        if (f.launched) landed(q.op, f);
        break;
      }
      case Queued::kLaunch: {
        Flight& f = inFlight[q.op.ordinal];
        f.launched = true;
        f.emptyAtLaunch = ++queued == 1;
        lastLaunch = q.op.ordinal;
        auto first = waits.lower_bound({q.pid, q.tid, 0});
        auto last = first;
        for (; last != waits.end() && std::get<0>(*last) == q.pid && std::get<1>(*last) == q.tid;
             ++last) {
          bySync_.add({std::get<2>(*last), Resolving::kReleases, q.op.ordinal, {}});
        }
        waits.erase(first, last);
        if (f.started) landed(q.op, f);
        break;
      }
      case Queued::kRecord:
        if (lastLaunch != kNoEvent) bySync_.add({q.sync, Resolving::kWaitsFor, lastLaunch, {}});
        break;
      case Queued::kWait:
        waits.insert({q.pid, q.tid, q.sync});
        break;
    }
  });
}

void StepEvents::resolveSyncs() {
  bool have = false;
  StepEvent sync;
  auto flush = [&] {
    if (have) assign(sync, sync.callStartNs);
    have = false;
  };
  bySync_.drain([&](const Resolving& r) {
    if (r.role == Resolving::kSync) {
      flush();
      sync = r.event;
      have = true;
      return;
    }
    if (!have || r.sync != sync.ordinal) return;  // found for a sync not kept
    if (r.role == Resolving::kWaitsFor) sync.waitsFor = r.op;
    if (r.role == Resolving::kReleases && sync.releases == kNoEvent) sync.releases = r.op;
  });
  flush();
}

void StepEvents::assign(StepEvent event, int64_t keyNs) {
  if ((event.kind == PathEventKind::HostRange || event.kind == PathEventKind::Call) &&
      event.endNs <= event.startNs) {
    // HTA leaves out host events that do not last: they would nest nothing.
    ++leftOut_["host ranges and calls of no duration (out of the graph)"];
    return;
  }
  auto after = std::upper_bound(windows_.begin(), windows_.end(), keyNs,
                                [](int64_t t, const PathWindow& w) { return t < w.startNs; });
  for (std::size_t i = static_cast<std::size_t>(after - windows_.begin());
       i-- > 0 && latestEnd_[i] >= keyNs;) {
    if (windows_[i].endNs < keyNs) continue;
    event.step = i;
    byStep_.add(event);
    ++counts_[i];
  }
}

}  // namespace kinetrace::detail::passes
