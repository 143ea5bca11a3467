#pragma once

#include <memory>
#include <string>

#include "kinetrace/config.h"
#include "kinetrace/export.h"
#include "kinetrace/trace.h"
#include "kinetrace/value.h"

namespace kinetrace {

namespace detail {
class Session;
}

// Records one trace at a time. A process has one recorder: one Profiler records at a time
// (a second start() throws); each may start and stop any number of times.
//
//   kinetrace::Profiler profiler(kinetrace::Config::fromEnvironment());
//   profiler.start();
//   ...                                   // host ranges from any thread, CUDA work
//   kinetrace::Trace trace = profiler.stop();
//   trace.save("trace.json");
//
// With Config::output set, the trace is written there while it is recorded (memory stays
// within Config::memoryMb however long the window) and stop() completes the file.
//
// Threads: every member may be called from any thread; calls are serialised (a start()
// racing a stop() on another thread runs before or after it, never interleaved).
// GPU activities need the CUPTI backend; when it cannot run (no GPU, no driver, CUPTI
// missing or held by another profiler) start() logs one message saying why, and the
// session records host activity only. gpuStatus() says the same in words.
class KINETRACE_API Profiler {
 public:
  // Construction reads nothing but `config`; it never starts CUDA. The default argument
  // reads the KINETRACE_* environment variables (Config::fromEnvironment), which throws
  // kinetrace::Error for a bad value.
  explicit Profiler(Config config = Config::fromEnvironment());
  // Stops a recording still running (its trace is completed if it had an output).
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Optional: subscribes to CUPTI ahead of start() so the first launches after start() are
  // not slowed by CUPTI's own set-up. Work before start() is not reported. May initialise
  // the CUDA driver.
  void prepare();
  // Begins recording. Throws kinetrace::Error when this or another Profiler is recording,
  // or when Config::output cannot be opened for writing (nothing is recorded then).
  void start();
  // Begins recording to `output` (a path, a directory or a URL, as Config::output) instead
  // of Config::output, for this recording only.
  void start(const std::string& output);
  // Ends recording and returns the trace. Blocks until GPU work launched before the call
  // has finished (every CUDA context the program used is synchronised) and every record is
  // assembled; with an output, until the file is complete. Never throws for a failed
  // write: the trace then keeps what could not be written and saveError() says why.
  // Throws kinetrace::Error only when not recording.
  Trace stop();

  // Top-level metadata for the trace being recorded (or the next one): written with it,
  // also when it is written while recording. Replaces an earlier value of the key. Counts
  // against the memory cap: past an eighth of it an entry is refused, counted in the next
  // trace (TraceStats::droppedMetadata) and warned about once.
  void addMetadata(const std::string& key, Value value);

  bool recording() const;
  // "CUPTI active (API 130001)", or why GPU activity is not recorded.
  std::string gpuStatus() const;
  const Config& config() const;

 private:
  friend class ProfilerAccess;  // the internal seam (src/session/seam.h) builds Profilers too
  explicit Profiler(std::unique_ptr<detail::Session> session);
  std::unique_ptr<detail::Session> session_;
};

}  // namespace kinetrace
