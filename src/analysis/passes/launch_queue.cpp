#include "analysis/passes/launch_queue.h"

#include <tuple>

namespace kinetrace::detail::passes {

bool ByStreamThenTime::operator()(const QueueChange& a, const QueueChange& b) const {
  return std::tie(a.device, a.stream, a.timeNs, a.delta) <
         std::tie(b.device, b.stream, b.timeNs, b.delta);
}

LaunchQueueChanges::LaunchQueueChanges(const PassContext& context)
    : changes_(context.budget(), kAnalysisLists, context.trace.listBytes) {}

void LaunchQueueChanges::add(const JoinedOp& op) {
  if (!op.hasCall) return;
  changes_.add({op.device, op.stream, op.callStartNs, +1});
  changes_.add({op.device, op.stream, op.startNs, -1});
}

}  // namespace kinetrace::detail::passes
