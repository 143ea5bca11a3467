#pragma once

#include <memory>
#include <string>

#include "kinetrace/config.h"
#include "kinetrace/trace.h"
#include "model/gpu_source.h"

namespace kinetrace::detail {

// One Profiler's state: its configuration, the GPU source it drives and where it is in
// its life (created -> prepared -> recording -> stopped -> recording ...). The only place
// that wires the host recorder and the GPU source to the correlator.
class Session {
 public:
  explicit Session(Config config);
  ~Session();

  void prepare();
  void start();
  Trace stop();

  bool recording() const { return recording_; }
  const std::string& gpuStatus() const { return gpuStatus_; }
  const Config& config() const { return config_; }

  // Replaces the GPU source (tests drive the session with a fake one). Before prepare().
  void setGpuSourceForTesting(std::unique_ptr<GpuSource> source);

 private:
  void enableGpu();
  void addSessionMetadata(TraceData& trace, int64_t clockDriftNs) const;
  void reportLosses(const TraceData& trace) const;
  std::string outputPathFor(const TraceData& trace) const;

  Config config_;
  std::unique_ptr<GpuSource> gpu_;
  bool gpuTried_ = false;
  bool gpuEnabled_ = false;
  std::string gpuStatus_ = "GPU activity not requested";
  bool recording_ = false;
  int64_t startNs_ = 0;
};

}  // namespace kinetrace::detail
