#pragma once

#include <cstdint>
#include <string>

#include "ondemand/trigger_request.h"

// The on-demand capture: a window a trigger asked for, from the request to its end. It starts
// at a time (start_at_ns, on the wall clock every process of a host shares) or at a step
// (rounded up to a multiple when asked), and lasts a duration or a number of steps. Only
// decides, from the times and steps it is given; the front-end (the injection's controller,
// libkineto_api's on-demand driver) records.

namespace kinetrace::ondemand {

// A time plus a duration, at most INT64_MAX (and at least INT64_MIN): a duration asked for as
// "forever" must not wrap into the past and end a window at once.
int64_t saturatingAdd(int64_t time, int64_t duration);

class TriggerWindow {
 public:
  // `request` as parsed (a duration or steps, checked); `path` where the trace goes;
  // `nowBootNs`/`nowRealNs` now on CLOCK_BOOTTIME and CLOCK_REALTIME; `nextStep` the step
  // the next step mark starts.
  TriggerWindow(const TriggerRequest& request, std::string path, int64_t nowBootNs,
                int64_t nowRealNs, int64_t nextStep);

  const std::string& path() const { return path_; }
  const TriggerRequest& request() const { return request_; }
  bool bySteps() const { return request_.steps > 0; }
  int64_t steps() const { return request_.steps; }
  int64_t durationNs() const { return request_.durationNs; }
  // By time: when it starts (CLOCK_BOOTTIME); by steps: its first step.
  int64_t startAtNs() const { return startAtNs_; }
  int64_t startStep() const { return startStep_; }

  bool dueAtTime(int64_t nowBootNs) const { return !bySteps() && nowBootNs >= startAtNs_; }
  bool dueAtStep(int64_t step) const { return bySteps() && step >= startStep_; }
  // Once started at `nowBootNs` (by time): when it ends, at most INT64_MAX.
  int64_t endAtNs(int64_t nowBootNs) const;
  // Once started at step `step` (by steps): the step whose mark ends it.
  int64_t endAtStep(int64_t step) const { return saturatingAdd(step, request_.steps); }

 private:
  TriggerRequest request_;
  std::string path_;
  int64_t startAtNs_ = 0;
  int64_t startStep_ = 0;
};

}  // namespace kinetrace::ondemand
