#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/diff/run_profile.h"
#include "analysis/trace_analysis.h"

// `kinetrace diff BASE NEW`: what changed between two runs, rank by rank (trace_diff.cpp
// compares, diff_findings.cpp says it, diff_report.cpp and diff_html.cpp write it).
//
//   steps        matched by number (ProfilerStep#N, "step N") where the two runs share
//                numbers: those steps on both sides. Runs that share none are compared by
//                their per-step averages, each over all its steps. Runs without steps (or
//                with steps on one side only, which is said) are compared whole. A step far
//                from the rest of its run is left out (and said; of matched steps, its number
//                on both sides): further from the median step than five robust standard
//                deviations (1.4826 times the median absolute deviation) and a tenth of the
//                median, at most a quarter of the steps. A run's first profiled step often
//                carries the profiler's start (26 ms against 17.6 ms in a transformer's
//                trace), which would otherwise be its spread and its mean.
//   figures      per step (a mean over the steps compared; the whole trace's figure where
//                traces are compared whole): the step time (its host range); the parts of
//                the step's GPU time as analyze splits them (trace_analysis.h: busy as
//                compute, communication, memory; idle as before the first GPU operation,
//                host wait, launch, kernel wait, waiting on other work, other; and the idle
//                time while data loading ran), per GPU; each kernel, operator, annotation and
//                runtime call name's count and time (run_profile.h says which step an event
//                belongs to).
//   noise        from the step times' own spread: a figure changed beyond run-to-run noise
//                when the change of its mean is larger than twice the larger of the two
//                sides' step-to-step standard deviations of the step time, and larger than 2%
//                of BASE's mean step time (the floor: a smaller change is not worth a
//                sentence, and two runs of one program on one machine differ by about that
//                much). Every figure is a part of the step's time, so one threshold judges
//                them all; each figure's own spread is reported beside it. Traces compared
//                whole have no spread: the floor alone.
//   names        added (absent from BASE), removed (absent from NEW), increased, decreased
//                or unchanged by count, as HTA's TraceDiff.ops_diff sorts them.

namespace kinetrace::detail {

struct DiffOptions {
  AnalysisOptions analysis;
  std::size_t top = 10;  // rows of each table in the text and HTML reports
  // The noise rule (above).
  double noiseSpreads = 2.0;
  double noiseFloorShare = 0.02;
};

// How the two runs' steps were put side by side.
enum class StepMatch { Matched, Averaged, Whole };
const char* stepMatchName(StepMatch match);  // "matched", "averaged", "whole"

// One figure per step on each side (nanoseconds, a mean over the steps compared), its
// step-to-step standard deviation, and whether its change is beyond noise.
struct FigureDiff {
  double base = 0;
  double after = 0;       // NEW's
  double baseSpread = 0;  // the figure's own step-to-step standard deviation
  double afterSpread = 0;
  double noise = 0;  // the change a figure needs to be beyond noise (the rank's, of step time)
  bool beyondNoise = false;
  double delta() const { return after - base; }
};

// A part of the step's GPU time (analyze's TimeBreakdown), per step and GPU.
struct PartDiff {
  const char* id;    // "compute_ns", "host_wait_ns", ...: TimeBreakdown's --json keys
  const char* name;  // "compute", "host wait", ...: as analyze's report names them
  int64_t TimeBreakdown::*field;
  FigureDiff time;
};

enum class NameChange { Added, Removed, Increased, Decreased, Unchanged };
const char* nameChangeName(NameChange change);  // "added", "removed", ...

struct NameDiff {
  std::string name;
  NameKind kind = NameKind::Kernel;
  GpuOpKind opKind = GpuOpKind::Compute;
  bool dataLoading = false;
  NameChange change = NameChange::Unchanged;
  // Over the steps compared (HTA's counts and total_duration for those iterations).
  uint64_t baseCount = 0;
  uint64_t afterCount = 0;
  int64_t baseNs = 0;
  int64_t afterNs = 0;
  double baseCountPerStep = 0;
  double afterCountPerStep = 0;
  FigureDiff time;  // its time per step
};

// The steps of one side, as compared.
struct SideSteps {
  std::string path;
  std::size_t steps = 0;          // in the trace
  std::vector<int64_t> compared;  // the numbers of the steps compared (those with one)
  std::size_t comparedCount = 0;  // steps compared (1 where the trace is compared whole)
  // Steps left out as far from the others (name, length), and the median step compared.
  std::vector<std::pair<std::string, int64_t>> leftOut;
  int64_t medianStepNs = 0;
  std::size_t devices = 0;
  uint64_t gpuOps = 0;
  uint64_t gpuOpsWithoutCall = 0;
  int64_t windowNs = 0;  // the whole trace's
};

struct RankDiff {
  int64_t rank = -1;
  StepMatch match = StepMatch::Whole;
  SideSteps base;
  SideSteps after;
  FigureDiff stepTime;
  std::vector<PartDiff> parts;  // kDiffParts' order
  std::vector<NameDiff> names;  // by kind, then the size of the time change, largest first
  // Host-wait gaps that opened while the host was in a synchronisation, per step (analyze's
  // figure of the whole trace, over its steps), by the sync: NEW's, with BASE's beside.
  std::vector<std::pair<std::string, FigureDiff>> hostWaitAfterSync;
};

// A finding of `diff` (Finding: id, rank as an index in DiffReport::ranks, text, evidence),
// with what it names for programs: the part of the step's time (PartDiff::id) and the
// kernel, operator or annotation names behind it.
struct DiffFinding : Finding {
  std::string part;
  std::vector<std::string> names;
};

struct DiffReport {
  // What BASE and NEW were given as (a trace, a directory); "" where the ranks' files say it.
  std::string basePath;
  std::string afterPath;
  std::vector<RankDiff> ranks;
  std::vector<DiffFinding> findings;  // most telling first
};

// Every kind of finding `diff` makes, by the id a program reading --json keys on; an id
// keeps its meaning for good. docs/ANALYSIS.md holds this table (a test compares them).
inline constexpr FindingKind kDiffFindingKinds[] = {
    {"step-time-change", "the step time changed beyond noise, and the part of it that explains it"},
    {"step-time-within-noise",
     "the step time changed by no more than noise, but parts of it did (said apart)"},
    {"no-change", "the step time and its parts changed by no more than run-to-run noise"},
    {"part-change",
     "one part of the step's GPU time changed beyond noise, and the names behind it"},
    {"names-added", "kernels, operators, annotations or runtime calls only NEW has"},
    {"names-removed", "kernels, operators, annotations or runtime calls only BASE has"},
    {"steps-compared", "how the steps were matched, where not every step matched its number"},
    {"steps-left-out", "steps far from the rest of their run, left out of the comparison"},
    {"no-steps", "one run or both have no step ranges: traces compared whole"},
    {"no-gpu-operations", "one run or both have no GPU operation"},
    {"operations-without-launch", "GPU operations whose launch call the trace lacks: in no step"},
};
// The table as Markdown (what docs/ANALYSIS.md holds).
std::string diffFindingKindsMarkdown();

// Compares the ranks' profiles pairwise (base[i] with after[i]) and says what changed.
DiffReport diffRuns(const std::vector<RunProfile>& base, const std::vector<RunProfile>& after,
                    const DiffOptions& options);
// One rank's comparison (what diffRuns does for each pair).
RankDiff diffRank(const RunProfile& base, const RunProfile& after, const DiffOptions& options);
// The findings of a report, most telling first.
std::vector<DiffFinding> diffFindingsOf(const DiffReport& report, const DiffOptions& options);

std::string formatDiff(const DiffReport& report, const DiffOptions& options);
std::string diffJson(const DiffReport& report);
// One self-contained HTML page, in analyze's style.
std::string diffHtml(const DiffReport& report, const DiffOptions& options);

}  // namespace kinetrace::detail
