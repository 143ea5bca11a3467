#include "ondemand/trigger_window.h"

#include <algorithm>
#include <cstdint>

namespace kinetrace::ondemand {

int64_t saturatingAdd(int64_t time, int64_t duration) {
  int64_t sum = 0;
  if (__builtin_add_overflow(time, duration, &sum)) return duration > 0 ? INT64_MAX : INT64_MIN;
  return sum;
}

TriggerWindow::TriggerWindow(const TriggerRequest& request, std::string path, int64_t nowBootNs,
                             int64_t nowRealNs, int64_t nextStep)
    : request_(request), path_(std::move(path)) {
  if (bySteps()) {
    // The step asked for if it is still ahead, else the next one; then the next multiple
    // of the round-up (libkineto's PROFILE_START_ITERATION_ROUNDUP).
    startStep_ = std::max(request.startStep, nextStep);
    const int64_t multiple = std::max<int64_t>(1, request.roundUpSteps);
    const int64_t past = startStep_ % multiple;
    if (past != 0) startStep_ = saturatingAdd(startStep_, multiple - past);
    return;
  }
  // A start time in the past (or none) is now.
  const int64_t untilStart =
      request.startAtNs == 0 ? 0 : saturatingAdd(request.startAtNs, -nowRealNs);
  startAtNs_ = saturatingAdd(nowBootNs, std::max<int64_t>(0, untilStart));
}

int64_t TriggerWindow::endAtNs(int64_t nowBootNs) const {
  return saturatingAdd(nowBootNs, request_.durationNs);
}

}  // namespace kinetrace::ondemand
