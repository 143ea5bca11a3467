// The kinetrace command: `run` traces an unmodified CUDA program, `trigger` asks a running
// one to record now, `analyze` says why the GPU was idle, `diff` what changed between two
// runs, `convert` rewrites a trace in another format, `merge` puts one job's traces on one
// timeline, `summary` prints the summaries `run` wrote, `help` prints a command's options (and
// `--version` the version).
//
// Every command has one shape, `int xCommand(const XOptions&, std::FILE* out, std::FILE* err)`:
// its results on `out`, progress and reports on `err`, a mistake thrown (UsageError, exit
// status 2, or kinetrace::Error, 1), else the exit status returned. main dispatches them from
// the table below.

#include <cstdio>
#include <string>
#include <vector>

#include "analyze_command.h"
#include "cli_options.h"
#include "convert_command.h"
#include "diff_command.h"
#include "error_text.h"
#include "kinetrace/error.h"
#include "merge_command.h"
#include "model/gpu_metric_catalog.h"
#include "run_command.h"
#include "session/gpu_metric_listing.h"
#include "session/settings.h"
#include "summary_command.h"
#include "trigger_command.h"

namespace kinetrace::cli {
namespace {

// `kinetrace help metrics`: the short names, then what this machine's GPU can sample.
int printMetricsHelp(std::FILE* out, std::FILE* err) {
  std::fputs(
      "GPU metrics (kinetrace run --gpu-metrics LIST, config key gpu_metrics): short names\n", out);
  for (const detail::NamedGpuMetric& named : detail::gpuMetricShortNames()) {
    std::fprintf(out, "  %-11s %-20s %s\n    %s\n", named.shortName,
                 named.metric.displayName.c_str(), named.meaning, named.metric.name.c_str());
  }
  std::fprintf(out, "  default = %s\n\n", std::string(detail::kDefaultGpuMetrics).c_str());
  auto listed = detail::listGpuMetricsOfDevice(0);
  if (!listed.ok()) {
    std::fprintf(err, "kinetrace help metrics: the GPU's own metrics cannot be listed: %s\n",
                 listed.why().c_str());
    return 1;
  }
  std::fputs(listed.value().c_str(), out);
  return 0;
}

int printHelp(const Command& command, std::FILE* out, std::FILE* err) {
  if (command.helpTopic == "metrics") return printMetricsHelp(out, err);
  // The table of docs/CONFIGURATION.md, made from the settings table itself.
  if (command.helpTopic == "settings") {
    std::fputs(detail::settingsMarkdown().c_str(), out);
    return 0;
  }
  std::fputs(helpFor(command.helpTopic).c_str(), out);
  return 0;
}

int printVersion(const Command&, std::FILE* out, std::FILE*) {
  std::fprintf(out, "kinetrace %s\n", KINETRACE_VERSION_STRING);
  return 0;
}

struct Dispatch {
  Command::Kind kind;
  int (*run)(const Command& command, std::FILE* out, std::FILE* err);
};

constexpr Dispatch kCommands[] = {
    {Command::Kind::Help, printHelp},
    {Command::Kind::Version, printVersion},
    {Command::Kind::Run,
     [](const Command& c, std::FILE* out, std::FILE* err) { return runCommand(c.run, out, err); }},
    {Command::Kind::Trigger, [](const Command& c, std::FILE* out,
                                std::FILE* err) { return triggerCommand(c.trigger, out, err); }},
    {Command::Kind::Analyze, [](const Command& c, std::FILE* out,
                                std::FILE* err) { return analyzeCommand(c.analyze, out, err); }},
    {Command::Kind::Convert, [](const Command& c, std::FILE* out,
                                std::FILE* err) { return convertCommand(c.convert, out, err); }},
    {Command::Kind::Merge, [](const Command& c, std::FILE* out,
                              std::FILE* err) { return mergeCommand(c.merge, out, err); }},
    {Command::Kind::Summary, [](const Command& c, std::FILE* out,
                                std::FILE* err) { return summaryCommand(c.summary, out, err); }},
    {Command::Kind::Diff, [](const Command& c, std::FILE* out,
                             std::FILE* err) { return diffCommand(c.diff, out, err); }},
};

}  // namespace
}  // namespace kinetrace::cli

int main(int argc, char** argv) {
  using namespace kinetrace::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    const Command command = parseCommandLine(args);
    for (const Dispatch& entry : kCommands) {
      if (entry.kind == command.kind) return entry.run(command, stdout, stderr);
    }
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return error.exitCode();
  } catch (const kinetrace::Error& error) {
    std::fprintf(stderr, "%s\n", errorLine(error.what()).c_str());
    // A setting refused is a mistake in how kinetrace was asked, as a bad option is.
    return error.kind() == kinetrace::ErrorKind::Setting ? 2 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", errorLine(error.what()).c_str());
    return 1;
  }
  return 0;
}
