#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kinetrace/config.h"
#include "kinetrace/schedule.h"
#include "ondemand/trigger_window.h"

// When the injected process records, one policy per capture mode: the whole run, a delay and
// a duration, the program's own cudaProfilerStart/Stop calls, a step schedule, or on demand
// (nothing until `kinetrace trigger` asks). A policy only decides: it is told what happened
// (CUDA started, a timer fell due, the program called the profiler API, a step began) and
// answers what to do; the controller (controller.h) records, saves and reports. So each
// policy is tested alone, with the times and steps the test gives it.
//
// While a policy waits (before its window, between its windows) the process is in its hands:
// a trigger is refused with the policy's reason. Once it lets go (`released`), triggers record.

namespace kinetrace::inject {

// What a policy asks of the controller, in this order: stop the window it is recording, set
// GPU collection up without recording, start a window.
struct CaptureStep {
  bool stop = false;
  bool prepare = false;
  bool start = false;
  const char* why = "";  // why the window starts (logged)
  // With start: when the window ends (CLOCK_BOOTTIME ns); 0: not by time.
  int64_t stopAtNs = 0;
  // With start: the window's first step and the schedule's cycle; -1 and 0: not by steps.
  int64_t firstStep = -1;
  int64_t cycle = 0;
  // The mode is over (after the above): from now on only triggers record.
  bool released = false;
};

class CapturePolicy {
 public:
  virtual ~CapturePolicy() = default;
  // The mode, as the trace's kinetrace_capture metadata names it.
  virtual const char* name() const = 0;
  // The state `kinetrace trigger`'s status reports while the policy waits.
  virtual const char* waitingState() const = 0;
  // Why a trigger is refused while the policy waits.
  virtual std::string refusal() const = 0;
  // Whether the program's cudaProfilerStart/Stop calls must reach the controller.
  virtual bool usesProfilerApi() const { return false; }
  // Whether every step mark must reach the policy (while it has not let go).
  virtual bool followsSteps() const { return false; }

  // CUDA was initialised at `nowNs` (CLOCK_BOOTTIME).
  virtual CaptureStep begin(int64_t nowNs) = 0;
  // The next time onTimer must be called while the policy waits; 0: none.
  virtual int64_t nextTimerNs() const { return 0; }
  virtual CaptureStep onTimer(int64_t /*nowNs*/) { return {}; }
  // The program called cudaProfilerStart (start) or cudaProfilerStop (!start) at `nowNs`;
  // `recording`: whether the window the policy started is being recorded.
  virtual CaptureStep onProfilerApi(bool /*start*/, bool /*recording*/, int64_t /*nowNs*/) {
    return {};
  }
  // Step `step` begins; `recording` as above.
  virtual CaptureStep onStep(int64_t /*step*/, bool /*recording*/) { return {}; }
  // The window the policy asked for could not start. Returns whether the policy still waits
  // (a later window may start); false: tracing is off.
  virtual bool startFailed() { return false; }
};

// The policy for a configuration (Config::schedule, captureRange, delayNs, durationNs).
// `processStartNs`: when the process started (CLOCK_BOOTTIME; the delay counts from there),
// 0 for "when CUDA started". Throws kinetrace::Error for a bad schedule.
std::unique_ptr<CapturePolicy> makeCapturePolicy(const Config& config, int64_t processStartNs);

// The policies, for tests.
std::unique_ptr<CapturePolicy> wholeRunPolicy();
std::unique_ptr<CapturePolicy> delayDurationPolicy(int64_t delayNs, int64_t durationNs,
                                                   int64_t processStartNs);
std::unique_ptr<CapturePolicy> profilerApiPolicy(int64_t durationNs);
std::unique_ptr<CapturePolicy> schedulePolicy(const Schedule& schedule);
std::unique_ptr<CapturePolicy> onDemandPolicy();

using ondemand::saturatingAdd;

}  // namespace kinetrace::inject
