#pragma once

#include <cstdint>

#include "analysis/passes/pass_context.h"
#include "analysis/spill.h"

namespace kinetrace::detail::passes {

// Time blocked on a full launch queue: CUDA queues a limited number of operations per stream
// (HTA's max_queue_length, 1024), and a launch call past it blocks the host until the GPU
// starts one. Per stream, the time its queue (operations launched and not yet started, as the
// launch pass counts it) held options.maxQueueLength or more, and that time's share of the
// window: HTA's get_time_spent_blocked_on_full_queue, per stream. Operations without a known
// launch call are in no queue.
class FullQueuePass {
 public:
  explicit FullQueuePass(const PassContext& context);

  void add(const JoinedOp& op);

  // report.fullQueue.
  void finish(RankReport& report);

 private:
  // A stream's queue: +1 at a launch call's start, -1 at its operation's start.
  struct QueueChange {
    int64_t device = 0;
    int64_t stream = 0;
    int64_t timeNs = 0;
    int32_t delta = 0;
  };
  struct ByStreamThenTime {
    bool operator()(const QueueChange& a, const QueueChange& b) const;
  };

  const PassContext& context_;
  ExternalSorter<QueueChange, ByStreamThenTime> changes_;
};

}  // namespace kinetrace::detail::passes
