// What `kinetrace analyze` says first: its findings, each a sentence with its numbers for
// people and an id and figures for programs (trace_analysis.h: Finding, kFindingKinds).

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <numeric>
#include <optional>
#include <ostream>
#include <string>

#include "analysis/gpu_bound_report.h"
#include "analysis/report_text.h"
#include "analysis/trace_analysis.h"
#include "analysis/workload_report.h"

namespace kinetrace::detail {
namespace {

// The figures as the text says them (analysis/report_text.h).
using namespace report_text;

// The biggest part of the idle time, and what to look at for it (or, when the GPU was
// busy, the kernels).
std::string idleAdvice(const RankReport& r) {
  const TimeBreakdown& t = r.time;
  const std::pair<int64_t, std::string> parts[] = {
      {t.beforeFirstOpNs, "most of it passed before the first GPU operation (see below)"},
      {t.hostWaitNs,
       t.dataLoadingIdleNs * 2 > t.hostWaitNs
           ? "most of it the GPU waited for the host while data loading ran"
           : "most of it the GPU waited for the host to launch work: see the longest gaps below "
             "for what the host was doing"},
      {t.launchNs,
       "most of it went to launching: see the launch latency and the longest gaps below"},
      {t.kernelWaitNs,
       "most of it the GPU moved from one queued kernel to the next: fewer, larger kernels "
       "(torch.compile) or a CUDA graph cut that"},
      {t.otherWorkWaitNs,
       "most of it queued work waited on the synchronisations named below: look at why those "
       "waits are there (a sync in the loop, an event from a slower stream)"},
      {t.otherIdleNs,
       r.syncRecords == 0
           ? "most of it the trace does not explain: record synchronisation too (`kinetrace run "
             "--activities default,sync`) to see what queued work waited on"
           : "most of it the trace does not explain (no launch or synchronisation it shows "
             "accounts for it): see the longest gaps below"},
  };
  const auto* biggest =
      std::max_element(std::begin(parts), std::end(parts),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
  if (t.idleNs * 10 < t.windowNs || biggest->first <= 0) {
    return " Little of it is idle: the kernels themselves take the time; see the kernel table "
           "below for the ones to make faster.";
  }
  return " " + std::string(1, static_cast<char>(std::toupper(biggest->second[0]))) +
         biggest->second.substr(1) + ".";
}

// The host ranges that issued the tiny kernels, named until they cover 80% of them (at
// most three), with the share they cover when that is less. Kernels outside any host range
// are said apart: no range to name.
std::string tinyIssuers(const TinyKernelReport& tiny) {
  if (tiny.count == 0) return "";
  auto shareOf = [&tiny](uint64_t n) { return static_cast<double>(n) / tiny.count; };
  uint64_t outside = 0;
  for (const auto& [name, n] : tiny.issuers) {
    if (name == "(no host range)") outside = n;
  }
  if (outside == tiny.count) return "none ran inside a host range the trace holds";
  std::string from;
  uint64_t covered = 0;
  std::size_t named = 0;
  for (const auto& [name, n] : tiny.issuers) {
    if (name == "(no host range)") continue;
    if (named == 3 || covered * 5 >= tiny.count * 4) break;
    from += fmt::format("{}{} ({})", named ? ", " : "", shorten(name, 40), share(shareOf(n)));
    covered += n;
    ++named;
  }
  const std::string outsideText =
      outside == 0 ? ""
      : outside * 2 >= tiny.count
          ? fmt::format(
                "{} ran outside any host range (NVTX ranges, or torch.profiler's CPU "
                "activity under `kinetrace run --torch`, would name them); ",
                share(shareOf(outside)))
          : fmt::format("{} ran outside any host range; ", share(shareOf(outside)));
  if (covered * 5 >= tiny.count * 4) return outsideText + "most were issued from " + from;
  return outsideText + "the ranges that issued the most were " + from + ": " +
         share(shareOf(covered)) + " of them together (more in the table below)";
}

// Whether the trace runs torch.compile's Triton kernels: its top kernels, or the ranges
// (torch.compile names them after their kernels) that issued the tiny ones.
bool compiledAlready(const RankReport& r) {
  auto triton = [](const std::string& name) { return name.rfind("triton_", 0) == 0; };
  return std::any_of(r.kernels.begin(), r.kernels.end(),
                     [&](const KernelRow& k) { return triton(k.name); }) ||
         std::any_of(r.tiny.issuers.begin(), r.tiny.issuers.end(),
                     [&](const auto& issuer) { return triton(issuer.first); });
}

}  // namespace

// What a performance engineer would say first, with the numbers, and what to do next.
std::vector<Finding> findingsOf(const AnalysisReport& report, const AnalysisOptions& options) {
  std::vector<Finding> out;
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    const RankReport& r = report.ranks[i];
    const TimeBreakdown& t = r.time;
    const std::string prefix = report.ranks.size() > 1 ? who(r, i) + ": " : "";
    const auto say = [&out, i](const char* id, std::string text,
                               std::vector<std::pair<std::string, double>> evidence = {}) {
      out.push_back(Finding{id, i, std::move(text), std::move(evidence)});
    };
    const auto ns = [](int64_t value) { return static_cast<double>(value); };
    const auto ofWindow = [&t](int64_t value) {
      return t.windowNs > 0 ? static_cast<double>(value) / static_cast<double>(t.windowNs) : 0.0;
    };
    std::optional<Finding> leak;
    if (r.memory.growsEveryStep) {
      leak = Finding{
          "memory-grows-every-step",
          i,
          fmt::format(
              "{}allocated GPU memory grew at the end of every one of the {} steps, by {} a step "
              "(peak {}): a leak signature; look for tensors kept across steps (losses appended "
              "to a list, caches).",
              prefix, r.steps.size(), bytes(r.memory.growthPerStepBytes),
              bytes(r.memory.peakBytes)),
          {{"steps", static_cast<double>(r.steps.size())},
           {"growth_per_step_bytes", ns(r.memory.growthPerStepBytes)},
           {"peak_bytes", ns(r.memory.peakBytes)}}};
    }
    if (r.devices.empty()) {
      // Why there is none, when the recorder said; else the likely reasons. The host's view
      // follows in the report.
      const std::string why =
          r.host.gpuRecorded ? "GPU activity was recorded, and none ran in the window"
          : r.host.gpuStatus.empty()
              ? "was GPU activity recorded? Trace with `kinetrace run` or torch.profiler's CUDA "
                "activity (ProfilerActivity.CUDA)"
              : "the recorder says why: " + r.host.gpuStatus;
      say("no-gpu-operations",
          fmt::format("{}no GPU operations in the trace (kernels, copies, memsets); {}. The "
                      "host's view: {} on {}{}.",
                      prefix, why, counted(r.host.ranges, "range", "ranges"),
                      counted(r.host.threadCount, "thread", "threads"),
                      r.steps.empty() ? "" : ", " + counted(r.steps.size(), "step", "steps")),
          {{"host_ranges", static_cast<double>(r.host.ranges)},
           {"host_threads", static_cast<double>(r.host.threadCount)},
           {"steps", static_cast<double>(r.steps.size())}});
      if (leak) out.push_back(std::move(*leak));
      continue;
    }
    // Waiting on other work, named by what was found.
    std::string otherWork;
    if (t.otherWorkWaitNs > 0) {
      std::string found;
      for (std::size_t k = 0; k < std::min<std::size_t>(2, r.otherWork.size()); ++k) {
        found += (k ? ", " : "") + r.otherWork[k].found;
      }
      if (r.otherWork.size() > 2) found += ", ...";
      otherWork = fmt::format(", {} waiting on other work ({})",
                              percent(t.otherWorkWaitNs, t.windowNs), found);
    }
    say("gpu-time",
        fmt::format(
            "{}the GPU{} was busy {} and idle {} of the {} window{}: {}{} waiting for the host to "
            "launch work, {} launching, {} moving between kernels{}, {} other.{}",
            prefix, r.devices.size() > 1 ? "s" : "", percent(t.busyNs, t.windowNs),
            percent(t.idleNs, t.windowNs),
            duration(t.windowNs / static_cast<int64_t>(r.devices.size())),
            r.devices.size() > 1 ? " (all GPUs together)" : "",
            t.beforeFirstOpNs * 1000 >= t.windowNs  // shown from 0.1%
                ? percent(t.beforeFirstOpNs, t.windowNs) + " before the first GPU operation, "
                : "",
            percent(t.hostWaitNs, t.windowNs), percent(t.launchNs, t.windowNs),
            percent(t.kernelWaitNs, t.windowNs), otherWork, percent(t.otherIdleNs, t.windowNs),
            idleAdvice(r)),
        {{"window_ns", ns(t.windowNs)},
         {"busy_share", ofWindow(t.busyNs)},
         {"idle_share", ofWindow(t.idleNs)},
         {"before_first_op_share", ofWindow(t.beforeFirstOpNs)},
         {"host_wait_share", ofWindow(t.hostWaitNs)},
         {"launch_share", ofWindow(t.launchNs)},
         {"kernel_wait_share", ofWindow(t.kernelWaitNs)},
         {"other_work_wait_share", ofWindow(t.otherWorkWaitNs)},
         {"other_idle_share", ofWindow(t.otherIdleNs)},
         {"devices", static_cast<double>(r.devices.size())}});
    if (t.windowNs > 0 && t.beforeFirstOpNs * 10 > t.windowNs) {
      say("before-first-gpu-operation",
          fmt::format(
              "{}{} ({} of the window) passed before the first GPU operation{}: the program "
              "starting or the profiler warming up, not a slow launch. Leave it out: start "
              "tracing later (torch.profiler's schedule with wait and warmup steps, `kinetrace "
              "run --delay`), or read the per-step figures.",
              prefix, duration(t.beforeFirstOpNs / static_cast<int64_t>(r.devices.size())),
              percent(t.beforeFirstOpNs, t.windowNs), r.devices.size() > 1 ? " on each GPU" : ""),
          {{"before_first_op_ns", ns(t.beforeFirstOpNs)},
           {"before_first_op_share", ofWindow(t.beforeFirstOpNs)}});
    }
    const int64_t inCall = t.launchQueuedNs + t.launchPreviousNs;
    if (t.windowNs > 0 && inCall * 10 > t.windowNs) {
      say("first-launch-module-loading",
          fmt::format(
              "{}for {} ({} of the window) the GPU had run out of work while the host was still "
              "inside a launch call (the slowest: {}, {}): a first launch loads its kernel's "
              "module "
              "(CUDA's lazy loading). Load modules at start (CUDA_MODULE_LOADING=EAGER), or leave "
              "the first step out of the trace (a warm-up step).",
              prefix, duration(inCall), percent(inCall, t.windowNs), duration(r.slowestCallNs),
              shorten(r.slowestCallOf, 50)),
          {{"in_launch_call_ns", ns(inCall)},
           {"in_launch_call_share", ofWindow(inCall)},
           {"slowest_call_ns", ns(r.slowestCallNs)}});
    }
    const TinyKernelReport& tiny = r.tiny;
    const bool tinyFinding = tiny.count >= 100 && tiny.shareOfKernels >= 0.3;
    // Host wait spent mostly in data loading is the input pipeline's, said by its own
    // finding below: faster launching would not shorten it.
    const bool waitIsLoading = t.dataLoadingIdleNs * 2 > t.hostWaitNs;
    if (t.windowNs > 0 && t.hostWaitNs * 5 > t.windowNs && waitIsLoading) {
      say("host-wait-data-loading",
          fmt::format(
              "{}{} of the time the GPU waits for the host, most of it while data loading ran "
              "(below): the host is busy getting the next batch, not launching.",
              prefix, percent(t.hostWaitNs, t.windowNs)),
          {{"host_wait_share", ofWindow(t.hostWaitNs)},
           {"data_loading_idle_ns", ns(t.dataLoadingIdleNs)}});
    } else if (t.windowNs > 0 && t.hostWaitNs * 5 > t.windowNs) {
      say("host-wait-launching",
          fmt::format(
              "{}{} of the time the GPU waits for the host: the CPU does not launch work fast "
              "enough. See the longest gaps below for what the host was doing{}; a CUDA graph "
              "or torch.compile's reduce-overhead mode takes launching off the host.",
              prefix, percent(t.hostWaitNs, t.windowNs),
              tinyFinding ? ", and the tiny kernels" : ""),
          {{"host_wait_share", ofWindow(t.hostWaitNs)}});
    }
    int64_t afterSyncNs = 0;
    uint64_t afterSyncGaps = 0;
    for (const FoundRow& row : r.hostWaitAfterSync) {
      afterSyncNs += row.ns;
      afterSyncGaps += row.gaps;
    }
    if (t.windowNs > 0 && afterSyncNs * 20 > t.windowNs) {
      say("sync-before-launch",
          fmt::format(
              "{}{} gaps in which the GPU waited for the host ({}, {} of the window) opened while "
              "the host was in a synchronisation ({}{}): it waited for the GPU to finish its work, "
              "and only then launched more. Take syncs out of the loop (.item(), .cpu(), printing "
              "a tensor, torch.cuda.synchronize()) or move them to the step's end.",
              prefix, count(afterSyncGaps), duration(afterSyncNs), percent(afterSyncNs, t.windowNs),
              r.hostWaitAfterSync.front().found, r.hostWaitAfterSync.size() > 1 ? ", ..." : ""),
          {{"gaps", static_cast<double>(afterSyncGaps)},
           {"gaps_ns", ns(afterSyncNs)},
           {"gaps_share", ofWindow(afterSyncNs)}});
    }
    if (tinyFinding) {
      const std::string issuers = tinyIssuers(tiny);
      say("tiny-kernels",
          fmt::format(
              "{}{} kernels under {} ({} of all kernels) ran {} on the GPU and took {} to launch{}"
              "{}. {}",
              prefix, count(tiny.count), duration(options.tinyKernelNs), share(tiny.shareOfKernels),
              duration(tiny.kernelNs), duration(tiny.launchNs),
              tiny.launchLongerCount > tiny.count / 2
                  ? " (launching most took longer than running them)"
                  : "",
              issuers.empty() ? "" : "; " + issuers,
              compiledAlready(r)
                  ? "The trace runs torch.compile's Triton kernels already: replay the step as a "
                    "CUDA graph (torch.compile's mode=\"reduce-overhead\"), and compile what still "
                    "runs eagerly."
                  : "Fuse them (torch.compile) or replay them as a CUDA graph."),
          {{"kernels", static_cast<double>(tiny.count)},
           {"kernels_share", tiny.shareOfKernels},
           {"under_ns", ns(options.tinyKernelNs)},
           {"gpu_ns", ns(tiny.kernelNs)},
           {"launch_ns", ns(tiny.launchNs)},
           {"launch_longer_than_run", static_cast<double>(tiny.launchLongerCount)}});
    }
    if (r.gpuOps > 0 && r.opsWithHostRange == 0) {
      say("no-host-ranges",
          fmt::format(
              "{}none of the {} GPU operations can be tied to the host code that issued them: the "
              "trace has no host ranges around their launches. NVTX ranges "
              "(torch.cuda.nvtx.range_push, nvtxRangePush) under `kinetrace run`, kinetrace::Range "
              "in code that links kinetrace, or torch.profiler's CPU activity (`kinetrace run "
              "--torch`, ProfilerActivity.CPU) would name them.",
              prefix, count(r.gpuOps)),
          {{"gpu_operations", static_cast<double>(r.gpuOps)}});
    }
    if (r.steps.empty()) {
      say("no-steps",
          prefix +
              "the trace has no step ranges, so there is no per-step view: torch.profiler marks "
              "them with prof.step() (with a schedule: torch.profiler.schedule); other programs "
              "with an NVTX range named \"step N\" around each step (`kinetrace run`), or with "
              "kinetrace::Range(\"ProfilerStep#N\") or kinetrace::step() under a StepScheduler.");
    }
    if (t.windowNs > 0 && t.dataLoadingIdleNs * 20 > t.windowNs) {
      say("data-loading-starves-gpu",
          fmt::format(
              "{}the GPU was idle {} ({} of the window) while data loading ran on the host: the "
              "input pipeline starves the GPU (more workers, pinned memory, prefetching).",
              prefix, duration(t.dataLoadingIdleNs), percent(t.dataLoadingIdleNs, t.windowNs)),
          {{"idle_while_loading_ns", ns(t.dataLoadingIdleNs)},
           {"idle_while_loading_share", ofWindow(t.dataLoadingIdleNs)}});
    }
    if (leak) out.push_back(std::move(*leak));
    if (r.communicationKernels > 0 && t.busyNs > 0) {
      int64_t overlap = 0;
      for (const DeviceReport& d : r.devices) overlap += d.communicationOverlapNs;
      int64_t communication = 0;
      for (const KernelRow& k : r.kinds) {
        if (k.kind == "communication") communication = k.duration.totalNs;
      }
      say("communication-overlap",
          fmt::format(
              "{}{} NCCL kernels: communication alone {} of busy time; {} of their time overlapped "
              "compute.{}",
              prefix, count(r.communicationKernels), percent(t.communicationNs, t.busyNs),
              percent(overlap, communication),
              overlap * 2 < communication
                  ? " Overlap more of it: start collectives while compute runs (DDP's gradient "
                    "buckets, async_op=True, FSDP's prefetching)."
                  : ""),
          {{"nccl_kernels", static_cast<double>(r.communicationKernels)},
           {"communication_ns", ns(communication)},
           {"overlapped_ns", ns(overlap)},
           {"communication_alone_ns", ns(t.communicationNs)}});
    }
    if (!r.ncclCalls.empty()) {
      const NcclCallRow& top = r.ncclCalls.front();
      const int64_t ncclNs =
          std::accumulate(r.ncclCalls.begin(), r.ncclCalls.end(), int64_t{0},
                          [](int64_t sum, const NcclCallRow& row) { return sum + row.gpuNs; });
      say("nccl-bandwidth",
          fmt::format(
              "{}NCCL's calls took {} of GPU time; the longest in total, {}: {} operations moving "
              "{} "
              "({} each on average) at {:.1f} GB/s. Compare that with the link's bandwidth; small "
              "messages run far below it (larger buckets help).",
              prefix, duration(ncclNs), top.call, count(top.operations),
              bytes(static_cast<int64_t>(top.bytes)),
              bytes(static_cast<int64_t>(top.bytes / std::max<uint64_t>(top.operations, 1))),
              top.gigabytesPerSecond),
          {{"nccl_gpu_ns", ns(ncclNs)},
           {"top_operations", static_cast<double>(top.operations)},
           {"top_bytes", static_cast<double>(top.bytes)},
           {"top_gigabytes_per_second", top.gigabytesPerSecond}});
    }
    for (Finding& finding : gpuBoundFindings(r, prefix)) {
      finding.rank = i;
      out.push_back(std::move(finding));
    }
    for (Finding& finding : workloadFindings(r, prefix)) {
      finding.rank = i;
      out.push_back(std::move(finding));
    }
    if (r.launchLatency.count > 0 &&
        r.launchLatency.p99Ns > 10 * std::max<int64_t>(r.launchLatency.p50Ns, 1) &&
        r.launchLatency.p99Ns > 100'000) {
      say("launch-latency-outliers",
          fmt::format(
              "{}launch latency (launch call to start) p50 {}, p99 {}, max {}: some work queued "
              "behind long-running operations: the host ran ahead of the GPU, which is no loss in "
              "itself; the JSON report's `launch_latency.outliers` say which operations waited "
              "longest.",
              prefix, duration(r.launchLatency.p50Ns), duration(r.launchLatency.p99Ns),
              duration(r.launchLatency.maxNs)),
          {{"p50_ns", ns(r.launchLatency.p50Ns)},
           {"p99_ns", ns(r.launchLatency.p99Ns)},
           {"max_ns", ns(r.launchLatency.maxNs)}});
    }
  }
  if (!report.stragglers.empty() && report.stragglers.front().lateByNs > 100'000) {
    const StragglerReport& s = report.stragglers.front();
    out.push_back(Finding{
        "straggler",
        std::nullopt,
        fmt::format(
            "rank {} {} {} #{} {} after the first rank: the other ranks waited for it in the "
            "collective (a straggler). Look at what rank {} did before it: its longest gaps, data "
            "loading, its host.",
            s.slowRank, s.source == StragglerReport::Source::HostCall ? "called" : "started",
            shorten(s.collective, 50), s.occurrence, duration(s.lateByNs), s.slowRank),
        {{"slow_rank", static_cast<double>(s.slowRank)},
         {"occurrence", static_cast<double>(s.occurrence)},
         {"late_by_ns", static_cast<double>(s.lateByNs)}}});
  }
  return out;
}

std::string findingKindsMarkdown() {
  std::string text = "| id | says |\n|---|---|\n";
  for (const FindingKind& kind : kFindingKinds) {
    text += fmt::format("| `{}` | {} |\n", kind.id, kind.about);
  }
  return text;
}

std::ostream& operator<<(std::ostream& out, const Finding& finding) {
  return out << finding.text;
}

}  // namespace kinetrace::detail
