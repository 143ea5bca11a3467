// The analysis as tables for a terminal, under its findings (findings.cpp), and as JSON for
// programs.

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "analysis/critical_path_render.h"
#include "analysis/finding_json.h"
#include "analysis/gpu_bound_report.h"
#include "analysis/report_text.h"
#include "analysis/trace_analysis.h"
#include "analysis/workload_report.h"

namespace kinetrace::detail {
namespace {

// The figures as the text says them (analysis/report_text.h).
using namespace report_text;

void breakdownLine(std::string& out, const std::string& label, const TimeBreakdown& t) {
  out += fmt::format(
      "  {:<20} {:>10}  busy {:>6} = compute {:>6} + communication {:>6} + memory {:>6}\n",
      shorten(label, 20), duration(t.windowNs), percent(t.busyNs, t.windowNs),
      percent(t.computeNs, t.windowNs), percent(t.communicationNs, t.windowNs),
      percent(t.memoryNs, t.windowNs));
  out += fmt::format(
      "  {:<20} {:>10}  idle {:>6} = before first op {:>6} + host wait {:>6} + launch {:>6} + "
      "kernel wait {:>6} + other work {:>6} + other {:>6}; {} during data loading\n",
      "", "", percent(t.idleNs, t.windowNs), percent(t.beforeFirstOpNs, t.windowNs),
      percent(t.hostWaitNs, t.windowNs), percent(t.launchNs, t.windowNs),
      percent(t.kernelWaitNs, t.windowNs), percent(t.otherWorkWaitNs, t.windowNs),
      percent(t.otherIdleNs, t.windowNs), percent(t.dataLoadingIdleNs, t.windowNs));
}

nlohmann::ordered_json toJson(const Distribution& d) {
  return {{"count", d.count},  {"total_ns", d.totalNs}, {"mean_ns", d.meanNs}, {"p50_ns", d.p50Ns},
          {"p90_ns", d.p90Ns}, {"p99_ns", d.p99Ns},     {"max_ns", d.maxNs}};
}

nlohmann::ordered_json toJson(const TimeBreakdown& t) {
  return {{"window_ns", t.windowNs},
          {"busy_ns", t.busyNs},
          {"compute_ns", t.computeNs},
          {"communication_ns", t.communicationNs},
          {"memory_ns", t.memoryNs},
          {"idle_ns", t.idleNs},
          {"before_first_op_ns", t.beforeFirstOpNs},
          {"host_wait_ns", t.hostWaitNs},
          {"launch_ns", t.launchNs},
          {"launch_queued_ns", t.launchQueuedNs},
          {"launch_previous_ns", t.launchPreviousNs},
          {"kernel_wait_ns", t.kernelWaitNs},
          {"other_work_wait_ns", t.otherWorkWaitNs},
          {"other_idle_ns", t.otherIdleNs},
          {"data_loading_idle_ns", t.dataLoadingIdleNs}};
}

nlohmann::ordered_json toJson(const KernelRow& k) {
  return {{"name", k.name}, {"kind", k.kind}, {"share", k.share}, {"duration", toJson(k.duration)}};
}

nlohmann::ordered_json hostJson(const HostReport& host) {
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (const HostRangeRow& row : host.top) {
    top.push_back({{"name", row.name},
                   {"count", row.count},
                   {"total_ns", row.totalNs},
                   {"max_ns", row.maxNs}});
  }
  nlohmann::ordered_json threads = nlohmann::ordered_json::array();
  for (const HostThreadRow& row : host.threads) {
    threads.push_back(
        {{"tid", row.tid}, {"name", row.name}, {"ranges", row.ranges}, {"busy_ns", row.busyNs}});
  }
  return {{"ranges", host.ranges},
          {"window_ns", host.windowNs},
          {"top_ranges", top},
          {"threads", threads},
          {"thread_count", host.threadCount},
          {"gpu_status", host.gpuStatus},
          {"gpu_recorded", host.gpuRecorded}};
}

// The host's view, for a trace without GPU operations: its steps, the ranges that took the
// most time, and the threads that ran them.
void hostText(std::string& out, const RankReport& r, const AnalysisOptions& options) {
  const HostReport& host = r.host;
  if (host.gpuRecorded) {
    out += "GPU activity was recorded; no GPU operation ran in the window\n";
  } else if (!host.gpuStatus.empty()) {
    out += "No GPU activity recorded: " + host.gpuStatus + "\n";
  }
  out += fmt::format("Host: {} on {} over {}\n", counted(host.ranges, "range", "ranges"),
                     counted(host.threadCount, "thread", "threads"), duration(host.windowNs));
  if (!r.steps.empty()) {
    out += fmt::format("Steps ({})\n", count(r.steps.size()));
    for (std::size_t k = 0; k < std::min(r.steps.size(), options.stepsShown); ++k) {
      const StepReport& s = r.steps[k];
      out += fmt::format("  {:<20} {:>10}\n", shorten(s.name, 20), duration(s.endNs - s.startNs));
    }
    if (r.steps.size() > options.stepsShown) {
      out += fmt::format("  ... and {} more steps (all of them in the JSON report)\n",
                         count(r.steps.size() - options.stepsShown));
    }
  }
  if (!host.top.empty()) {
    // No share of the window: ranges of several threads overlap, and nested ones count in
    // each, so shares would add up past 100%.
    out += "Host ranges by total time (all threads; nested ranges count in each)\n";
    out +=
        fmt::format("  {:>9} {:>11} {:>10} {:>10}  {}\n", "count", "total", "mean", "max", "name");
    for (const HostRangeRow& row : host.top) {
      const int64_t mean = row.totalNs / static_cast<int64_t>(std::max<uint64_t>(row.count, 1));
      out +=
          fmt::format("  {:>9} {:>11} {:>10} {:>10}  {}\n", count(row.count), duration(row.totalNs),
                      duration(mean), duration(row.maxNs), shorten(row.name));
    }
  }
  if (!host.threads.empty()) {
    out += "Threads by time inside a range\n";
    for (const HostThreadRow& row : host.threads) {
      out += fmt::format("  {:>12} {:>7} {:>11} {:>9} ranges  {}\n", row.tid,
                         percent(row.busyNs, host.windowNs), duration(row.busyNs),
                         count(row.ranges), row.name.empty() ? "(unnamed)" : shorten(row.name));
    }
    if (host.threadCount > host.threads.size()) {
      out +=
          fmt::format("  ... and {} more threads\n", count(host.threadCount - host.threads.size()));
    }
  }
}

}  // namespace

std::string formatReport(const AnalysisReport& report, const AnalysisOptions& options) {
  std::string out;
  out += "Findings\n";
  for (const Finding& f : report.findings) out += "  - " + f.text + "\n";
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    const RankReport& r = report.ranks[i];
    out += fmt::format("\n{} ({}): {} events\n", who(r, i), r.path, count(r.events));
    if (r.devices.empty()) hostText(out, r, options);
    if (!r.devices.empty()) out += "GPU time (percentages of the window)\n";
    for (const DeviceReport& d : r.devices) {
      breakdownLine(out, fmt::format("GPU {}", d.device), d.time);
      for (const StreamBreakdown& s : d.streams) {
        out += fmt::format("    stream {:<6} {:>8} ops, busy {:>10}, queue depth up to {}\n",
                           s.stream, count(s.operations), duration(s.busyNs), s.maxQueueDepth);
      }
    }
    if (!r.steps.empty() && !r.devices.empty()) {
      out += "Per step (all GPUs)\n";
      for (std::size_t k = 0; k < std::min(r.steps.size(), options.stepsShown); ++k) {
        breakdownLine(out, r.steps[k].name, r.steps[k].time);
        const BoundMix& bound = r.steps[k].bound;
        if (!bound.empty() && bound.totalNs() > 0) {
          out += fmt::format("  {:<20} {:>10}  kernels bound by {}; averages {}\n", "", "",
                             boundShares(bound), averagesOf(bound, r.gpuMetrics.metrics));
        }
      }
      if (r.steps.size() > options.stepsShown) {
        out += fmt::format("  ... and {} more steps (all of them in --json)\n",
                           count(r.steps.size() - options.stepsShown));
      }
    }
    if (!r.kinds.empty()) {
      out += fmt::format("GPU operations: {} kernels, {} of kernel time\n", count(r.kernelCount),
                         duration(r.kernelNs));
      for (const KernelRow& k : r.kinds) {
        out += fmt::format("  {:<14} {:>9} ops {:>11} {:>6}\n", k.kind, count(k.duration.count),
                           duration(k.duration.totalNs), fmt::format("{:.1f}%", 100 * k.share));
      }
      // The bound column only where the trace has GPU metrics: "memory (DRAM 82%, SM 6%)".
      const bool bound = !r.gpuMetrics.metrics.empty();
      out += fmt::format("  {:>7} {:>9} {:>11} {:>10} {:>10} {:>10}  {}{}\n", "share", "count",
                         "total", "mean", "median", "max",
                         bound ? fmt::format("{:<40} ", "bound") : "", "name");
      for (const KernelRow& k : r.kernels) {
        out += fmt::format(
            "  {:>6.1f}% {:>9} {:>11} {:>10} {:>10} {:>10}  {}{} [{}]\n", 100 * k.share,
            count(k.duration.count), duration(k.duration.totalNs), duration(k.duration.meanNs),
            duration(k.duration.p50Ns), duration(k.duration.maxNs),
            bound ? fmt::format("{:<40} ", kernelBoundText(k, r.gpuMetrics.metrics)) : "",
            shorten(k.name), k.kind);
      }
      out += gpuMetricsText(r);
    }
    const TinyKernelReport& tiny = r.tiny;
    if (r.kernelCount > 0)
      out += fmt::format(
          "Tiny kernels (under {}): {} ({:.0f}% of kernels), {} on the GPU, {} launching",
          duration(tiny.thresholdNs), count(tiny.count), 100 * tiny.shareOfKernels,
          duration(tiny.kernelNs), duration(tiny.launchNs));
    if (r.kernelCount > 0) {
      out += fmt::format("; {} took longer to launch than to run\n", count(tiny.launchLongerCount));
    }
    for (const auto& [name, n] : tiny.issuers) {
      out += fmt::format("  {:>9} {:>5}  {}\n", count(n),
                         share(tiny.count > 0 ? static_cast<double>(n) / tiny.count : 0),
                         shorten(name));
    }
    if (r.launchLatency.count > 0) {
      const Distribution& l = r.launchLatency;
      out += fmt::format("Launch latency: p50 {}, p90 {}, p99 {}, max {} over {} operations\n",
                         duration(l.p50Ns), duration(l.p90Ns), duration(l.p99Ns), duration(l.maxNs),
                         count(l.count));
    }
    if (!r.gaps.empty()) {
      out += "Longest idle gaps\n";
      for (const GapReport& g : r.gaps) {
        out += fmt::format("  GPU {} {:>10} {:<11} before {}{}{}\n", g.device,
                           duration(g.durationNs), g.cause, shorten(g.endedBy, 50),
                           g.evidence.empty()                   ? ""
                           : g.cause == "waiting on other work" ? "; waited on " + g.evidence
                                                                : "; " + g.evidence,
                           g.hostWas.empty() ? "" : "; the host was in " + shorten(g.hostWas, 40));
      }
    }
    if (!r.otherWork.empty()) {
      out += "Waiting on other work, by what the queued work waited on\n";
      for (const FoundRow& row : r.otherWork) {
        out += fmt::format("  {:>10} in {:>7} gaps  {}\n", duration(row.ns), count(row.gaps),
                           row.found);
      }
    }
    if (!r.hostWaitAfterSync.empty()) {
      out += "Host wait that began while the host was in a synchronisation\n";
      for (const FoundRow& row : r.hostWaitAfterSync) {
        out += fmt::format("  {:>10} in {:>7} gaps  {}\n", duration(row.ns), count(row.gaps),
                           row.found);
      }
    }
    if (!r.ncclCalls.empty()) {
      out += "NCCL calls (sizes from NCCL's NVTX payloads)\n";
      for (const NcclCallRow& row : r.ncclCalls) {
        out += fmt::format("  {:<22} {:>9} ops  {:>10}  GPU {:>10}  {:>8.1f} GB/s\n", row.call,
                           count(row.operations), bytes(static_cast<int64_t>(row.bytes)),
                           duration(row.gpuNs), row.gigabytesPerSecond);
      }
    }
    out += workloadText(r);
    out += criticalPathText(r.criticalPath, options);
    if (r.memory.samples > 0) {
      out += fmt::format("Memory: {} samples, allocated {} -> {}, peak {}\n",
                         count(r.memory.samples), bytes(r.memory.firstBytes),
                         bytes(r.memory.lastBytes), bytes(r.memory.peakBytes));
    }
  }
  if (!report.stragglers.empty()) {
    out += "\nCollectives started late on one rank\n";
    for (const StragglerReport& s : report.stragglers) {
      out += fmt::format("  rank {} {:>10} late: {} #{}\n", s.slowRank, duration(s.lateByNs),
                         shorten(s.collective, 60), s.occurrence);
    }
  }
  return out;
}

std::string reportJson(const AnalysisReport& report) {
  using Json = nlohmann::ordered_json;
  Json root;
  Json findings = Json::array();
  for (const Finding& f : report.findings) {
    findings.push_back(
        findingJson(f, f.rank ? std::optional(report.ranks[*f.rank].rank) : std::nullopt));
  }
  root["findings"] = std::move(findings);
  Json ranks = Json::array();
  for (const RankReport& r : report.ranks) {
    Json rank;
    rank["path"] = r.path;
    rank["rank"] = r.rank;
    rank["events"] = r.events;
    rank["gpu_time"] = toJson(r.time);
    Json devices = Json::array();
    for (const DeviceReport& d : r.devices) {
      Json device = {{"device", d.device},
                     {"time", toJson(d.time)},
                     {"communication_overlap_ns", d.communicationOverlapNs}};
      Json streams = Json::array();
      for (const StreamBreakdown& s : d.streams) {
        streams.push_back({{"stream", s.stream},
                           {"operations", s.operations},
                           {"busy_ns", s.busyNs},
                           {"max_queue_depth", s.maxQueueDepth}});
      }
      device["streams"] = streams;
      devices.push_back(device);
    }
    rank["devices"] = devices;
    rank["steps"] = Json::array();  // filled in as text below
    rank["kernel_count"] = r.kernelCount;
    rank["kernel_ns"] = r.kernelNs;
    Json kinds = Json::array(), kernels = Json::array();
    for (const KernelRow& k : r.kinds) kinds.push_back(toJson(k));
    for (const KernelRow& k : r.kernels) {
      kernels.push_back(toJson(k));
      if (!k.bound.empty())
        kernels.back()["gpu_bound"] = boundMixJson(k.bound, r.gpuMetrics.metrics);
      if (k.fit.fitted) kernels.back()["metric_fit"] = metricFitJson(k.fit, r.gpuMetrics.metrics);
    }
    rank["kinds"] = kinds;
    rank["kernels"] = kernels;
    Json issuers = Json::array();
    for (const auto& [name, n] : r.tiny.issuers) {
      issuers.push_back(
          {{"range", name},
           {"count", n},
           {"share", r.tiny.count > 0 ? static_cast<double>(n) / r.tiny.count : 0.0}});
    }
    rank["tiny_kernels"] = {{"threshold_ns", r.tiny.thresholdNs},
                            {"count", r.tiny.count},
                            {"kernel_ns", r.tiny.kernelNs},
                            {"launch_ns", r.tiny.launchNs},
                            {"launch_longer_count", r.tiny.launchLongerCount},
                            {"share_of_kernels", r.tiny.shareOfKernels},
                            {"issuers", issuers}};
    Json outliers = Json::array();
    for (const LaunchOutlier& o : r.launchOutliers) {
      outliers.push_back({{"name", o.name}, {"start_ns", o.startNs}, {"latency_ns", o.latencyNs}});
    }
    rank["launch_latency"] = {{"distribution", toJson(r.launchLatency)}, {"outliers", outliers}};
    Json gaps = Json::array();
    for (const GapReport& g : r.gaps) {
      gaps.push_back({{"device", g.device},
                      {"start_ns", g.startNs},
                      {"duration_ns", g.durationNs},
                      {"cause", g.cause},
                      {"evidence", g.evidence},
                      {"ended_by", g.endedBy},
                      {"host_was_in", g.hostWas}});
    }
    rank["longest_gaps"] = gaps;
    Json otherWork = Json::array();
    for (const FoundRow& row : r.otherWork) {
      otherWork.push_back({{"found", row.found}, {"gaps", row.gaps}, {"ns", row.ns}});
    }
    rank["other_work_waits"] = otherWork;
    Json afterSync = Json::array();
    for (const FoundRow& row : r.hostWaitAfterSync) {
      afterSync.push_back({{"found", row.found}, {"gaps", row.gaps}, {"ns", row.ns}});
    }
    rank["host_wait_after_sync"] = afterSync;
    rank["gpu_operations"] = r.gpuOps;
    rank["operations_with_host_range"] = r.opsWithHostRange;
    rank["sync_records"] = r.syncRecords;
    Json nccl = Json::array();
    for (const NcclCallRow& row : r.ncclCalls) {
      nccl.push_back({{"call", row.call},
                      {"operations", row.operations},
                      {"bytes", row.bytes},
                      {"gpu_ns", row.gpuNs},
                      {"gigabytes_per_second", row.gigabytesPerSecond}});
    }
    rank["nccl_calls"] = nccl;
    Json queues = Json::array();
    for (const QueueDepthTimeline& q : r.queueDepthTimelines) {
      const auto d = std::find_if(r.devices.begin(), r.devices.end(),
                                  [&q](const DeviceReport& x) { return x.device == q.device; });
      queues.push_back({{"device", q.device},
                        {"stream", q.stream},
                        {"start_ns", d != r.devices.end() ? d->timelineStartNs : 0},
                        {"bin_ns", d != r.devices.end() ? d->timelineBinNs : 0},
                        {"max_depth", q.maxDepth}});
    }
    rank["queue_depth_timeline"] = queues;  // the most queued per bin, per stream
    if (r.gpuMetrics.any()) rank["gpu_metrics"] = gpuMetricsJson(r.gpuMetrics);
    rank["memory"] = {{"samples", r.memory.samples},
                      {"first_bytes", r.memory.firstBytes},
                      {"last_bytes", r.memory.lastBytes},
                      {"peak_bytes", r.memory.peakBytes},
                      {"peak_at_ns", r.memory.peakAtNs},
                      {"grows_every_step", r.memory.growsEveryStep},
                      {"growth_per_step_bytes", r.memory.growthPerStepBytes}};
    rank["host"] = hostJson(r.host);
    addWorkloadJson(rank, r);
    if (r.criticalPath.asked) rank["critical_path"] = criticalPathJson(r.criticalPath);
    ranks.push_back(rank);
  }
  root["ranks"] = ranks;
  Json stragglers = Json::array();
  for (const StragglerReport& s : report.stragglers) {
    stragglers.push_back(
        {{"collective", s.collective},
         {"source", s.source == StragglerReport::Source::HostCall ? "host call" : "kernel"},
         {"occurrence", s.occurrence},
         {"slow_rank", s.slowRank},
         {"late_by_ns", s.lateByNs}});
  }
  root["stragglers"] = stragglers;
  const std::string document = root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";

  // The steps, a row each (a long run has tens of thousands): as a tree they took four
  // times the memory of their text, so each is written as text on its own, indented as
  // the whole document's dump would, into its rank's empty "steps" array. That array's
  // key is found unambiguously: a string value's quotes would be escaped in the text.
  constexpr std::string_view kEmptySteps = "\"steps\": []";
  constexpr std::string_view kStepIndent = "\n        ";  // ranks[i].steps[k] is 4 deep
  std::string out;
  out.reserve(document.size());
  std::size_t copied = 0;
  for (const RankReport& r : report.ranks) {
    const std::size_t at = document.find(kEmptySteps, copied);
    if (at == std::string::npos) break;
    out.append(document, copied, at - copied);
    out += "\"steps\": [";
    for (std::size_t k = 0; k < r.steps.size(); ++k) {
      const StepReport& s = r.steps[k];
      Json step = {{"name", s.name},
                   {"start_ns", s.startNs},
                   {"end_ns", s.endNs},
                   {"time", toJson(s.time)},
                   {"allocated_at_end_bytes", s.allocatedAtEndBytes}};
      if (!s.bound.empty()) step["gpu_bound"] = boundMixJson(s.bound, r.gpuMetrics.metrics);
      const std::string text = step.dump(2, ' ', false, Json::error_handler_t::replace);
      out += k == 0 ? "" : ",";
      out += kStepIndent;
      for (char c : text) {
        if (c == '\n') {
          out += kStepIndent;
        } else {
          out += c;
        }
      }
    }
    if (!r.steps.empty()) out += "\n      ";
    out += "]";
    copied = at + kEmptySteps.size();
  }
  out.append(document, copied, std::string::npos);
  return out;
}

}  // namespace kinetrace::detail
