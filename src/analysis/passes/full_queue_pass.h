#pragma once

#include "analysis/passes/launch_queue.h"
#include "analysis/passes/pass_context.h"

namespace kinetrace::detail::passes {

// Time blocked on a full launch queue: CUDA queues a limited number of operations per stream
// (HTA's max_queue_length, 1024), and a launch call past it blocks the host until the GPU
// starts one. Per stream, the time its queue (launch_queue.h) held options.maxQueueLength or
// more, and that time's share of the window: HTA's get_time_spent_blocked_on_full_queue, per
// stream. Operations without a known launch call are in no queue.
class FullQueuePass {
 public:
  explicit FullQueuePass(const PassContext& context);

  void add(const JoinedOp& op);

  // report.fullQueue.
  void finish(RankReport& report);

 private:
  const PassContext& context_;
  LaunchQueueChanges changes_;
};

}  // namespace kinetrace::detail::passes
