// Kernel sequences, GPU time per annotation, time at a full launch queue and copy bandwidth
// (workload_figures.h) in the terminal report, the JSON and the findings.

#include "analysis/workload_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/report_text.h"

namespace kinetrace::detail {
namespace {

using namespace report_text;
using Json = nlohmann::ordered_json;

// "gemm > bias > relu", each name shortened; a sequence longer than the names kept says how
// many more.
std::string chainText(const KernelSequenceRow& row, std::size_t width = 40) {
  std::string text;
  for (const std::string& kernel : row.kernels) {
    text += (text.empty() ? "" : " > ") + shorten(kernel, width);
  }
  if (row.length > row.kernels.size()) {
    text += fmt::format(" > ... ({} more)", count(row.length - row.kernels.size()));
  }
  return text;
}

std::string issuerText(const KernelSequenceRow& row) {
  if (row.acrossRanges) return "(across host ranges)";
  return row.issuer.empty() ? "(no host range)" : shorten(row.issuer, 40);
}

Json leftOutJson(const std::map<std::string, uint64_t>& leftOut) {
  Json out = Json::object();
  for (const auto& [why, n] : leftOut) out[why] = n;
  return out;
}

void leftOutText(std::string& out, const std::map<std::string, uint64_t>& leftOut) {
  for (const auto& [why, n] : leftOut) out += fmt::format("  left out: {} {}\n", count(n), why);
}

void sequencesText(std::string& out, const KernelSequenceReport& s) {
  if (s.rows.empty() && s.leftOut.empty() && s.noneBecause.empty()) return;
  if (s.mode == "operator") {
    out += fmt::format(
        "Kernel sequences of \"{}\" (HTA's: the shallowest such operators with {} or more "
        "operations; {} distinct, most frequent first)\n",
        s.operatorName, s.length, count(s.chains));
    out += fmt::format("  {:>7} {:>11} {:>11}  {}\n", "count", "GPU", "operator", "sequence");
    for (const KernelSequenceRow& row : s.rows) {
      out += fmt::format("  {:>7} {:>11} {:>11}  {}: {}\n", count(row.count), duration(row.gpuNs),
                         duration(row.operatorNs), shorten(row.issuer, 40), chainText(row, 30));
    }
    if (!s.noneBecause.empty()) out += "  none, as in HTA: " + s.noneBecause + "\n";
  } else {
    out += fmt::format(
        "Kernel sequences ({} kernels back to back on a stream, twice or more; of {} distinct, "
        "by what fusing them would save: the launches after the first and the gaps)\n",
        s.length, count(s.chains));
    out += fmt::format("  {:>10} {:>7} {:>10} {:>10} {:>10}  {}\n", "saved", "count", "GPU",
                       "launching", "gaps", "issued under: kernels");
    if (s.rows.empty()) out += "  (no chain ran twice)\n";
    for (const KernelSequenceRow& row : s.rows) {
      out += fmt::format("  {:>10} {:>7} {:>10} {:>10} {:>10}  {}: {}\n", duration(row.savedNs),
                         count(row.count), duration(row.gpuNs), duration(row.launchNs),
                         duration(row.gapNs), issuerText(row), chainText(row));
    }
  }
  leftOutText(out, s.leftOut);
}

void annotationsText(std::string& out, const AnnotationReport& a) {
  if (a.rows.empty()) return;
  out += fmt::format(
      "GPU time per annotation (each operation to its innermost annotation, by {}; {} of GPU "
      "time attributed)\n",
      a.attributedBy.empty() ? "none" : a.attributedBy, percent(a.attributedNs, a.gpuNs));
  out += fmt::format("  {:>11} {:>6} {:>9} {:>7} {:>11}  {}\n", "GPU", "share", "ops", "spans",
                     "span time", "annotation");
  for (const AnnotationRow& row : a.rows) {
    out += fmt::format("  {:>11} {:>6} {:>9} {:>7} {:>11}  {}\n", duration(row.gpuNs),
                       percent(row.gpuNs, a.gpuNs), count(row.operations), count(row.spans),
                       duration(row.spanNs), shorten(row.name));
  }
  if (a.annotations > a.rows.size()) {
    out += fmt::format("  ... and {} more annotations\n", count(a.annotations - a.rows.size()));
  }
  leftOutText(out, a.leftOut);
  if (a.modules.empty()) return;
  out += "GPU time per module (each operation to the innermost module around its launch)\n";
  for (const AnnotationRow& row : a.modules) {
    out += fmt::format("  {:>11} {:>6} {:>9}  {}\n", duration(row.gpuNs),
                       percent(row.gpuNs, a.gpuNs), count(row.operations), shorten(row.name));
  }
}

void fullQueueText(std::string& out, const FullQueueReport& q) {
  if (q.streams.empty()) return;
  out += fmt::format("Launch queue full ({} or more operations queued on a stream)\n",
                     count(static_cast<uint64_t>(q.maxQueueLength)));
  for (const FullQueueStream& s : q.streams) {
    out += fmt::format("  GPU {} stream {:<6} {:>10} ({} of the window), deepest {}\n", s.device,
                       s.stream, duration(s.fullNs), percent(s.fullNs, q.windowNs),
                       count(static_cast<uint64_t>(s.maxDepth)));
  }
}

// GB/s with two decimals; a hostile trace's huge ones in exponent form, within the column.
std::string gbps(double v) {
  return v < 1e6 ? fmt::format("{:.2f}", v) : fmt::format("{:.2e}", v);
}

void copyBandwidthText(std::string& out, const CopyBandwidthReport& c) {
  if (c.kinds.empty()) return;
  out += "Copy bandwidth, GB/s (over the values the summed bandwidth of each kind takes)\n";
  out += fmt::format("  {:<15} {:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "kind",
                     "ops", "bytes", "time", "mean", "min", "p25", "p50", "p75", "max");
  for (const CopyKindBandwidth& k : c.kinds) {
    out += fmt::format("  {:<15} {:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
                       shorten(k.kind, 15), count(k.operations), bytes(k.bytes), duration(k.gpuNs),
                       gbps(k.meanGbps), gbps(k.minGbps), gbps(k.p25Gbps), gbps(k.p50Gbps),
                       gbps(k.p75Gbps), gbps(k.maxGbps));
  }
  leftOutText(out, c.leftOut);
}

}  // namespace

std::string workloadText(const RankReport& r) {
  std::string out;
  sequencesText(out, r.kernelSequences);
  annotationsText(out, r.annotations);
  fullQueueText(out, r.fullQueue);
  copyBandwidthText(out, r.copyBandwidth);
  return out;
}

void addWorkloadJson(Json& rank, const RankReport& r) {
  const KernelSequenceReport& s = r.kernelSequences;
  Json sequences = Json::array();
  for (const KernelSequenceRow& row : s.rows) {
    sequences.push_back({{"kernels", row.kernels},
                         {"length", row.length},
                         {"issuer", row.issuer},
                         {"across_ranges", row.acrossRanges},
                         {"count", row.count},
                         {"gpu_ns", row.gpuNs},
                         {"launch_ns", row.launchNs},
                         {"gap_ns", row.gapNs},
                         {"saved_ns", row.savedNs},
                         {"operator_ns", row.operatorNs}});
  }
  rank["kernel_sequences"] = {{"mode", s.mode},
                              {"length", s.length},
                              {"operator", s.operatorName},
                              {"chains", s.chains},
                              {"counted", s.counted},
                              {"none_because", s.noneBecause},
                              {"left_out", leftOutJson(s.leftOut)},
                              {"rows", sequences}};
  const AnnotationReport& a = r.annotations;
  Json annotations = Json::array();
  for (const AnnotationRow& row : a.rows) {
    annotations.push_back({{"name", row.name},
                           {"operations", row.operations},
                           {"gpu_ns", row.gpuNs},
                           {"spans", row.spans},
                           {"span_ns", row.spanNs},
                           {"span_min_ns", row.spanMinNs},
                           {"span_max_ns", row.spanMaxNs}});
  }
  Json modules = Json::array();
  for (const AnnotationRow& row : a.modules) {
    modules.push_back({{"name", row.name}, {"operations", row.operations}, {"gpu_ns", row.gpuNs}});
  }
  rank["annotations"] = {{"attributed_by", a.attributedBy},
                         {"annotations", a.annotations},
                         {"operations", a.operations},
                         {"attributed_operations", a.attributedOperations},
                         {"gpu_ns", a.gpuNs},
                         {"attributed_ns", a.attributedNs},
                         {"left_out", leftOutJson(a.leftOut)},
                         {"rows", annotations},
                         {"module_count", a.moduleCount},
                         {"modules", modules}};
  const FullQueueReport& q = r.fullQueue;
  Json streams = Json::array();
  for (const FullQueueStream& st : q.streams) {
    streams.push_back({{"device", st.device},
                       {"stream", st.stream},
                       {"max_depth", st.maxDepth},
                       {"full_ns", st.fullNs},
                       {"window_share", st.windowShare}});
  }
  rank["launch_queue_full"] = {{"max_queue_length", q.maxQueueLength},
                               {"window_ns", q.windowNs},
                               {"full_ns", q.fullNs},
                               {"streams_full", q.streamsFull},
                               {"streams", streams}};
  const CopyBandwidthReport& c = r.copyBandwidth;
  Json kinds = Json::array();
  for (const CopyKindBandwidth& k : c.kinds) {
    kinds.push_back({{"kind", k.kind},
                     {"operations", k.operations},
                     {"bytes", k.bytes},
                     {"gpu_ns", k.gpuNs},
                     {"samples", k.samples},
                     {"mean_gbps", k.meanGbps},
                     {"std_gbps", k.stdGbps},
                     {"min_gbps", k.minGbps},
                     {"p25_gbps", k.p25Gbps},
                     {"p50_gbps", k.p50Gbps},
                     {"p75_gbps", k.p75Gbps},
                     {"max_gbps", k.maxGbps},
                     {"timeline", k.timeline}});
  }
  rank["copy_bandwidth"] = {{"timeline_start_ns", c.timelineStartNs},
                            {"timeline_bin_ns", c.timelineBinNs},
                            {"left_out", leftOutJson(c.leftOut)},
                            {"kinds", kinds}};
}

std::vector<Finding> workloadFindings(const RankReport& r, const std::string& prefix) {
  std::vector<Finding> out;
  const int64_t window =
      r.time.windowNs / static_cast<int64_t>(std::max<std::size_t>(r.devices.size(), 1));
  auto ofWindow = [window](int64_t ns) {
    return window > 0 ? static_cast<double>(ns) / static_cast<double>(window) : 0.0;
  };
  const KernelSequenceReport& s = r.kernelSequences;
  // A chain worth fusing: it repeats, and fusing it saves a hundredth of the window or more.
  if (s.mode == "windows" && !s.rows.empty() && s.rows.front().count >= 2 &&
      ofWindow(s.rows.front().savedNs) >= 0.01) {
    const KernelSequenceRow& top = s.rows.front();
    out.push_back(Finding{
        "fusable-kernel-sequence",
        std::nullopt,
        fmt::format(
            "{}the kernels {} ran back to back {} times{}: fusing them into one kernel would "
            "save up to {} ({} of the window): {} of launch calls and {} of the GPU moving "
            "between them. Fuse them (torch.compile, a fused op); see the kernel sequences "
            "below for the other chains.",
            prefix, chainText(top, 30), count(top.count),
            top.issuer.empty() ? "" : ", issued under " + shorten(top.issuer, 40),
            duration(top.savedNs), share(ofWindow(top.savedNs)), duration(top.savedNs - top.gapNs),
            duration(top.gapNs)),
        {{"count", static_cast<double>(top.count)},
         {"length", static_cast<double>(top.length)},
         {"saved_ns", static_cast<double>(top.savedNs)},
         {"saved_share", ofWindow(top.savedNs)},
         {"gap_ns", static_cast<double>(top.gapNs)},
         {"gpu_ns", static_cast<double>(top.gpuNs)}}});
  }
  const FullQueueReport& q = r.fullQueue;
  if (!q.streams.empty() && q.streams.front().windowShare >= 0.01) {
    const FullQueueStream& st = q.streams.front();
    out.push_back(Finding{
        "launch-queue-full",
        std::nullopt,
        fmt::format(
            "{}GPU {} stream {}'s launch queue held {} operations or more for {} ({} of the "
            "window): the host blocked in its launch calls until the GPU caught up, so the GPU's "
            "work bounds that stretch, not launching: see the kernel table below for what to "
            "make faster or fewer.",
            prefix, st.device, st.stream, count(static_cast<uint64_t>(q.maxQueueLength)),
            duration(st.fullNs), share(st.windowShare)),
        {{"device", static_cast<double>(st.device)},
         {"stream", static_cast<double>(st.stream)},
         {"max_queue_length", static_cast<double>(q.maxQueueLength)},
         {"full_ns", static_cast<double>(st.fullNs)},
         {"full_share", st.windowShare}}});
  }
  const AnnotationReport& a = r.annotations;
  if (a.rows.size() >= 2 && a.gpuNs > 0 && a.attributedNs * 2 >= a.gpuNs &&
      a.rows.front().gpuNs > 0) {
    std::string parts;
    for (std::size_t i = 0; i < std::min<std::size_t>(3, a.rows.size()); ++i) {
      if (a.rows[i].gpuNs == 0) break;
      parts += fmt::format("{}{} {}", i ? ", " : "", shorten(a.rows[i].name, 40),
                           percent(a.rows[i].gpuNs, a.gpuNs));
    }
    out.push_back(Finding{
        "gpu-time-by-annotation",
        std::nullopt,
        fmt::format("{}of the GPU operations' time, {}: the annotations to look inside first "
                    "(attributed by {}); see the table of annotations below for them all.",
                    prefix, parts, a.attributedBy),
        {{"attributed_share", static_cast<double>(a.attributedNs) / static_cast<double>(a.gpuNs)},
         {"top_gpu_ns", static_cast<double>(a.rows.front().gpuNs)},
         {"top_share", static_cast<double>(a.rows.front().gpuNs) / static_cast<double>(a.gpuNs)}}});
  }
  // Host copies far below what PCIe moves (tens of GB/s), taking a twentieth of the window:
  // pageable memory, or copies too small to reach the link's rate.
  for (const CopyKindBandwidth& k : r.copyBandwidth.kinds) {
    const bool host = k.kind == "Memcpy HtoD" || k.kind == "Memcpy DtoH";
    if (!host || k.samples == 0 || k.meanGbps >= 5.0 || ofWindow(k.gpuNs) < 0.05) continue;
    out.push_back(Finding{
        "slow-host-copies",
        std::nullopt,
        fmt::format("{}{} copies took {} ({} of the window) at {:.2f} GB/s on average (median "
                    "{:.2f}): far below the link's rate. Take them from pinned memory "
                    "(pin_memory=True), in fewer, larger copies.",
                    prefix, k.kind, duration(k.gpuNs), share(ofWindow(k.gpuNs)), k.meanGbps,
                    k.p50Gbps),
        {{"gpu_ns", static_cast<double>(k.gpuNs)},
         {"gpu_share", ofWindow(k.gpuNs)},
         {"mean_gbps", k.meanGbps},
         {"p50_gbps", k.p50Gbps},
         {"operations", static_cast<double>(k.operations)}}});
  }
  return out;
}

}  // namespace kinetrace::detail
