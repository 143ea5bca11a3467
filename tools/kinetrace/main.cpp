// The kinetrace command: `kinetrace run -- PROGRAM` traces an unmodified CUDA program;
// `kinetrace convert IN OUT` rewrites a trace in another format; `kinetrace merge` puts one
// job's traces on one timeline.

#include <cstdio>
#include <string>
#include <vector>

#include "analyze_command.h"
#include "cli_options.h"
#include "convert_command.h"
#include "error_text.h"
#include "merge_command.h"
#include "kinetrace/error.h"
#include "run_command.h"
#include "trigger_command.h"

int main(int argc, char** argv) {
  using namespace kinetrace::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    Command command = parseCommandLine(args);
    switch (command.kind) {
      case Command::Kind::Help:
        std::fputs(helpFor(command.helpTopic).c_str(), stdout);
        return 0;
      case Command::Kind::Version:
        std::printf("kinetrace %s\n", KINETRACE_VERSION_STRING);
        return 0;
      case Command::Kind::Run:
        return runCommand(command.run);
      case Command::Kind::Summary:
        return summaryCommand(command.summary);
      case Command::Kind::Convert:
        return convertCommand(command.convert, stderr);
      case Command::Kind::Merge:
        return mergeCommand(command.merge, stdout, stderr);
      case Command::Kind::Analyze:
        return analyzeCommand(command.analyze, stdout, stderr);
      case Command::Kind::Trigger:
        return triggerCommand(command.trigger, stdout);
    }
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return error.exitCode();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kinetrace: %s\n", withoutKinetracePrefix(error.what()).c_str());
    return 1;
  }
  return 0;
}
