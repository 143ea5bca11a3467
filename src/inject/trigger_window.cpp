#include "inject/trigger_window.h"

#include <algorithm>

#include "inject/capture_policy.h"

namespace kinetrace::inject {

TriggerWindow::TriggerWindow(const TriggerRequest& request, std::string path, int64_t nowBootNs,
                             int64_t nowRealNs, int64_t nextStep)
    : path_(std::move(path)), durationNs_(request.durationNs), steps_(request.steps) {
  if (bySteps()) {
    // The step asked for if it is still ahead, else the next one.
    startStep_ = std::max(request.startStep, nextStep);
    return;
  }
  // A start time in the past (or none) is now.
  const int64_t untilStart =
      request.startAtNs == 0 ? 0 : saturatingAdd(request.startAtNs, -nowRealNs);
  startAtNs_ = saturatingAdd(nowBootNs, std::max<int64_t>(0, untilStart));
}

int64_t TriggerWindow::endAtNs(int64_t nowBootNs) const {
  return saturatingAdd(nowBootNs, durationNs_);
}

}  // namespace kinetrace::inject
