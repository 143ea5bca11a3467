#pragma once

#include <cstdint>

#include "analysis/passes/pass_context.h"
#include "analysis/spill.h"

namespace kinetrace::detail::passes {

// A stream's launch queue, as the launch and full-queue passes both count it: operations
// launched and not yet started. Each operation with a known launch call adds one at its call's
// start and takes one away at its own start; sorted by stream, then time, the changes replay
// the queue's length as a step function. At equal times the starts (-1) come first, so a
// launch and a start at one moment make no step of their own.
struct QueueChange {
  int64_t device = 0;
  int64_t stream = 0;
  int64_t timeNs = 0;
  int32_t delta = 0;
};

struct ByStreamThenTime {
  bool operator()(const QueueChange& a, const QueueChange& b) const;
};

// The changes of every stream's queue, kept on the analysis's budget (spilled past its list
// bytes) until drained in stream and time order.
class LaunchQueueChanges {
 public:
  explicit LaunchQueueChanges(const PassContext& context);

  // The operation's two changes; none where its launch call is not known.
  void add(const JoinedOp& op);

  template <typename Visit>
  void drain(Visit&& visit) {
    changes_.drain(visit);
  }

 private:
  ExternalSorter<QueueChange, ByStreamThenTime> changes_;
};

}  // namespace kinetrace::detail::passes
