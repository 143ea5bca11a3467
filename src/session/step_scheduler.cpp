#include <atomic>
#include <string>
#include <utility>

#include "kinetrace/error.h"
#include "kinetrace/host.h"
#include "kinetrace/schedule.h"
#include "session/schedule_phase.h"
#include "session/seam.h"
#include "support/log.h"

namespace kinetrace {
namespace {

// The process's scheduler, for kinetrace::step(): read without a lock on every step.
std::atomic<StepScheduler*> gScheduler{nullptr};
// A front-end that counts steps (internal::setStepListener).
std::atomic<internal::StepListener> gStepListener{nullptr};

}  // namespace

StepScheduler::StepScheduler(Profiler& profiler, Schedule schedule, std::string output,
                             CycleCallback onCycle)
    : profiler_(profiler),
      schedule_(schedule),
      output_(std::move(output)),
      onCycle_(std::move(onCycle)) {
  detail::checkSchedule(schedule_);
  if (output_.empty()) throw Error("StepScheduler needs an output path for its traces");
  StepScheduler* none = nullptr;
  if (!gScheduler.compare_exchange_strong(none, this)) {
    throw Error("a StepScheduler already receives this process's steps; one at a time");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  enter(0);
}

StepScheduler::~StepScheduler() {
  StepScheduler* self = this;
  gScheduler.compare_exchange_strong(self, nullptr);
  std::lock_guard<std::mutex> lock(mutex_);
  if (stepRangeOpen_) {
    endRange();
    stepRangeOpen_ = false;
  }
  if (recordingCycle_ != 0) endCycle();
}

StepScheduler::Phase StepScheduler::phaseOf(int64_t stepIndex, int64_t* cycle) const {
  switch (detail::schedulePhase(schedule_, stepIndex, cycle)) {
    case detail::SchedulePhase::Warmup:
      return Phase::Warmup;
    case detail::SchedulePhase::Active:
      return Phase::Active;
    case detail::SchedulePhase::Idle:
      break;
  }
  return Phase::Idle;
}

std::string StepScheduler::pathOfCycle(int64_t cycle) const {
  return detail::pathOfCycle(output_, cycle);
}

// Called with the lock held, at the start of step `stepIndex`.
void StepScheduler::enter(int64_t stepIndex) {
  int64_t cycle = 0;
  const Phase phase = phaseOf(stepIndex, &cycle);
  if (phase == Phase::Warmup && !profiler_.recording()) {
    try {
      profiler_.prepare();
    } catch (const Error& e) {
      detail::log(LogLevel::Warning, "schedule: warm-up could not set up GPU recording: {}",
                  e.what());
    }
  }
  if (phase == Phase::Active && recordingCycle_ == 0) {
    try {
      profiler_.start(pathOfCycle(cycle));
      recordingCycle_ = cycle;
    } catch (const Error& e) {
      detail::log(LogLevel::Warning, "schedule: cycle {} is not recorded: {}", cycle, e.what());
    }
  }
  if (phase == Phase::Active && recordingCycle_ != 0) {
    beginRange("ProfilerStep#" + std::to_string(stepIndex));
    stepRangeOpen_ = true;
  }
}

void StepScheduler::endCycle() {
  const int64_t cycle = recordingCycle_;
  recordingCycle_ = 0;
  Trace trace;
  try {
    trace = profiler_.stop();
  } catch (const Error& e) {
    detail::log(LogLevel::Warning, "schedule: cycle {} could not be stopped: {}", cycle, e.what());
    return;
  }
  ++cyclesDone_;
  if (!trace.saveError().empty()) {
    detail::log(LogLevel::Warning, "schedule: cycle {}'s trace could not be written to {}: {}",
                cycle, pathOfCycle(cycle), trace.saveError());
  }
  if (onCycle_) onCycle_(trace, cycle);
}

void StepScheduler::step() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stepRangeOpen_) {
    endRange();
    stepRangeOpen_ = false;
  }
  const int64_t finished = steps_++;
  int64_t cycle = 0;
  const bool wasActive = phaseOf(finished, &cycle) == Phase::Active;
  int64_t nextCycle = 0;
  const bool nextActive = phaseOf(steps_, &nextCycle) == Phase::Active;
  // The cycle ends with its last active step.
  if (wasActive && recordingCycle_ != 0 && (!nextActive || nextCycle != recordingCycle_)) {
    endCycle();
  }
  enter(steps_);
}

int64_t StepScheduler::steps() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return steps_;
}

int64_t StepScheduler::cyclesDone() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cyclesDone_;
}

void step() {
  StepScheduler* scheduler = gScheduler.load(std::memory_order_acquire);
  if (scheduler != nullptr) scheduler->step();
  // kinetrace::step() ends a step; a step mark starts the next one: the same moment.
  if (internal::StepListener listener = gStepListener.load(std::memory_order_acquire)) {
    listener();
  }
}

namespace internal {

void setStepListener(StepListener listener) noexcept {
  gStepListener.store(listener, std::memory_order_release);
}

}  // namespace internal

}  // namespace kinetrace
