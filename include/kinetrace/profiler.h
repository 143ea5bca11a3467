#pragma once

#include <memory>
#include <string>

#include "kinetrace/config.h"
#include "kinetrace/export.h"
#include "kinetrace/trace.h"

namespace kinetrace {

namespace detail {
class Session;
}

// Records one trace at a time. One Profiler may record in a process at once; it may start
// and stop any number of times.
//
//   kinetrace::Profiler profiler(kinetrace::Config::fromEnvironment());
//   profiler.start();
//   ...                                   // host ranges from any thread, CUDA work
//   kinetrace::Trace trace = profiler.stop();
//   trace.save("trace.json");
//
// GPU activities need the CUPTI backend; when it cannot run (no GPU, no driver, CUPTI
// missing or held by another profiler) start() logs one message saying why, and the
// session records host activity only. gpuStatus() says the same in words.
class KINETRACE_API Profiler {
 public:
  explicit Profiler(Config config = Config::fromEnvironment());
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Optional: enables GPU collection ahead of start() so the first launches after start()
  // are not slowed by CUPTI's own set-up. Work before start() is not reported.
  void prepare();
  // Begins recording. Throws kinetrace::Error when this or another Profiler is recording.
  void start();
  // Ends recording: GPU work still running is waited for and collected. When
  // Config::output is set, the trace is also saved there.
  Trace stop();

  bool recording() const;
  // "CUPTI active (API 130001)", or why GPU activity is not recorded.
  std::string gpuStatus() const;
  const Config& config() const;

 private:
  std::unique_ptr<detail::Session> session_;
};

}  // namespace kinetrace
