#include "cli_options.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "error_text.h"
#include "kinetrace/config.h"
#include "kinetrace/error.h"

namespace kinetrace::cli {
namespace {

struct OptionSpec {
  const char* longName;   // "--output"
  const char* shortName;  // "-o" or nullptr
  bool takesValue;
};

constexpr OptionSpec kRunOptions[] = {
    {"--help", "-h", false},         {"--output", "-o", true},
    {"--activities", "-a", true},    {"--delay", nullptr, true},
    {"--duration", nullptr, true},   {"--capture-range", nullptr, true},
    {"--format", nullptr, true},     {"--log-level", nullptr, true},
    {"--memory-mb", nullptr, true},  {"--nvtx", nullptr, false},
    {"--no-nvtx", nullptr, false},   {"--no-summary", nullptr, false},
    {"--top", nullptr, true},        {"--injection-library", nullptr, true},
    {"--torch", nullptr, false},     {"--schedule", nullptr, true},
    {"--step-marks", nullptr, true}, {"--cuda-graph-trace", nullptr, true},
};

constexpr OptionSpec kSummaryOptions[] = {
    {"--help", "-h", false},
    {"--top", nullptr, true},
};

constexpr OptionSpec kTriggerOptions[] = {
    {"--help", "-h", false},       {"--pid", nullptr, true},   {"--job", nullptr, true},
    {"--duration", nullptr, true}, {"--output", "-o", true},   {"--config", nullptr, true},
    {"--start-in", nullptr, true}, {"--steps", nullptr, true}, {"--start-step", nullptr, true},
};

constexpr OptionSpec kAnalyzeOptions[] = {
    {"--help", "-h", false},        {"--json", nullptr, true}, {"--html", nullptr, true},
    {"--rank", nullptr, true},      {"--top", nullptr, true},  {"--tiny-us", nullptr, true},
    {"--memory-mb", nullptr, true}, {"--quiet", "-q", false},  {"--kernel-wait-us", nullptr, true},
};

constexpr OptionSpec kMergeOptions[] = {
    {"--help", "-h", false},
    {"--output", "-o", true},
    {"--no-align", nullptr, false},
    {"--quiet", "-q", false},
};

constexpr OptionSpec kConvertOptions[] = {
    {"--help", "-h", false},
    {"--quiet", "-q", false},
};

// One option as found on the command line.
struct Found {
  const OptionSpec* spec = nullptr;
  std::string value;
};

// Reads the option at args[i] (advancing i past its value). Throws for unknown options and
// missing values.
template <std::size_t N>
Found readOption(const char* command, const OptionSpec (&specs)[N],
                 const std::vector<std::string>& args, std::size_t& i) {
  const std::string& word = args[i];
  std::string name = word;
  std::string inlineValue;
  bool hasInline = false;
  if (word.rfind("--", 0) == 0) {
    std::size_t equals = word.find('=');
    if (equals != std::string::npos) {
      name = word.substr(0, equals);
      inlineValue = word.substr(equals + 1);
      hasInline = true;
    }
  }
  const OptionSpec* spec =
      std::find_if(std::begin(specs), std::end(specs), [&](const OptionSpec& s) {
        return name == s.longName || (s.shortName != nullptr && name == s.shortName);
      });
  if (spec == std::end(specs)) {
    throw UsageError(std::string("kinetrace ") + command + ": unknown option '" + word +
                     "' (see 'kinetrace " + command + " --help')");
  }
  Found found{spec, {}};
  if (!spec->takesValue) {
    if (hasInline) {
      throw UsageError(std::string("kinetrace ") + command + ": option '" + spec->longName +
                       "' takes no value");
    }
    return found;
  }
  if (hasInline) {
    found.value = inlineValue;
  } else if (i + 1 < args.size()) {
    found.value = args[++i];
  } else {
    throw UsageError(std::string("kinetrace ") + command + ": option '" + spec->longName +
                     "' needs a value");
  }
  return found;
}

// Checks a value the way the traced process will (Config::set), so a mistake is reported
// here, by option name, before the program starts.
void checkConfigValue(const char* option, const char* key, const std::string& value) {
  try {
    Config config;
    config.set(key, value);
  } catch (const Error& error) {
    // The option says which setting: the library's own context for it goes, as
    // Config::fromEnvironment drops it for the variable it names.
    std::string why = withoutKinetracePrefix(error.what());
    constexpr std::string_view kConfigContext = "config: ";
    if (why.rfind(kConfigContext, 0) == 0) why.erase(0, kConfigContext.size());
    throw UsageError(std::string("kinetrace run: ") + option + " " + value + ": " + why);
  }
}

std::size_t parseCount(const char* command, const char* option, const std::string& value) {
  std::size_t parsed = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() ||
      parsed > 1000) {
    throw UsageError(std::string("kinetrace ") + command + ": " + option +
                     " needs a whole number 0..1000, got '" + value + "'");
  }
  return parsed;
}

// A step number or count: any whole number a loop reaches.
int64_t parseStepNumber(const char* option, const std::string& value) {
  int64_t parsed = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() || parsed < 0) {
    throw UsageError(std::string("kinetrace trigger: ") + option +
                     " needs a whole number of steps, got '" + value + "'");
  }
  return parsed;
}

// 1 MB .. 1 TB: below that nothing can be recorded, above it is a typo.
std::string checkMemoryMb(const std::string& value) {
  constexpr std::size_t kMaxMb = 1024 * 1024;
  std::size_t parsed = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() || parsed < 1 ||
      parsed > kMaxMb) {
    throw UsageError("kinetrace run: --memory-mb " + value +
                     ": needs a whole number of megabytes from 1 to " + std::to_string(kMaxMb));
  }
  return value;
}

Command parseRun(const std::vector<std::string>& args) {
  Command command;
  command.kind = Command::Kind::Run;
  RunOptions& run = command.run;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      run.program.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (word.empty() || word[0] != '-' || word == "-") {
      run.program.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    Found option = readOption("run", kRunOptions, args, i);
    const std::string name = option.spec->longName;
    const std::string& value = option.value;
    if (name == "--help") {
      command.kind = Command::Kind::Help;
      command.helpTopic = "run";
      return command;
    } else if (name == "--output") {
      if (value.empty()) throw UsageError("kinetrace run: --output needs a directory");
      run.outputDir = value;
    } else if (name == "--activities") {
      checkConfigValue("--activities", "activities", value);
      run.activities = value;
    } else if (name == "--delay") {
      checkConfigValue("--delay", "delay", value);
      run.delay = value;
    } else if (name == "--duration") {
      checkConfigValue("--duration", "duration", value);
      run.duration = value;
    } else if (name == "--format") {
      checkConfigValue("--format", "trace_format", value);
      run.format = value;
    } else if (name == "--cuda-graph-trace") {
      checkConfigValue("--cuda-graph-trace", "cuda_graph_trace", value);
      run.cudaGraphTrace = value;
    } else if (name == "--capture-range") {
      checkConfigValue("--capture-range", "capture_range", value);
      run.captureRange = value;
    } else if (name == "--log-level") {
      checkConfigValue("--log-level", "log_level", value);
      run.logLevel = value;
    } else if (name == "--memory-mb") {
      run.memoryMb = checkMemoryMb(value);
    } else if (name == "--nvtx") {
      run.nvtx = true;
    } else if (name == "--no-nvtx") {
      run.nvtx = false;
    } else if (name == "--no-summary") {
      run.printSummary = false;
    } else if (name == "--top") {
      run.topKernels = parseCount("run", "--top", value);
    } else if (name == "--injection-library") {
      run.injectionLibrary = value;
    } else if (name == "--torch") {
      run.torch = true;
    } else if (name == "--schedule") {
      checkConfigValue("--schedule", "schedule", value);
      run.schedule = value;
    } else if (name == "--step-marks") {
      checkConfigValue("--step-marks", "step_marks", value);
      run.stepMarks = value;
    }
  }
  if (run.program.empty()) {
    throw UsageError(
        "kinetrace run: no program to run: kinetrace run [options] -- PROGRAM [ARGS...]");
  }
  Config check;
  if (!run.captureRange.empty()) check.set("capture_range", run.captureRange);
  if (check.captureRange == CaptureRange::CudaProfilerApi &&
      (!run.delay.empty() || !run.duration.empty())) {
    throw UsageError(
        "kinetrace run: --capture-range=cudaProfilerApi records between the program's "
        "cudaProfilerStart/Stop calls; it cannot be combined with --delay or --duration");
  }
  if (!run.schedule.empty() && !run.nvtx) {
    throw UsageError(
        "kinetrace run: --schedule counts the program's NVTX step ranges; it "
        "cannot be combined with --no-nvtx");
  }
  if (!run.schedule.empty() &&
      (!run.delay.empty() || !run.duration.empty() || !run.captureRange.empty())) {
    throw UsageError(
        "kinetrace run: --schedule records by the program's steps; it cannot be combined with "
        "--delay, --duration or --capture-range");
  }
  return command;
}

Command parseSummary(const std::vector<std::string>& args) {
  Command command;
  command.kind = Command::Kind::Summary;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      command.summary.paths.insert(command.summary.paths.end(),
                                   args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (word.empty() || word[0] != '-') {
      command.summary.paths.push_back(word);
      continue;
    }
    Found option = readOption("summary", kSummaryOptions, args, i);
    if (std::string(option.spec->longName) == "--help") {
      command.kind = Command::Kind::Help;
      command.helpTopic = "summary";
      return command;
    }
    command.summary.topKernels = parseCount("summary", "--top", option.value);
  }
  if (command.summary.paths.empty()) {
    throw UsageError(
        "kinetrace summary: no trace given: kinetrace summary TRACE.json|DIRECTORY...");
  }
  return command;
}

Command parseConvert(const std::vector<std::string>& args) {
  Command command;
  command.kind = Command::Kind::Convert;
  std::vector<std::string> paths;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      paths.insert(paths.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (word.empty() || word[0] != '-') {
      paths.push_back(word);
      continue;
    }
    Found option = readOption("convert", kConvertOptions, args, i);
    if (std::string(option.spec->longName) == "--help") {
      command.kind = Command::Kind::Help;
      command.helpTopic = "convert";
      return command;
    }
    command.convert.quiet = true;
  }
  if (paths.size() != 2) {
    throw UsageError(
        "kinetrace convert: give an input and an output trace: kinetrace convert "
        "IN OUT (got " +
        std::to_string(paths.size()) + " paths)");
  }
  command.convert.input = paths[0];
  command.convert.output = paths[1];
  return command;
}

Command parseMerge(const std::vector<std::string>& args) {
  Command command;
  command.kind = Command::Kind::Merge;
  MergeOptions& m = command.merge;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      m.paths.insert(m.paths.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (word.empty() || word[0] != '-') {
      m.paths.push_back(word);
      continue;
    }
    Found option = readOption("merge", kMergeOptions, args, i);
    const std::string name = option.spec->longName;
    if (name == "--help") {
      command.kind = Command::Kind::Help;
      command.helpTopic = "merge";
      return command;
    }
    if (name == "--output") m.output = option.value;
    if (name == "--no-align") m.align = false;
    if (name == "--quiet") m.quiet = true;
  }
  if (m.output.empty()) {
    throw UsageError("kinetrace merge: give the merged trace's path: kinetrace merge "
                     "TRACE... -o OUT");
  }
  if (m.paths.size() < 2) {
    throw UsageError("kinetrace merge: give two traces or more, one per rank (got " +
                     std::to_string(m.paths.size()) + ")");
  }
  return command;
}

Command parseAnalyze(const std::vector<std::string>& args) {
  Command command;
  command.kind = Command::Kind::Analyze;
  AnalyzeOptions& a = command.analyze;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      a.paths.insert(a.paths.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (word.empty() || word[0] != '-') {
      a.paths.push_back(word);
      continue;
    }
    Found option = readOption("analyze", kAnalyzeOptions, args, i);
    const std::string name = option.spec->longName;
    if (name == "--help") {
      command.kind = Command::Kind::Help;
      command.helpTopic = "analyze";
      return command;
    } else if (name == "--json") {
      a.jsonOutput = option.value;
    } else if (name == "--html") {
      a.htmlOutput = option.value;
    } else if (name == "--rank") {
      a.rank = static_cast<int64_t>(parseCount("analyze", "--rank", option.value));
    } else if (name == "--top") {
      a.top = parseCount("analyze", "--top", option.value);
    } else if (name == "--tiny-us") {
      a.tinyKernelNs =
          static_cast<int64_t>(parseCount("analyze", "--tiny-us", option.value)) * 1000;
    } else if (name == "--kernel-wait-us") {
      a.kernelWaitNs =
          static_cast<int64_t>(parseCount("analyze", "--kernel-wait-us", option.value)) * 1000;
    } else if (name == "--memory-mb") {
      std::size_t megabytes = 0;
      const std::string& v = option.value;
      auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), megabytes);
      if (v.empty() || error != std::errc() || end != v.data() + v.size() || megabytes < 16 ||
          megabytes > (std::size_t{1} << 20)) {
        throw UsageError(
            "kinetrace analyze: --memory-mb needs a whole number of megabytes "
            "16..1048576, got '" +
            v + "'");
      }
      a.memoryBytes = megabytes << 20;
    } else {
      a.quiet = true;
    }
  }
  if (a.paths.empty()) {
    throw UsageError("kinetrace analyze: no trace given: kinetrace analyze TRACE|DIRECTORY...");
  }
  return command;
}

// A duration option's nanoseconds, in the syntax of the KINETRACE_DURATION variable.
int64_t parseDurationOption(const char* option, const std::string& value) {
  Config check;
  try {
    check.set("duration", value);
  } catch (const Error& error) {
    throw UsageError(std::string("kinetrace trigger: ") + option + ": " +
                     withoutKinetracePrefix(error.what()));
  }
  return check.durationNs;
}

Command parseTrigger(const std::vector<std::string>& args) {
  Command command;
  command.kind = Command::Kind::Trigger;
  TriggerOptions& t = command.trigger;
  for (std::size_t i = 1; i < args.size(); ++i) {
    Found option = readOption("trigger", kTriggerOptions, args, i);
    const std::string name = option.spec->longName;
    const std::string& value = option.value;
    if (name == "--help") {
      command.kind = Command::Kind::Help;
      command.helpTopic = "trigger";
      return command;
    } else if (name == "--pid") {
      int64_t pid = 0;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), pid);
      if (error != std::errc() || end != value.data() + value.size() || pid <= 0) {
        throw UsageError("kinetrace trigger: --pid needs a process id, got '" + value + "'");
      }
      t.pid = pid;
    } else if (name == "--job") {
      t.job = value;
    } else if (name == "--duration") {
      t.durationNs = parseDurationOption("--duration", value);
    } else if (name == "--output") {
      t.output = value;
    } else if (name == "--config") {
      t.configFile = value;
    } else if (name == "--start-in") {
      t.startInNs = parseDurationOption("--start-in", value);
    } else if (name == "--steps") {
      t.steps = parseStepNumber("--steps", value);
      if (t.steps <= 0) throw UsageError("kinetrace trigger: --steps needs at least 1 step");
    } else if (name == "--start-step") {
      t.startStep = parseStepNumber("--start-step", value);
    }
  }
  if (t.steps > 0 && t.durationNs > 0) {
    throw UsageError("kinetrace trigger: --steps or --duration, not both");
  }
  if (t.startStep >= 0 && t.steps <= 0) {
    throw UsageError("kinetrace trigger: --start-step goes with --steps");
  }
  if (t.steps > 0 && t.startInNs >= 0) {
    throw UsageError(
        "kinetrace trigger: --start-in goes with --duration (steps start at "
        "--start-step)");
  }
  if ((t.pid < 0) == t.job.empty()) {
    throw UsageError("kinetrace trigger: name one process (--pid PID) or one run (--job NAME)");
  }
  if (t.durationNs <= 0 && t.steps <= 0 && t.configFile.empty()) {
    throw UsageError(
        "kinetrace trigger: say how long to record: --duration T (5s, 500ms), --steps N, or "
        "--config FILE with ACTIVITIES_DURATION_SECS or ACTIVITIES_ITERATIONS");
  }
  return command;
}

}  // namespace

Command parseCommandLine(const std::vector<std::string>& args) {
  if (args.empty()) {
    throw UsageError(
        "kinetrace: no command given: try 'kinetrace run -- PROGRAM' or 'kinetrace --help'");
  }
  const std::string& first = args[0];
  Command command;
  if (first == "-h" || first == "--help") return command;
  if (first == "help") {
    command.helpTopic = args.size() > 1 ? args[1] : "";
    if (!command.helpTopic.empty() && command.helpTopic != "run" &&
        command.helpTopic != "summary" && command.helpTopic != "convert" &&
        command.helpTopic != "merge" && command.helpTopic != "analyze" &&
        command.helpTopic != "trigger") {
      throw UsageError("kinetrace help: no command '" + command.helpTopic +
                       "' (commands: run, summary, convert, merge, analyze, trigger)");
    }
    return command;
  }
  if (first == "--version" || first == "version") {
    command.kind = Command::Kind::Version;
    return command;
  }
  if (first == "run") return parseRun(args);
  if (first == "summary") return parseSummary(args);
  if (first == "convert") return parseConvert(args);
  if (first == "merge") return parseMerge(args);
  if (first == "analyze") return parseAnalyze(args);
  if (first == "trigger") return parseTrigger(args);
  if (!first.empty() && first[0] == '-') {
    throw UsageError("kinetrace: unknown option '" + first + "' (see 'kinetrace --help')");
  }
  throw UsageError("kinetrace: unknown command '" + first +
                   "' (commands: run, summary, convert, merge, analyze, trigger, help)");
}

std::string mainHelp() {
  return R"(kinetrace: trace the GPU work of any CUDA program, unchanged, into Chrome-trace JSON
or Perfetto traces, and say why the GPU was idle.

usage:
  kinetrace run [options] [--] PROGRAM [ARGS...]   run PROGRAM, tracing it and its children
  kinetrace summary [--top N] PATH...              print the summary of traces already written
  kinetrace convert IN OUT                         rewrite a trace in another format
  kinetrace merge TRACE... -o OUT                  one job's traces (one per rank) as one
  kinetrace analyze TRACE|DIR...                   why the GPU was idle: findings and tables
  kinetrace trigger --pid PID --duration T|--steps N   ask a running traced process to record
  kinetrace help [COMMAND]                         this text, or a command's options
  kinetrace --version

examples:
  kinetrace run -- python train.py --epochs 1
  kinetrace run --output traces/ --activities kernel,memcpy,memset,sync,memory \
                --delay 5s --duration 2s -- ./engine
  torchrun --nproc_per_node 2 ... under it:  kinetrace run -- torchrun --nproc_per_node 2 train.py

Open a trace in https://ui.perfetto.dev, chrome://tracing, TensorBoard or HTA;
'kinetrace convert trace.json trace.pftrace' makes a Perfetto trace a fraction of the size.
'kinetrace run --help' lists the options.
)";
}

std::string runHelp() {
  return R"(usage: kinetrace run [options] [--] PROGRAM [ARGS...]

Runs PROGRAM with kinetrace's injection library loaded by the CUDA driver, and writes one
trace per process that uses CUDA (the program and any child process it starts: torchrun
workers, data-loader workers). The program keeps its stdin, stdout, stderr, signals and exit
status; kinetrace prints to stderr only, after the program has exited: where each trace went
and a summary (GPU busy time, top kernels, memcpy volume, dropped records), and why any
process that was traced wrote no trace (a save that failed, say on a full disk).

SIGTERM or SIGHUP sent to kinetrace, and SIGINT or SIGQUIT sent to it by a process (kill),
are passed on to the program; Ctrl-C at the terminal reaches the program directly. Either
way kinetrace waits for the program to end, then reports.

options:
  -o, --output DIR          directory for the traces (created if needed; default
                            kinetrace-traces). Files are named
                            kinetrace-RUN[-rankR][-localL]-HOST-pidP.json (or .json.gz,
                            .pftrace: see --format), with RANK and
                            LOCAL_RANK as launchers like torchrun set them, plus a
                            .summary.json beside each
  -a, --activities LIST     what to record, comma-separated (default: default):
                            host, kernel, memcpy, memset, sync, memory, overhead, launch,
                            cuda_runtime, cuda_driver, default, all
      --delay DURATION      start recording DURATION after each process starts (5s, 200ms, 1m)
      --duration DURATION   record for DURATION, then stop (default: until the process exits)
      --format FORMAT       json (default), json.gz, or pftrace: Perfetto's protobuf format,
                            a fraction of the JSON's size (open it in ui.perfetto.dev;
                            'kinetrace convert' turns it into JSON and back)
      --cuda-graph-trace LEVEL
                            node (default): every kernel, copy and memset a CUDA graph
                            launch ran, each linked to the launch; graph: one slice per
                            launch instead (cheaper with many small nodes; what ran inside
                            is not seen)
      --capture-range RANGE none (default: the whole run); cudaProfilerApi: record between
                            the program's own cudaProfilerStart() and cudaProfilerStop()
                            calls, each such window a trace of its own; onDemand: record
                            nothing (CUPTI untouched) until `kinetrace trigger` asks
      --schedule SPEC       record by the program's steps, as torch.profiler's schedule:
                            wait=1,warmup=1,active=3,repeat=2[,skip_first=N] (repeat=0:
                            forever), one trace per cycle; warm-up steps set CUPTI up and
                            record nothing. Steps are the program's NVTX ranges named by
                            --step-marks, counted from CUDA's start
      --step-marks NAMES    comma list of NVTX range names that start a step (default
                            ProfilerStep#,step: "step 12", "Step_3", "ProfilerStep#7";
                            compared without case). Used by --schedule and by
                            `kinetrace trigger --steps`
      --log-level LEVEL     error, warning (default), info or debug: kinetrace's messages
                            from inside the traced processes, on their stderr
      --memory-mb N         cap on the tracer's own memory in each traced process, in MB
                            (1..1048576): host events and CUPTI's buffers together. When
                            it is reached, events are dropped and the trace counts them
      --nvtx, --no-nvtx     record NVTX ranges (nvtxRangePush, torch.cuda.nvtx, NCCL's)
                            as host ranges, or not (default: --nvtx)
      --no-summary          print where the traces went, without their summaries
      --top N               kernels listed per summary (default 5)
      --injection-library PATH   use this libkinetrace_injection.so
      --torch               make kinetrace the profiler backend of the program's PyTorch
                            (torch.profiler, key_averages(), tensorboard_trace_handler keep
                            working and record with kinetrace; traces are written where the
                            program saves them) instead of tracing the whole run. Loads
                            libkineto_api.so first (LD_PRELOAD) and injects nothing else.
  -h, --help                this text

Recording begins when a process initialises CUDA (its first CUDA call). Traces are written
when the process exits normally, calls exit() from any thread, or receives SIGINT or SIGTERM
(unless it handles them itself, as Python does SIGINT: it then exits normally). A process
that crashes or is killed with SIGKILL leaves no trace under the trace's name: what it had
written stays in a temporary file beside it (NAME.tmp.PID.HEX), which the report names.

exit status: the program's; 128+N if a signal N ended it; 127 if PROGRAM was not found,
126 if it could not be run, 2 for a mistake on kinetrace's command line.

environment set for the program: CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH (with
--torch: LD_PRELOAD instead), and KINETRACE_OUTPUT, KINETRACE_RUN_ID,
KINETRACE_ACTIVITIES... (other KINETRACE_* variables already set are passed on and checked).
)";
}

std::string summaryHelp() {
  return R"(usage: kinetrace summary [--top N] PATH...

Prints the summary of traces that kinetrace run wrote. PATH is a trace (x.json: its
x.summary.json is read; a trace without one, saved through the API or by torch.profiler, is
analysed as 'kinetrace analyze' does), a summary file, or a directory (every summary in it).

options:
      --top N      kernels listed per summary (default 5)
  -h, --help       this text
)";
}

std::string convertHelp() {
  return R"(usage: kinetrace convert [--quiet] IN OUT

Rewrites a trace in another format, streaming (a trace of any size needs little memory).
IN is Chrome trace JSON (as kinetrace, torch.profiler and libkineto write it) or a .pftrace
that kinetrace wrote, gzip-compressed or not: the content decides, not the name. OUT's
name chooses its format:

  *.json                Chrome trace JSON
  *.json.gz             Chrome trace JSON, gzip-compressed
  *.pftrace             Perfetto's protobuf format (also *.perfetto-trace; *.pftrace.gz)

OUT appears whole or not at all. Events the output cannot hold (Chrome phases other than
X, i, C, s, f and M; a pid that is not a number) are left out and counted on stderr.

options:
  -q, --quiet      no progress and no report, errors only
  -h, --help       this text
)";
}

std::string mergeHelp() {
  return R"(usage: kinetrace merge [options] TRACE... -o OUT

Writes the traces of one distributed job, one per rank (as `kinetrace run` or torch.profiler
wrote them: .json, .json.gz, .pftrace), as one trace on one timeline, for a viewer such as
Perfetto. Each rank's processes stay apart (pid rank * 10,000,000 + pid, named "rank R: ...")
and its launch arrows stay its own. A trace's rank is its distributedInfo.rank, else its place
on the command line.

Clocks: a collective ends at the same moment on every rank (the last rank's data arrives
everywhere together), so each rank's times are shifted to make its NCCL collectives
(all-reduce, all-gather, reduce-scatter, broadcast, reduce, all-to-all kernels) end with the
lowest rank's. The shift and the skew left after it (median and largest) are printed per
rank and kept in the merged trace's "kinetrace_merge" metadata, with each rank's own
metadata. A rank without collectives keeps its times. One trace per rank stays what
`kinetrace run` writes; merging is for looking at the ranks together.

options:
  -o, --output OUT   the merged trace; its name chooses the format (.json, .json.gz, .pftrace)
      --no-align     keep every trace's times as recorded
  -q, --quiet        no progress and no report, errors only
  -h, --help         this text
)";
}

std::string analyzeHelp() {
  return R"(usage: kinetrace analyze [options] TRACE|DIRECTORY...

Answers "why is my GPU idle?" from traces kinetrace or torch.profiler wrote (.json, .json.gz,
.pftrace; a directory: every trace in it, one per rank): findings in plain sentences, then
per trace the GPU time (busy: compute, communication, memory; idle: before the first GPU
operation, waiting for the host, launching, kernel wait, waiting on other work (what it
waited on, where the trace shows it), other) per GPU, stream and step, the kernels that
took the time, tiny kernels and what issued them, launch latency, the longest idle gaps and
what the host was doing, memory over the steps; across ranks, collectives one rank started
late.

options:
      --html FILE      a report to open in a browser: the findings, charts (busy and idle
                       per GPU and step; busy time, queue depth per stream and memory over
                       the window; launch latency) and tables, in one self-contained file
      --json FILE      the analysis as JSON too
      --rank N         only the traces of rank N
      --top N          rows per table (default 10)
      --tiny-us N      a kernel shorter than N microseconds is tiny (default 10)
      --kernel-wait-us N
                       an idle gap shorter than N microseconds before an operation that was
                       already queued is "kernel wait", the GPU moving on to the next one
                       (default 30: what HTA's idle-time breakdown counts, its
                       consecutive_kernel_delay of 30 compared with gaps in microseconds;
                       0: none)
      --memory-mb N    the memory a trace's analysis may hold (default 256); what is more
                       goes to temporary files in $TMPDIR (else /tmp), so a trace of any
                       length is analysed in this much memory
  -q, --quiet          no progress
  -h, --help           this text
)";
}

std::string triggerHelp() {
  return R"(usage: kinetrace trigger (--pid PID | --job NAME) (--duration T | --steps N)
                         [--output PATH] [--config FILE] [--start-in T | --start-step S]

Asks processes running under `kinetrace run` to record now, for T or for the next N steps,
without restarting them. Run the job with `kinetrace run --capture-range onDemand` to record nothing (and
leave CUPTI untouched) until asked; a process of any other run can be asked too once its
own window has ended. Only the user who runs a process can trigger it: the sockets live in
$KINETRACE_CONTROL_DIR, else /tmp/kinetrace-UID, a directory of that user's alone.

options:
      --pid PID        the process to record
      --job NAME       every process of the run NAME (`kinetrace run` prints its run id;
                       KINETRACE_RUN_ID), all starting at the same moment
      --duration T     how long to record (5s, 500ms, 2m)
      --steps N        record N steps of the program's loop instead: from the start of one
                       step (an NVTX range named as `kinetrace run --step-marks` says) to
                       the start of the step N later. With --job every process starts at
                       the same step number: one that all of them have still ahead, about
                       a second away at the pace they go
      --start-step S   with --steps: start at step S (counted from CUDA's start) instead
  -o, --output PATH    where the trace goes: a file (with --pid) or a directory (the run's
                       naming in it); default: the run's output directory
      --config FILE    libkineto's on-demand keys: ACTIVITIES_DURATION_SECS,
                       ACTIVITIES_DURATION_MSECS, ACTIVITIES_ITERATIONS (steps),
                       ACTIVITIES_LOG_FILE, PROFILE_START_TIME (milliseconds since the
                       epoch), PROFILE_START_ITERATION (a step); the options above win
      --start-in T     start T from now (default: now with --pid, 1s with --job, so every
                       process has the request before it starts)
  -h, --help           this text

Each process answers at once: where its trace will go, or why it cannot record (a trace is
already recording, it records between its own cudaProfilerStart/Stop calls, ...).

exit status: 0 when every process accepted, 1 when one refused or could not be reached,
2 for a mistake on the command line.
)";
}

std::string helpFor(const std::string& topic) {
  if (topic == "trigger") return triggerHelp();
  if (topic == "analyze") return analyzeHelp();
  if (topic == "convert") return convertHelp();
  if (topic == "merge") return mergeHelp();
  if (topic == "run") return runHelp();
  if (topic == "summary") return summaryHelp();
  return mainHelp();
}

}  // namespace kinetrace::cli
