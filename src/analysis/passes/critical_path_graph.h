#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "analysis/passes/critical_path_report.h"
#include "analysis/passes/critical_path_steps.h"

// A step's dependency graph, built by Holistic Trace Analysis's rules (its CPGraph), so
// that its longest path is HTA's critical path. A node is a moment: the start or the end
// of an event. The events with nodes are the framework's operators (category cpu_op), the
// CUDA runtime and driver calls, and the GPU operations; other host ranges (annotations,
// Python functions, steps) nest operators but have no nodes. The edges:
//
//   host, per thread  the ranges nested by time (HTA's call stack: at one time, ends
//                     first, then the longer range), walked depth first: each operator's
//                     start and end follow the previous node of its thread. Between two
//                     operators at the top (inside no operator) the edge is a host gap;
//                     inside an operator it is the operator's time. The thread running
//                     "autograd" ranges is walked as part of the one running "forward"
//                     ranges, when each is one thread. A blocking call (cudaDeviceSynchronize,
//                     cudaStreamSynchronize, cudaEventSynchronize, cudaEventQuery, cudaMemcpy)
//                     takes no time: what it waited for does, through a sync edge.
//   runtime lock      cudaLaunchKernel, cudaMemcpyAsync and cudaHostAlloc hold CUDA's
//                     runtime lock: across threads, each call's end follows the starts
//                     pending before it and the previous call's end.
//   launch            a launch call's start to its operation's start, when the stream's
//                     queue was empty from the launch to the start (HTA's queue length) and
//                     the stream's previous operation ended before the call
//   stream order      else, the stream's previous operation's end to its start, when the
//                     gap is under 1.5 ms (HTA's KERNEL_KERNEL_DELAY_THRESHOLD_US)
//   sync              an operation's end to the end of the call that waited for it: the
//                     stream's last operation for a Stream Sync, every stream's of the
//                     device for a Context Sync, the event's operation for an Event Sync;
//                     and for a Stream Wait Event, the event's operation's end to the start
//                     of the next operation the waiting thread launched on the waiting stream
//
// Each edge weighs its time twice: as HTA weighs it (a host gap and a sync weigh nothing)
// and as kinetrace does, where waiting is time too: a host gap weighs the gap, a sync the
// time from the operation's end to the wait's (the wake-up), and a blocking call that
// nothing in the trace says it waited for weighs its duration. The step's own range has
// nodes too, for kinetrace's weights alone: its start leads to its thread's first node and
// its thread's last node to its end, so that the host's time before the first operator (a
// data loader's wait) and after the last is on the path. An edge whose time runs
// backwards (a child that ends after its parent, in nanosecond timestamps) weighs 0,
// counted.

namespace kinetrace::detail::passes {

inline constexpr uint32_t kNoIndex = ~uint32_t{0};

struct PathEdge {
  static constexpr uint8_t kArrow = 1;  // drawn as an arrow in the marked trace
  uint32_t from = 0;
  uint32_t to = 0;
  int64_t weightNs = 0;     // kinetrace's weight
  int64_t htaWeightNs = 0;  // HTA's
  // The event the edge's time is put down to (an index into the step's events), as HTA
  // attributes it; a host gap's: the range it lies in. kNoIndex: none.
  uint32_t event = kNoIndex;
  PathPart part = PathPart::Cpu;
  uint8_t flags = 0;
};

struct StepGraph {
  explicit StepGraph(ReadBudget& budget);
  // Node n is the start (n even) or the end (n odd) of the event nodeEvent[n / 2].
  BudgetVector<int64_t> nodeTime;
  BudgetVector<uint32_t> nodeEvent;
  BudgetVector<PathEdge> edges;
  // Edges whose time ran backwards (weighed 0), and edges HTA would refuse (a Stream Wait
  // Event between two operations of one stream: left out).
  uint64_t backwardEdges = 0;
  uint64_t sameStreamWaits = 0;

  uint32_t nodes() const { return static_cast<uint32_t>(nodeTime.size()); }
};

// What a step's graph takes of the budget per event, at most: the graph of a step too large
// for what is left is not built (the step is said and skipped).
inline constexpr std::size_t kGraphBytesPerEvent = 320;

// The graph of one step's events (in the trace's order, as StepEvents hands them out); the
// step's own range, when it is among them, is the host range named `stepName` that spans
// `window` exactly. Memory: from `budget`; throws its error when the graph does not fit.
StepGraph buildStepGraph(const CollectedTrace& trace, const BudgetVector<StepEvent>& events,
                         const PathWindow& window, std::string_view stepName, ReadBudget& budget);

}  // namespace kinetrace::detail::passes
