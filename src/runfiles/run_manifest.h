#pragma once

#include <cstdint>
#include <string>
#include <vector>

// The run manifest: what each traced process of one `kinetrace run` did with its recording,
// so the command reports what happened (a trace saved, a save that failed and why, a window
// that recorded nothing, tracing that was off) rather than guessing from the files present.
//
//   <dir>/kinetrace-<run id>.manifest      one line per outcome, appended by every process
//
// The command creates the file before it starts the program; the injected processes append
// to it (from their control or exit path) while it exists; the command reads it after the
// program has exited, reports, and deletes it: it is the run's scratch. Processes that
// outlive the program then append nothing (no one would read it), so nothing is left
// behind; nor is anything written for a program traced with KINETRACE_RUN_ID set by hand.
//
// A line is tab-separated: event, pid, window, path, message; in path and message a
// backslash, tab, newline or carriage return is written as \\, \t, \n, \r.

namespace kinetrace::runfiles {

enum class ManifestEvent {
  Saved,            // the window's trace and summary were written to `path`
  SaveFailed,       // the window's trace was to go to `path` and could not: `message`
  NothingRecorded,  // the window recorded no activity, so no trace was written
  TracingOff,       // the process is not traced: `message` says why
};

struct ManifestEntry {
  ManifestEvent event = ManifestEvent::Saved;
  int64_t pid = 0;
  int window = 0;       // recording window, 1 for the first; 0 when none had started
  std::string path;     // the trace's path, or ""
  std::string message;  // why, for SaveFailed and TracingOff; may be cut short (ends "...")
};

// <dir>/kinetrace-<runId>.manifest
std::string manifestPath(const std::string& dir, const std::string& runId);

// Creates the run's manifest, empty. Returns false when it could not be made.
bool createManifest(const std::string& dir, const std::string& runId) noexcept;

// Appends one line, to a manifest createManifest made, with a single write() on an O_APPEND
// descriptor: lines from processes appending at once never interleave, because a line is kept to
// PIPE_BUF bytes at most (the message is cut short first, then the path). Never throws; returns
// false when the line could not be written (no manifest, disk full) or dir or runId is unusable.
bool appendManifest(const std::string& dir, const std::string& runId,
                    const ManifestEntry& entry) noexcept;

// Every well-formed line, in file order. A torn line (a writer killed mid-write), a line of
// an unknown event or any other malformed line is skipped. No file: no entries.
std::vector<ManifestEntry> readManifest(const std::string& dir, const std::string& runId);

}  // namespace kinetrace::runfiles
