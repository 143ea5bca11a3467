#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/read_budget.h"
#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"

// What `kinetrace diff` keeps of one rank's trace: analyze's report of it (trace_analysis.h:
// the GPU's time per step, split into busy and idle parts), its steps, and the time and count
// of every kernel, operator, annotation and runtime call name, step by step.
//
// A name's events are counted in the step they belong to as Holistic Trace Analysis (HTA)
// assigns iterations (hta/common/trace.py, add_iteration): a host range (an operator, an
// annotation, a runtime call) belongs to the step its start falls in, [start, end); a GPU
// operation to the
// step its launch call started in, found by their correlation id. An operation without a
// launch call in the trace, and anything outside every step, belongs to no step
// (kOutsideSteps): it counts only where whole traces are compared.
//
// The steps are the trace's ProfilerStep#N ranges; a trace without any has its other step
// ranges ("step N": NVTX step marks), as analyze finds them. Each name once: the longest
// range of that name, as analyze keeps them. Step ranges are the step time, not annotations.
//
// Memory: the trace's lists are read within its budget (spill.h); what the profile keeps (a
// row per name, a figure per step the name ran in) is taken from the budget too.

namespace kinetrace::detail {

// What the diff tabulates by name.
enum class NameKind : uint8_t {
  Kernel,      // a GPU operation: kernel, copy, memset, a whole CUDA graph's run
  Op,          // a framework operator: torch.profiler's cpu_op ranges
  Annotation,  // a user's range: record_function, NVTX (user_annotation)
  Call,        // a CUDA runtime or driver call (cuda_runtime, cuda_driver): launches, syncs
};
inline constexpr std::size_t kNameKinds = 4;
// "kernel", "op", "annotation", "call".
const char* nameKindName(NameKind kind);

// A step of a run.
struct ProfileStep {
  std::string name;
  std::optional<int64_t> number;  // "ProfilerStep#12", "step 12": 12; none when none is said
  int64_t startNs = 0;
  int64_t endNs = 0;
  TimeBreakdown time;  // analyze's figures of the step, summed over the devices
};

struct NameFigures {
  uint64_t count = 0;
  int64_t ns = 0;
};

// The slot of events outside every step.
inline constexpr uint32_t kOutsideSteps = ~uint32_t{0};

struct NameProfile {
  std::string name;
  NameKind kind = NameKind::Kernel;
  GpuOpKind opKind = GpuOpKind::Compute;  // a kernel's: compute, communication or memory
  bool dataLoading = false;               // a data-loading range (analyze's rule)
  // The name's figures in each step it ran in (its index in RunProfile::steps), by slot; the
  // events outside every step last, in kOutsideSteps.
  std::vector<std::pair<uint32_t, NameFigures>> slots;
};

struct RunProfile {
  std::string path;
  int64_t rank = -1;
  RankReport report;               // analyze's figures of the whole trace and its steps
  std::vector<ProfileStep> steps;  // by start
  std::vector<NameProfile> names;  // by kind, then name
  uint64_t gpuOpsWithoutCall = 0;  // GPU operations whose launch call the trace lacks
  // What the steps and names take of the read budget, given back when the last copy goes.
  std::shared_ptr<BudgetHold> held;
};

// Reads the trace's names (its GPU operations joined to their launch calls, its host ranges),
// then runs analyze's analysis on it (the trace is consumed). Throws the budget's error,
// naming what grew, when the names and their steps do not fit.
RunProfile profileRank(CollectedTrace trace, const AnalysisOptions& options);

// The number a step's name says: the first run of digits ("ProfilerStep#12" -> 12), none
// when it has none or one too long for 64 bits.
std::optional<int64_t> stepNumberOf(std::string_view name);

}  // namespace kinetrace::detail
