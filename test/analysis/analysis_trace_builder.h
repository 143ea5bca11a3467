#pragma once

// Small traces for `kinetrace analyze`'s tests, built event by event as kinetrace and
// libkineto lay them out, straight into the collector.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"
#include "test_budget.h"

namespace kinetrace::detail {

inline constexpr int64_t kBase = 1'700'000'000'000'000'000;
inline constexpr int64_t kUs = 1'000;
inline constexpr int64_t kHostPid = 77;

// Builds a trace's events in microseconds from kBase, as kinetrace and libkineto lay them
// out, straight into the collector.
class TraceBuilder {
 public:
  // `memoryBytes`: what the analysis's lists keep as if it were the budget (spill.h), within
  // the budget of `capBytes` (test_budget.h); a tiny one sends every list to its file.
  explicit TraceBuilder(int64_t rank = -1, std::size_t memoryBytes = kDefaultReadBudgetBytes,
                        std::size_t capBytes = kDefaultReadBudgetBytes)
      : collector_("t.json", budgetOf(capBytes), listBytesOf(memoryBytes)) {
    TraceHeader header{"t.json", kBase, {}};
    if (rank >= 0) header.metadata.push_back({"distributedInfo", Value::object({{"rank", rank}})});
    collector_.begin(header);
  }

  // A host range on the main thread; externalId 0: none.
  TraceBuilder& range(const std::string& name, int64_t startUs, int64_t endUs,
                      int64_t externalId = 0, const std::string& category = "user_annotation",
                      int64_t tid = 1) {
    Arg args[] = {{"External id", externalId}};
    write(Phase::Complete, name, category, kHostPid, tid, startUs, endUs, args,
          externalId != 0 ? 1 : 0);
    return *this;
  }

  // A launch call and the GPU operation it queued.
  // `callTid`: the launching thread.
  TraceBuilder& op(const std::string& name, int64_t callUs, int64_t callEndUs, int64_t startUs,
                   int64_t endUs, const std::string& category = "kernel", uint32_t stream = 7,
                   int64_t externalId = 0, int64_t device = 0, int64_t callTid = 1) {
    const int64_t correlation = ++correlation_;
    Arg callArgs[] = {{"cbid", int64_t{211}}, {"correlation", correlation}};
    write(Phase::Complete, "cudaLaunchKernel", "cuda_runtime", kHostPid, callTid, callUs, callEndUs,
          callArgs, 2);
    Arg opArgs[] = {{"device", device},
                    {"stream", int64_t{stream}},
                    {"correlation", correlation},
                    {"External id", externalId}};
    write(Phase::Complete, name, category, device, stream, startUs, endUs, opArgs, 4);
    return *this;
  }

  // A kernel run by a CUDA graph launch: the launch call (correlation `correlation`) is
  // written once, with its first node.
  TraceBuilder& graphNode(const std::string& name, int64_t correlation, int64_t callUs,
                          int64_t callEndUs, int64_t startUs, int64_t endUs) {
    if (correlation != lastGraphLaunch_) {
      lastGraphLaunch_ = correlation;
      Arg callArgs[] = {{"cbid", int64_t{311}}, {"correlation", correlation}};
      write(Phase::Complete, "cudaGraphLaunch", "cuda_runtime", kHostPid, 1, callUs, callEndUs,
            callArgs, 2);
    }
    Arg args[] = {{"device", int64_t{0}}, {"stream", int64_t{7}}, {"correlation", correlation}};
    write(Phase::Complete, name, "kernel", 0, 7, startUs, endUs, args, 3);
    return *this;
  }

  // A copy or memset (by its name: "Memcpy HtoD (Pageable -> Device)", "Memset (Device)")
  // launched at `callUs`, as torch.profiler writes it: its bytes and its bandwidth in GB/s
  // (negative: none written).
  TraceBuilder& copy(const std::string& name, int64_t callUs, int64_t startUs, int64_t endUs,
                     int64_t bytes, double gigabytesPerSecond, uint32_t stream = 7) {
    const int64_t correlation = ++correlation_;
    Arg callArgs[] = {{"cbid", int64_t{41}}, {"correlation", correlation}};
    write(Phase::Complete, "cudaMemcpyAsync", "cuda_runtime", kHostPid, 1, callUs, callUs + 1,
          callArgs, 2);
    Arg args[] = {{"device", int64_t{0}},
                  {"stream", int64_t{stream}},
                  {"correlation", correlation},
                  {"bytes", bytes},
                  {"memory bandwidth (GB/s)", gigabytesPerSecond}};
    write(Phase::Complete, name, name.rfind("Memset", 0) == 0 ? "gpu_memset" : "gpu_memcpy", 0,
          stream, startUs, endUs, args, gigabytesPerSecond < 0 ? 4 : 5);
    return *this;
  }

  // A gpu_user_annotation: a host range's span over its GPU work, on the work's stream, as
  // torch.profiler writes it (no device or stream argument: its pid and tid say them).
  TraceBuilder& gpuAnnotation(const std::string& name, int64_t startUs, int64_t endUs,
                              uint32_t stream = 7) {
    Arg args[] = {{"External id", int64_t{1}}};
    write(Phase::Complete, name, "gpu_user_annotation", 0, stream, startUs, endUs, args, 1);
    return *this;
  }

  // A runtime call that queues no GPU operation (cudaStreamSynchronize, ...).
  TraceBuilder& call(const std::string& name, int64_t startUs, int64_t endUs) {
    Arg args[] = {{"correlation", ++correlation_}};
    write(Phase::Complete, name, "cuda_runtime", kHostPid, 1, startUs, endUs, args, 1);
    return *this;
  }

  // A GPU operation launched inside an NCCL call, as kinetrace writes it from NCCL's NVTX
  // payload: "nccl call" and "nccl bytes".
  TraceBuilder& ncclOp(const std::string& name, const std::string& category,
                       const std::string& call, int64_t bytes, int64_t startUs, int64_t endUs) {
    Arg args[] = {{"device", int64_t{0}},
                  {"stream", int64_t{9}},
                  {"nccl call", std::string_view(call)},
                  {"nccl bytes", bytes}};
    write(Phase::Complete, name, category, 0, 9, startUs, endUs, args, 4);
    return *this;
  }

  // A synchronisation record (cuda_sync), as kinetrace and torch.profiler write it on the
  // device's track; waitOnStream: torch.profiler's "wait_on_stream", -1: none.
  TraceBuilder& sync(const std::string& name, int64_t startUs, int64_t endUs, int64_t stream,
                     int64_t waitOnStream = -1, int64_t device = 0) {
    Arg args[] = {{"device", device},
                  {"stream", stream},
                  {"correlation", ++correlation_},
                  {"wait_on_stream", waitOnStream}};
    write(Phase::Complete, name, "cuda_sync", device, stream, startUs, endUs, args,
          waitOnStream >= 0 ? 4 : 3);
    return *this;
  }

  TraceBuilder& memory(int64_t atUs, int64_t allocated) {
    Arg args[] = {{"Total Allocated", allocated}, {"Bytes", int64_t{1}}};
    write(Phase::Instant, "[memory]", "cpu_instant_event", kHostPid, 1, atUs, atUs, args, 2);
    return *this;
  }

  // A kernel (no launch call) carrying GPU metric averages, as kinetrace writes them:
  // args keyed "<display name> (<unit>)" ({"SM throughput (%)", 6.0}); none: no averages.
  TraceBuilder& kernel(const std::string& name, int64_t startUs, int64_t endUs,
                       const std::vector<std::pair<std::string, double>>& metrics = {},
                       uint32_t stream = 7) {
    std::vector<Arg> args = {{"device", int64_t{0}}, {"stream", int64_t{stream}}};
    for (const auto& [key, value] : metrics) args.push_back({key, value});
    write(Phase::Complete, name, "kernel", 0, stream, startUs, endUs, args.data(), args.size());
    return *this;
  }

  // One GPU metric sample on device 0, as kinetrace writes it: a gpu_metric counter event
  // per metric, named for it, its value keyed by the unit ({"SM throughput", "%", 42.0}).
  TraceBuilder& metricSample(int64_t atUs,
                             const std::vector<std::pair<std::string, double>>& percents) {
    for (const auto& [name, value] : percents) {
      Arg args[] = {{"%", value}};
      write(Phase::Counter, name, "gpu_metric", 0, 1000, atUs, atUs, args, 1);
    }
    return *this;
  }

  // A thread's name, as a thread_name metadata event.
  TraceBuilder& threadName(int64_t tid, const std::string& name) {
    Arg args[] = {{"name", std::string_view(name)}};
    write(Phase::Metadata, "thread_name", "", kHostPid, tid, 0, 0, args, 1);
    return *this;
  }

  // The trace's end, with the metadata known only then ("kinetrace_gpu_metrics", ...).
  CollectedTrace take(const Metadata& footer = {}) {
    collector_.end(footer);
    return collector_.take();
  }

 private:
  void write(Phase phase, const std::string& name, const std::string& category, int64_t pid,
             int64_t tid, int64_t startUs, int64_t endUs, const Arg* args, std::size_t argCount) {
    Event e;
    e.phase = phase;
    e.name = name;
    e.category = category;
    e.pid = pid;
    e.tid = tid;
    e.timestampNs = kBase + startUs * kUs;
    e.durationNs = (endUs - startUs) * kUs;
    e.args = args;
    e.argCount = argCount;
    collector_.write(e);
  }

  TraceCollector collector_;
  int64_t correlation_ = 0;
  int64_t lastGraphLaunch_ = 0;
};

inline RankReport analyze(CollectedTrace trace, AnalysisOptions options = {}) {
  return analyzeTrace(std::move(trace), options);
}

inline std::vector<CollectedTrace> one(CollectedTrace trace) {
  std::vector<CollectedTrace> traces;
  traces.push_back(std::move(trace));
  return traces;
}

}  // namespace kinetrace::detail
