#include "analysis/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "analysis/regular_file.h"
#include "analysis/trace_reader.h"
#include "kinetrace/error.h"
#include "output/summary_builder.h"
#include "output/value_json.h"
#include "support/text.h"

namespace kinetrace::detail {
namespace {

double ratio(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string percent(double fraction) {
  return fmt::format("{:.1f}%", fraction * 100.0);
}

}  // namespace

Summary summaryFromJson(const std::string& text) {
  // The parser and the values it builds recurse: a deep nesting would exhaust the stack.
  checkJsonDepth(text, "not a kinetrace summary: it");
  std::optional<Value> parsed = parseJsonValue(text);
  if (!parsed) throw Error("not a kinetrace summary: not valid JSON");
  return summaryFromValue(*parsed);
}

Summary readSummaryFile(const std::string& path, ReadBudget& budget) {
  const ReadBudget::Reading reading(budget, path);
  BudgetHold hold(budget);
  constexpr const char* kSummaries = "summary files";
  const std::string text = readRegularFile(path, hold, kSummaries);
  hold.take(parsedFootprintOf(text), kSummaries);
  try {
    return summaryFromJson(text);
  } catch (const BudgetRefusal&) {
    throw;
  } catch (const Error& error) {
    throw Error(fmt::format("{}: {}", path, error.what()));
  }
}

Summary summarize(const TraceData& trace, std::size_t topKernels) {
  SummaryBuilder builder(trace.startNs);
  builder.add(trace.records);
  return builder.finish(trace.tables, trace.stopNs, trace.losses, trace.header, trace.footer,
                        topKernels);
}

std::string formatDuration(int64_t ns) {
  const double value = static_cast<double>(ns);
  // INT64_MIN's negation does not fit an int64 (a summary from elsewhere may hold it).
  const uint64_t magnitude =
      ns < 0 ? uint64_t{0} - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
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
    line(fmt::format("kernels {} (sum of durations {})", withThousands(s.kernelCount),
                     formatDuration(s.kernelTotalNs)));
    std::size_t shown = std::min(topKernels, s.topKernels.size());
    for (std::size_t i = 0; i < shown; ++i) {
      const KernelTotal& k = s.topKernels[i];
      line(fmt::format("  {:>6} {:>10} x{:<7} {}", percent(ratio(k.totalNs, s.kernelTotalNs)),
                       formatDuration(k.totalNs), withThousands(k.count), shortenName(k.name, 80)));
    }
  }
  if (s.memcpyCount > 0) {
    std::string kinds;
    for (const CopyTotal& c : s.memcpyByKind) {
      if (!kinds.empty()) kinds += ", ";
      kinds += fmt::format("{} {}", c.kind, formatBytes(c.bytes));
    }
    line(fmt::format("memcpy  {} copies, {} ({})", withThousands(s.memcpyCount),
                     formatBytes(s.memcpyBytes), kinds));
  }
  if (s.memsetCount > 0) {
    line(fmt::format("memset  {} sets, {}", withThousands(s.memsetCount),
                     formatBytes(s.memsetBytes)));
  }
  if (s.graphCount > 0) {
    line(fmt::format("graphs  {} launches traced whole (cuda_graph_trace=graph)",
                     withThousands(s.graphCount)));
  }
  std::string losses;
  auto loss = [&losses](uint64_t count, const char* what) {
    if (count == 0) return;
    if (!losses.empty()) losses += "; ";
    losses += fmt::format("{} {}", withThousands(count), what);
  };
  loss(s.droppedGpuRecords, "GPU records (raise --memory-mb)");
  loss(s.droppedHostEvents, "host events (raise --memory-mb)");
  loss(s.gpuOpsWithoutLaunch, "GPU ops without their launch call");
  line("dropped " + (losses.empty() ? std::string("none") : losses));
  return out;
}

}  // namespace kinetrace::detail
