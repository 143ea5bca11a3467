#pragma once

#include "analysis/passes/pass_context.h"

namespace kinetrace::detail::passes {

// What the host did: its ranges by name (the top options.top by total time), the threads
// that ran them with the time each spent inside at least one, and why the trace has no GPU
// activity when its recorder said so. Reads the trace's host ranges (which the gap table reads
// too) and thread names. The view of a trace without GPU operations, and part of every
// report's JSON.
class HostPass {
 public:
  explicit HostPass(const PassContext& context) : context_(context) {}
  // report.host.
  void finish(RankReport& report);

 private:
  void rangesByName(HostReport& host);
  void threads(HostReport& host);

  const PassContext& context_;
};

}  // namespace kinetrace::detail::passes
