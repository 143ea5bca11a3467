#include "analysis/passes/critical_path_graph.h"

#include <algorithm>
#include <climits>
#include <string_view>
#include <tuple>
#include <utility>

namespace kinetrace::detail::passes {
namespace {

constexpr const char* kGraph = "the critical path's graph";
// HTA's KERNEL_KERNEL_DELAY_THRESHOLD_US: a longer gap between two operations of a stream
// means a dependency the trace does not show, so stream order draws no edge over it.
constexpr int64_t kStreamOrderNs = 1'500'000;

// What the graph needs to know of a name.
enum NameBits : uint8_t {
  kRuntimeLock = 1,  // holds CUDA's runtime lock (HTA's CUDA_RUNTIME_EVENTS)
  kBlocking = 2,     // blocks until the GPU is done (HTA's BLOCKING_SYNC_CALLS)
  kLaunchCall = 4,   // launches GPU work: its time is launch time
  kSyncCall = 8,     // synchronises: its time is sync time
  kForward = 16,     // names the forward pass (HTA: "forward" in the name)
  kAutograd = 32,    // names the backward pass (HTA: "autograd" in the name)
  kCollective = 64,  // torch.distributed's collective call: communication on the host
};

uint8_t bitsOfName(std::string_view name) {
  uint8_t bits = 0;
  if (name == "cudaLaunchKernel" || name == "cudaMemcpyAsync" || name == "cudaHostAlloc")
    bits |= kRuntimeLock;
  if (name == "cudaDeviceSynchronize" || name == "cudaStreamSynchronize" ||
      name == "cudaEventQuery" || name == "cudaEventSynchronize" || name == "cudaMemcpy" ||
      name == "cudaMemcpyAsync") {
    bits |= kBlocking;
  }
  if (isQueueCountingLaunch(name) || name.rfind("cudaLaunch", 0) == 0 ||
      name.rfind("cuLaunch", 0) == 0 || name.rfind("cudaGraphLaunch", 0) == 0 ||
      name.rfind("cuGraphLaunch", 0) == 0) {
    bits |= kLaunchCall;
  }
  if (name.find("Synchronize") != std::string_view::npos || name == "cudaEventRecord" ||
      name == "cudaStreamWaitEvent" || name == "cudaEventQuery" || name == "cudaStreamQuery" ||
      name == "cuEventRecord" || name == "cuStreamWaitEvent" || name == "cuEventQuery" ||
      name == "cuStreamQuery") {
    bits |= kSyncCall;
  }
  if (name.find("forward") != std::string_view::npos) bits |= kForward;
  if (name.find("autograd") != std::string_view::npos) bits |= kAutograd;
  if (name.rfind("c10d::", 0) == 0) bits |= kCollective;
  return bits;
}

// to - from, saturated: a hostile trace's times may lie far apart.
int64_t spanNs(int64_t from, int64_t to) {
  int64_t span = 0;
  if (__builtin_sub_overflow(to, from, &span)) return to > from ? INT64_MAX : INT64_MIN;
  return span;
}

// A range's start or end, as HTA's call stack orders them (compare_events): by time; at one
// time ends before starts; of starts, the longer first; of ends, the shorter first; then by
// the trace's order (ends in reverse), so equal ranges nest in the order they came.
struct Boundary {
  int64_t timeNs = 0;
  int64_t durationNs = 0;
  uint64_t ordinal = 0;
  uint32_t event = 0;
  bool start = false;
};
bool before(const Boundary& a, const Boundary& b) {
  if (a.timeNs != b.timeNs) return a.timeNs < b.timeNs;
  if (a.start != b.start) return !a.start;
  if (a.durationNs != b.durationNs) {
    return a.start ? a.durationNs > b.durationNs : a.durationNs < b.durationNs;
  }
  return a.start ? a.ordinal < b.ordinal : a.ordinal > b.ordinal;
}

class Builder {
 public:
  Builder(const CollectedTrace& trace, const BudgetVector<StepEvent>& events,
          const PathWindow& window, std::string_view stepName, ReadBudget& budget)
      : trace_(trace),
        events_(events),
        window_(window),
        stepName_(stepName),
        budget_(budget),
        graph_(budget),
        slot_(events.size(), kNoIndex, BudgetAllocator<uint32_t>(budget, kGraph)),
        parent_(events.size(), kNoIndex, BudgetAllocator<uint32_t>(budget, kGraph)),
        loading_(events.size(), kNoIndex, BudgetAllocator<uint32_t>(budget, kGraph)),
        nodeAround_(events.size(), kNoIndex, BudgetAllocator<uint32_t>(budget, kGraph)),
        nameBits_(0, std::hash<uint32_t>(), std::equal_to<uint32_t>(),
                  BudgetAllocator<std::pair<const uint32_t, uint8_t>>(budget, kGraph)) {}

  StepGraph build() {
    makeNodes();
    hostStacks();
    lockEdges();
    gpuEdges();
    weighBlockingCalls();
    return std::move(graph_);
  }

 private:
  const StepEvent& event(uint32_t i) const { return events_[i]; }
  uint8_t bits(uint32_t i) {
    const uint32_t name = events_[i].name;
    auto found = nameBits_.find(name);
    if (found == nameBits_.end())
      found = nameBits_.emplace(name, bitsOfName(trace_.name(name))).first;
    return found->second;
  }
  bool isHost(uint32_t i) const {
    return event(i).kind == PathEventKind::HostRange || event(i).kind == PathEventKind::Call;
  }
  bool hasNodes(uint32_t i) const { return slot_[i] != kNoIndex; }
  uint32_t startNode(uint32_t i) const { return 2 * slot_[i]; }
  uint32_t endNode(uint32_t i) const { return 2 * slot_[i] + 1; }
  static bool isStart(uint32_t node) { return node % 2 == 0; }
  uint32_t eventOf(uint32_t node) const { return graph_.nodeEvent[node / 2]; }

  // The step's event of that ordinal (events_ is in the trace's order), or kNoIndex.
  uint32_t indexOf(uint64_t ordinal) const {
    if (ordinal == kNoEvent) return kNoIndex;
    auto found = std::lower_bound(events_.begin(), events_.end(), ordinal,
                                  [](const StepEvent& e, uint64_t o) { return e.ordinal < o; });
    if (found == events_.end() || found->ordinal != ordinal) return kNoIndex;
    return static_cast<uint32_t>(found - events_.begin());
  }

  void edge(uint32_t from, uint32_t to, PathPart part, uint32_t attributed, int64_t weight,
            int64_t htaWeight, uint8_t flags = 0) {
    if (weight < 0 || htaWeight < 0) {
      ++graph_.backwardEdges;
      weight = std::max<int64_t>(weight, 0);
      htaWeight = std::max<int64_t>(htaWeight, 0);
    }
    graph_.edges.push_back({from, to, weight, htaWeight, attributed, part, flags});
  }
  int64_t between(uint32_t from, uint32_t to) const {
    return spanNs(graph_.nodeTime[from], graph_.nodeTime[to]);
  }

  // Operators, calls, the GPU operations whose launch call is in the step, and the step's
  // own range.
  void makeNodes() {
    for (uint32_t i = 0; i < events_.size(); ++i) {
      const StepEvent& e = event(i);
      if (stepRange_ == kNoIndex && e.kind == PathEventKind::HostRange &&
          e.startNs == window_.startNs && e.endNs == window_.endNs &&
          trace_.name(e.name) == stepName_) {
        stepRange_ = i;
      }
      const bool node =
          i == stepRange_ || e.kind == PathEventKind::Call ||
          (e.kind == PathEventKind::HostRange && (e.detail & CriticalPathEvent::kOperator) != 0) ||
          (e.kind == PathEventKind::GpuOp && indexOf(e.callOrdinal) != kNoIndex);
      if (!node) continue;
      slot_[i] = static_cast<uint32_t>(graph_.nodeEvent.size());
      graph_.nodeEvent.push_back(i);
      graph_.nodeTime.push_back(e.startNs);
      graph_.nodeTime.push_back(e.endNs);
    }
  }

  // HTA walks the thread running "autograd" ranges as part of the one running "forward"
  // ranges (operators or annotations), when each is a single thread: the backward pass's
  // operators then follow the forward pass's.
  std::pair<int64_t, int64_t> threadMerged() {
    int64_t found[2] = {0, 0};
    int seen[2] = {0, 0};  // 0: none, 1: one thread, 2: several
    for (uint32_t i = 0; i < events_.size(); ++i) {
      const StepEvent& e = event(i);
      if (e.kind != PathEventKind::HostRange ||
          (e.detail & (CriticalPathEvent::kOperator | CriticalPathEvent::kAnnotation)) == 0) {
        continue;
      }
      const uint8_t b = bits(i);
      for (int k = 0; k < 2; ++k) {
        if ((b & (k == 0 ? kForward : kAutograd)) == 0) continue;
        if (seen[k] == 0) {
          seen[k] = 1;
          found[k] = e.tid;
        } else if (found[k] != e.tid) {
          seen[k] = 2;
        }
      }
    }
    if (seen[0] == 1 && seen[1] == 1 && found[0] != found[1]) return {found[1], found[0]};
    return {0, 0};
  }

  void hostStacks() {
    const auto [from, to] = threadMerged();
    auto threadOf = [from = from, to = to](const StepEvent& e) {
      return from != to && e.tid == from ? to : e.tid;
    };
    BudgetVector<uint32_t> host{BudgetAllocator<uint32_t>(budget_, kGraph)};
    for (uint32_t i = 0; i < events_.size(); ++i) {
      if (isHost(i)) host.push_back(i);
    }
    std::stable_sort(host.begin(), host.end(), [&](uint32_t a, uint32_t b) {
      return std::make_pair(event(a).pid, threadOf(event(a))) <
             std::make_pair(event(b).pid, threadOf(event(b)));
    });
    for (std::size_t first = 0; first < host.size();) {
      std::size_t last = first;
      while (last < host.size() && event(host[last]).pid == event(host[first]).pid &&
             threadOf(event(host[last])) == threadOf(event(host[first]))) {
        ++last;
      }
      walkThread(host.data() + first, host.data() + last);
      first = last;
    }
  }

  // One thread's ranges nested into a tree by time, then walked depth first.
  void walkThread(const uint32_t* first, const uint32_t* last) {
    BudgetVector<Boundary> bounds{BudgetAllocator<Boundary>(budget_, kGraph)};
    bounds.reserve(2 * static_cast<std::size_t>(last - first));
    for (const uint32_t* i = first; i != last; ++i) {
      const StepEvent& e = event(*i);
      const int64_t duration = spanNs(e.startNs, e.endNs);
      bounds.push_back({e.startNs, duration, e.ordinal, *i, true});
      bounds.push_back({e.endNs, duration, e.ordinal, *i, false});
    }
    std::sort(bounds.begin(), bounds.end(), before);
    // Children in the order they start, as linked lists; kNoIndex's are the thread's tops.
    BudgetVector<uint32_t> stack{BudgetAllocator<uint32_t>(budget_, kGraph)};
    BudgetVector<uint32_t> tops{BudgetAllocator<uint32_t>(budget_, kGraph)};
    BudgetVector<std::pair<uint32_t, uint32_t>> children{
        BudgetAllocator<std::pair<uint32_t, uint32_t>>(budget_, kGraph)};  // (parent, child)
    for (const Boundary& b : bounds) {
      if (b.start) {
        const uint32_t parent = stack.empty() ? kNoIndex : stack.back();
        parent_[b.event] = parent;
        // Worked out once here (a parent starts before its children), never by walking up a
        // stack that a hostile trace may make a million ranges deep.
        const bool loads = (event(b.event).detail & CriticalPathEvent::kDataLoading) != 0 &&
                           event(b.event).kind == PathEventKind::HostRange;
        loading_[b.event] = loads ? b.event : parent != kNoIndex ? loading_[parent] : kNoIndex;
        nodeAround_[b.event] = parent == kNoIndex ? kNoIndex
                               : hasNodes(parent) ? parent
                                                  : nodeAround_[parent];
        if (stack.empty()) {
          tops.push_back(b.event);
        } else {
          children.push_back({stack.back(), b.event});
        }
        stack.push_back(b.event);
      } else if (!stack.empty()) {
        stack.pop_back();  // HTA pops the innermost, whichever range ends
      }
    }
    // Each parent's children together, in the order they started.
    std::stable_sort(children.begin(), children.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    walk(tops, children);
  }

  struct Walk {
    uint32_t lastNode = kNoIndex;
    uint32_t lastParent = kNoIndex;  // the range around the last node's event
    uint32_t loading = kNoIndex;     // a data-loading range entered since the last node
    int depth = 0;                   // operators and calls open
  };

  void walk(const BudgetVector<uint32_t>& tops,
            const BudgetVector<std::pair<uint32_t, uint32_t>>& children) {
    using Child = std::pair<uint32_t, uint32_t>;
    // A parent's children: a run of `children`, found by binary search.
    auto childrenOf = [&children](uint32_t parent) {
      const Child* all = children.data();
      const Child* lo = std::lower_bound(all, all + children.size(), parent,
                                         [](const Child& c, uint32_t p) { return c.first < p; });
      const Child* hi = lo;
      while (hi != all + children.size() && hi->first == parent) ++hi;
      return std::make_pair(lo, hi);
    };
    Walk w;
    // Depth first without recursion: a frame is a range and its next child to enter.
    struct Frame {
      uint32_t event;
      const Child* next;
      const Child* end;
    };
    BudgetVector<Frame> frames{BudgetAllocator<Frame>(budget_, kGraph)};
    for (uint32_t top : tops) {
      const auto [lo, hi] = childrenOf(top);
      enter(top, w);
      frames.push_back({top, lo, hi});
      while (!frames.empty()) {
        Frame& f = frames.back();
        if (f.next == f.end) {
          exit(f.event, w);
          frames.pop_back();
          continue;
        }
        const uint32_t child = (f.next++)->second;
        const auto [clo, chi] = childrenOf(child);
        enter(child, w);
        frames.push_back({child, clo, chi});
      }
    }
  }

  bool holdsLock(uint32_t node) {
    const uint32_t e = eventOf(node);
    return event(e).kind == PathEventKind::Call && (bits(e) & kRuntimeLock) != 0;
  }
  // Two consecutive nodes whose edge the runtime lock's order draws (lockEdges), unless they
  // are a call's end and the next call's start.
  bool sharesLock(uint32_t a, uint32_t b) {
    return holdsLock(a) && holdsLock(b) && (isStart(a) || !isStart(b));
  }

  // The operator or call that an edge inside the host's ranges is put down to, as HTA puts
  // it: the start's event, else the end's, else (between two siblings) the range around
  // them, here the innermost operator or call around them.
  uint32_t attributed(uint32_t from, uint32_t to, uint32_t fromParent) const {
    if (isStart(from)) return eventOf(from);
    if (!isStart(to)) return eventOf(to);
    if (fromParent == kNoIndex || hasNodes(fromParent)) return fromParent;
    return nodeAround_[fromParent] != kNoIndex ? nodeAround_[fromParent] : fromParent;
  }
  // The data-loading range `e` is or lies in, or kNoIndex.
  uint32_t loadingRangeOf(uint32_t e) const { return e == kNoIndex ? kNoIndex : loading_[e]; }
  bool inDataLoading(uint32_t e) const { return loadingRangeOf(e) != kNoIndex; }
  PathPart hostPart(uint32_t e) {
    if (e == kNoIndex) return PathPart::Cpu;
    const uint8_t b = bits(e);
    if (event(e).kind == PathEventKind::Call) {
      if ((b & kLaunchCall) != 0) return PathPart::Launch;
      if ((b & kSyncCall) != 0) return PathPart::Sync;
    }
    if (inDataLoading(e)) return PathPart::DataLoading;
    if (event(e).kind == PathEventKind::HostRange && (b & kCollective) != 0) {
      return PathPart::Communication;
    }
    return PathPart::Cpu;
  }
  void hostEdge(uint32_t from, uint32_t to, uint32_t fromParent, bool noTime) {
    const uint32_t e = attributed(from, to, fromParent);
    const int64_t time = noTime ? 0 : between(from, to);
    if (noTime) blockingExits_.push_back(static_cast<uint32_t>(graph_.edges.size()));
    edge(from, to, hostPart(e), e, time, time);
  }

  void enter(uint32_t e, Walk& w) {
    if (!hasNodes(e)) {
      if (w.loading == kNoIndex) w.loading = loadingRangeOf(e);
      return;
    }
    if (e == stepRange_) {  // not an operator: what it holds stays at the top
      w.lastNode = startNode(e);
      w.lastParent = parent_[e];
      return;
    }
    const uint32_t start = startNode(e);
    if (w.lastNode != kNoIndex && !sharesLock(w.lastNode, start)) {
      if (w.depth == 0) {
        hostGap(w, start, e);
      } else {
        hostEdge(w.lastNode, start, w.lastParent, false);
      }
    }
    w.lastNode = start;
    w.lastParent = parent_[e];
    w.loading = kNoIndex;
    ++w.depth;
  }

  // Between two operators at the top (HTA's dependency edge, of no weight there): the host
  // outside any operator. Data loading when it passed through, began in or ends in a
  // data-loading range (which it is put down to); else put down to the range the next
  // operator lies in.
  void hostGap(const Walk& w, uint32_t start, uint32_t next) {
    uint32_t loading = w.loading;
    if (loading == kNoIndex) loading = loadingRangeOf(w.lastParent);
    if (loading == kNoIndex) loading = loadingRangeOf(parent_[next]);
    edge(w.lastNode, start, loading != kNoIndex ? PathPart::DataLoading : PathPart::HostGap,
         loading != kNoIndex ? loading : parent_[next], between(w.lastNode, start), 0,
         PathEdge::kArrow);
  }

  void exit(uint32_t e, Walk& w) {
    if (!hasNodes(e)) return;
    if (e == stepRange_) {
      // The host from its last node to the step's end.
      const uint32_t loading = loadingRangeOf(w.lastParent);
      if (w.lastNode != startNode(e)) {
        edge(w.lastNode, endNode(e),
             loading != kNoIndex ? PathPart::DataLoading : PathPart::HostGap,
             loading != kNoIndex ? loading : e, between(w.lastNode, endNode(e)), 0,
             PathEdge::kArrow);
      }
      w.lastNode = endNode(e);
      w.lastParent = parent_[e];
      return;
    }
    const uint32_t end = endNode(e);
    if (w.lastNode != kNoIndex && !sharesLock(w.lastNode, end)) {
      hostEdge(w.lastNode, end, w.lastParent,
               event(e).kind == PathEventKind::Call && (bits(e) & kBlocking) != 0);
    }
    w.lastNode = end;
    w.lastParent = parent_[e];
    w.loading = kNoIndex;
    --w.depth;
  }

  // The runtime lock's order across threads, by time (HTA's
  // _construct_graph_from_cuda_runtime_events): each end follows every start pending before
  // it (its own call's by the call's time), and the previous end when no start came between.
  void lockEdges() {
    BudgetVector<uint32_t> nodes{BudgetAllocator<uint32_t>(budget_, kGraph)};
    for (uint32_t n = 0; n < graph_.nodes(); ++n) {
      if (holdsLock(n)) nodes.push_back(n);
    }
    std::sort(nodes.begin(), nodes.end(), [&](uint32_t a, uint32_t b) {
      return std::make_tuple(graph_.nodeTime[a], event(eventOf(a)).ordinal, a) <
             std::make_tuple(graph_.nodeTime[b], event(eventOf(b)).ordinal, b);
    });
    BudgetVector<uint32_t> pending{BudgetAllocator<uint32_t>(budget_, kGraph)};
    uint32_t last = kNoIndex;
    for (uint32_t n : nodes) {
      if (isStart(n)) {
        pending.push_back(n);
      } else {
        while (!pending.empty()) {
          const uint32_t start = pending.back();
          pending.pop_back();
          if (eventOf(start) == eventOf(n)) {
            const int64_t time = between(start, n);
            edge(start, n, hostPart(eventOf(n)), eventOf(n), time, time);
          } else {
            edge(start, n, PathPart::Cpu, kNoIndex, 0, 0);
          }
        }
        if (last != kNoIndex && !isStart(last)) edge(last, n, PathPart::Cpu, kNoIndex, 0, 0);
      }
      last = n;
    }
  }

  // The GPU operations by start and the syncs by end (a Stream Sync overlaps the copy it
  // waits for), as HTA's _construct_graph_from_kernels walks them.
  void gpuEdges() {
    struct Item {
      int64_t keyNs;
      uint64_t ordinal;
      uint32_t event;
    };
    BudgetVector<Item> items{BudgetAllocator<Item>(budget_, kGraph)};
    for (uint32_t i = 0; i < events_.size(); ++i) {
      const StepEvent& e = event(i);
      if (e.kind == PathEventKind::GpuOp && hasNodes(i)) items.push_back({e.startNs, e.ordinal, i});
      if (e.kind == PathEventKind::Sync && indexOf(e.callOrdinal) != kNoIndex) {
        items.push_back({e.endNs, e.ordinal, i});
      }
    }
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return std::tie(a.keyNs, a.ordinal) < std::tie(b.keyNs, b.ordinal);
    });
    syncedUntil_.assign(graph_.nodes(), INT64_MIN);
    for (const Item& item : items) {
      if (event(item.event).kind == PathEventKind::Sync) {
        syncEdges(item.event);
      } else {
        operationEdges(item.event);
      }
    }
  }

  using StreamKey = std::pair<int64_t, int64_t>;  // device, stream

  // The time a wait took once its source was done, from whichever came later: the source's
  // end, or the wait's own start (`readyNs`: the waiting call's, or the held-back operation's
  // launch) — before that the waiter was busy elsewhere, on a path of its own.
  void syncEdge(uint32_t from, uint32_t to, uint32_t attributedTo, int64_t readyNs) {
    const int64_t after = std::max(graph_.nodeTime[from], readyNs);
    edge(from, to, PathPart::Sync, attributedTo,
         std::max<int64_t>(0, spanNs(after, graph_.nodeTime[to])), 0, PathEdge::kArrow);
    if (!isStart(to)) syncedUntil_[to] = std::max(syncedUntil_[to], graph_.nodeTime[from]);
  }
  // A sync edge into a call's end: the call waited from its start.
  void syncEdgeToCall(uint32_t from, uint32_t callEnd, uint32_t call) {
    syncEdge(from, callEnd, call, graph_.nodeTime[callEnd - 1]);
  }

  void syncEdges(uint32_t s) {
    const StepEvent& sync = event(s);
    const uint32_t call = indexOf(sync.callOrdinal);
    const uint32_t callEnd = endNode(call);
    switch (static_cast<SyncKind>(sync.detail)) {
      case SyncKind::StreamWaitEvent:
        if (sync.waitsFor != kNoEvent && sync.releases != kNoEvent) {
          heldBack_[sync.releases] = sync.waitsFor;  // the later wait, as HTA keeps it
        }
        break;
      case SyncKind::EventSync: {
        const uint32_t op = indexOf(sync.waitsFor);
        if (op != kNoIndex && hasNodes(op)) syncEdgeToCall(endNode(op), callEnd, call);
        break;
      }
      case SyncKind::StreamSync: {
        auto found = lastOnStream_.find({sync.pid, sync.tid});
        if (found != lastOnStream_.end()) syncEdgeToCall(found->second, callEnd, call);
        break;
      }
      case SyncKind::ContextSync: {
        // The call returned once the last of them was done: each edge weighs the time after.
        int64_t readyNs = graph_.nodeTime[callEnd - 1];
        for (const auto& [stream, node] : lastOnStream_) {
          if (stream.first == sync.pid) readyNs = std::max(readyNs, graph_.nodeTime[node]);
        }
        for (const auto& [stream, node] : lastOnStream_) {
          if (stream.first == sync.pid) syncEdge(node, callEnd, call, readyNs);
        }
        break;
      }
      case SyncKind::Other:
        break;
    }
  }

  void operationEdges(uint32_t o) {
    const StepEvent& op = event(o);
    const uint32_t start = startNode(o);
    const auto kind = static_cast<GpuOpKind>(op.detail);
    const int64_t duration = between(start, endNode(o));
    edge(start, endNode(o),
         kind == GpuOpKind::Communication ? PathPart::Communication
         : kind == GpuOpKind::Memory      ? PathPart::Memory
                                          : PathPart::Compute,
         o, duration, duration);
    // A Stream Wait Event holding this operation back for another stream's.
    uint32_t waitedEnd = kNoIndex;
    auto held = heldBack_.find(op.ordinal);
    if (held != heldBack_.end()) {
      const uint32_t source = indexOf(held->second);
      heldBack_.erase(held);
      if (source != kNoIndex && hasNodes(source)) {
        if (event(source).pid == op.pid && event(source).tid == op.tid) {
          ++graph_.sameStreamWaits;  // HTA refuses such a graph; stream order says it
        } else {
          waitedEnd = endNode(source);
          syncEdge(waitedEnd, start, o, op.callStartNs);
        }
      }
    }
    const StreamKey stream{op.pid, op.tid};
    auto last = lastOnStream_.find(stream);
    const bool hasLast = last != lastOnStream_.end();
    const uint32_t call = indexOf(op.callOrdinal);
    if ((op.flags & StepEvent::kQueueEmpty) != 0 &&
        (!hasLast || graph_.nodeTime[last->second] < op.callStartNs) &&
        (waitedEnd == kNoIndex || graph_.nodeTime[waitedEnd] < op.callStartNs)) {
      const int64_t latency = between(startNode(call), start);
      edge(startNode(call), start, PathPart::Launch, o, latency, latency, PathEdge::kArrow);
    } else if (hasLast && between(last->second, start) < kStreamOrderNs &&
               (waitedEnd == kNoIndex ||
                graph_.nodeTime[waitedEnd] < graph_.nodeTime[last->second])) {
      const int64_t gap = between(last->second, start);
      edge(last->second, start, PathPart::GpuGap, o, gap, gap, PathEdge::kArrow);
    }
    if (hasLast) {
      last->second = endNode(o);
    } else {
      lastOnStream_.emplace(stream, endNode(o));
    }
  }

  // A blocking call's time is what it waited for, through its sync edges: its own edge
  // weighs what is left once the last of them was done (the whole call when the trace says
  // nothing of what it waited for; HTA weighs nothing).
  void weighBlockingCalls() {
    for (uint32_t index : blockingExits_) {
      PathEdge& e = graph_.edges[index];
      const int64_t from = std::max(graph_.nodeTime[e.from], syncedUntil_[e.to]);
      e.weightNs = std::max<int64_t>(0, spanNs(from, graph_.nodeTime[e.to]));
      e.part = PathPart::Sync;
    }
  }

  const CollectedTrace& trace_;
  const BudgetVector<StepEvent>& events_;
  const PathWindow window_;
  const std::string_view stepName_;
  uint32_t stepRange_ = kNoIndex;  // the step's own range among events_
  ReadBudget& budget_;
  StepGraph graph_;
  BudgetVector<uint32_t> slot_;    // by event: its nodes' slot, kNoIndex: none
  BudgetVector<uint32_t> parent_;  // by host event: the range around it
  // By host event: the data-loading range it is or lies in; the innermost operator or call
  // around it. kNoIndex: none.
  BudgetVector<uint32_t> loading_;
  BudgetVector<uint32_t> nodeAround_;
  BudgetUnorderedMap<uint32_t, uint8_t> nameBits_;
  BudgetVector<uint32_t> blockingExits_{BudgetAllocator<uint32_t>(budget_, kGraph)};
  // By node: the latest end of what a sync edge into it waited for; INT64_MIN: none.
  BudgetVector<int64_t> syncedUntil_{BudgetAllocator<int64_t>(budget_, kGraph)};
  BudgetMap<StreamKey, uint32_t> lastOnStream_{std::less<StreamKey>(),
                                               BudgetAllocator<char>(budget_, kGraph)};
  // By Stream Wait Events: the operation held back -> the operation it waits for.
  BudgetUnorderedMap<uint64_t, uint64_t> heldBack_{
      0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
      BudgetAllocator<std::pair<const uint64_t, uint64_t>>(budget_, kGraph)};
};

}  // namespace

StepGraph::StepGraph(ReadBudget& budget)
    : nodeTime(BudgetAllocator<int64_t>(budget, kGraph)),
      nodeEvent(BudgetAllocator<uint32_t>(budget, kGraph)),
      edges(BudgetAllocator<PathEdge>(budget, kGraph)) {}

StepGraph buildStepGraph(const CollectedTrace& trace, const BudgetVector<StepEvent>& events,
                         const PathWindow& window, std::string_view stepName, ReadBudget& budget) {
  return Builder(trace, events, window, stepName, budget).build();
}

}  // namespace kinetrace::detail::passes
