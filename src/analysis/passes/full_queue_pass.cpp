#include "analysis/passes/full_queue_pass.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "analysis/passes/analysis_common.h"

namespace kinetrace::detail::passes {

FullQueuePass::FullQueuePass(const PassContext& context) : context_(context), changes_(context) {}

void FullQueuePass::add(const JoinedOp& op) {
  changes_.add(op);
}

// The queue's length is a step from one change to the next; the time it was full is the sum
// of the steps at the limit or above. Changes at one moment count together (the order among
// them makes steps of no length), so the figure does not hang on how ties are broken; the
// last change of a stream ends its last step, as in HTA's time series.
void FullQueuePass::finish(RankReport& report) {
  FullQueueReport& q = report.fullQueue;
  q = FullQueueReport{};
  q.maxQueueLength = context_.options.maxQueueLength;
  const CollectedTrace& trace = context_.trace;
  q.windowNs = trace.events > 0 ? trace.lastNs - trace.firstNs : 0;
  auto longerFull = [](const FullQueueStream& a, const FullQueueStream& b) {
    if (a.fullNs != b.fullNs) return a.fullNs > b.fullNs;
    return std::tie(a.device, a.stream) < std::tie(b.device, b.stream);
  };
  TopN<FullQueueStream, decltype(longerFull)> top(context_.options.top, longerFull);
  FullQueueStream current;
  bool any = false;
  int64_t depth = 0;
  int64_t since = 0;
  bool reached = false;
  auto close = [&]() {
    if (!any || !reached) return;
    ++q.streamsFull;
    q.fullNs += current.fullNs;
    current.windowShare =
        q.windowNs > 0 ? static_cast<double>(current.fullNs) / static_cast<double>(q.windowNs) : 0;
    top.add(current);
  };
  changes_.drain([&](const QueueChange& change) {
    if (!any || change.device != current.device || change.stream != current.stream) {
      close();
      current = FullQueueStream{change.device, change.stream, 0, 0, 0};
      any = true;
      depth = 0;
      reached = false;
      since = change.timeNs;
    }
    if (depth >= q.maxQueueLength) current.fullNs += change.timeNs - since;
    depth += change.delta;
    since = change.timeNs;
    current.maxDepth = static_cast<int>(std::clamp<int64_t>(depth, current.maxDepth, INT32_MAX));
    reached = reached || depth >= q.maxQueueLength;
  });
  close();
  std::vector<FullQueueStream> rows = top.take();
  std::sort(rows.begin(), rows.end(), longerFull);
  q.streams = std::move(rows);
}

}  // namespace kinetrace::detail::passes
