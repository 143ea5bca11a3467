#include "kinetrace/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "kinetrace/error.h"
#include "model/gpu_metric_catalog.h"
#include "session/schedule_phase.h"
#include "support/log.h"
#include "support/text.h"

extern char** environ;

namespace kinetrace {

using detail::trim;

namespace {

struct ActivityName {
  const char* name;
  Activity activity;
};
constexpr ActivityName kActivityNames[] = {
    {"host", Activity::Host},
    {"kernel", Activity::Kernel},
    {"memcpy", Activity::Memcpy},
    {"memset", Activity::Memset},
    {"sync", Activity::Sync},
    {"memory", Activity::Memory},
    {"overhead", Activity::Overhead},
    {"launch", Activity::Launch},
    {"cuda_runtime", Activity::RuntimeAll},
    {"cuda_driver", Activity::DriverAll},
};

std::string knownActivityNames() {
  std::string names;
  for (const auto& entry : kActivityNames) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names + ", default, all";
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// A whole number in [minimum, maximum]. The bounds keep every product made from it (bytes
// from megabytes) far from overflowing.
std::size_t parseSize(std::string_view key, std::string_view value, std::size_t minimum,
                      std::size_t maximum) {
  std::string_view text = trim(value);
  std::size_t parsed = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      parsed < minimum || parsed > maximum) {
    throw Error(fmt::format("config: {} must be a whole number from {} to {}, got \"{}\"", key,
                            minimum, maximum, value));
  }
  return parsed;
}

// "5s", "200ms", "1.5m", "90" (seconds). Integer arithmetic throughout, so "0.1s" is
// exactly 100000000 ns. Capped at a year: anything longer is a typo, not a plan.
int64_t parseDuration(std::string_view key, std::string_view value) {
  auto fail = [&]() -> int64_t {
    throw Error(
        fmt::format("config: {} must be a duration such as 5s, 200ms or 1m (units ns, us, ms, s, "
                    "m, h; a bare number is seconds), got \"{}\"",
                    key, value));
  };
  std::string_view text = trim(value);
  std::size_t digitsEnd = 0;
  while (digitsEnd < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digitsEnd])) || text[digitsEnd] == '.')) {
    ++digitsEnd;
  }
  std::string_view number = text.substr(0, digitsEnd);
  std::string unit = lower(trim(text.substr(digitsEnd)));
  if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) fail();

  struct Unit {
    const char* name;
    int64_t ns;
  };
  constexpr Unit kUnits[] = {{"ns", 1},
                             {"us", 1000},
                             {"ms", 1000000},
                             {"", 1000000000},
                             {"s", 1000000000},
                             {"m", 60 * int64_t{1000000000}},
                             {"min", 60 * int64_t{1000000000}},
                             {"h", 3600 * int64_t{1000000000}}};
  const Unit* found = std::find_if(std::begin(kUnits), std::end(kUnits),
                                   [&](const Unit& u) { return unit == u.name; });
  if (found == std::end(kUnits)) fail();

  constexpr int64_t kMaxNs = int64_t{366} * 24 * 3600 * 1000000000;
  std::size_t dot = number.find('.');
  std::string_view whole = number.substr(0, dot);
  std::string_view fraction =
      dot == std::string_view::npos ? std::string_view{} : number.substr(dot + 1);
  int64_t wholeValue = 0;
  for (char c : whole) {
    wholeValue = wholeValue * 10 + (c - '0');
    if (wholeValue > kMaxNs) fail();
  }
  if (wholeValue > kMaxNs / found->ns) fail();
  int64_t total = wholeValue * found->ns;
  // Each fractional digit is worth a tenth of the previous; digits below a nanosecond drop.
  int64_t place = found->ns;
  for (char c : fraction) {
    place /= 10;
    total += (c - '0') * place;
  }
  if (total > kMaxNs) fail();
  // "1e-10s" or "0.0000000001s" is not zero, and zero means "until exit": a duration that
  // rounds to nothing is a mistake to report, not a request to record forever.
  if (total == 0 &&
      std::any_of(number.begin(), number.end(), [](char c) { return c >= '1' && c <= '9'; })) {
    throw Error(
        fmt::format("config: {} must be at least 1ns or exactly 0, got \"{}\"", key, value));
  }
  return total;
}

bool isValidRunId(std::string_view id) {
  if (id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

}  // namespace

ActivitySet ActivitySet::defaults() {
  return ActivitySet()
      .add(Activity::Host)
      .add(Activity::Kernel)
      .add(Activity::Memcpy)
      .add(Activity::Memset)
      .add(Activity::Launch);
}

ActivitySet ActivitySet::all() {
  ActivitySet set;
  for (const auto& entry : kActivityNames) set.add(entry.activity);
  return set;
}

ActivitySet ActivitySet::parse(std::string_view list) {
  ActivitySet set;
  std::size_t begin = 0;
  bool any = false;
  while (begin <= list.size()) {
    std::size_t comma = list.find(',', begin);
    if (comma == std::string_view::npos) comma = list.size();
    std::string name = lower(trim(list.substr(begin, comma - begin)));
    begin = comma + 1;
    if (name.empty()) continue;
    any = true;
    if (name == "default") {
      set = ActivitySet(set.bits() | defaults().bits());
      continue;
    }
    if (name == "all") {
      set = ActivitySet(set.bits() | all().bits());
      continue;
    }
    auto found = std::find_if(std::begin(kActivityNames), std::end(kActivityNames),
                              [&](const ActivityName& entry) { return name == entry.name; });
    if (found == std::end(kActivityNames)) {
      throw Error(
          fmt::format("config: unknown activity \"{}\" (known: {})", name, knownActivityNames()));
    }
    set.add(found->activity);
  }
  if (!any) throw Error("config: activities is empty (known: " + knownActivityNames() + ")");
  return set;
}

std::string ActivitySet::toString() const {
  std::string out;
  for (const auto& entry : kActivityNames) {
    if (!has(entry.activity)) continue;
    if (!out.empty()) out += ',';
    out += entry.name;
  }
  return out;
}

namespace {

constexpr const char* kKnownKeys =
    "output, activities, log_level, memory_mb, gpu_buffer_kb, gpu_flush_ms, clock, "
    "cuda_graph_trace, gpu_metrics, gpu_metrics_interval, gpu_metrics_buffer_mb, delay, duration, "
    "capture_range, run_id, trace_format, schedule, step_marks";

}  // namespace

void Config::set(std::string_view key, std::string_view value) {
  std::string name = lower(trim(key));
  if (name == "output") {
    output = std::string(trim(value));
  } else if (name == "activities") {
    activities = ActivitySet::parse(value);
  } else if (name == "log_level") {
    std::string level = lower(trim(value));
    if (level == "error")
      logLevel = LogLevel::Error;
    else if (level == "warning" || level == "warn")
      logLevel = LogLevel::Warning;
    else if (level == "info")
      logLevel = LogLevel::Info;
    else if (level == "debug")
      logLevel = LogLevel::Debug;
    else {
      throw Error(fmt::format("config: log_level must be error, warning, info or debug, got \"{}\"",
                              value));
    }
  } else if (name == "memory_mb") {
    memoryMb = parseSize(name, value, 1, std::size_t{1} << 20);  // up to 1 TiB
  } else if (name == "gpu_buffer_kb") {
    gpuBufferKb = parseSize(name, value, 16, std::size_t{1} << 20);  // up to 1 GiB
  } else if (name == "gpu_flush_ms") {
    gpuFlushMs = static_cast<uint32_t>(parseSize(name, value, 0, 3600 * 1000));  // up to an hour
  } else if (name == "clock") {
    std::string choice = lower(trim(value));
    if (choice == "auto")
      clock = HostClock::Auto;
    else if (choice == "tsc")
      clock = HostClock::Tsc;
    else if (choice == "monotonic")
      clock = HostClock::Monotonic;
    else {
      throw Error(fmt::format("config: clock must be auto, tsc or monotonic, got \"{}\"", value));
    }
  } else if (name == "cuda_graph_trace") {
    std::string level = lower(trim(value));
    if (level == "node") {
      cudaGraphTrace = GraphTrace::Node;
    } else if (level == "graph") {
      cudaGraphTrace = GraphTrace::Graph;
    } else {
      throw Error(fmt::format("config: cuda_graph_trace must be node or graph, got \"{}\"", value));
    }
  } else if (name == "gpu_metrics") {
    auto metrics = detail::parseGpuMetricList(value);
    if (!metrics.ok()) throw Error(fmt::format("config: gpu_metrics: {}", metrics.why()));
    gpuMetrics = std::string(trim(value));
    if (metrics.value().empty()) gpuMetrics.clear();
  } else if (name == "gpu_metrics_interval") {
    const int64_t interval = parseDuration(name, value);
    if (interval < detail::kMinGpuMetricIntervalNs || interval > detail::kMaxGpuMetricIntervalNs) {
      throw Error(
          fmt::format("config: gpu_metrics_interval must be from 1us to 1s, got \"{}\"", value));
    }
    gpuMetricsIntervalNs = interval;
  } else if (name == "gpu_metrics_buffer_mb") {
    gpuMetricsBufferMb = parseSize(name, value, 0, 4096);  // up to 4 GiB a GPU
  } else if (name == "delay") {
    delayNs = parseDuration(name, value);
  } else if (name == "duration") {
    durationNs = parseDuration(name, value);
  } else if (name == "capture_range") {
    std::string range = lower(trim(value));
    if (range == "none" || range == "whole") {
      captureRange = CaptureRange::Whole;
    } else if (range == "cudaprofilerapi") {
      captureRange = CaptureRange::CudaProfilerApi;
    } else if (range == "ondemand" || range == "on_demand") {
      captureRange = CaptureRange::OnDemand;
    } else {
      throw Error(fmt::format(
          "config: capture_range must be none, cudaProfilerApi or onDemand, got \"{}\"", value));
    }
  } else if (name == "run_id") {
    std::string_view id = trim(value);
    if (!isValidRunId(id)) {
      throw Error(fmt::format(
          "config: run_id must be at most 64 letters, digits, '.', '_' or '-', got \"{}\"", value));
    }
    runId = std::string(id);
  } else if (name == "trace_format") {
    const std::string format = lower(trim(value));
    if (format != "json" && format != "json.gz" && format != "pftrace") {
      throw Error(
          fmt::format("config: trace_format must be json, json.gz or pftrace, got \"{}\"", value));
    }
    traceFormat = format;
  } else if (name == "schedule") {
    const std::string_view text = trim(value);
    if (!text.empty()) {
      try {
        schedule = detail::formatSchedule(detail::parseSchedule(text));
      } catch (const Error& error) {
        throw Error(fmt::format("config: {}", error.what()));
      }
    } else {
      schedule.clear();
    }
  } else if (name == "step_marks") {
    std::string marks(trim(value));
    if (marks.empty() || marks.find_first_not_of(", ") == std::string::npos) {
      throw Error("config: step_marks needs at least one NVTX range name");
    }
    stepMarks = std::move(marks);
  } else {
    throw Error(fmt::format("config: unknown key \"{}\" (known: {})", key, kKnownKeys));
  }
}

Config Config::fromEnvironment() {
  Config config;
  constexpr std::string_view kPrefix = "KINETRACE_";
  std::vector<std::string> unknown;
  // Read by other parts (the trigger channel, the injection's dynolog client), not settings,
  // and not to be called unknown.
  constexpr std::string_view kReadElsewhere[] = {"KINETRACE_CONTROL_DIR", "KINETRACE_DYNOLOG"};
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view variable(*entry);
    if (variable.substr(0, kPrefix.size()) != kPrefix) continue;
    std::size_t equals = variable.find('=');
    std::string_view name = variable.substr(0, equals);
    if (std::find(std::begin(kReadElsewhere), std::end(kReadElsewhere), name) !=
        std::end(kReadElsewhere)) {
      continue;
    }
    std::string_view value = equals == std::string_view::npos ? "" : variable.substr(equals + 1);
    try {
      config.set(name.substr(kPrefix.size()), value);
    } catch (const Error& error) {
      std::string message = error.what();
      if (message.rfind("config: unknown key", 0) == 0) {
        unknown.emplace_back(name);
        continue;
      }
      const std::string_view configPrefix = "config: ";
      if (message.rfind(configPrefix, 0) == 0) message.erase(0, configPrefix.size());
      throw Error(fmt::format("environment variable {}: {}", name, message));
    }
  }
  // A typo, or a key of a newer kinetrace: worth a word, not worth stopping a training job.
  // Said once per process per name, however many Profilers read the environment.
  static std::mutex reportedMutex;
  static std::vector<std::string> reported;
  std::lock_guard<std::mutex> lock(reportedMutex);
  for (const std::string& name : unknown) {
    if (std::find(reported.begin(), reported.end(), name) != reported.end()) continue;
    reported.push_back(name);
    detail::log(LogLevel::Warning,
                "environment variable {} is not a kinetrace setting and is ignored (known: {})",
                name, "KINETRACE_ + one of: " + std::string(kKnownKeys));
  }
  return config;
}

}  // namespace kinetrace
