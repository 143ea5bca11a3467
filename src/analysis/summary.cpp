#include "analysis/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>

#include "analysis/trace_reader.h"
#include "kinetrace/error.h"
#include "output/kind_names.h"
#include "output/value_json.h"

namespace kinetrace::detail {
namespace {

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

const Value* findIn(const Metadata& metadata, std::string_view key) {
  for (const Value::Member& member : metadata) {
    if (member.key == key) return &member.value;
  }
  return nullptr;
}

// The footer's value when both have the key: it is the later word.
const Value* metadataValue(const Metadata& header, const Metadata& footer, std::string_view key) {
  const Value* value = findIn(footer, key);
  return value != nullptr ? value : findIn(header, key);
}

int64_t integerOf(const Value* value, int64_t fallback) {
  if (value == nullptr) return fallback;
  if (value->kind() == Value::Kind::Int) return value->asInt();
  if (value->kind() == Value::Kind::Uint) return static_cast<int64_t>(value->asUint());
  return fallback;
}

// Folding keeps at most this many disjoint intervals per device.
constexpr std::size_t kMaxMergedIntervals = 4096;

}  // namespace

void SummaryBuilder::BusyTime::add(int64_t startNs, int64_t endNs) {
  startNs = std::max(startNs, foldedUntilNs_);
  if (endNs <= startNs) return;
  // Merge with every interval it touches.
  auto it = merged_.upper_bound(startNs);
  if (it != merged_.begin() && std::prev(it)->second >= startNs) --it;
  while (it != merged_.end() && it->first <= endNs) {
    startNs = std::min(startNs, it->first);
    endNs = std::max(endNs, it->second);
    it = merged_.erase(it);
  }
  merged_.emplace(startNs, endNs);
  while (merged_.size() > kMaxMergedIntervals) {
    auto oldest = merged_.begin();
    foldedNs_ += oldest->second - oldest->first;
    foldedUntilNs_ = std::max(foldedUntilNs_, oldest->second);
    merged_.erase(oldest);
  }
}

int64_t SummaryBuilder::BusyTime::total(int64_t untilNs) const {
  // Folded intervals are the oldest, long before the stop.
  int64_t total = foldedNs_;
  for (const auto& [start, end] : merged_) {
    total += std::max<int64_t>(0, std::min(end, untilNs) - start);
  }
  return total;
}

void SummaryBuilder::add(const TraceRecords& r) {
  auto span = [this](const GpuPlacement& at) {
    return std::pair{std::max(at.startNs, windowStartNs_), at.endNs};
  };
  for (const KernelRecord& k : r.kernels) {
    auto [from, to] = span(k.at);
    busy_[k.at.deviceId].add(from, to);
    kernelBusy_[k.at.deviceId].add(from, to);
    const int64_t ns = std::max<int64_t>(0, k.at.endNs - k.at.startNs);
    KernelTally& tally = kernels_[k.name];
    ++tally.count;
    tally.totalNs += ns;
    tally.maxNs = std::max(tally.maxNs, ns);
    s_.kernelTotalNs += ns;
  }
  s_.kernelCount += r.kernels.size();
  for (const MemcpyRecord& m : r.memcpys) {
    auto [from, to] = span(m.at);
    busy_[m.at.deviceId].add(from, to);
    CopyTotal& total = copies_[m.copyKind];
    ++total.count;
    total.bytes += m.bytes;
    total.totalNs += std::max<int64_t>(0, m.at.endNs - m.at.startNs);
    s_.memcpyBytes += m.bytes;
  }
  s_.memcpyCount += r.memcpys.size();
  for (const MemsetRecord& m : r.memsets) {
    auto [from, to] = span(m.at);
    busy_[m.at.deviceId].add(from, to);
    s_.memsetBytes += m.bytes;
  }
  s_.memsetCount += r.memsets.size();
  // A graph traced whole keeps the device busy from its first node to its last; its nodes
  // are not in the trace to say more.
  for (const GraphRecord& g : r.graphs) {
    auto [from, to] = span(g.at);
    busy_[g.at.deviceId].add(from, to);
  }
  s_.graphCount += r.graphs.size();
  s_.syncCount += r.syncs.size();
  s_.hostRangeCount += r.ranges.size();
}

Summary SummaryBuilder::finish(const TraceTables& tables, int64_t windowStopNs,
                               const LossCounters& l, const Metadata& header,
                               const Metadata& footer, std::size_t topKernels) {
  Summary s = s_;
  s.pid = tables.pid;
  s.processName = tables.processName;
  s.windowNs = std::max<int64_t>(0, windowStopNs - windowStartNs_);
  // Work queued before the stop may finish after it: only the window counts.
  for (auto& [device, busy] : busy_) {
    (void)busy;
    DeviceBusy d;
    d.deviceId = device;
    d.busyNs = std::min(busy.total(windowStopNs), s.windowNs);
    auto kernels = kernelBusy_.find(device);
    if (kernels != kernelBusy_.end()) {
      d.kernelBusyNs = std::min(kernels->second.total(windowStopNs), s.windowNs);
    }
    s.busyNs += d.busyNs;
    s.kernelBusyNs += d.kernelBusyNs;
    s.devices.push_back(d);
  }
  const int64_t capacity = s.windowNs * static_cast<int64_t>(s.devices.size());
  s.utilisation = ratio(s.busyNs, capacity);
  s.kernelUtilisation = ratio(s.kernelBusyNs, capacity);

  for (const auto& [name, tally] : kernels_) {
    s.topKernels.push_back(KernelTotal{std::string(tables.strings.get(name)), tally.count,
                                       tally.totalNs, tally.maxNs});
  }
  // Ties broken by name, so the order does not depend on hashing.
  std::sort(s.topKernels.begin(), s.topKernels.end(),
            [](const KernelTotal& a, const KernelTotal& b) {
              return a.totalNs != b.totalNs ? a.totalNs > b.totalNs : a.name < b.name;
            });
  if (s.topKernels.size() > topKernels) s.topKernels.resize(topKernels);

  for (const auto& [kind, total] : copies_) {
    CopyTotal named = total;
    named.kind = kind == CopyKind::Unknown ? std::string("other") : std::string(copyKindName(kind));
    s.memcpyByKind.push_back(named);
  }
  std::sort(s.memcpyByKind.begin(), s.memcpyByKind.end(),
            [](const CopyTotal& a, const CopyTotal& b) {
              return a.bytes != b.bytes ? a.bytes > b.bytes : a.kind < b.kind;
            });

  s.droppedGpuRecords = l.cuptiDroppedRecords + l.cuptiBuffersRefused;
  s.droppedHostEvents = l.droppedHostEvents + l.droppedAssembledRecords;
  s.outOfWindowEvents = l.outOfWindowEvents;
  s.gpuOpsWithoutLaunch = l.gpuOpsWithoutLaunch;

  if (const Value* distributed = metadataValue(header, footer, "distributedInfo")) {
    s.rank = integerOf(distributed->find("rank"), -1);
    s.worldSize = integerOf(distributed->find("world_size"), 0);
  }
  const Value* status = metadataValue(header, footer, "kinetrace_gpu_status");
  if (status != nullptr && status->kind() == Value::Kind::String) s.gpuStatus = status->asString();
  return s;
}

Summary summarize(const TraceData& trace, std::size_t topKernels) {
  SummaryBuilder builder(trace.startNs);
  builder.add(trace.records);
  return builder.finish(trace.tables, trace.stopNs, trace.losses, trace.header, trace.footer,
                        topKernels);
}

Value summaryToValue(const Summary& s) {
  Value::Array kernels;
  for (const KernelTotal& k : s.topKernels) {
    kernels.push_back(Value::object(
        {{"name", k.name}, {"count", k.count}, {"total_ns", k.totalNs}, {"max_ns", k.maxNs}}));
  }
  Value::Array copies;
  for (const CopyTotal& c : s.memcpyByKind) {
    copies.push_back(Value::object(
        {{"kind", c.kind}, {"count", c.count}, {"bytes", c.bytes}, {"total_ns", c.totalNs}}));
  }
  Value::Array devices;
  for (const DeviceBusy& d : s.devices) {
    devices.push_back(Value::object(
        {{"device", d.deviceId}, {"busy_ns", d.busyNs}, {"kernel_busy_ns", d.kernelBusyNs}}));
  }
  return Value::object({
      {"kinetrace_summary", 1},
      {"trace", s.traceFile},
      {"pid", s.pid},
      {"rank", s.rank},
      {"world_size", s.worldSize},
      {"process_name", s.processName},
      {"window_ns", s.windowNs},
      {"devices", Value(std::move(devices))},
      {"busy_ns", s.busyNs},
      {"kernel_busy_ns", s.kernelBusyNs},
      {"utilisation", s.utilisation},
      {"kernel_utilisation", s.kernelUtilisation},
      {"kernel_count", s.kernelCount},
      {"kernel_total_ns", s.kernelTotalNs},
      {"top_kernels", Value(std::move(kernels))},
      {"memcpy_count", s.memcpyCount},
      {"memcpy_bytes", s.memcpyBytes},
      {"memcpy_by_kind", Value(std::move(copies))},
      {"memset_count", s.memsetCount},
      {"memset_bytes", s.memsetBytes},
      {"graph_count", s.graphCount},
      {"sync_count", s.syncCount},
      {"host_range_count", s.hostRangeCount},
      {"dropped_gpu_records", s.droppedGpuRecords},
      {"dropped_host_events", s.droppedHostEvents},
      {"out_of_window_events", s.outOfWindowEvents},
      {"gpu_ops_without_launch", s.gpuOpsWithoutLaunch},
      {"gpu_status", s.gpuStatus},
  });
}

namespace {

// Reads a member, leaving `out` alone when it is missing; a value of the wrong kind is a
// malformed summary.
class Reader {
 public:
  explicit Reader(const Value& object) : object_(object) {}
  template <typename T>
  void read(const char* key, T& out) const {
    const Value* value = object_.find(key);
    if (value == nullptr || value->isNull()) return;
    if constexpr (std::is_same_v<T, std::string>) {
      expect(value->kind() == Value::Kind::String, key);
      out = value->asString();
    } else if constexpr (std::is_floating_point_v<T>) {
      switch (value->kind()) {
        case Value::Kind::Double:
          out = value->asDouble();
          break;
        case Value::Kind::Int:
          out = static_cast<T>(value->asInt());
          break;
        case Value::Kind::Uint:
          out = static_cast<T>(value->asUint());
          break;
        default:
          expect(false, key);
      }
    } else {
      switch (value->kind()) {
        case Value::Kind::Int:
          out = static_cast<T>(value->asInt());
          break;
        case Value::Kind::Uint:
          out = static_cast<T>(value->asUint());
          break;
        default:
          expect(false, key);
      }
    }
  }
  template <typename F>
  void each(const char* key, F&& f) const {
    const Value* value = object_.find(key);
    if (value == nullptr || value->isNull()) return;
    expect(value->kind() == Value::Kind::Array, key);
    for (const Value& item : value->asArray()) {
      expect(item.kind() == Value::Kind::Object, key);
      f(Reader(item));
    }
  }

 private:
  static void expect(bool ok, const char* key) {
    if (!ok)
      throw Error(fmt::format("malformed kinetrace summary: \"{}\" has the wrong type", key));
  }
  const Value& object_;
};

}  // namespace

Summary summaryFromValue(const Value& value) {
  if (value.kind() != Value::Kind::Object || value.find("kinetrace_summary") == nullptr) {
    throw Error("not a kinetrace summary (expected a JSON object with \"kinetrace_summary\")");
  }
  Reader in(value);
  Summary s;
  in.read("trace", s.traceFile);
  in.read("pid", s.pid);
  in.read("rank", s.rank);
  in.read("world_size", s.worldSize);
  in.read("process_name", s.processName);
  in.read("window_ns", s.windowNs);
  in.each("devices", [&](const Reader& d) {
    DeviceBusy busy;
    d.read("device", busy.deviceId);
    d.read("busy_ns", busy.busyNs);
    d.read("kernel_busy_ns", busy.kernelBusyNs);
    s.devices.push_back(busy);
  });
  in.read("busy_ns", s.busyNs);
  in.read("kernel_busy_ns", s.kernelBusyNs);
  in.read("utilisation", s.utilisation);
  in.read("kernel_utilisation", s.kernelUtilisation);
  in.read("kernel_count", s.kernelCount);
  in.read("kernel_total_ns", s.kernelTotalNs);
  in.each("top_kernels", [&](const Reader& k) {
    KernelTotal total;
    k.read("name", total.name);
    k.read("count", total.count);
    k.read("total_ns", total.totalNs);
    k.read("max_ns", total.maxNs);
    s.topKernels.push_back(total);
  });
  in.read("memcpy_count", s.memcpyCount);
  in.read("memcpy_bytes", s.memcpyBytes);
  in.each("memcpy_by_kind", [&](const Reader& c) {
    CopyTotal total;
    c.read("kind", total.kind);
    c.read("count", total.count);
    c.read("bytes", total.bytes);
    c.read("total_ns", total.totalNs);
    s.memcpyByKind.push_back(total);
  });
  in.read("memset_count", s.memsetCount);
  in.read("memset_bytes", s.memsetBytes);
  in.read("graph_count", s.graphCount);
  in.read("sync_count", s.syncCount);
  in.read("host_range_count", s.hostRangeCount);
  in.read("dropped_gpu_records", s.droppedGpuRecords);
  in.read("dropped_host_events", s.droppedHostEvents);
  in.read("out_of_window_events", s.outOfWindowEvents);
  in.read("gpu_ops_without_launch", s.gpuOpsWithoutLaunch);
  in.read("gpu_status", s.gpuStatus);
  return s;
}

std::string summaryToJson(const Summary& summary) {
  // Kernel names are C++ signatures and may hold invalid UTF-8: replace, never throw.
  return valueToJson(summaryToValue(summary))
             .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
         "\n";
}

Summary summaryFromJson(const std::string& text) {
  // The parser and the values it builds recurse: a deep nesting would exhaust the stack.
  checkJsonDepth(text, "not a kinetrace summary: it");
  std::optional<Value> parsed = parseJsonValue(text);
  if (!parsed) throw Error("not a kinetrace summary: not valid JSON");
  return summaryFromValue(*parsed);
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
  if (s.graphCount > 0) {
    line(fmt::format("graphs  {} launches traced whole (cuda_graph_trace=graph)",
                     grouped(s.graphCount)));
  }
  std::string losses;
  auto loss = [&losses](uint64_t count, const char* what) {
    if (count == 0) return;
    if (!losses.empty()) losses += "; ";
    losses += fmt::format("{} {}", grouped(count), what);
  };
  loss(s.droppedGpuRecords, "GPU records (raise --memory-mb)");
  loss(s.droppedHostEvents, "host events (raise --memory-mb)");
  loss(s.gpuOpsWithoutLaunch, "GPU ops without their launch call");
  line("dropped " + (losses.empty() ? std::string("none") : losses));
  return out;
}

}  // namespace kinetrace::detail
