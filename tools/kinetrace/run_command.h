#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "cli_options.h"

namespace kinetrace::cli {

// Where the command looks for the injection library, in order: --injection-library, then
// next to the command (../lib/libkinetrace_injection.so, the install and build layout),
// then where the build put it.
std::vector<std::string> injectionLibraryCandidates(const RunOptions& options);
// Where `kinetrace run --torch` looks for libkineto_api.so, in order.
std::vector<std::string> kinetoApiLibraryCandidates();

// Makes `dir` (mkdir -p) and proves it writable by creating and removing a file in it.
// Returns the absolute path; throws UsageError naming the directory and the reason.
std::string prepareOutputDirectory(const std::string& dir);

// The program's path: as given when it contains '/', else searched in PATH. Throws
// UsageError with exit code 127 (not found) or 126 (not executable).
std::string resolveProgram(const std::string& program);

// `kinetrace run`: sets up the environment, runs the program, waits for it, prints where
// the traces went and their summaries on `err` (the program keeps the process's stdout).
// Only program_runner's notice of a signal passed on to the program goes to stderr itself.
// Returns the exit status to use.
int runCommand(const RunOptions& options, std::FILE* out, std::FILE* err);

}  // namespace kinetrace::cli
