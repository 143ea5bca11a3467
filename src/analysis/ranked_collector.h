#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/read_budget.h"
#include "analysis/trace_collector.h"
#include "kinetrace/sink.h"

// Collects one trace file for `kinetrace analyze` as the ranks it holds. A trace that
// `kinetrace merge` wrote (its header's distributedInfo counts kinetrace_merged_ranks) holds
// several ranks, each in its own processes (rank * kMergedPidStride + pid); collected as one
// trace, one rank's launch calls would join another's kernels (correlation ids repeat across
// ranks) and the ranks' streams would add up. So each rank is collected on its own, as its
// own file would be: its own process ids, its rank, and the metadata of its own trace that
// the merged footer keeps ("kinetrace_merge": each rank's header and footer). Any other trace
// is collected as one.
//
//   RankedCollector collector(path, budget);
//   readTraceFile(path, collector, path, budget);
//   for (CollectedTrace& rank : collector.take()) analyzeRank(std::move(rank), options);

namespace kinetrace::detail {

class RankedCollector final : public Sink {
 public:
  // What the ranks' records hold comes from `budget`, which outlives the collector and the
  // traces it collects.
  RankedCollector(std::string path, ReadBudget& budget);
  RankedCollector(const RankedCollector&) = delete;
  RankedCollector& operator=(const RankedCollector&) = delete;

  void begin(const TraceHeader& header) override;
  void write(const Event& event) override;
  void end(const Metadata& footer) override;

  // Keeps the events the critical path reads (TraceCollector::keepCriticalPathEvents) in
  // every rank's trace. Before the trace is read.
  void keepCriticalPathEvents() { keepCriticalPathEvents_ = true; }

  // Whether the trace was a merged one, split into its ranks.
  bool merged() const { return merged_; }
  // The traces collected: one per rank in rank order for a merged trace (every rank the
  // footer lists, events or not), else one.
  std::vector<CollectedTrace> take();

 private:
  TraceCollector& rankCollector(int64_t rank);

  std::string path_;
  ReadBudget& budget_;
  TraceHeader header_;
  bool merged_ = false;
  bool keepCriticalPathEvents_ = false;
  std::unique_ptr<TraceCollector> whole_;  // of a trace that is not merged
  std::map<int64_t, std::unique_ptr<TraceCollector>> ranks_;
};

}  // namespace kinetrace::detail
