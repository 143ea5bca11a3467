#include "session/settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <iterator>

#include "kinetrace/error.h"
#include "model/gpu_metric_catalog.h"
#include "model/trace_file_name.h"
#include "session/schedule_phase.h"
#include "support/text.h"

namespace kinetrace::detail {
namespace {

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
    throw SettingRefused(fmt::format("{} must be a whole number from {} to {}, got \"{}\"", key,
                                     minimum, maximum, value));
  }
  return parsed;
}

// "5s", "200ms", "1.5m", "90" (seconds). Integer arithmetic throughout, so "0.1s" is
// exactly 100000000 ns. Capped at a year: anything longer is a typo, not a plan.
int64_t parseDuration(std::string_view key, std::string_view value) {
  auto fail = [&]() -> int64_t {
    throw SettingRefused(
        fmt::format("{} must be a duration such as 5s, 200ms or 1m (units ns, us, ms, s, "
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
    throw SettingRefused(
        fmt::format("{} must be at least 1ns or exactly 0, got \"{}\"", key, value));
  }
  return total;
}

// One of a few words (any case), as the enumerator it names.
template <typename T>
struct Choice {
  const char* word;
  T value;
};
template <typename T, std::size_t N>
T parseChoice(std::string_view key, std::string_view value, const Choice<T> (&choices)[N],
              const char* accepted) {
  const std::string word = lower(trim(value));
  for (const Choice<T>& choice : choices) {
    if (word == choice.word) return choice.value;
  }
  throw SettingRefused(fmt::format("{} must be {}, got \"{}\"", key, accepted, value));
}

bool isValidRunId(std::string_view id) {
  if (id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

// ---- the rows' readers ------------------------------------------------------------------

void readOutput(Config& c, std::string_view v) {
  c.output = std::string(trim(v));
}

void readActivities(Config& c, std::string_view v) {
  c.activities = parseActivities("activities", v);
}

void readDelay(Config& c, std::string_view v) {
  c.delayNs = parseDuration("delay", v);
}

void readDuration(Config& c, std::string_view v) {
  c.durationNs = parseDuration("duration", v);
}

void readTraceFormat(Config& c, std::string_view v) {
  const std::string word = lower(trim(v));
  std::string accepted;  // "json, json.gz or pftrace"
  for (std::size_t i = 0; i < std::size(kTraceFormats); ++i) {
    const TraceFormatName& row = kTraceFormats[i];
    if (word == row.name) {
      c.traceFormat = row.format;
      return;
    }
    accepted += i == 0 ? "" : i + 1 == std::size(kTraceFormats) ? " or " : ", ";
    accepted += row.name;
  }
  throw SettingRefused(fmt::format("trace_format must be {}, got \"{}\"", accepted, v));
}

void readCudaGraphTrace(Config& c, std::string_view v) {
  constexpr Choice<GraphTrace> kLevels[] = {{"node", GraphTrace::Node},
                                            {"graph", GraphTrace::Graph}};
  c.cudaGraphTrace = parseChoice("cuda_graph_trace", v, kLevels, "node or graph");
}

void readGpuMetrics(Config& c, std::string_view v) {
  auto metrics = parseGpuMetricList(v);
  if (!metrics.ok()) throw SettingRefused("gpu_metrics: " + metrics.why());
  c.gpuMetrics.clear();
  for (const GpuMetric& metric : metrics.value()) c.gpuMetrics.push_back(metric.name);
}

void readGpuMetricsInterval(Config& c, std::string_view v) {
  const int64_t interval = parseDuration("gpu_metrics_interval", v);
  if (interval < kMinGpuMetricIntervalNs || interval > kMaxGpuMetricIntervalNs) {
    throw SettingRefused(fmt::format("gpu_metrics_interval must be from 1us to 1s, got \"{}\"", v));
  }
  c.gpuMetricsIntervalNs = interval;
}

void readDynologAnswer(Config& c, std::string_view v) {
  constexpr Choice<bool> kWhen[] = {{"gpu", false}, {"start", true}};
  c.dynologAnswersAtStart = parseChoice("dynolog_answer", v, kWhen, "gpu or start");
}

void readCaptureRange(Config& c, std::string_view v) {
  constexpr Choice<CaptureRange> kRanges[] = {{"none", CaptureRange::Whole},
                                              {"whole", CaptureRange::Whole},
                                              {"cudaprofilerapi", CaptureRange::CudaProfilerApi},
                                              {"ondemand", CaptureRange::OnDemand},
                                              {"on_demand", CaptureRange::OnDemand}};
  c.captureRange = parseChoice("capture_range", v, kRanges, "none, cudaProfilerApi or onDemand");
}

void readSchedule(Config& c, std::string_view v) {
  const std::string_view text = trim(v);
  if (text.empty()) {
    c.schedule.reset();
    return;
  }
  try {
    c.schedule = parseSchedule(text);
  } catch (const Error& error) {
    throw SettingRefused(error.what());
  }
}

void readStepMarks(Config& c, std::string_view v) {
  std::vector<std::string> marks;
  for (std::string_view rest = v; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    const std::string_view mark = trim(rest.substr(0, comma));
    if (!mark.empty()) marks.emplace_back(mark);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (marks.empty()) throw SettingRefused("step_marks needs at least one NVTX range name");
  c.stepMarks = std::move(marks);
}

void readLogLevel(Config& c, std::string_view v) {
  constexpr Choice<LogLevel> kLevels[] = {{"error", LogLevel::Error},
                                          {"warning", LogLevel::Warning},
                                          {"warn", LogLevel::Warning},
                                          {"info", LogLevel::Info},
                                          {"debug", LogLevel::Debug}};
  c.logLevel = parseChoice("log_level", v, kLevels, "error, warning, info or debug");
}

void readMemoryMb(Config& c, std::string_view v) {
  c.memoryMb = parseSize("memory_mb", v, 1, std::size_t{1} << 20);  // up to 1 TiB
}

void readGpuBufferKb(Config& c, std::string_view v) {
  c.gpuBufferKb = parseSize("gpu_buffer_kb", v, 16, std::size_t{1} << 20);  // up to 1 GiB
}

void readGpuFlushMs(Config& c, std::string_view v) {
  c.gpuFlushMs = static_cast<uint32_t>(parseSize("gpu_flush_ms", v, 0, 3600 * 1000));  // an hour
}

void readClock(Config& c, std::string_view v) {
  constexpr Choice<HostClock> kClocks[] = {
      {"auto", HostClock::Auto}, {"tsc", HostClock::Tsc}, {"monotonic", HostClock::Monotonic}};
  c.clock = parseChoice("clock", v, kClocks, "auto, tsc or monotonic");
}

void readGpuMetricsBufferMb(Config& c, std::string_view v) {
  c.gpuMetricsBufferMb = parseSize("gpu_metrics_buffer_mb", v, 0, 4096);  // up to 4 GiB a GPU
}

void readRunId(Config& c, std::string_view v) {
  const std::string_view id = trim(v);
  if (!isValidRunId(id)) {
    throw SettingRefused(
        fmt::format("run_id must be at most 64 letters, digits, '.', '_' or '-', got \"{}\"", v));
  }
  c.runId = std::string(id);
}

}  // namespace

// ---- the table ----------------------------------------------------------------------------

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = {
      {"output", "PATH", "kept in memory",
       "where the trace is written while recording: a path, an existing directory (a file per "
       "session) or a URL; \".json.gz\" is compressed, \".pftrace\" is Perfetto's protobuf "
       "format. Under `kinetrace run`, the directory of the traces (its --output)",
       nullptr, nullptr, readOutput},
      {"activities", "LIST", "default",
       "what to record, comma-separated: host, kernel, memcpy, memset, sync, memory, overhead, "
       "launch, cuda_runtime, cuda_driver, default (host,kernel,memcpy,memset,launch), all",
       "--activities", "-a", readActivities},
      {"delay", "DURATION", "0",
       "start recording DURATION after each traced process starts (5s, 200ms, 1m; units ns, "
       "us, ms, s, m, h; a bare number is seconds)",
       "--delay", nullptr, readDelay},
      {"duration", "DURATION", "0 (until exit)",
       "record for DURATION, then stop; 0: until the process exits", "--duration", nullptr,
       readDuration},
      {"trace_format", "FORMAT", "json",
       "the traced processes' files: json, json.gz, or pftrace: Perfetto's protobuf format, a "
       "fraction of the JSON's size (open it in ui.perfetto.dev; `kinetrace convert` turns it "
       "into JSON and back). In code, the output's name chooses",
       "--format", nullptr, readTraceFormat},
      {"cuda_graph_trace", "LEVEL", "node",
       "node: every kernel, copy and memset a CUDA graph launch ran, each linked to the "
       "launch; graph: one slice per launch instead (cheaper with many small nodes; what ran "
       "inside is not seen)",
       "--cuda-graph-trace", nullptr, readCudaGraphTrace},
      {"gpu_metrics", "LIST", "none",
       "sample GPU hardware metrics over time (CUPTI PM sampling): counter tracks per GPU "
       "and each kernel's averages, so `kinetrace analyze` tells memory-, compute- and "
       "tensor-bound time apart. default (sm,dram,tensor,gr), short names (sm, dram, tensor, "
       "gr, fma, dram_read, dram_write) or CUPTI metric names, comma separated (`kinetrace "
       "help metrics` lists the GPU's); none: no sampling. A GPU or driver that refuses says "
       "why once; tracing goes on without metrics",
       "--gpu-metrics", nullptr, readGpuMetrics},
      {"gpu_metrics_interval", "DURATION", "1ms", "how often GPU metrics are sampled (1us..1s)",
       "--gpu-metrics-interval", nullptr, readGpuMetricsInterval},
      {"capture_range", "RANGE", "none",
       "none: the whole run; cudaProfilerApi: record between the program's own "
       "cudaProfilerStart() and cudaProfilerStop() calls, each such window a trace of its "
       "own; onDemand: record nothing (CUPTI untouched) until `kinetrace trigger` asks",
       "--capture-range", nullptr, readCaptureRange},
      {"dynolog_answer", "WHEN", "gpu",
       "when a process answers the dynolog daemon (on-demand traces): gpu, once it uses a GPU "
       "(a launcher or agent that never does takes none of a request's process slots); start, "
       "from its start (a CPU-only workload of a CUDA build, traced for its host activity)",
       nullptr, nullptr, readDynologAnswer},
      {"schedule", "SPEC", "none",
       "record by the program's steps, as torch.profiler's schedule: "
       "wait=1,warmup=1,active=3,repeat=2[,skip_first=N] (repeat=0: forever), one trace "
       "per cycle; warm-up steps set CUPTI up and record nothing. Steps are the program's "
       "NVTX ranges named by step_marks, counted from CUDA's start. Not with delay, duration "
       "or capture_range",
       "--schedule", nullptr, readSchedule},
      {"step_marks", "NAMES", "ProfilerStep#,step",
       "comma list of NVTX range names that start a step: a range whose message begins with "
       "one of them, compared without case, then anything but a letter (\"step 12\", "
       "\"Step_3\", \"ProfilerStep#7\"). Used by schedule and by `kinetrace trigger --steps`",
       "--step-marks", nullptr, readStepMarks},
      {"log_level", "LEVEL", "warning",
       "error, warning, info or debug: kinetrace's messages (from inside the traced processes, "
       "on their stderr)",
       "--log-level", nullptr, readLogLevel},
      {"memory_mb", "N", "1024",
       "cap on everything the tracer holds in a process, in MB (1..1048576): host events, "
       "CUPTI's buffers and the room to decode one, records waiting to be assembled, names, an "
       "output's write buffer and, without an output, the trace itself. When it is reached, "
       "events are dropped and the trace counts them",
       "--memory-mb", nullptr, readMemoryMb},
      {"gpu_buffer_kb", "N", "4096",
       "size of one CUPTI activity buffer (16..1048576); memory_mb must hold two (one filling, "
       "room to decode one) or no GPU activity is recorded, and the trace says why",
       nullptr, nullptr, readGpuBufferKb},
      {"gpu_flush_ms", "N", "1000",
       "how often kinetrace asks CUPTI, from a thread of its own, for every buffer whose "
       "records are complete, full or not (cuptiActivityFlushAll(0); CUPTI's own period hands "
       "over full buffers only), so records never wait long; 0: never asked",
       nullptr, nullptr, readGpuFlushMs},
      {"clock", "CLOCK", "auto",
       "host timestamps: auto (the invariant TSC when there is one), tsc, monotonic; read once "
       "per process",
       nullptr, nullptr, readClock},
      {"gpu_metrics_buffer_mb", "N", "0",
       "the buffer the GPU writes raw metric samples into, per GPU, in MiB (counted in "
       "memory_mb); 0: sized from the interval (a quarter second of samples of a busy GPU, "
       "32..512 MiB). A full one loses samples (counted in the trace) and is doubled, within "
       "memory_mb and 512 MiB",
       nullptr, nullptr, readGpuMetricsBufferMb},
      {"run_id", "ID", "none",
       "a tag put in trace file names, so the files of one `kinetrace run` can be found among "
       "others ([A-Za-z0-9._-], at most 64)",
       nullptr, nullptr, readRunId},
  };
  return table;
}

const Setting* findSetting(std::string_view key) {
  const std::string name = lower(trim(key));
  for (const Setting& setting : settings()) {
    if (name == setting.key) return &setting;
  }
  return nullptr;
}

std::string settingKeys() {
  return joinNames(settings(), [](const Setting& setting) { return setting.key; });
}

std::string environmentVariableOf(const Setting& setting) {
  std::string name = "KINETRACE_";
  for (const char* c = setting.key; *c != '\0'; ++c) {
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
  }
  return name;
}

namespace {

// Text for a Markdown table's cell: a '|' would end the cell.
std::string cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string settingsMarkdown() {
  std::string text =
      "| key (`Config::set`) | environment | `kinetrace run` | meaning | default |\n"
      "|---|---|---|---|---|\n";
  for (const Setting& setting : settings()) {
    const std::string option = setting.runOption == nullptr
                                   ? ""
                                   : fmt::format("`{} {}`", setting.runOption, setting.valueName);
    text +=
        fmt::format("| `{}` | `{}` | {} | {} | {} |\n", setting.key, environmentVariableOf(setting),
                    option, cell(setting.help), cell(setting.defaultValue));
  }
  return text;
}

}  // namespace kinetrace::detail
