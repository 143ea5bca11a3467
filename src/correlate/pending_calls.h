#pragma once

// The call side of the launch join: API calls whose GPU records are still to come, by
// CUPTI correlation id, and which of them to give up on. A kernel, copy or memset and the
// call that launched it share a correlation id, and either may arrive first; a call waits
// here until its record joins it, or until its records can no longer come.
//
// Separate from the Assembler because its rules are about time and buffers alone, not about
// what a record is: when a call expires (its records were due in buffers CUPTI handed back),
// how long one may wait for a buffer CUPTI still holds, the watermark below which every call
// has been joined (so GPU spans may be closed), and what goes first when memory is short.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/records.h"

namespace kinetrace::detail {

struct PendingCall {
  int64_t startNs;
  int64_t endNs;
  uint64_t externalId;
  uint32_t thread;
  CallEffect effect;
  bool arrowStarted = false;  // a graph launch's arrow starts once, whatever it ran
};

class PendingCalls {
 public:
  // A call whose GPU records have not come after this long is given up on (its kind was not
  // collected, CUPTI dropped them, or it was a graph launch whose last node ran): keeping
  // calls forever would grow without bound. An operation arriving for it later is written
  // without its call and counted.
  static constexpr int64_t kExpiryNs = 30'000'000'000;
  // Unless CUPTI still holds a buffer lent before the call's records were due (it hands a
  // buffer back when it is full or flushed; a flush leaves out a buffer with a record still
  // incomplete, so on a GPU never idle a buffer can stay out for minutes): such a call is
  // kept until that buffer is back, at most this long, and the oldest such calls go when
  // more calls than kKeptPastExpiry are waiting -- a few buffers' worth of records, a 4 MiB
  // buffer holding about 20,000.
  static constexpr int64_t kLongestNs = 600'000'000'000;
  static constexpr std::size_t kKeptPastExpiry = std::size_t{1} << 16;

  // A call whose records are to come. A later call of the same id replaces it.
  void add(uint32_t correlationId, const PendingCall& call);
  // The call of `correlationId`, or nullptr (always for 0, which no call has).
  PendingCall* find(uint32_t correlationId);
  // A call joined by one of its records: gone, unless it is a graph launch, whose id is
  // shared by every node it ran (it stays until it expires).
  void forget(uint32_t correlationId, const PendingCall& call);
  // Gone, whatever it launched (at graph level a launch gives one record).
  void erase(uint32_t correlationId) { calls_.erase(correlationId); }

  // GpuBatch::allRecordsBeforeNs of the latest batch: calls before it had their chance.
  void setAllRecordsBefore(int64_t ns) { allRecordsBeforeNs_ = ns; }
  // The start of the oldest call still waiting; INT64_MAX when none is.
  int64_t watermark();
  // Gives up on the calls whose records can no longer come, `horizonNs` being how far the
  // host side has been drained.
  void expire(int64_t horizonNs);
  // Gives up on the oldest calls until about `bytes` are freed.
  void shed(std::size_t bytes);
  void clear() { calls_.clear(); }

  std::size_t size() const { return calls_.size(); }
  // Roughly what the calls hold, for the memory budget.
  std::size_t heldBytes() const;

 private:
  std::unordered_map<uint32_t, PendingCall> calls_;
  // (start, correlation id), oldest first: joined or replaced calls stay until they reach
  // the top, where a start that no longer matches its call tells them apart.
  std::priority_queue<std::pair<int64_t, uint32_t>, std::vector<std::pair<int64_t, uint32_t>>,
                      std::greater<>>
      byStart_;
  int64_t allRecordsBeforeNs_ = INT64_MAX;
};

}  // namespace kinetrace::detail
