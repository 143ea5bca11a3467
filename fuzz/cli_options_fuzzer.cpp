// The kinetrace command's option parser (tools/kinetrace/cli_options.h). The input is the
// argument list, arguments separated by NUL bytes as in /proc/PID/cmdline. Corpus:
// fuzz/corpus/cli_options; dictionary: fuzz/cli_options.dict.
//
// Besides not crashing: a mistake is a UsageError, the one exception the parser may throw.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli_options.h"
#include "fuzz_support.h"

namespace {

using namespace kinetrace;

// The arguments are at most 4 KB (-max_len); the parsed options hold a copy or two.
constexpr std::size_t kHeapLimitBytes = std::size_t{4} << 20;

std::vector<std::string> argumentsOf(const uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  if (size == 0) return args;
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '\0') {
      args.push_back(std::move(current));
      current.clear();
    } else {
      current += static_cast<char>(data[i]);
    }
  }
  args.push_back(std::move(current));
  return args;
}

// The one call into the parser.
cli::Command parse(const std::vector<std::string>& args) {
  return cli::parseCommandLine(args);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::HeapLimit limit(kHeapLimitBytes, "parsing a command line");
  const std::vector<std::string> args = argumentsOf(data, size);
  if (!args.empty()) (void)cli::optionNamesOf(args[0]);
  try {
    const cli::Command command = parse(args);
    if (command.kind == cli::Command::Kind::Help) (void)cli::helpFor(command.helpTopic);
  } catch (const cli::UsageError&) {
    // A mistake, said: what the parser promises.
  }
  return 0;
}
