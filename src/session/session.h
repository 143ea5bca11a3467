#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "kinetrace/config.h"
#include "kinetrace/profiler.h"
#include "kinetrace/trace.h"
#include "kinetrace/value.h"
#include "model/gpu_source.h"
#include "support/path_rule.h"

namespace kinetrace::detail {

class Pipeline;

// What a front-end built on the core may ask of a session beyond the public Config (the
// internal seam, src/session/seam.h, passes it through).
struct SessionOptions {
  // Sessions of the CUDA injection start inside the driver's own initialisation and must
  // not call into the driver to start it.
  bool insideDriverInit = false;
  // Called from the program's cudaProfilerStart() (start) / cudaProfilerStop() (!start),
  // inside a CUPTI callback (GpuOptions::profilerControl says what it may do). When set,
  // prepare() arms CUPTI without collecting until start().
  void (*profilerControl)(bool start) = nullptr;
  // The name of the host process in traces ("python3 train.py"); "" for "host".
  std::string processName;
  // Replaces the GPU backend (tests). Empty: CUPTI, or host only where it cannot run.
  std::function<std::unique_ptr<GpuSource>()> gpuSourceFactory;
  // Called by stop() once the window's end is fixed and before recording ends (tests: what
  // another thread records from then on lies outside the window).
  std::function<void()> onStopping;
};

// A Profiler on a session with these options (the seam and tests build them this way).
std::unique_ptr<Profiler> makeProfiler(Config config, SessionOptions options);

// One Profiler's state: its configuration, the GPU source it drives and where it is in
// its life (created -> prepared -> recording -> stopped -> recording ...). The only place
// that wires the host recorder and the GPU source to the assembler and the output, through
// one Pipeline per recording.
//
// Every member takes the session's lock, so calls from several threads are serialised.
class Session {
 public:
  Session(Config config, SessionOptions options = {});
  ~Session();

  void prepare();
  // Records to `output` ("": in memory), a path, a directory or a URL, written under `rule`
  // (support/path_rule.h).
  void start(const std::string& output, const PathRule& rule = {});
  Trace stop();
  void addMetadata(std::string key, Value value);

  // False in a child made by fork(): the recording stayed in the parent.
  bool recording() const;
  std::string gpuStatus() const;
  const Config& config() const { return config_; }

 private:
  void enableGpu();
  void requireOwnProcess(const char* call) const;
  std::string outputPathFor(const std::string& output, int64_t startNs) const;
  void reportLosses(const Trace& trace) const;

  const Config config_;
  const SessionOptions options_;
  const int64_t pid_;

  mutable std::mutex mutex_;
  std::unique_ptr<GpuSource> gpu_;
  bool gpuTried_ = false;
  bool gpuEnabled_ = false;
  std::string gpuStatus_ = "GPU activity not requested";
  std::atomic<bool> recording_{false};
  Metadata headerUser_;  // addMetadata() while not recording: this and later traces
  // addMetadata() while recording: this trace, then later ones, after their events
  Metadata footerUser_;
  // User metadata counts against the cap: the session holds at most an eighth of it (the
  // trace's copy as much again), taken from the budget while recording.
  std::size_t metadataBytes_ = 0;      // headerUser_ and footerUser_
  std::size_t metadataAccounted_ = 0;  // in the budget now, while recording
  uint64_t metadataRefused_ = 0;       // since the last trace
  bool metadataWarned_ = false;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace kinetrace::detail
