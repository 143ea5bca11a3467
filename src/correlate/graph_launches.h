#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>

namespace kinetrace::detail {

// Which launch of a CUDA graph ran a node of a conditional's body. Kernels, copies and
// memsets in the bodies of a graph's conditional nodes (IF, WHILE, SWITCH) come from CUPTI
// with correlation id 0, but with the id of the executable graph that ran them: the same id
// as the graph's other nodes, which carry their launch's correlation id.
//
// Two ways to find it:
//  - launchAt: launches of one executable graph run one after another, so such an operation
//    belongs to the launch whose first joined node started last before it. Exact when every
//    launch of the graph has a node outside its conditionals (a top-level node), and those
//    nodes have come.
//  - onlyLaunchOf: when the graph has no top-level node, nothing joins its launches; the
//    launch calls themselves (their executable graph and stream, from the launch callback)
//    and what CUDA guarantees rule launches out, and an operation gets a launch only when
//    exactly one is left. What rules a launch L out for an operation X (all on the trace's
//    one clock):
//      - L's call entered after X started (its work cannot start before);
//      - launches of one executable graph run in call order, each after the previous one
//        completed: X cannot belong to a launch called before one that ran an operation
//        starting before X ended, nor to one called after one that ran an operation ending
//        after X started;
//      - a synchronisation of L's stream, or of its context, that began after L's call
//        returned and returned before X ended: L was complete by then (and so was every
//        earlier launch of the graph);
//      - stream order: on L's stream, work runs in call order, so X cannot belong to L when
//        work called on that stream before L ran an operation ending after X started, or
//        work called after L one starting before X ended.
//    A graph instantiated before the recording began may have been launched before it too,
//    unseen: such a launch stays a candidate until the rules above rule it out.
//
// Bounded: per graph, the last `keptPerGraph` joined launches for launchAt, none older than
// `keptForNs` before the newest; the last kCallsKept launch calls of all graphs for
// onlyLaunchOf, none older than `keptForNs` before the newest (a launch let go stays a
// candidate, summarised per graph, so letting go never makes a guess).
class GraphLaunches {
 public:
  // A graph launch call as the launch callback saw it.
  struct LaunchCall {
    uint32_t graphId = 0;  // the executable graph's id (cuptiGetGraphExecId)
    uint32_t correlationId = 0;
    uint32_t contextId = 0;
    uint32_t streamId = 0;
    bool streamKnown = false;
    int64_t callStartNs = 0;
    int64_t callEndNs = 0;
  };
  // What onlyLaunchOf found: `candidates` launches left (0, 1, or 2 meaning "more than one",
  // an unseen one counted only beside a seen one), and the one when exactly one is left.
  struct Found {
    uint32_t correlationId = 0;
    uint32_t candidates = 0;
  };

  GraphLaunches(std::size_t keptPerGraph, int64_t keptForNs)
      : keptPerGraph_(keptPerGraph), keptForNs_(keptForNs) {}

  // A node of graph `graphId` started at `startNs` and joined launch `correlationId`.
  void onJoined(uint32_t graphId, int64_t startNs, uint32_t correlationId);
  // The launch of graph `graphId` that ran an operation starting at `startNs`; 0: none known.
  uint32_t launchAt(uint32_t graphId, int64_t startNs) const;

  // Graph `graphId` was instantiated while recording: none of its launches is unseen.
  void onInstantiated(uint32_t graphId);
  void onLaunch(const LaunchCall& call);
  // A synchronisation of a stream (`wholeContext` false) or of a whole context.
  void onSync(uint32_t contextId, bool wholeContext, uint32_t streamId, int64_t startNs,
              int64_t endNs);
  // An operation [startNs, endNs] is known to have been run by launch `correlationId`.
  void onOperation(uint32_t correlationId, int64_t startNs, int64_t endNs);
  // The launches of graph `graphId` an operation [startNs, endNs] may belong to.
  Found onlyLaunchOf(uint32_t graphId, int64_t startNs, int64_t endNs) const;

  void clear();
  // Roughly what it holds, for the memory budget.
  std::size_t heldBytes() const;

  static constexpr std::size_t kCallsKept = 16384;
  static constexpr std::size_t kGraphsKept = 65536;
  // Launches of one graph looked at for one operation, newest first: in a long run of
  // launches that nothing tells apart, the operation is ambiguous anyway.
  static constexpr std::size_t kWalk = 1024;
  // How far along a stream, each way, work is looked at for the stream-order rule: the
  // nearest work that ran something is what rules out; farther work seldom adds to it.
  static constexpr std::size_t kStreamReach = 64;

 private:
  struct Call {
    LaunchCall call;
    uint64_t streamSeq = 0;           // its place on its stream's list
    int64_t firstOpNs = INT64_MAX;    // its operations known so far: earliest start,
    int64_t lastOpEndNs = INT64_MIN;  //   latest end
    int64_t doneByNs = INT64_MAX;     // a synchronisation proved it complete by then
  };
  struct Graph {
    // (call start, correlation id), in call order: one graph's launches never overlap (CUDA
    // wants calls on one executable graph serialised).
    std::deque<std::pair<int64_t, uint32_t>> calls;
    // Launches not in `calls`: unseen (before the recording) or let go. The latest time
    // all were proved complete by (INT64_MAX: not proved).
    bool hidden = true;
    int64_t hiddenDoneByNs = INT64_MAX;
  };
  struct Stream {
    std::deque<uint32_t> calls;  // correlation ids, in the order the calls were recorded
    uint64_t frontSeq = 0;       // the sequence number of calls.front()
  };

  static uint64_t streamKey(uint32_t context, uint32_t stream) {
    return uint64_t{context} << 32 | stream;
  }
  const Call* find(uint32_t correlationId) const;
  void forget(uint32_t correlationId);
  bool streamAllows(const Call& c, int64_t startNs, int64_t endNs) const;

  std::size_t keptPerGraph_;
  int64_t keptForNs_;
  // Per graph id, (start of the launch's first joined node, launch correlation id), oldest
  // first.
  std::unordered_map<uint32_t, std::deque<std::pair<int64_t, uint32_t>>> launches_;

  std::unordered_map<uint32_t, Call> calls_;  // by correlation id
  std::deque<uint32_t> callOrder_;            // as recorded, to let the oldest go
  std::unordered_map<uint32_t, Graph> graphs_;
  std::unordered_map<uint64_t, Stream> streams_;  // by (context, stream)
};

}  // namespace kinetrace::detail
