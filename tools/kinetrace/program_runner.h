#pragma once

#include <string>
#include <vector>

namespace kinetrace::cli {

// Runs the program at `path` with `argv` (argv[0] included), waits for it to end, and
// returns its wait status. Throws UsageError (126, or 127 for ENOENT) when it cannot be
// started.
//
// Signals. The program stays in kinetrace's process group, so the terminal's Ctrl-C and
// Ctrl-\ reach it directly: kinetrace does nothing with its own copy and lives to report.
// What is sent to kinetrace alone is meant for the program, which kinetrace stands for:
// SIGTERM and SIGHUP (a job scheduler, `timeout`, a closed ssh session), and SIGINT and
// SIGQUIT sent by a process (`kill -INT <kinetrace's pid>`) rather than by the terminal,
// are passed on to the program, and kinetrace goes on waiting for it to end. A signal sent
// to the whole process group by a process, not the terminal, reaches the program twice.
int runProgram(const std::string& path, const std::vector<std::string>& argv);

// "15 (Terminated)"
std::string signalName(int signal);

}  // namespace kinetrace::cli
