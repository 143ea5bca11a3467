#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

// What `kinetrace analyze --critical-path` says of each step: the longest chain of dependent
// work in it (critical_path_graph.h builds the chain's graph, as Holistic Trace Analysis
// does), how long it is, what it is made of, what on it took the time and what shortening
// that would save. The figures only; critical_path_render.h writes them as text, JSON and
// HTML.

namespace kinetrace::detail {

// What a stretch of the critical path was, in the order reports list them.
enum class PathPart : uint8_t {
  Cpu,            // the host inside a framework operator or a runtime call
  HostGap,        // the host between operators (Python, anything traced as no operator)
  DataLoading,    // the host inside a data-loading range
  Launch,         // from a launch call's start to its operation's start; launch calls
  Compute,        // kernels
  Communication,  // NCCL kernels; torch.distributed's calls (c10d::...) on the host
  Memory,         // copies and memsets
  Sync,           // waiting for the GPU: a sync's wake-up, a wait on another stream's event
  GpuGap,         // a stream between two of its queued operations
};
inline constexpr std::size_t kPathParts = 9;

// "cpu", "host_gap", ...: the JSON's keys (with "_ns").
const char* pathPartKey(PathPart part);
// "CPU", "host between operators", ...: for people.
const char* pathPartName(PathPart part);

// What took time on the path: the events of one name and part, and what making them take no
// time would save.
struct PathContributor {
  std::string name;  // the event's; a gap's: the range it lies in ("" for none)
  PathPart part = PathPart::Cpu;
  uint64_t events = 0;  // of that name on the path
  int64_t onPathNs = 0;
  // The path's length less the longest path once these took no time: exact, in the graph.
  int64_t savingNs = 0;
  // min(onPathNs, the length less the longest path that uses none of them): a bound that
  // needs no new timings, what shortening them can save at most.
  int64_t savingBoundNs = 0;
};

// A stretch of the path: consecutive edges of one part put down to one name.
struct PathStretch {
  std::string name;
  PathPart part = PathPart::Cpu;
  int64_t startNs = 0;  // where the path enters it
  int64_t ns = 0;       // its time on the path
};

struct CriticalPathStep {
  std::string name;  // the step's; "the window" for a trace without steps
  int64_t startNs = 0;
  int64_t endNs = 0;
  int64_t lengthNs = 0;
  // The longest path with HTA's weights: waiting (a host gap, a sync's wake-up, a blocking
  // call with no record of what it waited for) weighs nothing. What HTA's length is compared
  // with.
  int64_t htaLengthNs = 0;
  std::array<int64_t, kPathParts> parts{};  // of lengthNs, by PathPart
  uint64_t events = 0;                      // the step's events in the graph
  uint64_t nodes = 0;
  uint64_t edges = 0;
  uint64_t pathEdges = 0;
  // What the step's graph changed of the trace (also summed in the report's leftOut): edges
  // whose time runs backwards (weighed 0), edges closing a cycle (left out), Stream Wait
  // Events within one stream (no edge).
  uint64_t backwardEdges = 0;
  uint64_t cycleEdges = 0;
  uint64_t sameStreamWaits = 0;
  std::vector<PathContributor> contributors;  // longest on the path first (top N)
  // The path itself: its longest stretches, in the path's order.
  static constexpr std::size_t kStretches = 12;
  std::vector<PathStretch> stretches;
  // The path over the step's time: in each of kTimelineBins equal bins, the part that held
  // most of its time there (kPathParts: none).
  static constexpr std::size_t kTimelineBins = 240;
  std::vector<uint8_t> timeline;
  std::string skipped;  // why the step has no path ("" when it has one)
};

// The path's events, for the marked trace (critical_path_marks.h); made only when asked.
class CriticalPathMarks;

struct CriticalPathReport {
  bool asked = false;
  std::vector<CriticalPathStep> steps;
  // What the graphs left out or changed, by reason ("GPU operations whose launch call is not
  // in the trace"): said, never silent.
  std::map<std::string, uint64_t> leftOut;
  // Why there is no path at all ("" when the steps have theirs).
  std::string failed;
  std::shared_ptr<CriticalPathMarks> marks;
};

}  // namespace kinetrace::detail
