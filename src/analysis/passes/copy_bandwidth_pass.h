#pragma once

#include <cstdint>

#include "analysis/passes/pass_context.h"
#include "analysis/spill.h"

namespace kinetrace::detail::passes {

// Copy and memset bandwidth per kind ("Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memset"),
// as HTA's get_memory_bw_time_series and get_memory_bw_summary define it: each kind's
// bandwidth over time is the sum of the bandwidths of its operations running at that moment,
// and its summary (count, mean, standard deviation, min, quartiles, max) is over the values
// that sum takes above 0, one at each change. Also each kind's operations, bytes and GPU time,
// and a timeline of the bandwidth's time-weighted mean in slices of the window. Reads the
// trace's copies; at most CopyBandwidthReport::kMaxKinds kinds, the copies of more counted as
// left out.
class CopyBandwidthPass {
 public:
  explicit CopyBandwidthPass(const PassContext& context) : context_(context) {}

  // report.copyBandwidth.
  void finish(RankReport& report);

 private:
  // A kind's bandwidth rising at a copy's start or falling at its end.
  struct Change {
    int64_t timeNs = 0;
    uint64_t sequence = 0;  // of the copy: ties keep the trace's order
    double gbps = 0;
    uint32_t kind = 0;  // index into the report's kinds
    bool start = false;
  };
  // By kind, then time; at one moment ends before starts, so that copies back to back are
  // not counted as running together.
  struct ByKindThenTime {
    bool operator()(const Change& a, const Change& b) const;
  };
  // A value the kind's bandwidth took above 0.
  struct Value {
    uint32_t kind = 0;
    double gbps = 0;
  };
  struct ByKindThenValue {
    bool operator()(const Value& a, const Value& b) const {
      return a.kind != b.kind ? a.kind < b.kind : a.gbps < b.gbps;
    }
  };

  void sweep(CopyBandwidthReport& out, ExternalSorter<Change, ByKindThenTime>& changes,
             ExternalSorter<Value, ByKindThenValue>& values);
  static void summarize(CopyBandwidthReport& out, ExternalSorter<Value, ByKindThenValue>& values);

  const PassContext& context_;
};

}  // namespace kinetrace::detail::passes
