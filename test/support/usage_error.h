#pragma once

// The message a command line is refused with, for tests of the kinetrace command's options.

#include <string>
#include <vector>

#include "cli_options.h"

namespace kinetrace::testing {

// The UsageError's text, or "" when the command line parses.
inline std::string usageErrorOf(const std::vector<std::string>& args) {
  try {
    cli::parseCommandLine(args);
  } catch (const cli::UsageError& error) {
    return error.what();
  }
  return "";
}

}  // namespace kinetrace::testing
