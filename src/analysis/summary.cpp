#include "analysis/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>

#include "kinetrace/error.h"

namespace kinetrace::detail {
namespace {

using Interval = std::pair<int64_t, int64_t>;

// Length of the union of intervals: overlapping work counts once.
int64_t unionLength(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  int64_t total = 0;
  bool open = false;
  int64_t start = 0, end = 0;
  for (const auto& [s, e] : intervals) {
    if (e <= s) continue;
    if (open && s <= end) {
      end = std::max(end, e);
      continue;
    }
    if (open) total += end - start;
    start = s;
    end = e;
    open = true;
  }
  if (open) total += end - start;
  return total;
}

// Only the part of an operation inside the window counts toward utilisation: work queued
// before stop may finish after it.
Interval clip(const GpuPlacement& at, int64_t windowStart, int64_t windowStop) {
  return {std::max(at.startNs, windowStart), std::min(at.endNs, windowStop)};
}

const std::string* metadata(const TraceData& trace, const std::string& key) {
  for (const auto& entry : trace.metadataJson) {
    if (entry.first == key) return &entry.second;
  }
  return nullptr;
}

// "Memcpy HtoD (Pinned -> Device)" -> "HtoD".
std::string copyKindOf(std::string_view name) {
  constexpr std::string_view kPrefix = "Memcpy ";
  if (name.substr(0, kPrefix.size()) == kPrefix) name.remove_prefix(kPrefix.size());
  std::size_t space = name.find(' ');
  std::string_view kind = name.substr(0, space);
  return kind.empty() ? std::string("other") : std::string(kind);
}

double ratio(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string percent(double fraction) {
  return fmt::format("{:.1f}%", fraction * 100.0);
}

// 61482 -> "61,482".
std::string grouped(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

Summary summarize(const TraceData& trace, std::size_t topKernels) {
  Summary s;
  s.pid = trace.pid;
  s.windowNs = std::max<int64_t>(0, trace.stopNs - trace.startNs);
  const int64_t from = trace.startNs;
  const int64_t to = trace.stopNs;

  std::map<uint32_t, std::vector<Interval>> all, kernelsOnly;
  std::unordered_map<StringId, KernelTotal> byName;
  for (const KernelRecord& k : trace.kernels) {
    Interval span = clip(k.at, from, to);
    all[k.at.deviceId].push_back(span);
    kernelsOnly[k.at.deviceId].push_back(span);
    int64_t ns = std::max<int64_t>(0, k.at.endNs - k.at.startNs);
    KernelTotal& total = byName[k.name];
    ++total.count;
    total.totalNs += ns;
    total.maxNs = std::max(total.maxNs, ns);
    s.kernelTotalNs += ns;
  }
  s.kernelCount = trace.kernels.size();

  std::map<std::string, CopyTotal> copies;
  for (const MemcpyRecord& m : trace.memcpys) {
    all[m.at.deviceId].push_back(clip(m.at, from, to));
    CopyTotal& total = copies[copyKindOf(trace.strings.get(m.name))];
    ++total.count;
    total.bytes += m.bytes;
    total.totalNs += std::max<int64_t>(0, m.at.endNs - m.at.startNs);
    s.memcpyBytes += m.bytes;
  }
  s.memcpyCount = trace.memcpys.size();
  for (const MemsetRecord& m : trace.memsets) {
    all[m.at.deviceId].push_back(clip(m.at, from, to));
    s.memsetBytes += m.bytes;
  }
  s.memsetCount = trace.memsets.size();
  s.syncCount = trace.syncs.size();
  s.hostRangeCount = trace.ranges.size();

  for (auto& [device, intervals] : all) {
    DeviceBusy busy;
    busy.deviceId = device;
    busy.busyNs = unionLength(intervals);
    auto kernels = kernelsOnly.find(device);
    if (kernels != kernelsOnly.end()) busy.kernelBusyNs = unionLength(kernels->second);
    s.busyNs += busy.busyNs;
    s.kernelBusyNs += busy.kernelBusyNs;
    s.devices.push_back(busy);
  }
  const int64_t capacity = s.windowNs * static_cast<int64_t>(s.devices.size());
  s.utilisation = ratio(s.busyNs, capacity);
  s.kernelUtilisation = ratio(s.kernelBusyNs, capacity);

  for (auto& [name, total] : byName) {
    total.name = std::string(trace.strings.get(name));
    s.topKernels.push_back(std::move(total));
  }
  // Ties broken by name, so the order does not depend on hashing.
  std::sort(s.topKernels.begin(), s.topKernels.end(),
            [](const KernelTotal& a, const KernelTotal& b) {
              return a.totalNs != b.totalNs ? a.totalNs > b.totalNs : a.name < b.name;
            });
  if (s.topKernels.size() > topKernels) s.topKernels.resize(topKernels);

  for (auto& [kind, total] : copies) {
    total.kind = kind;
    s.memcpyByKind.push_back(total);
  }
  std::sort(s.memcpyByKind.begin(), s.memcpyByKind.end(),
            [](const CopyTotal& a, const CopyTotal& b) {
              return a.bytes != b.bytes ? a.bytes > b.bytes : a.kind < b.kind;
            });

  const LossCounters& l = trace.losses;
  s.droppedGpuRecords = l.cuptiDroppedRecords + l.cuptiBuffersRefused;
  s.droppedHostEvents = l.droppedHostEvents;
  s.outOfWindowEvents = l.outOfWindowEvents;
  s.gpuOpsWithoutLaunch = l.gpuOpsWithoutLaunch;

  auto parsed = [&](const std::string& key) {
    const std::string* text = metadata(trace, key);
    return text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  };
  nlohmann::json distributed = parsed("distributedInfo");
  if (distributed.is_object()) {
    s.rank = distributed.value("rank", int64_t{-1});
    s.worldSize = distributed.value("world_size", int64_t{0});
  }
  nlohmann::json processName = parsed("kinetrace_process_name");
  if (processName.is_string()) s.processName = processName.get<std::string>();
  nlohmann::json gpuStatus = parsed("kinetrace_gpu_status");
  if (gpuStatus.is_string()) s.gpuStatus = gpuStatus.get<std::string>();
  return s;
}

std::string summaryToJson(const Summary& s) {
  using nlohmann::json;
  json kernels = json::array();
  for (const KernelTotal& k : s.topKernels) {
    kernels.push_back(
        {{"name", k.name}, {"count", k.count}, {"total_ns", k.totalNs}, {"max_ns", k.maxNs}});
  }
  json copies = json::array();
  for (const CopyTotal& c : s.memcpyByKind) {
    copies.push_back(
        {{"kind", c.kind}, {"count", c.count}, {"bytes", c.bytes}, {"total_ns", c.totalNs}});
  }
  json devices = json::array();
  for (const DeviceBusy& d : s.devices) {
    devices.push_back(
        {{"device", d.deviceId}, {"busy_ns", d.busyNs}, {"kernel_busy_ns", d.kernelBusyNs}});
  }
  json out = {
      {"kinetrace_summary", 1},
      {"trace", s.traceFile},
      {"pid", s.pid},
      {"rank", s.rank},
      {"world_size", s.worldSize},
      {"process_name", s.processName},
      {"window_ns", s.windowNs},
      {"devices", devices},
      {"busy_ns", s.busyNs},
      {"kernel_busy_ns", s.kernelBusyNs},
      {"utilisation", s.utilisation},
      {"kernel_utilisation", s.kernelUtilisation},
      {"kernel_count", s.kernelCount},
      {"kernel_total_ns", s.kernelTotalNs},
      {"top_kernels", kernels},
      {"memcpy_count", s.memcpyCount},
      {"memcpy_bytes", s.memcpyBytes},
      {"memcpy_by_kind", copies},
      {"memset_count", s.memsetCount},
      {"memset_bytes", s.memsetBytes},
      {"sync_count", s.syncCount},
      {"host_range_count", s.hostRangeCount},
      {"dropped_gpu_records", s.droppedGpuRecords},
      {"dropped_host_events", s.droppedHostEvents},
      {"out_of_window_events", s.outOfWindowEvents},
      {"gpu_ops_without_launch", s.gpuOpsWithoutLaunch},
      {"gpu_status", s.gpuStatus},
  };
  // Kernel names are C++ signatures and may hold invalid UTF-8: replace, never throw.
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Summary summaryFromJson(const std::string& text) {
  using nlohmann::json;
  json in = json::parse(text, nullptr, false);
  if (!in.is_object() || !in.contains("kinetrace_summary")) {
    throw Error(
        "kinetrace: not a kinetrace summary (expected a JSON object with \"kinetrace_summary\")");
  }
  Summary s;
  try {
    s.traceFile = in.value("trace", std::string());
    s.pid = in.value("pid", int64_t{0});
    s.rank = in.value("rank", int64_t{-1});
    s.worldSize = in.value("world_size", int64_t{0});
    s.processName = in.value("process_name", std::string());
    s.windowNs = in.value("window_ns", int64_t{0});
    for (const json& d : in.value("devices", json::array())) {
      s.devices.push_back(DeviceBusy{d.value("device", 0u), d.value("busy_ns", int64_t{0}),
                                     d.value("kernel_busy_ns", int64_t{0})});
    }
    s.busyNs = in.value("busy_ns", int64_t{0});
    s.kernelBusyNs = in.value("kernel_busy_ns", int64_t{0});
    s.utilisation = in.value("utilisation", 0.0);
    s.kernelUtilisation = in.value("kernel_utilisation", 0.0);
    s.kernelCount = in.value("kernel_count", uint64_t{0});
    s.kernelTotalNs = in.value("kernel_total_ns", int64_t{0});
    for (const json& k : in.value("top_kernels", json::array())) {
      s.topKernels.push_back(
          KernelTotal{k.value("name", std::string()), k.value("count", uint64_t{0}),
                      k.value("total_ns", int64_t{0}), k.value("max_ns", int64_t{0})});
    }
    s.memcpyCount = in.value("memcpy_count", uint64_t{0});
    s.memcpyBytes = in.value("memcpy_bytes", uint64_t{0});
    for (const json& c : in.value("memcpy_by_kind", json::array())) {
      s.memcpyByKind.push_back(
          CopyTotal{c.value("kind", std::string()), c.value("count", uint64_t{0}),
                    c.value("bytes", uint64_t{0}), c.value("total_ns", int64_t{0})});
    }
    s.memsetCount = in.value("memset_count", uint64_t{0});
    s.memsetBytes = in.value("memset_bytes", uint64_t{0});
    s.syncCount = in.value("sync_count", uint64_t{0});
    s.hostRangeCount = in.value("host_range_count", uint64_t{0});
    s.droppedGpuRecords = in.value("dropped_gpu_records", uint64_t{0});
    s.droppedHostEvents = in.value("dropped_host_events", uint64_t{0});
    s.outOfWindowEvents = in.value("out_of_window_events", uint64_t{0});
    s.gpuOpsWithoutLaunch = in.value("gpu_ops_without_launch", uint64_t{0});
    s.gpuStatus = in.value("gpu_status", std::string());
  } catch (const json::exception& error) {
    throw Error(std::string("kinetrace: malformed kinetrace summary: ") + error.what());
  }
  return s;
}

std::string formatDuration(int64_t ns) {
  const double value = static_cast<double>(ns);
  const int64_t magnitude = ns < 0 ? -ns : ns;
  if (magnitude >= 1000000000) return fmt::format("{:.3f} s", value / 1e9);
  if (magnitude >= 1000000) return fmt::format("{:.1f} ms", value / 1e6);
  if (magnitude >= 1000) return fmt::format("{:.1f} us", value / 1e3);
  return fmt::format("{} ns", ns);
}

std::string formatBytes(uint64_t bytes) {
  const double value = static_cast<double>(bytes);
  if (bytes >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", value / (1u << 30));
  if (bytes >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", value / (1u << 20));
  if (bytes >= (uint64_t{1} << 10)) return fmt::format("{:.1f} KiB", value / (1u << 10));
  return fmt::format("{} B", bytes);
}

std::string shortenName(const std::string& name, std::size_t width) {
  if (name.size() <= width || width < 4) return name;
  return name.substr(0, width - 3) + "...";
}

std::string formatSummary(const Summary& s, std::size_t topKernels) {
  std::string out;
  auto line = [&out](const std::string& text) { out += text + "\n"; };

  std::string who;
  if (s.worldSize > 1 && s.rank >= 0) who = fmt::format("rank {} of {}, ", s.rank, s.worldSize);
  who += fmt::format("pid {}", s.pid);
  if (!s.processName.empty()) who += ", " + s.processName;
  line(fmt::format("trace   {}  ({})", s.traceFile, who));

  if (s.devices.empty()) {
    line(fmt::format("window  {}   no GPU work recorded", formatDuration(s.windowNs)));
    if (!s.gpuStatus.empty() && s.gpuStatus.rfind("CUPTI", 0) != 0)
      line("        GPU: " + s.gpuStatus);
  } else {
    line(fmt::format("window  {}   GPU busy {} ({}), kernels {} ({}) on {} device{}",
                     formatDuration(s.windowNs), formatDuration(s.busyNs), percent(s.utilisation),
                     formatDuration(s.kernelBusyNs), percent(s.kernelUtilisation), s.devices.size(),
                     s.devices.size() == 1 ? "" : "s"));
  }
  if (s.kernelCount > 0) {
    line(fmt::format("kernels {} (sum of durations {})", grouped(s.kernelCount),
                     formatDuration(s.kernelTotalNs)));
    std::size_t shown = std::min(topKernels, s.topKernels.size());
    for (std::size_t i = 0; i < shown; ++i) {
      const KernelTotal& k = s.topKernels[i];
      line(fmt::format("  {:>6} {:>10} x{:<7} {}", percent(ratio(k.totalNs, s.kernelTotalNs)),
                       formatDuration(k.totalNs), grouped(k.count), shortenName(k.name, 80)));
    }
  }
  if (s.memcpyCount > 0) {
    std::string kinds;
    for (const CopyTotal& c : s.memcpyByKind) {
      if (!kinds.empty()) kinds += ", ";
      kinds += fmt::format("{} {}", c.kind, formatBytes(c.bytes));
    }
    line(fmt::format("memcpy  {} copies, {} ({})", grouped(s.memcpyCount),
                     formatBytes(s.memcpyBytes), kinds));
  }
  if (s.memsetCount > 0) {
    line(fmt::format("memset  {} sets, {}", grouped(s.memsetCount), formatBytes(s.memsetBytes)));
  }
  std::string losses;
  auto loss = [&losses](uint64_t count, const char* what) {
    if (count == 0) return;
    if (!losses.empty()) losses += "; ";
    losses += fmt::format("{} {}", grouped(count), what);
  };
  loss(s.droppedGpuRecords, "GPU records (raise --gpu-buffer-mb)");
  loss(s.droppedHostEvents, "host events (raise --host-buffer-mb)");
  loss(s.gpuOpsWithoutLaunch, "GPU ops without their launch call");
  line("dropped " + (losses.empty() ? std::string("none") : losses));
  return out;
}

}  // namespace kinetrace::detail
