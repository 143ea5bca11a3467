#include "inject/capture_policy.h"

#include <cstdint>

#include "session/schedule_phase.h"

namespace kinetrace::inject {
namespace {

// The end of a window that started at `nowNs` and lasts `durationNs` (0: until the exit).
int64_t endOf(int64_t nowNs, int64_t durationNs) {
  return durationNs > 0 ? saturatingAdd(nowNs, durationNs) : 0;
}

CaptureStep startNow(const char* why, int64_t stopAtNs) {
  CaptureStep step;
  step.start = true;
  step.why = why;
  step.stopAtNs = stopAtNs;
  return step;
}

class WholeRun : public CapturePolicy {
 public:
  const char* name() const override { return "whole run"; }
  const char* waitingState() const override { return "recording"; }
  std::string refusal() const override { return "this process records its whole run"; }
  CaptureStep begin(int64_t) override { return startNow("CUDA initialised", 0); }
};

// Records from `delay` after the process started for `duration` (either may be 0), then lets
// go: the process records again only when triggered.
class DelayDuration : public CapturePolicy {
 public:
  DelayDuration(int64_t delayNs, int64_t durationNs, int64_t processStartNs)
      : delayNs_(delayNs), durationNs_(durationNs), processStartNs_(processStartNs) {}
  const char* name() const override { return "delay/duration"; }
  const char* waitingState() const override { return "waiting-for-delay"; }
  std::string refusal() const override {
    return "this process starts recording after its configured delay";
  }
  CaptureStep begin(int64_t nowNs) override {
    if (delayNs_ <= 0) return started("CUDA initialised", nowNs);
    startAtNs_ = saturatingAdd(processStartNs_ > 0 ? processStartNs_ : nowNs, delayNs_);
    if (startAtNs_ <= nowNs) return started("the delay had passed when CUDA started", nowNs);
    return {};
  }
  int64_t nextTimerNs() const override { return startAtNs_; }
  CaptureStep onTimer(int64_t nowNs) override {
    if (startAtNs_ == 0 || nowNs < startAtNs_) return {};
    return started("the delay passed", nowNs);
  }

 private:
  CaptureStep started(const char* why, int64_t nowNs) {
    startAtNs_ = 0;
    CaptureStep step = startNow(why, endOf(nowNs, durationNs_));
    step.released = true;  // its window is all it records
    return step;
  }

  int64_t delayNs_;
  int64_t durationNs_;
  int64_t processStartNs_;
  int64_t startAtNs_ = 0;
};

// Records between the program's own cudaProfilerStart() and cudaProfilerStop() calls, as
// often as it makes them. GPU collection is set up at once, so the first start records.
class ProfilerApi : public CapturePolicy {
 public:
  explicit ProfilerApi(int64_t durationNs) : durationNs_(durationNs) {}
  const char* name() const override { return "cudaProfilerApi"; }
  const char* waitingState() const override { return "waiting-for-cudaProfilerStart"; }
  std::string refusal() const override {
    return "this process records between its own cudaProfilerStart() and cudaProfilerStop() "
           "calls";
  }
  bool usesProfilerApi() const override { return true; }
  CaptureStep begin(int64_t) override {
    CaptureStep step;
    step.prepare = true;
    return step;
  }
  CaptureStep onProfilerApi(bool start, bool recording, int64_t nowNs) override {
    CaptureStep step;
    if (start && !recording) {
      // A configured duration still ends the window (then only triggers record).
      step = startNow("cudaProfilerStart()", endOf(nowNs, durationNs_));
    } else if (!start && recording) {
      step.stop = true;
    }
    return step;
  }

 private:
  int64_t durationNs_;
};

// At each step mark, as StepScheduler does at kinetrace::step(): a cycle's window holds
// exactly its active steps; warm-up sets GPU collection up without recording. After the last
// cycle it lets go.
class ScheduleSteps : public CapturePolicy {
 public:
  explicit ScheduleSteps(const Schedule& schedule) : schedule_(schedule) {}
  const char* name() const override { return "step schedule"; }
  const char* waitingState() const override { return "following-schedule"; }
  std::string refusal() const override {
    return "this process records by its step schedule (" + detail::formatSchedule(schedule_) +
           "); it can be triggered once the schedule's last cycle has ended";
  }
  bool followsSteps() const override { return true; }
  CaptureStep begin(int64_t) override { return {}; }  // the first step mark counts from 0
  CaptureStep onStep(int64_t stepNumber, bool recording) override {
    CaptureStep step;
    int64_t cycle = 0;
    const detail::SchedulePhase phase = detail::schedulePhase(schedule_, stepNumber, &cycle);
    if (recording && (phase != detail::SchedulePhase::Active || cycle != recordingCycle_)) {
      step.stop = true;
      recording = false;
      recordingCycle_ = 0;
    }
    if (phase == detail::SchedulePhase::Warmup && !recording) step.prepare = true;
    if (phase == detail::SchedulePhase::Active && !recording) {
      step.start = true;
      step.why = "step schedule";
      step.firstStep = stepNumber;
      step.cycle = cycle;
      recordingCycle_ = cycle;
      recording = true;
    }
    const int64_t period = schedule_.wait + schedule_.warmup + schedule_.active;
    const bool over = schedule_.repeat != 0 &&
                      stepNumber + 1 >= schedule_.skipFirst + schedule_.repeat * period;
    step.released = over && !recording;
    return step;
  }
  bool startFailed() override {
    recordingCycle_ = 0;  // this cycle is lost; the next may start
    return true;
  }

 private:
  Schedule schedule_;
  int64_t recordingCycle_ = 0;
};

// Nothing until a trigger: not even GPU collection, so the program runs at its own speed.
class OnDemand : public CapturePolicy {
 public:
  const char* name() const override { return "on demand"; }
  const char* waitingState() const override { return "idle"; }
  std::string refusal() const override { return ""; }
  CaptureStep begin(int64_t) override {
    CaptureStep step;
    step.released = true;
    return step;
  }
};

}  // namespace

std::unique_ptr<CapturePolicy> wholeRunPolicy() {
  return std::make_unique<WholeRun>();
}

std::unique_ptr<CapturePolicy> delayDurationPolicy(int64_t delayNs, int64_t durationNs,
                                                   int64_t processStartNs) {
  return std::make_unique<DelayDuration>(delayNs, durationNs, processStartNs);
}

std::unique_ptr<CapturePolicy> profilerApiPolicy(int64_t durationNs) {
  return std::make_unique<ProfilerApi>(durationNs);
}

std::unique_ptr<CapturePolicy> schedulePolicy(const Schedule& schedule) {
  return std::make_unique<ScheduleSteps>(schedule);
}

std::unique_ptr<CapturePolicy> onDemandPolicy() {
  return std::make_unique<OnDemand>();
}

std::unique_ptr<CapturePolicy> makeCapturePolicy(const Config& config, int64_t processStartNs) {
  if (config.schedule) return schedulePolicy(*config.schedule);
  if (config.captureRange == CaptureRange::CudaProfilerApi) {
    return profilerApiPolicy(config.durationNs);
  }
  if (config.captureRange == CaptureRange::OnDemand) return onDemandPolicy();
  if (config.delayNs > 0 || config.durationNs > 0) {
    return delayDurationPolicy(config.delayNs, config.durationNs, processStartNs);
  }
  return wholeRunPolicy();
}

}  // namespace kinetrace::inject
