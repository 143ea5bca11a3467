#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/trace_data.h"

namespace kinetrace::detail {

// NCCL's groups, per thread. Inside ncclGroupStart ... ncclGroupEnd NCCL only queues the
// calls it is given; it launches their GPU work in the outermost ncclGroupEnd. So that work
// says what it moves, that ncclGroupEnd range is given the sum of its calls' arguments
// (their count by name, the bytes, the communicator and peer when they share one), kept
// in the trace's tables like any range's arguments.
class NcclGroups {
 public:
  // `maxEventArgs`: the most argument sets the tables keep; a group's sum is not added past
  // it (the range keeps what it had).
  NcclGroups(TraceTables& tables, std::size_t maxEventArgs)
      : tables_(tables), maxEventArgs_(maxEventArgs) {}

  // An NCCL range began on thread `instance`: `call` is its name less "NCCL: "
  // ("ncclAllReduce"), `rangeId` its External id, `args` its arguments
  // (TraceTables::eventArgs index + 1; 0: none).
  void onRange(uint32_t instance, std::string_view call, uint64_t rangeId, uint32_t args);

  // Roughly what it holds, for the memory budget.
  std::size_t heldBytes() const;

 private:
  struct Group {
    int depth = 0;
    std::vector<uint32_t> calls;  // the calls' arguments (TraceTables::eventArgs index + 1)
  };
  void giveSum(const Group& group, uint64_t rangeId);

  TraceTables& tables_;
  std::size_t maxEventArgs_;
  std::unordered_map<uint32_t, Group> groups_;  // by thread instance
};

}  // namespace kinetrace::detail
