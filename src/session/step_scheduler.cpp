#include <atomic>
#include <string>
#include <utility>

#include "kinetrace/error.h"
#include "kinetrace/host.h"
#include "kinetrace/schedule.h"
#include "support/log.h"

namespace kinetrace {
namespace {

// The process's scheduler, for kinetrace::step(): read without a lock on every step.
std::atomic<StepScheduler*> gScheduler{nullptr};

void checkSchedule(const Schedule& s) {
  if (s.skipFirst < 0 || s.wait < 0 || s.warmup < 0 || s.repeat < 0) {
    throw Error("schedule: skipFirst, wait, warmup and repeat must not be negative");
  }
  if (s.active < 1) throw Error("schedule: active must be at least 1 step");
}

}  // namespace

StepScheduler::StepScheduler(Profiler& profiler, Schedule schedule, std::string output,
                             CycleCallback onCycle)
    : profiler_(profiler),
      schedule_(schedule),
      output_(std::move(output)),
      onCycle_(std::move(onCycle)) {
  checkSchedule(schedule_);
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
  if (stepIndex < schedule_.skipFirst) return Phase::Idle;
  const int64_t period = schedule_.wait + schedule_.warmup + schedule_.active;
  const int64_t sinceStart = stepIndex - schedule_.skipFirst;
  const int64_t cycleIndex = sinceStart / period;
  if (schedule_.repeat != 0 && cycleIndex >= schedule_.repeat) return Phase::Idle;
  *cycle = cycleIndex + 1;
  const int64_t inCycle = sinceStart % period;
  if (inCycle < schedule_.wait) return Phase::Idle;
  if (inCycle < schedule_.wait + schedule_.warmup) return Phase::Warmup;
  return Phase::Active;
}

std::string StepScheduler::pathOfCycle(int64_t cycle) const {
  const std::string number = std::to_string(cycle);
  std::string path = output_;
  const std::size_t placeholder = path.find("{cycle}");
  if (placeholder != std::string::npos) return path.replace(placeholder, 7, number);
  // Before the extension (".json", ".json.gz", ".pftrace"), else at the end.
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos || dot == 0) return path + "-cycle" + number;
  return path.substr(0, dot) + "-cycle" + number + path.substr(dot);
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
}

}  // namespace kinetrace
