#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ActivityTraceInterface.h"
#include "GenericTraceActivity.h"
#include "kinetrace/trace.h"
#include "libkineto.h"
#include "support/path_rule.h"

namespace kinetrace::kineto {

// Top-level metadata a framework adds (key, JSON text), shared by a stopped trace and the
// profiler: metadata added after stopTrace() still reaches the trace, which libkineto
// drops.
class SharedMetadata {
 public:
  void add(const std::string& key, const std::string& json);
  std::vector<std::pair<std::string, std::string>> entries() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, std::string>> entries_;
};

// What a stopped recording hands to the trace.
struct StoppedRecording {
  Trace trace;                // kinetrace's own: GPU work, launch calls, losses, clock bound
  bool recorded = false;      // false: nothing was recorded (start failed or never ran)
  int64_t clockOffsetNs = 0;  // add to kinetrace's times to get the framework's
  std::vector<std::unique_ptr<libkineto::CpuTraceBuffer>> cpuTraces;
  std::shared_ptr<SharedMetadata> metadata;
  std::vector<std::pair<int32_t, std::string>> threadNames;  // recordThreadInfo()
};

// A stopped trace, as PyTorch reads it. activities() holds the framework's own host
// activities (the same objects it handed over, which it may change until save()), then one
// activity per GPU operation and launch call, linked to the framework's op whose
// correlation id was pushed when it was launched, with launch-to-GPU flows paired (a flow
// is set only where both ends exist), then the GPU span of each user annotation
// (record_function, ProfilerStep#N) per stream, from the first to the last GPU operation
// launched inside it, as libkineto's GPU_USER_ANNOTATION activities (unlinked, as libkineto's;
// their "External id" names the annotation). save() writes kinetrace's
// trace with the framework's activities in it, through kinetrace's sinks.
class ActivityTrace final : public libkineto::ActivityTraceInterface {
 public:
  explicit ActivityTrace(StoppedRecording recording);

  const std::vector<const libkineto::ITraceActivity*>* activities() override { return &all_; }
  // Throws kinetrace::Error naming the path when it cannot be written.
  void save(const std::string& path) override { saveUnder(path, {}); }
  // save() under a path rule (support/path_rule.h): an on-demand trace's confinement.
  void saveUnder(const std::string& path, const detail::PathRule& rule);

 private:
  void addGpuActivities();

  StoppedRecording recording_;
  libkineto::TraceSpan span_;
  std::deque<libkineto::GenericTraceActivity> gpu_;  // stable addresses
  // The GPU spans of the framework's user annotations (GPU_USER_ANNOTATION activities), also
  // written into the saved trace.
  std::vector<const libkineto::GenericTraceActivity*> gpuAnnotations_;
  std::vector<const libkineto::ITraceActivity*> all_;
};

}  // namespace kinetrace::kineto
