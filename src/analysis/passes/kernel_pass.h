#pragma once

#include <cstdint>
#include <map>

#include "analysis/passes/pass_context.h"
#include "analysis/spill.h"

namespace kinetrace::detail::passes {

// What ran on the GPUs: the kernel table (each name's duration distribution, the top
// options.top by total time, and one row per kind), the counts of operations and kernels,
// and the tiny kernels (shorter than options.tinyKernelNs) with the host ranges that issued
// them. Reads the trace's External-id ranges.
class KernelPass {
 public:
  explicit KernelPass(const PassContext& context);

  void add(const JoinedOp& op);

  // report.kernels, report.kinds, report.gpuOps, report.kernelCount, report.kernelNs,
  // report.tiny and report.opsWithHostRange.
  void finish(RankReport& report);

 private:
  // An operation's duration under a key: its name's id, or kKindKey + its kind.
  struct KeyedDuration {
    uint32_t key = 0;
    int64_t ns = 0;
  };
  static constexpr uint32_t kKindKey = ~uint32_t{0} - 3;
  struct ByKeyThenDuration {
    bool operator()(const KeyedDuration& a, const KeyedDuration& b) const {
      return a.key != b.key ? a.key < b.key : a.ns < b.ns;
    }
  };
  // An operation's External id, to join to the host range that issued it.
  struct IssuedBy {
    uint64_t externalId = 0;
    bool tiny = false;
  };
  struct ByIssuer {
    bool operator()(const IssuedBy& a, const IssuedBy& b) const {
      return a.externalId != b.externalId ? a.externalId < b.externalId : a.tiny < b.tiny;
    }
  };
  // What the kernel table needs of each name, and of each kind.
  struct Tally {
    uint64_t count = 0;
    GpuOpKind kind = GpuOpKind::Compute;  // the last operation's of that name
    uint64_t kindSequence = 0;
  };
  // The issuer of operations outside any host range.
  static constexpr uint32_t kNoRange = ~uint32_t{0};

  void kernelTable(RankReport& report);
  void tinyKernelIssuers(RankReport& report);

  const PassContext& context_;
  ExternalSorter<KeyedDuration, ByKeyThenDuration> durations_;
  ExternalSorter<IssuedBy, ByIssuer> issuedBy_;
  BudgetUnorderedMap<uint32_t, Tally> names_;
  std::map<GpuOpKind, Tally> kinds_;
  int64_t totalNs_ = 0;  // every operation's duration
  uint64_t gpuOps_ = 0;
  uint64_t kernelCount_ = 0;
  int64_t kernelNs_ = 0;
  TinyKernelReport tiny_;
  BudgetUnorderedMap<uint32_t, uint64_t> issuers_;  // range name (or kNoRange) -> tiny kernels
};

}  // namespace kinetrace::detail::passes
