#pragma once

// The process-level plumbing of the CUDA injection: termination signals, fork and exit.
//
// Signals: for SIGINT and SIGTERM whose action is still the default when tracing begins,
// a handler is installed that writes the signal's number to the controller's wake-up pipe
// (write() is async-signal-safe; nothing else happens in the handler). The controller's
// thread saves the trace, then restores the default action and raises the signal again,
// so the process ends the way the signal meant it to. A handler the program installed
// itself (Python's SIGINT -> KeyboardInterrupt) is never replaced: such programs exit
// normally and the trace is saved at exit. A second signal while the trace is being saved
// ends the process at once, without the trace (a temporary file is left, never a partial
// trace under the trace's name).

namespace kinetrace::inject {

// Installs the handler on SIGINT and SIGTERM where their action is the default. `wakeFd`
// must be non-blocking.
void installTerminationHandlers(int wakeFd) noexcept;

// In a forked child: puts the default action back where the handler is still installed,
// since the child has no thread to hand the signal to. Async-signal-safe.
void restoreTerminationHandlersInChild() noexcept;

// Restores the signal's default action and sends it to this process again; if the
// process is somehow still alive after a while, exits with 128 + signal.
[[noreturn]] void reraiseWithDefaultAction(int signal) noexcept;

}  // namespace kinetrace::inject
