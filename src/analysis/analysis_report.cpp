// The analysis as sentences and tables for a terminal, and as JSON for programs.

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <string_view>

#include "analysis/trace_analysis.h"

namespace kinetrace::detail {
namespace {

std::string duration(int64_t ns) {
  const double v = static_cast<double>(ns);
  if (ns < 0) return "-" + duration(-ns);
  if (ns < 10'000) return fmt::format("{:.2f} us", v / 1e3);
  if (ns < 1'000'000) return fmt::format("{:.1f} us", v / 1e3);
  if (ns < 10'000'000'000) return fmt::format("{:.2f} ms", v / 1e6);
  return fmt::format("{:.2f} s", v / 1e9);
}

std::string percent(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.1f}%",
                                 100.0 * static_cast<double>(part) / static_cast<double>(whole))
                   : "-";
}

std::string count(uint64_t n) {
  std::string digits = std::to_string(n);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3)
    digits.insert(static_cast<std::size_t>(at), ",");
  return digits;
}

std::string bytes(int64_t b) {
  const double v = static_cast<double>(b);
  if (std::abs(b) < 1'000'000) return fmt::format("{:.1f} kB", v / 1e3);
  if (std::abs(b) < 1'000'000'000) return fmt::format("{:.1f} MB", v / 1e6);
  return fmt::format("{:.2f} GB", v / 1e9);
}

std::string shorten(const std::string& name, std::size_t width = 70) {
  return name.size() <= width ? name : name.substr(0, width - 3) + "...";
}

std::string who(const RankReport& r, std::size_t index) {
  return r.rank >= 0 ? fmt::format("rank {}", r.rank) : fmt::format("trace {}", index + 1);
}

}  // namespace

// What a performance engineer would say first, with the numbers.
std::vector<std::string> findingsOf(const AnalysisReport& report, const AnalysisOptions& options) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    const RankReport& r = report.ranks[i];
    const TimeBreakdown& t = r.time;
    const std::string prefix = report.ranks.size() > 1 ? who(r, i) + ": " : "";
    std::string leak;
    if (r.memory.growsEveryStep) {
      leak = fmt::format(
          "{}allocated GPU memory grew at the end of every one of the {} steps, by {} a step "
          "(peak {}): a leak signature; look for tensors kept across steps (losses appended "
          "to a list, caches).",
          prefix, r.steps.size(), bytes(r.memory.growthPerStepBytes), bytes(r.memory.peakBytes));
    }
    if (r.devices.empty()) {
      out.push_back(prefix +
                    "no GPU operations in the trace (kernels, copies, memsets): nothing to say "
                    "about the GPU; was GPU activity recorded?");
      if (!leak.empty()) out.push_back(leak);
      continue;
    }
    out.push_back(fmt::format(
        "{}the GPU{} was busy {} and idle {} of the {} window{}: {} waiting for the host to "
        "launch work, {} launching, {} moving between kernels, {} waiting on other work (a "
        "sync, an event, another stream), {} other.",
        prefix, r.devices.size() > 1 ? "s" : "", percent(t.busyNs, t.windowNs),
        percent(t.idleNs, t.windowNs),
        duration(t.windowNs / static_cast<int64_t>(r.devices.size())),
        r.devices.size() > 1 ? " (all GPUs together)" : "", percent(t.hostWaitNs, t.windowNs),
        percent(t.launchNs, t.windowNs), percent(t.kernelWaitNs, t.windowNs),
        percent(t.otherWorkWaitNs, t.windowNs), percent(t.otherIdleNs, t.windowNs)));
    if (t.windowNs > 0 && t.hostWaitNs * 5 > t.windowNs) {
      out.push_back(fmt::format(
          "{}{} of the time the GPU waits for the host: the CPU does not launch work fast enough "
          "(see tiny kernels and the longest gaps below).",
          prefix, percent(t.hostWaitNs, t.windowNs)));
    }
    const TinyKernelReport& tiny = r.tiny;
    if (tiny.count >= 100 && tiny.shareOfKernels >= 0.3) {
      std::string from;
      for (std::size_t k = 0; k < std::min<std::size_t>(3, tiny.issuers.size()); ++k) {
        from += fmt::format("{}{} ({})", k ? ", " : "", shorten(tiny.issuers[k].first, 40),
                            count(tiny.issuers[k].second));
      }
      out.push_back(fmt::format(
          "{}{} kernels under {} ({} of all kernels) ran {} on the GPU and took {} to launch{}; "
          "most were issued from {}. Fuse them (torch.compile) or replay them as a CUDA graph.",
          prefix, count(tiny.count), duration(options.tinyKernelNs),
          fmt::format("{:.0f}%", 100 * tiny.shareOfKernels), duration(tiny.kernelNs),
          duration(tiny.launchNs),
          tiny.launchLongerCount > tiny.count / 2
              ? " (launching most took longer than running them)"
              : "",
          from));
    }
    if (t.windowNs > 0 && t.dataLoadingIdleNs * 20 > t.windowNs) {
      out.push_back(fmt::format(
          "{}the GPU was idle {} ({} of the window) while data loading ran on the host: the "
          "input pipeline starves the GPU (more workers, pinned memory, prefetching).",
          prefix, duration(t.dataLoadingIdleNs), percent(t.dataLoadingIdleNs, t.windowNs)));
    }
    if (!leak.empty()) out.push_back(leak);
    if (r.communicationKernels > 0 && t.busyNs > 0) {
      int64_t overlap = 0;
      for (const DeviceReport& d : r.devices) overlap += d.communicationOverlapNs;
      int64_t communication = 0;
      for (const KernelRow& k : r.kinds) {
        if (k.kind == "communication") communication = k.duration.totalNs;
      }
      out.push_back(fmt::format(
          "{}{} NCCL kernels: communication alone {} of busy time; {} of their time overlapped "
          "compute.",
          prefix, count(r.communicationKernels), percent(t.communicationNs, t.busyNs),
          percent(overlap, communication)));
    }
    if (!r.ncclCalls.empty()) {
      const NcclCallRow& top = r.ncclCalls.front();
      out.push_back(fmt::format(
          "{}NCCL's calls took {} of GPU time; the longest in total, {}: {} operations moving {} "
          "({} each on average) at {:.1f} GB/s.",
          prefix,
          duration(
              std::accumulate(r.ncclCalls.begin(), r.ncclCalls.end(), int64_t{0},
                              [](int64_t sum, const NcclCallRow& row) { return sum + row.gpuNs; })),
          top.call, count(top.operations), bytes(static_cast<int64_t>(top.bytes)),
          bytes(static_cast<int64_t>(top.bytes / std::max<uint64_t>(top.operations, 1))),
          top.gigabytesPerSecond));
    }
    if (r.launchLatency.count > 0 &&
        r.launchLatency.p99Ns > 10 * std::max<int64_t>(r.launchLatency.p50Ns, 1) &&
        r.launchLatency.p99Ns > 100'000) {
      out.push_back(fmt::format(
          "{}launch latency (launch call to start) p50 {}, p99 {}, max {}: some work queued "
          "behind long-running operations.",
          prefix, duration(r.launchLatency.p50Ns), duration(r.launchLatency.p99Ns),
          duration(r.launchLatency.maxNs)));
    }
  }
  if (!report.stragglers.empty() && report.stragglers.front().lateByNs > 100'000) {
    const StragglerReport& s = report.stragglers.front();
    out.push_back(fmt::format(
        "rank {} {} {} #{} {} after the first rank: the other ranks waited for it in the "
        "collective (a straggler).",
        s.slowRank, s.source == StragglerReport::Source::HostCall ? "called" : "started",
        shorten(s.collective, 50), s.occurrence, duration(s.lateByNs)));
  }
  return out;
}

namespace {

void breakdownLine(std::string& out, const std::string& label, const TimeBreakdown& t) {
  out += fmt::format(
      "  {:<20} {:>10}  busy {:>6} = compute {:>6} + communication {:>6} + memory {:>6}\n",
      shorten(label, 20), duration(t.windowNs), percent(t.busyNs, t.windowNs),
      percent(t.computeNs, t.windowNs), percent(t.communicationNs, t.windowNs),
      percent(t.memoryNs, t.windowNs));
  out += fmt::format(
      "  {:<20} {:>10}  idle {:>6} = host wait {:>6} + launch {:>6} + kernel wait {:>6} + "
      "other work {:>6} + other {:>6}; {} during data loading\n",
      "", "", percent(t.idleNs, t.windowNs), percent(t.hostWaitNs, t.windowNs),
      percent(t.launchNs, t.windowNs), percent(t.kernelWaitNs, t.windowNs),
      percent(t.otherWorkWaitNs, t.windowNs), percent(t.otherIdleNs, t.windowNs),
      percent(t.dataLoadingIdleNs, t.windowNs));
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
          {"host_wait_ns", t.hostWaitNs},
          {"launch_ns", t.launchNs},
          {"kernel_wait_ns", t.kernelWaitNs},
          {"other_work_wait_ns", t.otherWorkWaitNs},
          {"other_idle_ns", t.otherIdleNs},
          {"data_loading_idle_ns", t.dataLoadingIdleNs}};
}

nlohmann::ordered_json toJson(const KernelRow& k) {
  return {{"name", k.name}, {"kind", k.kind}, {"share", k.share}, {"duration", toJson(k.duration)}};
}

}  // namespace

std::string formatReport(const AnalysisReport& report, const AnalysisOptions& options) {
  std::string out;
  out += "Findings\n";
  for (const std::string& f : report.findings) out += "  - " + f + "\n";
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    const RankReport& r = report.ranks[i];
    out += fmt::format("\n{} ({}): {} events\n", who(r, i), r.path, count(r.events));
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
      out += fmt::format("  {:>7} {:>9} {:>11} {:>10} {:>10} {:>10}  {}\n", "share", "count",
                         "total", "mean", "median", "max", "name");
      for (const KernelRow& k : r.kernels) {
        out += fmt::format("  {:>6.1f}% {:>9} {:>11} {:>10} {:>10} {:>10}  {} [{}]\n",
                           100 * k.share, count(k.duration.count), duration(k.duration.totalNs),
                           duration(k.duration.meanNs), duration(k.duration.p50Ns),
                           duration(k.duration.maxNs), shorten(k.name), k.kind);
      }
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
    for (const auto& [name, n] : tiny.issuers)
      out += fmt::format("  {:>9}  {}\n", count(n), shorten(name));
    if (r.launchLatency.count > 0) {
      const Distribution& l = r.launchLatency;
      out += fmt::format("Launch latency: p50 {}, p90 {}, p99 {}, max {} over {} operations\n",
                         duration(l.p50Ns), duration(l.p90Ns), duration(l.p99Ns), duration(l.maxNs),
                         count(l.count));
    }
    if (!r.gaps.empty()) {
      out += "Longest idle gaps\n";
      for (const GapReport& g : r.gaps) {
        out += fmt::format("  GPU {} {:>10} {:<11} before {}{}\n", g.device, duration(g.durationNs),
                           g.cause, shorten(g.endedBy, 50),
                           g.hostWas.empty() ? "" : "; the host was in " + shorten(g.hostWas, 40));
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
  root["findings"] = report.findings;
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
    for (const KernelRow& k : r.kernels) kernels.push_back(toJson(k));
    rank["kinds"] = kinds;
    rank["kernels"] = kernels;
    Json issuers = Json::array();
    for (const auto& [name, n] : r.tiny.issuers) issuers.push_back({{"range", name}, {"count", n}});
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
                      {"ended_by", g.endedBy},
                      {"host_was_in", g.hostWas}});
    }
    rank["longest_gaps"] = gaps;
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
    rank["memory"] = {{"samples", r.memory.samples},
                      {"first_bytes", r.memory.firstBytes},
                      {"last_bytes", r.memory.lastBytes},
                      {"peak_bytes", r.memory.peakBytes},
                      {"peak_at_ns", r.memory.peakAtNs},
                      {"grows_every_step", r.memory.growsEveryStep},
                      {"growth_per_step_bytes", r.memory.growthPerStepBytes}};
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
      const Json step = {{"name", s.name},
                         {"start_ns", s.startNs},
                         {"end_ns", s.endNs},
                         {"time", toJson(s.time)},
                         {"allocated_at_end_bytes", s.allocatedAtEndBytes}};
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
