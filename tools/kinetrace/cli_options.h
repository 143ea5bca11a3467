#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

// The kinetrace command line:
//
//   kinetrace run [options] [--] PROGRAM [ARGS...]
//   kinetrace summary [--top N] [--memory-mb N] PATH...
//   kinetrace convert [--quiet] [--memory-mb N] IN OUT
//   kinetrace merge [options] TRACE... -o OUT
//   kinetrace analyze [options] TRACE|DIR...
//   kinetrace diff [options] BASE NEW
//   kinetrace trigger (--pid PID | --job NAME) (--duration T | --steps N) [options]
//   kinetrace help [COMMAND] | --help | --version
//
// Each command's options are one table (option_table.h), read by the parser and printed by
// `kinetrace help COMMAND`. Parsing only: nothing here touches the file system or the
// environment, so every error case is a unit test.

namespace kinetrace::cli {

// A mistake on the command line: the message names the option and says what to do;
// the command exits with exitCode (2, as for usage errors in most tools).
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message, int exitCode = 2)
      : std::runtime_error(message), exitCode_(exitCode) {}
  int exitCode() const { return exitCode_; }

 private:
  int exitCode_;
};

struct RunOptions {
  std::string outputDir = "kinetrace-traces";
  // The settings given as options (--activities, --delay, --memory-mb, ...: the rows of
  // session/settings.h with a `kinetrace run` option), by key, as given and already checked
  // as the traced processes will check them; they get them as KINETRACE_<KEY>.
  std::map<std::string, std::string> settings;
  bool nvtx = true;
  // --torch: kinetrace becomes the profiler backend of the program's PyTorch (libkineto_api.so
  // preloaded) instead of tracing the whole run through CUDA injection.
  bool torch = false;
  // --dynolog: the processes poll the dynolog daemon for on-demand traces (KINETO_USE_DAEMON),
  // and record nothing until it asks unless a capture mode is chosen.
  bool dynolog = false;
  bool printSummary = true;
  std::size_t topKernels = 5;
  std::string injectionLibrary;      // --injection-library; empty: next to the command
  std::vector<std::string> program;  // PROGRAM ARGS...

  // The value given for a setting's key; "" when it was not given.
  std::string setting(const std::string& key) const {
    auto found = settings.find(key);
    return found == settings.end() ? std::string() : found->second;
  }
};

// What the offline commands (summary, convert, merge, analyze) may hold in memory while
// they read traces, when --memory-mb is not given: the read budget's default
// (analysis/read_budget.h, kDefaultReadBudgetBytes).
constexpr std::size_t kDefaultReadMemoryBytes = std::size_t{256} << 20;

struct SummaryOptions {
  std::size_t topKernels = 5;
  std::size_t memoryBytes = kDefaultReadMemoryBytes;  // --memory-mb
  std::vector<std::string> paths;
};

struct ConvertOptions {
  std::string input;
  std::string output;
  std::size_t memoryBytes = kDefaultReadMemoryBytes;  // --memory-mb
  bool quiet = false;                                 // no progress, no report (errors still)
  // Inputs at least this large show their progress (smaller ones convert in a second).
  uint64_t progressFromBytes = uint64_t{32} << 20;
};

struct MergeOptions {
  std::vector<std::string> paths;                     // one trace per rank
  std::string output;                                 // -o
  bool align = true;                                  // --no-align: times as recorded
  std::size_t memoryBytes = kDefaultReadMemoryBytes;  // --memory-mb
  bool quiet = false;
  uint64_t progressFromBytes = uint64_t{32} << 20;
};

struct AnalyzeOptions {
  std::vector<std::string> paths;  // traces, or directories of traces (one per rank)
  std::string jsonOutput;          // --json: the analysis as JSON too
  std::string htmlOutput;          // --html: a self-contained report
  int64_t rank = -1;               // --rank: only that rank's traces
  std::size_t top = 10;            // rows of each table
  int64_t tinyKernelNs = 10'000;   // --tiny-us
  int64_t kernelWaitNs = 30'000;   // --kernel-wait-us (HTA's threshold, trace_analysis.h)
  std::size_t sequenceLength = 3;  // --min-pattern-len (HTA's min_pattern_len)
  std::string sequenceOperator;    // --sequence-op: HTA's operator_name
  int64_t maxQueueLength = 1024;   // --max-queue-length (HTA's max_queue_length)
  std::size_t memoryBytes = kDefaultReadMemoryBytes;  // --memory-mb
  unsigned jobs = 0;                                  // --jobs: files read at once; 0: one per core
  bool quiet = false;
  uint64_t progressFromBytes = uint64_t{32} << 20;
  bool criticalPath = false;      // --critical-path: each step's critical path
  std::string criticalPathTrace;  // --critical-path-trace: the trace with its path marked
};

struct DiffOptions {
  std::string base;        // BASE: a trace, or a directory of one job's traces (one per rank)
  std::string after;       // NEW: the same
  std::string jsonOutput;  // --json: the comparison as JSON too
  std::string htmlOutput;  // --html: a self-contained report
  int64_t rank = -1;       // --rank: only that rank's traces
  std::size_t top = 10;    // rows of each table
  int64_t kernelWaitNs = 30'000;                      // --kernel-wait-us, as analyze's
  std::size_t memoryBytes = kDefaultReadMemoryBytes;  // --memory-mb
  unsigned jobs = 0;                                  // --jobs: files read at once; 0: one per core
  bool quiet = false;
  uint64_t progressFromBytes = uint64_t{32} << 20;
};

struct TriggerOptions {
  int64_t pid = -1;        // --pid: one process
  std::string job;         // --job: every process of a run (its run id)
  int64_t durationNs = 0;  // --duration
  int64_t steps = 0;       // --steps: record this many steps instead of a duration
  int64_t startStep = -1;  // --start-step: the first step recorded; -1 = the default
  int64_t roundUp = 1;     // --round-up: the first step is a multiple of this
  std::string output;      // --output: a trace path (--pid) or a directory; "" = the run's
  std::string configFile;  // --config: libkineto's on-demand keys
  int64_t startInNs = -1;  // --start-in: delay before the start; -1 = the default
};

struct Command {
  enum class Kind { Help, Version, Run, Summary, Convert, Merge, Analyze, Trigger, Diff };
  Kind kind = Kind::Help;
  std::string helpTopic;  // Help: "" or a command's name
  RunOptions run;
  SummaryOptions summary;
  ConvertOptions convert;
  MergeOptions merge;
  AnalyzeOptions analyze;
  TriggerOptions trigger;
  DiffOptions diff;
};

// `args` excludes argv[0]. Throws UsageError.
Command parseCommandLine(const std::vector<std::string>& args);

// The commands, in the order the help lists them ("help" itself not among them).
std::vector<std::string> commandNames();
// Every spelling a command accepts (long and short, --help included); empty for no command.
std::vector<std::string> optionNamesOf(const std::string& command);

std::string mainHelp();
std::string helpFor(const std::string& topic);  // a command's name, else mainHelp()

}  // namespace kinetrace::cli
