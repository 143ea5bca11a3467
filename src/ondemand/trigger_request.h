#pragma once

#include <cstdint>
#include <string>

#include "support/path_rule.h"

// A request to record one window on demand, whoever sent it: `kinetrace trigger` over the
// process's socket (runfiles/trigger_channel.h) or the dynolog daemon's libkineto config
// (ondemand/kineto_config.h). Both become this, are judged by one rule
// (ondemand/trigger_decision.h) and timed by one window (ondemand/trigger_window.h), so a
// process answers them alike and writes the same trace for the same ask.

namespace kinetrace::ondemand {

// What PyTorch's profiler records beside the GPU: libkineto hands these to the framework's
// registered client (ClientInterface::prepare). Only libkineto_api can honour them.
struct FrameworkOptions {
  bool inputShapes = false;
  bool profileMemory = false;
  bool withStack = false;
  bool withFlops = false;
  bool withModules = false;
};

struct TriggerRequest {
  enum class Verb { Record, Status };
  Verb verb = Verb::Record;
  // Record: exactly one of the two.
  int64_t durationNs = 0;
  int64_t steps = 0;
  std::string output;  // a trace path or a directory; "" = the run's output directory
  // Where the trace and its summary may be written, checked on the resolved path when the
  // request is taken and again when each file is written: a dynolog request is confined to
  // /tmp and $KINETO_ONDEMAND_TRACE_DIR; a trigger from the process's owner may go wherever
  // that user may write. Not part of the request's text.
  detail::PathRule outputRule;
  int64_t startAtNs = 0;   // CLOCK_REALTIME, with a duration; 0 = now
  int64_t startStep = -1;  // with steps: the first step recorded; -1 = the next one
  // With steps: the first step is also a multiple of this, so the processes of a job that
  // receive the request a few steps apart still start at the same step.
  int64_t roundUpSteps = 1;

  // Who asked ("kinetrace trigger", "dynolog") and the id it gave the request, for the
  // trace's metadata.
  std::string origin = "kinetrace trigger";
  std::string requestTraceId;
  FrameworkOptions framework;
};

}  // namespace kinetrace::ondemand
