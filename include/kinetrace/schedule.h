#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "kinetrace/export.h"
#include "kinetrace/profiler.h"
#include "kinetrace/trace.h"

namespace kinetrace {

// Schedule, which steps to record: kinetrace/config.h (Config::schedule takes one too).

// Drives a Profiler through a Schedule, one cycle's trace at a time:
//
//   kinetrace::Profiler profiler;
//   kinetrace::StepScheduler scheduler(profiler, {.wait = 1, .warmup = 1, .active = 3,
//                                                 .repeat = 2}, "traces/step.json");  // C++20
//   for (...) {
//     train_step();
//     kinetrace::step();   // the end of a step: traces/step-cycle1.json, -cycle2.json
//   }
//
// Each active step is a range "ProfilerStep#N" (N counts every step from 0), so the trace
// shows the steps as PyTorch's do. A cycle's trace is written while it records (memory stays
// within the configured cap) and completed at the cycle's last step; `onCycle`, when given,
// then receives it. The output is a path: "{cycle}" in it is replaced by the cycle's number
// (from 1), else "-cycleN" goes before the extension.
//
// One scheduler receives kinetrace::step() at a time in a process: constructing a second
// while one lives throws kinetrace::Error. Its destructor ends a cycle still recording.
// step() is to be called on the thread that runs the loop (its ProfilerStep ranges are that
// thread's), and the scheduler destroyed there or after the loop's last step.
class KINETRACE_API StepScheduler {
 public:
  using CycleCallback = std::function<void(const Trace& trace, int64_t cycle)>;

  StepScheduler(Profiler& profiler, Schedule schedule, std::string output,
                CycleCallback onCycle = {});
  ~StepScheduler();
  StepScheduler(const StepScheduler&) = delete;
  StepScheduler& operator=(const StepScheduler&) = delete;

  // The end of the current step (what kinetrace::step() calls).
  void step();

  // Steps marked so far.
  int64_t steps() const;
  // Cycles whose trace was completed.
  int64_t cyclesDone() const;
  // The path a cycle's trace goes to.
  std::string pathOfCycle(int64_t cycle) const;

 private:
  enum class Phase { Idle, Warmup, Active };
  void enter(int64_t stepIndex);
  void endCycle();
  Phase phaseOf(int64_t stepIndex, int64_t* cycle) const;

  Profiler& profiler_;
  const Schedule schedule_;
  const std::string output_;
  const CycleCallback onCycle_;
  mutable std::mutex mutex_;
  int64_t steps_ = 0;
  int64_t cyclesDone_ = 0;
  int64_t recordingCycle_ = 0;  // the cycle being recorded; 0: none
  bool stepRangeOpen_ = false;
};

// Marks the end of a step for the process's StepScheduler, and, when the process runs
// under `kinetrace run`, for its schedule (--schedule) and `kinetrace trigger --steps`:
// there, each call starts the next step (mark steps either this way or with NVTX step
// ranges, not both). Nothing when neither is there.
KINETRACE_API void step();

}  // namespace kinetrace
