#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/read_budget.h"
#include "analysis/trace_reader.h"
#include "kinetrace/sink.h"

// The traces of one distributed job, one per rank, written as one trace (`kinetrace merge`):
// each rank's processes become processes of their own (pid rank * 10,000,000 + pid, named
// "rank R: ..."), its flow ids are made unique, and its times are shifted so that its NCCL
// collectives end when the reference rank's do (a collective completes on every rank at
// once: the last rank's data arrives everywhere together), with the residual skew reported
// per rank. Two passes over the inputs: the first finds each rank and its collectives, the
// second streams the events into the output, so memory holds collective end times, not
// traces. What it holds (each rank's collectives, GPUs, processes, and its own metadata for the
// merged trace's footer) draws from the read budget given: a job that needs more is an error
// naming what grew.
//
// Times: the merged trace's base time is the earliest rank's (after alignment), and every
// event must lie within what its output reads back: INT64_MAX - 1 s nanoseconds after it (a
// .pftrace writes times from a second before its base time, unsigned, and reads them back
// as int64 nanoseconds) and INT64_MAX before it (Chrome JSON writes microseconds from the
// base time, read back as int64 nanoseconds). A job whose ranks' times span more is refused
// before anything is written.

namespace kinetrace::detail {

// The most ranks one merged trace takes: pids stay below 2^31 (rank * 10,000,000 + pid)
// and flow ids make room for the rank.
constexpr int64_t kMaxMergedRanks = 200;
constexpr int64_t kMergedPidStride = 10'000'000;

// A collective as the alignment needs it: its kind ("AllReduce", from the kernel's name)
// and when its kernel ended.
struct CollectiveEnd {
  std::string kind;
  int64_t endNs = 0;
};

// The NCCL collective a kernel name stands for ("AllReduce" for
// "ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)" or "ncclKernel_AllReduce_RING_LL_Sum_float"),
// or nullopt when it is not an NCCL collective (point-to-point send and receive are not:
// they do not end together on both sides).
std::optional<std::string> ncclCollectiveKind(std::string_view kernelName);

struct Alignment {
  int64_t offsetNs = 0;          // add to the other trace's times
  std::size_t matched = 0;       // collectives paired
  int64_t residualMedianNs = 0;  // |reference end - shifted end| over the pairs
  int64_t residualMaxNs = 0;
};

// The shift that makes `other`'s collectives end with `reference`'s, each sorted by end.
// The k-th collective of one is paired with the (k + s)-th of the other for the s (within
// 64 either way) whose differences agree best: a trace may start a few collectives earlier
// than another. Among shifts that agree equally well (a strictly periodic job), the one
// that moves the clock least. nullopt when either has none.
std::optional<Alignment> alignCollectives(const std::vector<CollectiveEnd>& reference,
                                          const std::vector<CollectiveEnd>& other);

// How one input is placed in the merged trace.
struct RankPlacement {
  std::string path;
  int64_t rank = 0;
  bool rankFromTrace = false;  // distributedInfo.rank; otherwise the input's position
  int64_t baseTimeNs = 0;      // the trace's own base time (its window start)
  // The span of its events, each from its start to its end, in its own times.
  bool hasEvents = false;
  int64_t firstNs = 0;
  int64_t lastNs = 0;
  std::vector<CollectiveEnd> collectives;
  Value deviceProperties;  // the trace's own list of GPUs (null when it has none)
  int64_t offsetNs = 0;
  std::size_t collectivesMatched = 0;  // 0: not aligned (see note)
  int64_t residualMedianNs = 0;
  int64_t residualMaxNs = 0;
  std::string note;  // how the offset was found, or why there is none
  // What its collectives and GPUs take of the read budget while the plan lives (null for a
  // placement made by hand).
  std::shared_ptr<BudgetHold> held;
};

// The most and least a merged trace's time may be after its base time (see above).
constexpr int64_t kMergedMaxAfterBaseNs = INT64_MAX - 1'000'000'000;
constexpr int64_t kMergedMaxBeforeBaseNs = INT64_MAX;

struct MergeOptions {
  bool alignOnCollectives = true;  // false: times as the traces have them
};

// Pass 1: each input's rank, collectives and span, and the offset that aligns it with the
// lowest rank, in rank order. Throws kinetrace::Error naming the file for an unreadable
// input, for two inputs of the same rank, and when the budget cannot hold what it keeps.
std::vector<RankPlacement> planMerge(const std::vector<std::string>& paths,
                                     const MergeOptions& options, ReadBudget& budget,
                                     const ReadProgress& progress = {});

struct MergeReport {
  uint64_t events = 0;  // of the inputs, written to the output
  // Process names the merge added: a rank's process without one is named for its rank.
  uint64_t addedNames = 0;
  std::map<std::string, uint64_t> skipped;  // as ReadReport, over all inputs
};

// Pass 2: the inputs as one trace into `out` (begin, every rank's events, end). The header
// holds "deviceProperties": every rank's GPUs in rank order, each with its "rank" added.
// The footer holds "kinetrace_merge": per rank its path, offset, residual skew, and the
// header and footer metadata of its own trace. Throws kinetrace::Error, before `out` is
// begun, when the ranks' times span more than the merged trace can hold (see above).
MergeReport writeMerged(const std::vector<RankPlacement>& plan, Sink& out,
                        const std::string& traceName, ReadBudget& budget,
                        const ReadProgress& progress = {});

}  // namespace kinetrace::detail
