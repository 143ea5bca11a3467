#pragma once

// Small traces for the critical path's tests, built event by event in torch.profiler's layout
// (framework operators, runtime calls, GPU operations and sync records joined by correlation
// ids) straight into a collector that keeps the critical path's events. Times in
// microseconds from kBase, on thread 1 of process kHostPid unless said.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"
#include "analysis_trace_builder.h"
#include "test_budget.h"

namespace kinetrace::detail {

class PathTraceBuilder {
 public:
  explicit PathTraceBuilder(ReadBudget& budget = budgetOf(),
                            std::size_t memoryBytes = kDefaultReadBudgetBytes)
      : collector_("t.json", budget, listBytesOf(memoryBytes)) {
    collector_.keepCriticalPathEvents();
    collector_.begin(TraceHeader{"t.json", kBase, {}});
  }

  // A host range: a framework operator by default; "user_annotation" for a step or a
  // record_function range.
  PathTraceBuilder& range(const std::string& name, int64_t startUs, int64_t endUs, int64_t tid = 1,
                          const std::string& category = "cpu_op") {
    write(Phase::Complete, name, category, kHostPid, tid, startUs, endUs, {});
    return *this;
  }
  PathTraceBuilder& step(const std::string& name, int64_t startUs, int64_t endUs) {
    return range(name, startUs, endUs, 1, "user_annotation");
  }

  // A CUDA runtime call; returns its correlation id.
  uint64_t call(const std::string& name, int64_t startUs, int64_t endUs, int64_t tid = 1) {
    const int64_t correlation = ++correlation_;
    write(Phase::Complete, name, "cuda_runtime", kHostPid, tid, startUs, endUs,
          {{"correlation", correlation}});
    return static_cast<uint64_t>(correlation);
  }

  // A GPU operation of a call.
  PathTraceBuilder& gpu(uint64_t correlation, const std::string& name, int64_t startUs,
                        int64_t endUs, int64_t stream = 7, const std::string& category = "kernel") {
    write(Phase::Complete, name, category, 0, stream, startUs, endUs,
          {{"device", int64_t{0}},
           {"stream", stream},
           {"correlation", static_cast<int64_t>(correlation)}});
    return *this;
  }

  // A launch call and the operation it queued.
  PathTraceBuilder& launch(int64_t callUs, int64_t callEndUs, const std::string& name,
                           int64_t startUs, int64_t endUs, int64_t stream = 7, int64_t tid = 1,
                           const std::string& call = "cudaLaunchKernel",
                           const std::string& category = "kernel") {
    return gpu(this->call(call, callUs, callEndUs, tid), name, startUs, endUs, stream, category);
  }

  // A sync call and its record on the GPU's timeline (cuda_sync), as torch.profiler writes
  // it: a Stream Wait Event or Event Sync names the event's record and stream.
  PathTraceBuilder& sync(const std::string& call, int64_t callUs, int64_t callEndUs,
                         const std::string& name, int64_t startUs, int64_t endUs, int64_t stream,
                         uint64_t record = 0, int64_t waitOnStream = -1, int64_t tid = 1) {
    const uint64_t correlation = this->call(call, callUs, callEndUs, tid);
    std::vector<Arg> args = {{"device", int64_t{0}},
                             {"stream", stream},
                             {"correlation", static_cast<int64_t>(correlation)}};
    if (record != 0) {
      args.push_back({"wait_on_stream", waitOnStream});
      args.push_back({"wait_on_cuda_event_record_corr_id", static_cast<int64_t>(record)});
    }
    write(Phase::Complete, name, "cuda_sync", 0, stream >= 0 ? stream : 0, startUs, endUs, args);
    return *this;
  }

  // An event in nanoseconds, for the cases microseconds cannot say (a child ending 1 ns
  // after its parent).
  PathTraceBuilder& rangeNs(const std::string& name, int64_t startNs, int64_t endNs,
                            int64_t tid = 1) {
    Event e;
    e.phase = Phase::Complete;
    e.name = name;
    e.category = "cpu_op";
    e.pid = kHostPid;
    e.tid = tid;
    e.timestampNs = kBase + startNs;
    e.durationNs = endNs - startNs;
    collector_.write(e);
    return *this;
  }

  CollectedTrace take() {
    collector_.end({});
    return collector_.take();
  }

 private:
  void write(Phase phase, const std::string& name, const std::string& category, int64_t pid,
             int64_t tid, int64_t startUs, int64_t endUs, const std::vector<Arg>& args) {
    Event e;
    e.phase = phase;
    e.name = name;
    e.category = category;
    e.pid = pid;
    e.tid = tid;
    e.timestampNs = kBase + startUs * kUs;
    e.durationNs = (endUs - startUs) * kUs;
    e.args = args.data();
    e.argCount = args.size();
    collector_.write(e);
  }

  TraceCollector collector_;
  int64_t correlation_ = 0;
};

// Each step's critical path of a trace (the whole analysis run, as `analyze
// --critical-path` runs it).
inline CriticalPathReport criticalPathOf(CollectedTrace trace, AnalysisOptions options = {}) {
  options.criticalPath = true;
  return analyzeTrace(std::move(trace), options).criticalPath;
}

// A step's part of its path, in ns.
inline int64_t partOf(const CriticalPathStep& step, PathPart part) {
  return step.parts[static_cast<std::size_t>(part)];
}

// The contributor of that name and part, or nullptr.
inline const PathContributor* contributor(const CriticalPathStep& step, std::string_view name,
                                          PathPart part) {
  for (const PathContributor& c : step.contributors) {
    if (c.name == name && c.part == part) return &c;
  }
  return nullptr;
}

}  // namespace kinetrace::detail
