// kinetrace's libkineto-compatible API: the profiler PyTorch drives.
//
// PyTorch calls these through the vtable: the order of the virtual functions is ABI.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "ActivityTraceInterface.h"
#include "ActivityType.h"
#include "IActivityProfiler.h"

namespace libkineto {

struct CpuTraceBuffer;

class ActivityProfilerInterface {
 public:
  virtual ~ActivityProfilerInterface() = default;

  virtual void init() {}
  virtual bool isInitialized() { return false; }
  virtual bool isActive() { return false; }

  // A trace started and stopped by the profiler itself, from a configuration text.
  virtual void scheduleTrace(const std::string& /*configStr*/) {}

  // prepareTrace -> startTrace -> stopTrace, in that order. prepareTrace sets up what
  // recording needs ahead of time so that starting is cheap.
  virtual void prepareTrace(const std::set<ActivityType>& /*activityTypes*/,
                            const std::string& /*configStr*/ = "") {}
  // Pauses (false) and resumes (true) GPU collection within a running trace.
  virtual void toggleCollectionDynamic(const bool /*enable*/) {}
  virtual void startTrace() {}
  // Stops and returns the trace (the calling thread does the processing).
  virtual std::unique_ptr<ActivityTraceInterface> stopTrace() { return nullptr; }

  // One iteration of the program's loop ended.
  virtual void step() {}

  // The framework's op now running on the calling thread: GPU work launched until the pop
  // is linked to it.
  virtual void pushCorrelationId(uint64_t /*id*/) {}
  virtual void popCorrelationId() {}
  // The framework's host activities of the trace being stopped.
  virtual void transferCpuTrace(std::unique_ptr<CpuTraceBuffer> /*traceBuffer*/) {}

  // The same for user-annotated ranges.
  virtual void pushUserCorrelationId(uint64_t /*unused*/) {}
  virtual void popUserCorrelationId() {}

  // Notes the calling thread (id and name) for the trace.
  virtual void recordThreadInfo() {}

  // Top-level trace metadata; `value` is JSON text. A later value of a key replaces it.
  virtual void addMetadata(const std::string& key, const std::string& value) = 0;

  virtual void addChildActivityProfiler(std::unique_ptr<IActivityProfiler> /*profiler*/) {}

  // Records that the profiler itself misbehaved.
  virtual void logInvariantViolation(const std::string& /*unused*/, const std::string& /*unused*/,
                                     const std::string& /*unused*/,
                                     const std::string& /*unused*/ = "") {}
};

}  // namespace libkineto
