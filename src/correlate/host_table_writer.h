#pragma once

// What host events refer to, written into the trace tables once each: threads (by the
// recorder's thread instance and by OS tid), names (a literal's pointer remembered, so a
// name recorded millions of times is interned once), CUDA API names by callback id, and
// events' arguments (NVTX payloads), which the end of a range may add to.
//
// Separate from the Assembler because none of it is correlation: it is the bookkeeping of
// table indices every host event needs before it can become a record.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "host/host_recorder.h"
#include "model/trace_data.h"

namespace kinetrace::detail {

class HostTableWriter {
 public:
  // Host events whose arguments (NVTX payloads) are kept. NCCL gives one per collective
  // call: a job making 1,000 calls a step fills it in a few hundred steps of one window; the
  // events past it are written without their arguments and counted (eventArgsNotKept).
  static constexpr std::size_t kEventArgsKept = std::size_t{1} << 18;

  // `apiName` names a CUDA API function by its callback id (empty: "CUDA API <id>").
  HostTableWriter(TraceTables& tables, LossCounters& losses,
                  std::function<std::string(ApiDomain, uint32_t)> apiName);

  // A recorder thread instance announced with its OS tid and name. One table entry per OS
  // thread: a buffer reused by a thread of a tid seen before (tids are recycled) joins that
  // thread's track.
  void onThread(uint32_t instance, int64_t tid, std::string_view name);
  // The table index of a recorder thread instance; of an OS thread.
  uint32_t threadOf(uint32_t instance);
  uint32_t threadOfTid(int64_t tid);
  StringId intern(HostName name);
  StringId apiNameOf(ApiDomain domain, uint32_t callbackId);
  // Keeps an event's arguments (`encoded`) in the tables; returns InstantRecord::args for
  // them. `rangeId`: a range's External id (0 for an instant), by which its record and the
  // GPU work launched inside it find them; arguments added at its end join those of its
  // begin. `event`: the event's name.
  uint32_t keepArgs(std::string_view event, std::string_view encoded, uint64_t rangeId);

 private:
  TraceTables& tables_;
  LossCounters& losses_;
  std::function<std::string(ApiDomain, uint32_t)> apiName_;
  std::unordered_map<uint32_t, uint32_t> threadByInstance_;
  std::unordered_map<int64_t, uint32_t> threadByTid_;
  std::unordered_map<const char*, StringId> literalNames_;
  std::unordered_map<uint32_t, StringId> apiNames_;  // domain << 16 | callback id
};

}  // namespace kinetrace::detail
