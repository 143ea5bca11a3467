// What `kinetrace diff` says first: the step time's change and the part of the GPU's time that
// explains it, the names behind it, then what else changed, each a sentence with its numbers
// (and an id and figures for programs: kDiffFindingKinds).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "analysis/analysis_html_charts.h"
#include "analysis/diff/trace_diff.h"
#include "analysis/report_text.h"

namespace kinetrace::detail {
namespace {

using report_text::shorten;

// The parts as a sentence names them, by PartDiff::id.
struct PartWords {
  const char* id;
  const char* phrase;
};
constexpr PartWords kPartWords[] = {
    {"compute_ns", "GPU compute time"},
    {"communication_ns", "communication time (NCCL kernels, no compute beside them)"},
    {"memory_ns", "copy and memset time"},
    {"before_first_op_ns", "GPU idle before its first operation"},
    {"host_wait_ns", "GPU idle waiting for the host (host wait)"},
    {"launch_ns", "GPU idle while launching"},
    {"kernel_wait_ns", "GPU idle between queued kernels (kernel wait)"},
    {"other_work_wait_ns", "GPU idle waiting on other work"},
    {"other_idle_ns", "GPU idle for no reason the trace shows"},
    {"data_loading_idle_ns", "GPU idle while data loading"},
};
constexpr const char* kDataLoadingPart = "data_loading_idle_ns";
constexpr const char* kHostWaitPart = "host_wait_ns";
constexpr std::size_t kBusyParts = 3;  // compute, communication, memory come first
constexpr std::size_t kNamesBehind = 3;
constexpr std::size_t kNamesListed = 5;
// The host's own pace: NEW's time over BASE's for the operators that ran as often a step in
// both. A change by this share or more, the step's way, over at least kLeastPacedOperators,
// is the host running faster or slower for the same work (another CPU clock, other load on
// the machine: two processes, not two programs). On an H100 host, four runs of a transformer
// paced 1-8% from the first; a fifth, whose host ran every operator slower, 25%.
constexpr double kHostPaceShare = 0.15;
constexpr std::size_t kLeastPacedOperators = 5;

const char* phraseOf(const PartDiff& part) {
  for (const PartWords& words : kPartWords) {
    if (std::strcmp(words.id, part.id) == 0) return words.phrase;
  }
  return part.name;
}

std::string capitalised(std::string text) {
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 32);
  return text;
}

std::string time(double ns) {
  return report_text::duration(std::llround(ns));
}
std::string signedTime(double ns) {
  return (ns >= 0 ? "+" : "") + time(ns);
}
const char* rose(double delta) {
  return delta >= 0 ? "rose" : "fell";
}
std::string perStep(double count) {
  return fmt::format("{:.3g}", count);
}
// "(48.0 ms -> 69.3 ms, +44%)"
std::string beforeAfter(const FigureDiff& f, bool withShare) {
  std::string out = fmt::format("({} -> {}", time(f.base), time(f.after));
  if (withShare && f.base > 0) out += fmt::format(", {:+.0f}%", 100 * f.delta() / f.base);
  return out + ")";
}

// "kernel `gemm` -2.00 ms a step (5.00 ms -> 3.00 ms)", "op `aten::item` added (1 a step,
// 3.10 ms a step)".
std::string nameChange(const NameDiff& n) {
  // A kernel by its name without templates and arguments ("reduce_kernel"): --json has it
  // whole.
  const std::string shown =
      n.kind == NameKind::Kernel ? shorten(html::shortKernelName(n.name), 60) : shorten(n.name, 60);
  const char* noun = n.kind == NameKind::Call ? "runtime call" : nameKindName(n.kind);
  const std::string what = fmt::format("{} `{}`", noun, shown);
  if (n.change == NameChange::Added) {
    return fmt::format("{} added ({} a step, {} a step)", what, perStep(n.afterCountPerStep),
                       time(n.time.after));
  }
  if (n.change == NameChange::Removed) {
    return fmt::format("{} removed (was {} a step, {} a step)", what, perStep(n.baseCountPerStep),
                       time(n.time.base));
  }
  std::string counts;
  if (n.change != NameChange::Unchanged) {
    counts =
        fmt::format(", {} -> {} a step", perStep(n.baseCountPerStep), perStep(n.afterCountPerStep));
  }
  return fmt::format("{} {} a step ({} -> {}{})", what, signedTime(n.time.delta()),
                     time(n.time.base), time(n.time.after), counts);
}

bool isIdle(const RankDiff& r, const PartDiff& part) {
  return &part - r.parts.data() >= static_cast<std::ptrdiff_t>(kBusyParts);
}

const PartDiff* partNamed(const RankDiff& r, const char* id) {
  for (const PartDiff& part : r.parts) {
    if (std::strcmp(part.id, id) == 0) return &part;
  }
  return nullptr;
}

// The names behind a part's change: kernels of its kind for busy time, host ranges for time
// the GPU waited (the host did more, or less), kernels by their count for launching and moving
// between kernels. Those that changed beyond noise (or came or went) the same way, largest
// first; data-loading ranges first for data loading.
std::vector<const NameDiff*> namesBehind(const RankDiff& r, const PartDiff& part) {
  const std::string id = part.id;
  const bool byCount = id == "launch_ns" || id == "kernel_wait_ns";
  const double sign = part.time.delta() >= 0 ? 1 : -1;
  auto fits = [&](const NameDiff& n) {
    if (id == "compute_ns") return n.kind == NameKind::Kernel && n.opKind == GpuOpKind::Compute;
    if (id == "communication_ns") {
      return n.kind == NameKind::Kernel && n.opKind == GpuOpKind::Communication;
    }
    if (id == "memory_ns") return n.kind == NameKind::Kernel && n.opKind == GpuOpKind::Memory;
    if (byCount) return n.kind == NameKind::Kernel;
    return n.kind != NameKind::Kernel;
  };
  auto change = [&](const NameDiff& n) {
    return byCount ? n.afterCountPerStep - n.baseCountPerStep : n.time.delta();
  };
  std::vector<const NameDiff*> found;
  for (const NameDiff& n : r.names) {
    if (!fits(n) || change(n) * sign <= 0) continue;
    const bool cameOrWent = n.change == NameChange::Added || n.change == NameChange::Removed;
    if (byCount ? n.change == NameChange::Unchanged : !(n.time.beyondNoise || cameOrWent)) {
      continue;
    }
    found.push_back(&n);
  }
  const bool dataLoading = id == kDataLoadingPart;
  std::stable_sort(found.begin(), found.end(), [&](const NameDiff* a, const NameDiff* b) {
    if (dataLoading && a->dataLoading != b->dataLoading) return a->dataLoading;
    return std::abs(change(*a)) > std::abs(change(*b));
  });
  if (found.size() > kNamesBehind) found.resize(kNamesBehind);
  return found;
}

std::string behindText(const std::vector<const NameDiff*>& names) {
  if (names.empty()) return "";
  std::string out = " Behind it: ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : "; ") + nameChange(*names[i]);
  }
  return out + ".";
}

// What to look at next, for the parts that have a usual cause.
std::string adviceFor(const RankDiff& r, const PartDiff& part) {
  const std::string id = part.id;
  if (part.time.delta() <= 0) return "";
  if (id == kDataLoadingPart) {
    return " The input pipeline got slower: more DataLoader workers (num_workers), "
           "pin_memory and prefetching, or a faster dataset, take it off the GPU's path.";
  }
  if (id == kHostWaitPart) {
    for (const auto& [sync, figure] : r.hostWaitAfterSync) {
      if (figure.delta() > 0 && figure.beyondNoise && 2 * figure.delta() >= part.time.delta()) {
        return fmt::format(
            " NEW's host waits began in a synchronisation ({} {} a step): take the sync out of "
            "the loop (an .item(), .cpu() or print of a GPU tensor waits for the GPU).",
            sync, signedTime(figure.delta()));
      }
    }
  }
  if (id == "launch_ns" || id == "kernel_wait_ns") {
    return " More, smaller kernels: torch.compile or a CUDA graph launches fewer.";
  }
  return "";
}

// The part a headline puts the change down to, and the idle part it is a share of (data
// loading's idle time is mostly host wait).
struct Explanation {
  const PartDiff* cause = nullptr;
  const PartDiff* within = nullptr;
};

class Findings {
 public:
  Findings(const DiffReport& report, std::size_t rank, const DiffOptions& options,
           std::vector<DiffFinding>& out)
      : r_(report.ranks[rank]), rank_(rank), options_(options), out_(out) {
    if (report.ranks.size() > 1) {
      prefix_ =
          r_.rank >= 0 ? fmt::format("rank {}: ", r_.rank) : fmt::format("trace {}: ", rank + 1);
    }
  }

  // What changed in the work comes first where the step time is not put down to it: when the
  // step time did not change beyond noise, or changed because the host ran at another pace
  // (hostPaceExplains): then the names that came or went are the change made.
  void sayAll() {
    const std::vector<const PartDiff*> changed = partsBeyondNoise();
    const bool beyond = r_.stepTime.beyondNoise;
    const bool workFirst = !beyond || hostPaceExplains(explaining().cause);
    if (workFirst) sayNamesCameOrWent();
    const Explanation said = beyond ? headline() : withinNoise(changed);
    for (const PartDiff* part : changed) {
      if (part != said.cause && part != said.within) partChange(*part);
    }
    if (!workFirst) sayNamesCameOrWent();
    statements();
  }

 private:
  DiffFinding& say(const char* id, std::string text,
                   std::vector<std::pair<std::string, double>> evidence) {
    DiffFinding f;
    f.id = id;
    f.rank = rank_;
    f.text = prefix_ + std::move(text);
    f.evidence = std::move(evidence);
    out_.push_back(std::move(f));
    return out_.back();
  }

  void sayNamesCameOrWent() {
    namesCameOrWent(NameChange::Added, "names-added", "Only NEW has");
    namesCameOrWent(NameChange::Removed, "names-removed", "Only BASE has");
  }

  // The host's pace (kHostPaceShare): over the operators that ran as often a step in both
  // runs, NEW's time over BASE's (nested operators in both sums alike: a ratio of the same
  // work's time).
  struct HostPace {
    std::size_t operators = 0;
    double ratio = 1;
  };
  HostPace hostPace() const {
    HostPace pace;
    double base = 0;
    double after = 0;
    for (const NameDiff& n : r_.names) {
      if (n.kind != NameKind::Op || n.baseCount == 0 || n.time.base <= 0 ||
          n.baseCountPerStep != n.afterCountPerStep) {
        continue;
      }
      ++pace.operators;
      base += n.time.base;
      after += n.time.after;
    }
    if (base > 0) pace.ratio = after / base;
    return pace;
  }

  // Whether the step's change, put down to `cause`, is the host's pace: the GPU waited on a
  // host that ran the same operators at least kHostPaceShare slower (or faster), the step's
  // way.
  bool hostPaceExplains(const PartDiff* cause) const {
    if (cause == nullptr || std::strcmp(cause->id, kHostWaitPart) != 0) return false;
    const HostPace pace = hostPace();
    const double change = pace.ratio - 1;
    return pace.operators >= kLeastPacedOperators && std::abs(change) >= kHostPaceShare &&
           change * r_.stepTime.delta() > 0;
  }

  static std::vector<std::pair<std::string, double>> figures(const FigureDiff& f) {
    return {
        {"base_ns", f.base}, {"new_ns", f.after}, {"delta_ns", f.delta()}, {"noise_ns", f.noise}};
  }

  // The parts beyond noise, largest change first; data loading's idle time only where host
  // wait is not (it is a share of idle time, said with the part it explains).
  std::vector<const PartDiff*> partsBeyondNoise() const {
    std::vector<const PartDiff*> parts;
    for (const PartDiff& part : r_.parts) {
      if (part.time.beyondNoise) parts.push_back(&part);
    }
    std::stable_sort(parts.begin(), parts.end(), [](const PartDiff* a, const PartDiff* b) {
      return std::abs(a->time.delta()) > std::abs(b->time.delta());
    });
    return parts;
  }

  // The part that explains the step's change: the largest change the same way among the
  // parts that make up the step (data loading's idle time is within them), beyond noise or
  // not (`beyondNoise` says); said as data loading's where it changed beyond noise and by at
  // least half as much as that part, an idle one (`within`: said with it).
  Explanation explaining() const {
    const double sign = r_.stepTime.delta() >= 0 ? 1 : -1;
    const PartDiff* top = nullptr;
    for (const PartDiff& part : r_.parts) {
      if (std::strcmp(part.id, kDataLoadingPart) == 0 || part.time.delta() * sign <= 0) continue;
      if (top == nullptr || std::abs(part.time.delta()) > std::abs(top->time.delta())) top = &part;
    }
    const PartDiff* loading = partNamed(r_, kDataLoadingPart);
    const bool loadingExplains =
        loading != nullptr && loading->time.beyondNoise && loading->time.delta() * sign > 0 &&
        (top == nullptr ||
         (isIdle(r_, *top) && 2 * std::abs(loading->time.delta()) >= std::abs(top->time.delta())));
    if (loadingExplains) return {loading, top};
    return {top, nullptr};
  }

  Explanation headline() {
    const FigureDiff& step = r_.stepTime;
    const Explanation explanation = explaining();
    const PartDiff* cause = explanation.cause;
    std::string text =
        fmt::format("Step time {} {} {}{}", rose(step.delta()), time(std::abs(step.delta())),
                    beforeAfter(step, true), devicesNote());
    auto evidence = figures(step);
    evidence.push_back({"delta_share", step.base > 0 ? step.delta() / step.base : 0.0});
    evidence.push_back({"base_steps", static_cast<double>(r_.base.comparedCount)});
    evidence.push_back({"new_steps", static_cast<double>(r_.after.comparedCount)});
    if (cause == nullptr) {
      text += fmt::format(
          ", beyond its noise of {}, but no part of the GPU's time changed the same way (the "
          "table of parts below).",
          time(step.noise));
      say("step-time-change", std::move(text), std::move(evidence));
      return {};
    }
    const double explained = step.delta() != 0 ? cause->time.delta() / step.delta() : 0.0;
    text += fmt::format(": {} {} {} a step {}, {:.0f}% of the change{}", phraseOf(*cause),
                        rose(cause->time.delta()), time(std::abs(cause->time.delta())),
                        beforeAfter(cause->time, false), 100 * explained,
                        cause->time.beyondNoise ? "" : " (each part's change within noise)");
    if (explanation.within != nullptr) {
      text += fmt::format(" ({} {})", explanation.within->name,
                          signedTime(explanation.within->time.delta()));
    }
    text += ".";
    const std::vector<const NameDiff*> names = namesBehind(r_, *cause);
    text += behindText(names);
    if (hostPaceExplains(cause)) {
      const HostPace pace = hostPace();
      const bool slower = pace.ratio > 1;
      const bool cameOrWent = std::any_of(r_.names.begin(), r_.names.end(), [](const NameDiff& n) {
        return n.change == NameChange::Added || n.change == NameChange::Removed;
      });
      text += fmt::format(
          " The host ran {} for the same work: the {} operators that ran as often a step in "
          "both took {:.0f}% {} in NEW, a difference between the two processes (the CPU's "
          "clock, other load on the machine), not in what they ran{}.",
          slower ? "slower" : "faster", pace.operators, 100 * std::abs(pace.ratio - 1),
          slower ? "longer" : "less",
          cameOrWent ? "; what the runs ran differently is said first" : "");
      evidence.push_back({"host_pace_ratio", pace.ratio});
      evidence.push_back({"paced_operators", static_cast<double>(pace.operators)});
    } else {
      text += adviceFor(r_, *cause);
    }
    evidence.push_back({"cause_delta_ns", cause->time.delta()});
    evidence.push_back({"explained_share", explained});
    DiffFinding& f = say("step-time-change", std::move(text), std::move(evidence));
    f.part = cause->id;
    for (const NameDiff* n : names) f.names.push_back(n->name);
    return explanation;
  }

  Explanation withinNoise(const std::vector<const PartDiff*>& changed) {
    const FigureDiff& step = r_.stepTime;
    const std::string numbers = fmt::format(
        "step time {} -> {} ({:+.1f}%; noise {}{})", time(step.base), time(step.after),
        step.base > 0 ? 100 * step.delta() / step.base : 0.0, time(step.noise), noiseRule());
    if (changed.empty()) {
      const std::size_t cameOrWent = static_cast<std::size_t>(
          std::count_if(r_.names.begin(), r_.names.end(), [](const NameDiff& n) {
            return n.change == NameChange::Added || n.change == NameChange::Removed;
          }));
      const std::string ran = cameOrWent == 0
                                  ? ""
                                  : fmt::format("; what ran did change: {} came or went (below)",
                                                report_text::counted(cameOrWent, "name", "names"));
      say("no-change",
          fmt::format("No change beyond run-to-run noise: {}, and no part of the GPU's time "
                      "changed by more{}.",
                      numbers, ran),
          figures(step));
      return {};
    }
    std::string parts;
    for (std::size_t i = 0; i < changed.size() && i < 3; ++i) {
      parts += fmt::format("{}{} {} {} a step",
                           i == 0                    ? ""
                           : i + 1 == changed.size() ? " and "
                                                     : ", ",
                           changed[i]->name, rose(changed[i]->time.delta()),
                           time(std::abs(changed[i]->time.delta())));
    }
    say("step-time-within-noise",
        fmt::format("The step time did not change beyond run-to-run noise ({}), but within it {} "
                    "(below).",
                    numbers, parts),
        figures(step));
    return {};
  }

  void partChange(const PartDiff& part) {
    const std::vector<const NameDiff*> names = namesBehind(r_, part);
    DiffFinding& f = say("part-change",
                         fmt::format("{} {} {} a step {}{}.{}{}", capitalised(phraseOf(part)),
                                     rose(part.time.delta()), time(std::abs(part.time.delta())),
                                     beforeAfter(part.time, false), devicesNote(),
                                     behindText(names), adviceFor(r_, part)),
                         figures(part.time));
    f.part = part.id;
    for (const NameDiff* n : names) f.names.push_back(n->name);
  }

  void namesCameOrWent(NameChange change, const char* id, const char* lead) {
    std::vector<const NameDiff*> names;
    std::size_t byKind[kNameKinds] = {};
    for (const NameDiff& n : r_.names) {
      if (n.change != change) continue;
      names.push_back(&n);
      ++byKind[static_cast<std::size_t>(n.kind)];
    }
    if (names.empty()) return;
    std::stable_sort(names.begin(), names.end(), [change](const NameDiff* a, const NameDiff* b) {
      const double x = change == NameChange::Added ? a->time.after : a->time.base;
      const double y = change == NameChange::Added ? b->time.after : b->time.base;
      return x > y;
    });
    std::vector<std::string> counts;
    const char* nouns[kNameKinds][2] = {{"kernel", "kernels"},
                                        {"operator", "operators"},
                                        {"annotation", "annotations"},
                                        {"runtime call", "runtime calls"}};
    for (std::size_t k = 0; k < kNameKinds; ++k) {
      if (byKind[k] > 0)
        counts.push_back(report_text::counted(byKind[k], nouns[k][0], nouns[k][1]));
    }
    std::string kinds;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      kinds += (i == 0 ? "" : i + 1 == counts.size() ? " and " : ", ") + counts[i];
    }
    std::string list;
    for (std::size_t i = 0; i < names.size() && i < kNamesListed; ++i) {
      list += (i == 0 ? "" : "; ") + nameChange(*names[i]);
    }
    if (names.size() > kNamesListed)
      list += fmt::format("; {} more in the tables", names.size() - kNamesListed);
    DiffFinding& f = say(id, fmt::format("{} {}: {}.", lead, kinds, list),
                         {{"kernels", static_cast<double>(byKind[0])},
                          {"ops", static_cast<double>(byKind[1])},
                          {"annotations", static_cast<double>(byKind[2])},
                          {"calls", static_cast<double>(byKind[3])}});
    for (const NameDiff* n : names) f.names.push_back(n->name);
  }

  void statements() {
    const SideSteps& b = r_.base;
    const SideSteps& a = r_.after;
    if (r_.match == StepMatch::Averaged) {
      say("steps-compared",
          fmt::format("The runs share no step number ({} and {}): each run's per-step averages "
                      "are compared, over its {} and {}.",
                      stepRange("BASE", b), stepRange("NEW", a),
                      report_text::counted(b.comparedCount, "step", "steps"),
                      report_text::counted(a.comparedCount, "step", "steps")),
          {{"base_steps", static_cast<double>(b.comparedCount)},
           {"new_steps", static_cast<double>(a.comparedCount)}});
    } else if (r_.match == StepMatch::Matched && (unmatched(b) > 0 || unmatched(a) > 0)) {
      say("steps-compared",
          fmt::format("{} matched by number ({}) are compared; {} of BASE's and {} of NEW's have "
                      "no match and are left out.",
                      report_text::counted(b.comparedCount, "step", "steps"), numbers(b.compared),
                      unmatched(b), unmatched(a)),
          {{"steps", static_cast<double>(b.comparedCount)},
           {"base_left_out", static_cast<double>(unmatched(b))},
           {"new_left_out", static_cast<double>(unmatched(a))}});
    }
    if (!b.leftOut.empty() || !a.leftOut.empty()) {
      std::vector<std::string> steps;
      for (const auto& [side, s] : {std::pair<const char*, const SideSteps&>{"BASE", b},
                                    std::pair<const char*, const SideSteps&>{"NEW", a}}) {
        for (const auto& [name, ns] : s.leftOut) {
          steps.push_back(fmt::format("{}'s {} ({}; the others' median {})", side, name,
                                      time(static_cast<double>(ns)),
                                      time(static_cast<double>(s.medianStepNs))));
        }
      }
      std::string list;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        list += (i == 0 ? "" : i + 1 == steps.size() ? " and " : ", ") + steps[i];
      }
      say("steps-left-out",
          fmt::format("Left out as far from the rest of {}{}: {}. A run's first profiled step "
                      "often carries the profiler's start.",
                      !b.leftOut.empty() && !a.leftOut.empty() ? "their runs" : "its run",
                      r_.match == StepMatch::Matched
                          ? " (with the step of that number on the other side)"
                          : "",
                      list),
          {{"base_steps_left_out", static_cast<double>(b.leftOut.size())},
           {"new_steps_left_out", static_cast<double>(a.leftOut.size())}});
    }
    if (r_.match == StepMatch::Whole) {
      const char* which = b.steps == 0 && a.steps == 0 ? "Neither run has"
                          : b.steps == 0               ? "BASE has no"
                                                       : "NEW has no";
      say("no-steps",
          fmt::format("{} step ranges (ProfilerStep#N, or an NVTX range \"step N\" a step): the "
                      "traces are compared whole, over windows of {} and {}, and a step time is "
                      "each trace's length; with prof.step() or an NVTX range per step, diff "
                      "compares step by step.",
                      which, time(static_cast<double>(b.windowNs)),
                      time(static_cast<double>(a.windowNs))),
          {{"base_steps", static_cast<double>(b.steps)},
           {"new_steps", static_cast<double>(a.steps)}});
    }
    if (b.gpuOps == 0 || a.gpuOps == 0) {
      const char* which = b.gpuOps == 0 && a.gpuOps == 0 ? "Neither run has"
                          : b.gpuOps == 0                ? "BASE has no"
                                                         : "NEW has no";
      say("no-gpu-operations",
          fmt::format("{} GPU operation (kernel, copy or memset): only the step time, the "
                      "operators and the annotations compare.",
                      which),
          {{"base_gpu_operations", static_cast<double>(b.gpuOps)},
           {"new_gpu_operations", static_cast<double>(a.gpuOps)}});
    }
    if (r_.match != StepMatch::Whole && (b.gpuOpsWithoutCall > 0 || a.gpuOpsWithoutCall > 0)) {
      say("operations-without-launch",
          fmt::format("{} of BASE's and {} of NEW's GPU operations have no launch call in the "
                      "trace, so no step: they are left out of the per-step comparison.",
                      report_text::count(b.gpuOpsWithoutCall),
                      report_text::count(a.gpuOpsWithoutCall)),
          {{"base_operations", static_cast<double>(b.gpuOpsWithoutCall)},
           {"new_operations", static_cast<double>(a.gpuOpsWithoutCall)}});
    }
  }

  // Steps of a side without a match, left out.
  static std::size_t unmatched(const SideSteps& s) {
    return s.steps - s.comparedCount - s.leftOut.size();
  }
  static std::string numbers(const std::vector<int64_t>& steps) {
    if (steps.empty()) return "none";
    if (steps.size() == 1) return std::to_string(steps.front());
    const bool consecutive = steps.back() - steps.front() + 1 == static_cast<int64_t>(steps.size());
    return consecutive ? fmt::format("{}-{}", steps.front(), steps.back())
                       : fmt::format("{}, ..., {}", steps.front(), steps.back());
  }
  static std::string stepRange(const char* side, const SideSteps& s) {
    return fmt::format("{}'s {}", side, numbers(s.compared));
  }
  std::string devicesNote() const {
    const std::size_t devices = std::max(r_.base.devices, r_.after.devices);
    return devices > 1 ? fmt::format(" (GPU time per GPU, of {})", devices) : "";
  }
  std::string noiseRule() const {
    const double floor = 100 * options_.noiseFloorShare;
    if (r_.match == StepMatch::Whole) {
      return fmt::format(": {:g}% of BASE's length, the traces having no steps to tell a spread",
                         floor);
    }
    return fmt::format(
        ": {:g} times the larger step-to-step standard deviation of the step "
        "time, at least {:g}% of BASE's step",
        options_.noiseSpreads, floor);
  }

  const RankDiff& r_;
  std::size_t rank_;
  const DiffOptions& options_;
  std::vector<DiffFinding>& out_;
  std::string prefix_;
};

}  // namespace

std::vector<DiffFinding> diffFindingsOf(const DiffReport& report, const DiffOptions& options) {
  std::vector<DiffFinding> out;
  for (std::size_t i = 0; i < report.ranks.size(); ++i) Findings(report, i, options, out).sayAll();
  return out;
}

std::string diffFindingKindsMarkdown() {
  std::string text = "| id | says |\n|---|---|\n";
  for (const FindingKind& kind : kDiffFindingKinds) {
    text += fmt::format("| `{}` | {} |\n", kind.id, kind.about);
  }
  return text;
}

}  // namespace kinetrace::detail
