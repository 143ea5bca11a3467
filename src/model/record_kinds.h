#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "kinetrace/trace.h"

// The kinds of record a trace holds, one row each: the one list that the containers of
// records (TraceRecords), their counts (RecordCounts), the counts' keys in a trace's
// metadata ("kinetrace_record_counts") and the public TraceStats follow. Adding a kind of
// record is adding its row here and its record type in model/records.h; the steps that
// give it meaning (decoding, joining, writing) are listed in docs/ARCHITECTURE.md, "Adding
// a GPU activity kind".
//
// Columns:
//   Kind        the RecordKind enumerator
//   Type        the record's type (model/records.h)
//   member      its vector in TraceRecords
//   countKey    its key in "kinetrace_record_counts"; nullptr: not counted there (flows
//               are the arrows between records, not records a reader would count)
//   stat        the TraceStats ("Stats") field that reports its count; nullptr: none
//               (TraceStats is public: a field there is a promise, so newer kinds are
//               counted in the trace's metadata only)
//
// The order is the order of the counts in the metadata: new kinds go at the end.
// clang-format off
#define KINETRACE_RECORD_KINDS(X)                                                                  \
  /* Kind         Type                   member         countKey          stat */                  \
  X(Range,        RangeRecord,           ranges,        "ranges",         &Stats::hostRanges)      \
  X(Instant,      InstantRecord,         instants,      "instants",       &Stats::hostInstants)    \
  X(Counter,      CounterRecord,         counters,      "counters",       &Stats::counterSamples)  \
  X(ApiCall,      ApiCallRecord,         apiCalls,      "api_calls",      &Stats::apiCalls)        \
  X(Flow,         FlowRecord,            flows,         nullptr,          nullptr)                 \
  X(Kernel,       KernelRecord,          kernels,       "kernels",        &Stats::gpuKernels)      \
  X(Memcpy,       MemcpyRecord,          memcpys,       "memcpys",        &Stats::gpuMemcpys)      \
  X(Memset,       MemsetRecord,          memsets,       "memsets",        &Stats::gpuMemsets)      \
  X(Graph,        GraphRecord,           graphs,        "graphs",         &Stats::gpuGraphs)       \
  X(Sync,         SyncRecord,            syncs,         "syncs",          &Stats::gpuSyncs)        \
  X(Memory,       MemoryRecord,          memory,        "memory",         &Stats::gpuMemoryEvents) \
  X(Overhead,     OverheadRecord,        overheads,     "overheads",      nullptr)                 \
  X(GpuSpan,      GpuSpanRecord,         gpuSpans,      "gpu_spans",      nullptr)                 \
  X(MetricSample, GpuMetricSampleRecord, metricSamples, "metric_samples", nullptr)                 \
  X(MemoryPool,   MemoryPoolRecord,      memoryPools,   "memory_pools",   nullptr)
// clang-format on

namespace kinetrace::detail {

struct TraceRecords;
using Stats = TraceStats;  // the table's short name for it

enum class RecordKind : uint8_t {
#define KINETRACE_RECORD_KIND_ENUMERATOR(Kind, Type, member, countKey, stat) Kind,
  KINETRACE_RECORD_KINDS(KINETRACE_RECORD_KIND_ENUMERATOR)
#undef KINETRACE_RECORD_KIND_ENUMERATOR
};

inline constexpr std::size_t kRecordKindCount = 0
#define KINETRACE_RECORD_KIND_ONE(Kind, Type, member, countKey, stat) +1
    KINETRACE_RECORD_KINDS(KINETRACE_RECORD_KIND_ONE)
#undef KINETRACE_RECORD_KIND_ONE
    ;

// What the table says of a kind besides its type.
struct RecordKindInfo {
  RecordKind kind;
  const char* countKey;
  uint64_t TraceStats::*stat;
};

inline constexpr std::array<RecordKindInfo, kRecordKindCount> kRecordKinds = {{
#define KINETRACE_RECORD_KIND_INFO(Kind, Type, member, countKey, stat) \
  {RecordKind::Kind, countKey, stat},
    KINETRACE_RECORD_KINDS(KINETRACE_RECORD_KIND_INFO)
#undef KINETRACE_RECORD_KIND_INFO
}};

constexpr const RecordKindInfo& infoOf(RecordKind kind) {
  return kRecordKinds[static_cast<std::size_t>(kind)];
}

// How many records of each kind a trace holds (also when they were streamed to a file).
class RecordCounts {
 public:
  uint64_t& operator[](RecordKind kind) { return counts_[static_cast<std::size_t>(kind)]; }
  uint64_t operator[](RecordKind kind) const { return counts_[static_cast<std::size_t>(kind)]; }
  void add(const TraceRecords& records);

 private:
  std::array<uint64_t, kRecordKindCount> counts_{};
};

}  // namespace kinetrace::detail
