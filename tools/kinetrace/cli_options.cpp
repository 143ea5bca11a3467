#include "cli_options.h"

#include <charconv>
#include <deque>
#include <string_view>

#include "kinetrace/config.h"
#include "kinetrace/error.h"
#include "option_table.h"
#include "output/open_sink.h"
#include "session/settings.h"
#include "standard_output.h"

namespace kinetrace::cli {
namespace {

using detail::CommandSpec;
using detail::Operands;

// ---- values ---------------------------------------------------------------------------

// `value` as a whole number, or false when it is not one (or has anything after it).
template <typename Number>
bool wholeNumber(const std::string& value, Number* parsed) {
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), *parsed);
  return !value.empty() && error == std::errc() && end == value.data() + value.size();
}

std::size_t parseCount(const char* command, const char* option, const std::string& value) {
  std::size_t parsed = 0;
  if (!wholeNumber(value, &parsed) || parsed > 1000) {
    throw UsageError(std::string("kinetrace ") + command + ": " + option +
                     " needs a whole number 0..1000, got '" + value + "'");
  }
  return parsed;
}

// A step number or count: any whole number a loop reaches.
int64_t parseStepNumber(const char* option, const std::string& value) {
  int64_t parsed = 0;
  if (!wholeNumber(value, &parsed) || parsed < 0) {
    throw UsageError(std::string("kinetrace trigger: ") + option +
                     " needs a whole number of steps, got '" + value + "'");
  }
  return parsed;
}

// The offline commands' --memory-mb: below 16 MB a trace's buffers and tables do not fit.
std::size_t parseReadMemory(const char* command, const std::string& value) {
  std::size_t megabytes = 0;
  if (!wholeNumber(value, &megabytes) || megabytes < 16 || megabytes > (std::size_t{1} << 20)) {
    throw UsageError(std::string("kinetrace ") + command +
                     ": --memory-mb needs a whole number of megabytes 16..1048576, got '" + value +
                     "'");
  }
  return megabytes << 20;
}

// A duration option's nanoseconds, in the syntax of the KINETRACE_DURATION variable.
int64_t parseDurationOption(const char* option, const std::string& value) {
  Config check;
  try {
    kinetrace::detail::findSetting("duration")->read(check, value);
  } catch (const kinetrace::detail::SettingRefused& refused) {
    throw UsageError(std::string("kinetrace trigger: ") + option + ": " + refused.what());
  }
  return check.durationNs;
}

int64_t parsePid(const std::string& value) {
  int64_t pid = 0;
  if (!wholeNumber(value, &pid) || pid <= 0) {
    throw UsageError("kinetrace trigger: --pid needs a process id, got '" + value + "'");
  }
  return pid;
}

// ---- the commands ---------------------------------------------------------------------

using Value = const std::string&;

// Where a value goes, for the table's common cases.
template <typename Options>
auto stored(std::string Options::*member) {
  return [member](Options& options, const char*, Value value) { options.*member = value; };
}

template <typename Options>
auto setTo(bool Options::*member, bool flag) {
  return [member, flag](Options& options, const char*, Value) { options.*member = flag; };
}

template <typename Options>
auto counted(const char* command, std::size_t Options::*member) {
  return [command, member](Options& options, const char* option, Value value) {
    options.*member = parseCount(command, option, value);
  };
}

// --memory-mb of an offline command, one row for all of them: what reading its traces may
// hold in memory (the read budget), `help` saying what the command does with the cap.
template <typename Options>
detail::OptionSpec<Options> readMemoryOption(const char* command, std::size_t Options::*member,
                                             const char* help) {
  return {"--memory-mb", nullptr, "N", help,
          [command, member](Options& options, const char*, Value value) {
            options.*member = parseReadMemory(command, value);
          }};
}

// --jobs of a command that reads a job's traces (analyze, diff): how many at once.
template <typename Options>
detail::OptionSpec<Options> jobsOption(const char* command, unsigned Options::*member) {
  return {"--jobs", "-j", "N",
          "traces read at once, each by a core of its own, all within --memory-mb (default: "
          "one per core)",
          [command, member](Options& options, const char*, Value value) {
            const std::size_t jobs = parseCount(command, "--jobs", value);
            if (jobs == 0 || jobs > 1024) {
              throw UsageError(std::string("kinetrace ") + command +
                               ": --jobs needs a whole number 1..1024, got '" + value + "'");
            }
            options.*member = static_cast<unsigned>(jobs);
          }};
}

// A setting of the traced processes (a row of session/settings.h): checked here as they will
// check it, so a mistake is reported by option name before the program starts; passed on as
// given.
auto setting(const kinetrace::detail::Setting& row) {
  return [&row](RunOptions& options, const char* option, Value value) {
    try {
      Config scratch;
      row.read(scratch, value);
    } catch (const kinetrace::detail::SettingRefused& refused) {
      throw UsageError(std::string("kinetrace run: ") + option + " " + value + ": " +
                       refused.what());
    }
    options.settings[row.key] = value;
  };
}

// run ----------------------------------------------------------------------------------

void finishRun(RunOptions& run, std::vector<std::string> operands) {
  run.program = std::move(operands);
  if (run.program.empty()) {
    throw UsageError(
        "kinetrace run: no program to run: kinetrace run [options] -- PROGRAM [ARGS...]");
  }
  const std::string captureRange = run.setting("capture_range");
  const bool delayOrDuration = !run.setting("delay").empty() || !run.setting("duration").empty();
  Config check;
  if (!captureRange.empty()) check.set("capture_range", captureRange);
  if (check.captureRange == CaptureRange::CudaProfilerApi && delayOrDuration) {
    throw UsageError(
        "kinetrace run: --capture-range=cudaProfilerApi records between the program's "
        "cudaProfilerStart/Stop calls; it cannot be combined with --delay or --duration");
  }
  const bool schedule = !run.setting("schedule").empty();
  if (schedule && !run.nvtx) {
    throw UsageError(
        "kinetrace run: --schedule counts the program's NVTX step ranges; it "
        "cannot be combined with --no-nvtx");
  }
  if (schedule && (delayOrDuration || !captureRange.empty())) {
    throw UsageError(
        "kinetrace run: --schedule records by the program's steps; it cannot be combined with "
        "--delay, --duration or --capture-range");
  }
}

// run's table with, after its first option (--output), an option for each setting of the
// traced processes that has one, in the settings table's order.
CommandSpec<RunOptions> withSettingOptions(CommandSpec<RunOptions> spec) {
  // The options' help: the row's, with its default. Made once (the spec is), kept for good.
  static std::deque<std::string> helps;
  std::vector<detail::OptionSpec<RunOptions>> options;
  for (const kinetrace::detail::Setting& row : kinetrace::detail::settings()) {
    if (row.runOption == nullptr) continue;
    helps.push_back(std::string(row.help) + " (default: " + row.defaultValue + ")");
    options.push_back(
        {row.runOption, row.runShortOption, row.valueName, helps.back().c_str(), setting(row)});
  }
  spec.table.insert(spec.table.begin() + 1, options.begin(), options.end());
  return spec;
}

const CommandSpec<RunOptions>& runSpec() {
  static const CommandSpec<RunOptions> spec = withSettingOptions(
      {"run",
       Command::Kind::Run,
       &Command::run,
       {
           {"--output", "-o", "DIR",
            "directory for the traces (created if needed; default kinetrace-traces). Files are "
            "named kinetrace-RUN[-rankR][-localL]-HOST-pidP.json (or .json.gz, .pftrace: see "
            "--format), with RANK and LOCAL_RANK as launchers like torchrun set them, plus a "
            ".summary.json beside each",
            [](RunOptions& o, const char*, Value v) {
              if (v.empty()) throw UsageError("kinetrace run: --output needs a directory");
              o.outputDir = v;
            }},
           {"--nvtx", nullptr, nullptr,
            "record NVTX ranges (nvtxRangePush, torch.cuda.nvtx, NCCL's) as host ranges, or not "
            "(default: --nvtx)",
            setTo(&RunOptions::nvtx, true)},
           {"--no-nvtx", nullptr, nullptr, nullptr, setTo(&RunOptions::nvtx, false)},
           {"--no-summary", nullptr, nullptr,
            "print where the traces went, without their summaries",
            setTo(&RunOptions::printSummary, false)},
           {"--top", nullptr, "N", "kernels listed per summary (default 5)",
            counted("run", &RunOptions::topKernels)},
           {"--injection-library", nullptr, "PATH", "use this libkinetrace_injection.so",
            stored(&RunOptions::injectionLibrary)},
           {"--torch", nullptr, nullptr,
            "make kinetrace the profiler backend of the program's PyTorch (torch.profiler, "
            "key_averages(), tensorboard_trace_handler keep working and record with kinetrace; "
            "traces are written where the program saves them) instead of tracing the whole "
            "run. Loads libkineto_api.so first (LD_PRELOAD) and injects nothing else.",
            setTo(&RunOptions::torch, true)},
           {"--dynolog", nullptr, nullptr,
            "let the dynolog daemon trigger traces (`dyno gputrace`, as it triggers libkineto): "
            "every process polls it (KINETRACE_DYNOLOG=1) and, unless a capture mode is chosen, "
            "records nothing until asked. With --torch (KINETO_USE_DAEMON=1), PyTorch's "
            "profiler is driven as libkineto drives it.",
            setTo(&RunOptions::dynolog, true)},
       },
       Operands::ProgramAfter,
       finishRun,
       R"(usage: kinetrace run [options] [--] PROGRAM [ARGS...]

Runs PROGRAM with kinetrace's injection library loaded by the CUDA driver, and writes one
trace per process that uses CUDA (the program and any child process it starts: torchrun
workers, data-loader workers). The program keeps its stdin, stdout, stderr, signals and exit
status; kinetrace prints to stderr only, after the program has exited: where each trace went
and a summary (GPU busy time, top kernels, memcpy volume, dropped records), and why any
process that was traced wrote no trace (a save that failed, say on a full disk).

SIGTERM or SIGHUP sent to kinetrace, and SIGINT or SIGQUIT sent to it by a process (kill),
are passed on to the program; Ctrl-C at the terminal reaches the program directly. Either
way kinetrace waits for the program to end, then reports.
)",
       R"(Recording begins when a process initialises CUDA (its first CUDA call). Traces are written
when the process exits normally, calls exit() from any thread, or receives SIGINT or SIGTERM
(unless it handles them itself, as Python does SIGINT: it then exits normally). A process
that crashes or is killed with SIGKILL leaves no trace under the trace's name: what it had
written stays in a temporary file beside it (NAME.tmp.PID.HEX), which the report names.

exit status: the program's; 128+N if a signal N ended it; 127 if PROGRAM was not found,
126 if it could not be run, 2 for a mistake on kinetrace's command line.

environment set for the program: CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH (with
--torch: LD_PRELOAD instead), KINETRACE_DYNOLOG=1 with --dynolog (with --torch too:
KINETO_USE_DAEMON=1), and KINETRACE_OUTPUT, KINETRACE_RUN_ID,
KINETRACE_ACTIVITIES... (other KINETRACE_* variables already set are passed on and checked).
)"});
  return spec;
}

// summary ------------------------------------------------------------------------------

const CommandSpec<SummaryOptions>& summarySpec() {
  static const CommandSpec<SummaryOptions> spec{
      "summary",
      Command::Kind::Summary,
      &Command::summary,
      {{"--top", nullptr, "N", "kernels listed per summary (default 5)",
        counted("summary", &SummaryOptions::topKernels)},
       readMemoryOption("summary", &SummaryOptions::memoryBytes,
                        "the memory reading a summary (or analysing a trace without one) may "
                        "hold (default 256); a summary file larger than that is refused")},
      Operands::Anywhere,
      [](SummaryOptions& summary, std::vector<std::string> operands) {
        summary.paths = std::move(operands);
        if (summary.paths.empty()) {
          throw UsageError(
              "kinetrace summary: no trace given: kinetrace summary TRACE.json|DIRECTORY...");
        }
      },
      R"(usage: kinetrace summary [--top N] [--memory-mb N] PATH...

Prints the summary of traces that kinetrace run wrote. PATH is a trace (x.json: its
x.summary.json is read; a trace without one, saved through the API or by torch.profiler, is
analysed as 'kinetrace analyze' does), a summary file, or a directory (every summary in it).
Only regular files are read as summaries: a link, device or FIFO is named and refused.
)",
      ""};
  return spec;
}

// A trace operand: "-" is standard input (a file named so is "./-").
std::string standardInputFor(const std::string& operand) {
  return operand == "-" ? std::string("/dev/stdin") : operand;
}

// convert ------------------------------------------------------------------------------

const CommandSpec<ConvertOptions>& convertSpec() {
  static const CommandSpec<ConvertOptions> spec{
      "convert",
      Command::Kind::Convert,
      &Command::convert,
      {{"--quiet", "-q", nullptr, "no progress and no report, errors only",
        setTo(&ConvertOptions::quiet, true)},
       readMemoryOption("convert", &ConvertOptions::memoryBytes,
                        "the memory reading IN may hold (default 256): its metadata, its "
                        "longest string, a .pftrace's interned strings and tracks; a trace that "
                        "needs more is refused, naming what grew")},
      Operands::Anywhere,
      [](ConvertOptions& convert, std::vector<std::string> paths) {
        if (paths.size() != 2) {
          throw UsageError(
              "kinetrace convert: give an input and an output trace: kinetrace convert IN OUT "
              "(got " +
              std::to_string(paths.size()) + " paths)");
        }
        convert.input = standardInputFor(paths[0]);
        convert.output = paths[1];
        // OUT's name chooses its format: a name that chooses none would be written as JSON
        // without a word.
        if (!isStandardOutput(convert.output) &&
            !kinetrace::detail::namesTraceFormat(convert.output)) {
          throw UsageError("kinetrace convert: " + convert.output +
                           ": OUT's name chooses its format, and this one names none: end it "
                           "in .json, .json.gz or .pftrace (or .perfetto-trace, .pftrace.gz), "
                           "or give - for JSON on standard output");
        }
      },
      R"(usage: kinetrace convert [--quiet] [--memory-mb N] IN OUT

Rewrites a trace in another format, streaming (a trace of any size needs little memory).
IN is Chrome trace JSON (as kinetrace, torch.profiler and libkineto write it) or a .pftrace
that kinetrace wrote, gzip-compressed or not: the content decides, not the name; - reads it
from standard input. OUT's name chooses its format:

  *.json                Chrome trace JSON
  *.json.gz             Chrome trace JSON, gzip-compressed
  *.pftrace             Perfetto's protobuf format (also *.perfetto-trace; *.pftrace.gz)
  -                     Chrome trace JSON on standard output

OUT appears whole or not at all. Events the output cannot hold (Chrome phases other than
X, i, C, s, f and M; a pid that is not a number; in a .pftrace, a time more than a second
before the trace's base time) are left out and counted on stderr, with "wrote N of M
events". A number that does not fit (a time or id past 64 bits) is an error naming its
event: no number is changed silently.
)",
      ""};
  return spec;
}

// merge --------------------------------------------------------------------------------

const CommandSpec<MergeOptions>& mergeSpec() {
  static const CommandSpec<MergeOptions> spec{
      "merge",
      Command::Kind::Merge,
      &Command::merge,
      {
          {"--output", "-o", "OUT",
           "the merged trace; its name chooses the format (.json, .json.gz, .pftrace); - "
           "for JSON on standard output (the merge's report then goes to stderr)",
           stored(&MergeOptions::output)},
          {"--no-align", nullptr, nullptr, "keep every trace's times as recorded",
           setTo(&MergeOptions::align, false)},
          readMemoryOption("merge", &MergeOptions::memoryBytes,
                           "the memory reading the traces may hold (default 256): each rank's "
                           "collectives, GPUs, processes and metadata; a job that needs more is "
                           "refused, naming what grew"),
          {"--quiet", "-q", nullptr, "no progress and no report, errors only",
           setTo(&MergeOptions::quiet, true)},
      },
      Operands::Anywhere,
      [](MergeOptions& merge, std::vector<std::string> paths) {
        merge.paths = std::move(paths);
        if (merge.output.empty()) {
          throw UsageError(
              "kinetrace merge: give the merged trace's path: kinetrace merge TRACE... -o OUT");
        }
        if (merge.paths.size() < 2) {
          throw UsageError("kinetrace merge: give two traces or more, one per rank (got " +
                           std::to_string(merge.paths.size()) + ")");
        }
      },
      R"(usage: kinetrace merge [options] TRACE... -o OUT

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
)",
      ""};
  return spec;
}

// analyze ------------------------------------------------------------------------------

const CommandSpec<AnalyzeOptions>& analyzeSpec() {
  static const CommandSpec<AnalyzeOptions> spec{
      "analyze",
      Command::Kind::Analyze,
      &Command::analyze,
      {
          {"--html", nullptr, "FILE",
           "a report to open in a browser: the findings, charts (busy and idle per GPU and "
           "step; busy time, queue depth per stream and memory over the window; launch "
           "latency) and tables, in one self-contained file; - for standard output, in place "
           "of the text",
           stored(&AnalyzeOptions::htmlOutput)},
          {"--json", nullptr, "FILE",
           "the analysis as JSON too; - for standard output, in place of the text",
           stored(&AnalyzeOptions::jsonOutput)},
          {"--rank", nullptr, "N", "only the traces of rank N",
           [](AnalyzeOptions& o, const char* option, Value v) {
             o.rank = static_cast<int64_t>(parseCount("analyze", option, v));
           }},
          {"--top", nullptr, "N", "rows per table (default 10)",
           counted("analyze", &AnalyzeOptions::top)},
          {"--tiny-us", nullptr, "N", "a kernel shorter than N microseconds is tiny (default 10)",
           [](AnalyzeOptions& o, const char* option, Value v) {
             o.tinyKernelNs = static_cast<int64_t>(parseCount("analyze", option, v)) * 1000;
           }},
          {"--kernel-wait-us", nullptr, "N",
           "an idle gap shorter than N microseconds before an operation that was already "
           "queued is \"kernel wait\", the GPU moving on to the next one (default 30: what "
           "HTA's idle-time breakdown counts, its consecutive_kernel_delay of 30 compared with "
           "gaps in microseconds; 0: none)",
           [](AnalyzeOptions& o, const char* option, Value v) {
             o.kernelWaitNs = static_cast<int64_t>(parseCount("analyze", option, v)) * 1000;
           }},
          {"--min-pattern-len", nullptr, "N",
           "kernel sequences are chains of N kernels (default 3, at most 16: HTA's "
           "min_pattern_len); with --sequence-op, the operators with N operations or more",
           [](AnalyzeOptions& o, const char* option, Value v) {
             const std::size_t n = parseCount("analyze", option, v);
             if (n < 1 || n > 16) {
               throw UsageError(std::string("kinetrace analyze: ") + option +
                                " needs a whole number 1..16, got '" + v + "'");
             }
             o.sequenceLength = n;
           }},
          {"--sequence-op", nullptr, "NAME",
           "kernel sequences as HTA's get_frequent_cuda_kernel_sequences finds them: the "
           "operations of each shallowest host range whose name holds NAME",
           stored(&AnalyzeOptions::sequenceOperator)},
          {"--max-queue-length", nullptr, "N",
           "a stream's launch queue is full at N operations launched and not yet started "
           "(default 1024: CUDA's, HTA's max_queue_length)",
           [](AnalyzeOptions& o, const char* option, Value v) {
             int64_t n = 0;
             if (!wholeNumber(v, &n) || n < 1 || n > INT32_MAX) {
               throw UsageError(std::string("kinetrace analyze: ") + option +
                                " needs a whole number of operations, 1 or more, got '" + v + "'");
             }
             o.maxQueueLength = n;
           }},
          readMemoryOption("analyze", &AnalyzeOptions::memoryBytes,
                           "the memory a trace's analysis may hold (default 256); what is more "
                           "goes to temporary files in $TMPDIR (else /tmp), so a trace of any "
                           "length is analysed in this much memory"),
          jobsOption("analyze", &AnalyzeOptions::jobs),
          {"--quiet", "-q", nullptr, "no progress", setTo(&AnalyzeOptions::quiet, true)},
          {"--critical-path", nullptr, nullptr,
           "each step's critical path too: the longest chain of dependent host and GPU work, "
           "its length and parts (CPU, launch, compute, communication, memory, sync, waiting), "
           "what on it took the time and what shortening that would save",
           setTo(&AnalyzeOptions::criticalPath, true)},
          {"--critical-path-trace", nullptr, "FILE",
           "with --critical-path: the trace again (one trace file given), its events on a "
           "step's path marked (\"critical\": 1) and the path drawn as arrows, to open in "
           "Perfetto (.json, .json.gz or .pftrace)",
           [](AnalyzeOptions& o, const char*, Value v) {
             o.criticalPathTrace = v;
             o.criticalPath = true;
           }},
      },
      Operands::Anywhere,
      [](AnalyzeOptions& analyze, std::vector<std::string> paths) {
        for (std::string& path : paths) path = standardInputFor(path);
        analyze.paths = std::move(paths);
        if (isStandardOutput(analyze.criticalPathTrace)) {
          throw UsageError(
              "kinetrace analyze: --critical-path-trace -: standard output carries the report; "
              "name a file for the marked trace");
        }
        if (isStandardOutput(analyze.jsonOutput) && isStandardOutput(analyze.htmlOutput)) {
          throw UsageError(
              "kinetrace analyze: --json - and --html - both ask for standard output, which "
              "carries one report: name a file for one of them");
        }
        if (analyze.paths.empty()) {
          throw UsageError(
              "kinetrace analyze: no trace given: kinetrace analyze TRACE|DIRECTORY...");
        }
      },
      R"(usage: kinetrace analyze [options] TRACE|DIRECTORY...

Answers "why is my GPU idle?" from traces kinetrace or torch.profiler wrote (.json, .json.gz,
.pftrace; a directory: every trace in it, one per rank, a trace saved in several formats
read once: .json first, then .json.gz, then .pftrace, the others named as skipped; a pipe or
FIFO is read as a stream, - standard input): findings in plain sentences, then
per trace the GPU time (busy: compute, communication, memory; idle: before the first GPU
operation, waiting for the host, launching, kernel wait, waiting on other work (what it
waited on, where the trace shows it), other) per GPU, stream and step, the kernels that
took the time, tiny kernels and what issued them, launch latency, the longest idle gaps and
what the host was doing, memory over the steps; across ranks, collectives one rank started
late.
)",
      ""};
  return spec;
}

// diff ---------------------------------------------------------------------------------

const CommandSpec<DiffOptions>& diffSpec() {
  static const CommandSpec<DiffOptions> spec{
      "diff",
      Command::Kind::Diff,
      &Command::diff,
      {
          {"--html", nullptr, "FILE",
           "the comparison as a page to open in a browser (both runs' step time as bars, every "
           "figure side by side, the names that changed most); - for standard output, in place "
           "of the text",
           stored(&DiffOptions::htmlOutput)},
          {"--json", nullptr, "FILE",
           "the comparison as JSON too, every kernel, operator and annotation name included; - "
           "for standard output, in place of the text",
           stored(&DiffOptions::jsonOutput)},
          {"--rank", nullptr, "N", "only the traces of rank N, on both sides",
           [](DiffOptions& o, const char* option, Value v) {
             o.rank = static_cast<int64_t>(parseCount("diff", option, v));
           }},
          {"--top", nullptr, "N", "rows per table (default 10)",
           counted("diff", &DiffOptions::top)},
          {"--kernel-wait-us", nullptr, "N",
           "as analyze's: an idle gap shorter than N microseconds before a queued operation is "
           "kernel wait (default 30)",
           [](DiffOptions& o, const char* option, Value v) {
             o.kernelWaitNs = static_cast<int64_t>(parseCount("diff", option, v)) * 1000;
           }},
          readMemoryOption("diff", &DiffOptions::memoryBytes,
                           "the memory the two runs' analysis may hold together (default 256); "
                           "what is more goes to temporary files in $TMPDIR (else /tmp)"),
          jobsOption("diff", &DiffOptions::jobs),
          {"--quiet", "-q", nullptr, "no progress", setTo(&DiffOptions::quiet, true)},
      },
      Operands::Anywhere,
      [](DiffOptions& diff, std::vector<std::string> paths) {
        if (paths.size() != 2) {
          throw UsageError(
              "kinetrace diff: give two runs to compare: kinetrace diff BASE NEW (each a trace or "
              "a directory of one job's traces; got " +
              std::to_string(paths.size()) + ")");
        }
        diff.base = standardInputFor(paths[0]);
        diff.after = standardInputFor(paths[1]);
        if (diff.base == "/dev/stdin" && diff.after == "/dev/stdin") {
          throw UsageError("kinetrace diff: BASE and NEW cannot both be standard input");
        }
        if (isStandardOutput(diff.jsonOutput) && isStandardOutput(diff.htmlOutput)) {
          throw UsageError(
              "kinetrace diff: --json - and --html - both ask for standard output, which "
              "carries one report: name a file for one of them");
        }
      },
      R"(usage: kinetrace diff [options] BASE NEW

Says what changed between two runs (before and after an upgrade, a config change, a
regression): BASE and NEW are each a trace (.json, .json.gz, .pftrace, as analyze reads them)
or a directory of one job's traces, whose ranks are matched by number. Steps are matched by
number (ProfilerStep#N, NVTX "step N"); runs that share no step number are compared by their
per-step averages, runs without steps whole. Per step: the step time, the parts of the
step's GPU time as analyze splits them (busy: compute, communication, memory; idle: host
wait, launch, kernel wait, waiting on other work, data loading, other), and each kernel,
operator and annotation name's count and time, with names added and removed. The step
time's change is put down to the part that explains it, and that to the names behind it; a
change within the run-to-run noise of the steps' own spread is said to be so.
)",
      ""};
  return spec;
}

// trigger ------------------------------------------------------------------------------

void finishTrigger(TriggerOptions& t, std::vector<std::string>) {
  if (t.steps > 0 && t.durationNs > 0) {
    throw UsageError("kinetrace trigger: --steps or --duration, not both");
  }
  if (t.startStep >= 0 && t.steps <= 0) {
    throw UsageError("kinetrace trigger: --start-step goes with --steps");
  }
  if (t.steps > 0 && t.startInNs >= 0) {
    throw UsageError(
        "kinetrace trigger: --start-in goes with --duration (steps start at --start-step)");
  }
  if ((t.pid < 0) == t.job.empty()) {
    throw UsageError("kinetrace trigger: name one process (--pid PID) or one run (--job NAME)");
  }
  if (t.durationNs <= 0 && t.steps <= 0 && t.configFile.empty()) {
    throw UsageError(
        "kinetrace trigger: say how long to record: --duration T (5s, 500ms), --steps N, or "
        "--config FILE with ACTIVITIES_DURATION_SECS or ACTIVITIES_ITERATIONS");
  }
}

const CommandSpec<TriggerOptions>& triggerSpec() {
  static const CommandSpec<TriggerOptions> spec{
      "trigger",
      Command::Kind::Trigger,
      &Command::trigger,
      {
          {"--pid", nullptr, "PID", "the process to record",
           [](TriggerOptions& o, const char*, Value v) { o.pid = parsePid(v); }},
          {"--job", nullptr, "NAME",
           "every process of the run NAME (`kinetrace run` prints its run id; "
           "KINETRACE_RUN_ID), all starting at the same moment",
           stored(&TriggerOptions::job)},
          {"--duration", nullptr, "T", "how long to record (5s, 500ms, 2m)",
           [](TriggerOptions& o, const char* option, Value v) {
             o.durationNs = parseDurationOption(option, v);
           }},
          {"--steps", nullptr, "N",
           "record N steps of the program's loop instead: from the start of one step (an NVTX "
           "range named as `kinetrace run --step-marks` says) to the start of the step N "
           "later. With --job every process starts at the same step number: one that all of "
           "them have still ahead, about a second away at the pace they go",
           [](TriggerOptions& o, const char* option, Value v) {
             o.steps = parseStepNumber(option, v);
             if (o.steps <= 0) throw UsageError("kinetrace trigger: --steps needs at least 1 step");
           }},
          {"--start-step", nullptr, "S",
           "with --steps: start at step S (counted from CUDA's start) instead",
           [](TriggerOptions& o, const char* option, Value v) {
             o.startStep = parseStepNumber(option, v);
           }},
          {"--round-up", nullptr, "R",
           "with --steps: start at the next step that is a multiple of R (as dyno's "
           "--profile-start-iteration-roundup), so processes that get the request a few steps "
           "apart start at the same step",
           [](TriggerOptions& o, const char* option, Value v) {
             o.roundUp = parseStepNumber(option, v);
             if (o.roundUp <= 0) throw UsageError("kinetrace trigger: --round-up needs 1 or more");
           }},
          {"--output", "-o", "PATH",
           "where the trace goes: a file (with --pid) or a directory (the run's naming in it); "
           "default: the run's output directory",
           stored(&TriggerOptions::output)},
          {"--config", nullptr, "FILE",
           "libkineto's on-demand keys: ACTIVITIES_DURATION_SECS, ACTIVITIES_DURATION_MSECS, "
           "ACTIVITIES_ITERATIONS (steps), ACTIVITIES_LOG_FILE, PROFILE_START_TIME "
           "(milliseconds since the epoch), PROFILE_START_ITERATION (a step); the options "
           "above win",
           stored(&TriggerOptions::configFile)},
          {"--start-in", nullptr, "T",
           "start T from now (default: now with --pid, 1s with --job, so every process has the "
           "request before it starts)",
           [](TriggerOptions& o, const char* option, Value v) {
             o.startInNs = parseDurationOption(option, v);
           }},
      },
      Operands::None,
      finishTrigger,
      R"(usage: kinetrace trigger (--pid PID | --job NAME) (--duration T | --steps N)
                         [--output PATH] [--config FILE]
                         [--start-in T | --start-step S] [--round-up R]

Asks processes running under `kinetrace run` to record now, for T or for the next N steps,
without restarting them. Run the job with `kinetrace run --capture-range onDemand` to record
nothing (and leave CUPTI untouched) until asked; a process of any other run can be asked too
once its own window has ended. Only the user who runs a process can trigger it: the sockets
live in $KINETRACE_CONTROL_DIR, else /tmp/kinetrace-UID, a directory of that user's alone.
)",
      R"(Each process answers at once: where its trace will go, or why it cannot record (a trace is
already recording, it records between its own cudaProfilerStart/Stop calls, ...).

exit status: 0 when every process accepted, 1 when one refused or could not be reached,
2 for a mistake on the command line.
)"};
  return spec;
}

// ---- one table of the commands --------------------------------------------------------

struct CommandEntry {
  std::string name;
  Command (*parse)(const std::vector<std::string>& args);
  std::string (*help)();
  std::vector<std::string> (*optionNames)();
};

template <auto Spec>
CommandEntry entryFor() {
  return {Spec().name, [](const std::vector<std::string>& args) { return parseWith(Spec(), args); },
          [] { return helpWith(Spec()); }, [] { return namesIn(Spec()); }};
}

// In the order `kinetrace help` lists them.
const std::vector<CommandEntry>& commandTable() {
  static const std::vector<CommandEntry> table{
      entryFor<&runSpec>(),     entryFor<&summarySpec>(), entryFor<&convertSpec>(),
      entryFor<&mergeSpec>(),   entryFor<&analyzeSpec>(), entryFor<&diffSpec>(),
      entryFor<&triggerSpec>(),
  };
  return table;
}

const CommandEntry* findCommand(const std::string& name) {
  for (const CommandEntry& entry : commandTable()) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

std::string commandList() {
  std::string list;
  for (const CommandEntry& entry : commandTable()) list += entry.name + ", ";
  return list;
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
    if (!command.helpTopic.empty() && command.helpTopic != "metrics" &&
        command.helpTopic != "settings" && findCommand(command.helpTopic) == nullptr) {
      const std::string list = commandList();
      throw UsageError("kinetrace help: no command '" + command.helpTopic +
                       "' (commands: " + list.substr(0, list.size() - 2) + ")");
    }
    return command;
  }
  if (first == "--version" || first == "version") {
    command.kind = Command::Kind::Version;
    return command;
  }
  if (const CommandEntry* entry = findCommand(first)) return entry->parse(args);
  if (!first.empty() && first[0] == '-') {
    throw UsageError("kinetrace: unknown option '" + first + "' (see 'kinetrace --help')");
  }
  throw UsageError("kinetrace: unknown command '" + first + "' (commands: " + commandList() +
                   "help)");
}

std::vector<std::string> commandNames() {
  std::vector<std::string> names;
  for (const CommandEntry& entry : commandTable()) names.push_back(entry.name);
  return names;
}

std::vector<std::string> optionNamesOf(const std::string& command) {
  const CommandEntry* entry = findCommand(command);
  return entry != nullptr ? entry->optionNames() : std::vector<std::string>{};
}

std::string helpFor(const std::string& topic) {
  const CommandEntry* entry = findCommand(topic);
  return entry != nullptr ? entry->help() : mainHelp();
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
  kinetrace diff BASE NEW                          what changed between two runs, and why
  kinetrace trigger --pid PID --duration T|--steps N   ask a running traced process to record
  kinetrace help [COMMAND]                         this text, or a command's options
  kinetrace help settings | metrics                every setting (KINETRACE_*), GPU metrics
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

}  // namespace kinetrace::cli
