#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/trace_analysis.h"
#include "analysis/trace_collector.h"

// What the analysis's passes share: interval arithmetic, distributions read off sorted
// values, a bounded "top N", and the short forms of names and durations a sentence quotes.

namespace kinetrace::detail::passes {

using Interval = std::pair<int64_t, int64_t>;  // [start, end)
using Intervals = std::vector<Interval>;

// Sorted, non-overlapping, non-empty.
Intervals unionOf(Intervals items);

// How much of [from, to) the (sorted, merged) items cover: found by binary search, so a
// gap costs the intervals it meets only.
int64_t overlapWith(const Intervals& items, int64_t from, int64_t to);

// A distribution from its values, read once in ascending order; `count` of them. The
// percentiles are exact: the value at the quantile's place, rounded to the nearest.
class DistributionBuilder {
 public:
  explicit DistributionBuilder(uint64_t count);
  void add(int64_t value) {
    d_.totalNs += value;
    if (seen_ == p50_) d_.p50Ns = value;
    if (seen_ == p90_) d_.p90Ns = value;
    if (seen_ == p99_) d_.p99Ns = value;
    d_.maxNs = value;
    ++seen_;
  }
  Distribution finish();

 private:
  Distribution d_;
  uint64_t seen_ = 0;
  uint64_t p50_ = 0, p90_ = 0, p99_ = 0;
};

// The `limit` best items by `before` (before(a, b): a ranks above b), in a heap whose top is
// the worst kept: a trace has as many candidates (gaps, kernel names, launches) as
// operations, and a table shows a few.
template <typename T, typename Before>
class TopN {
 public:
  TopN(std::size_t limit, Before before) : limit_(limit), before_(std::move(before)) {}

  // Whether add(item) would keep it: what only a kept item needs (a copy of a name that may
  // be megabytes) is made for those only.
  bool admits(const T& item) const {
    return items_.size() < limit_ || (!items_.empty() && before_(item, items_.front()));
  }
  // Keeps `item` if it admits it, the worst kept making room.
  void add(T item) {
    if (items_.size() < limit_) {
      items_.push_back(std::move(item));
      std::push_heap(items_.begin(), items_.end(), before_);
    } else if (!items_.empty() && before_(item, items_.front())) {
      std::pop_heap(items_.begin(), items_.end(), before_);
      items_.back() = std::move(item);
      std::push_heap(items_.begin(), items_.end(), before_);
    }
  }
  // Those kept, in the heap's order: for the caller to sort by its table's order.
  std::vector<T> take() { return std::move(items_); }

 private:
  std::size_t limit_;
  Before before_;
  std::vector<T> items_;
};

// "compute", "communication", "memory".
const char* kindName(GpuOpKind kind);

// A kernel's name for a sentence: a C++ signature up to its arguments, at most 60 letters.
std::string shortName(std::string_view name);

// "12.5 us", "3.20 ms".
std::string shortDuration(int64_t ns);

// Adds `from` into `to`, figure by figure: devices into their trace, steps' parts.
void addTimes(TimeBreakdown& to, const TimeBreakdown& from);

// The derived figures (memory, idle), once busy and idle time are in; a breakdown of no
// window is all zeros.
void finishTimes(TimeBreakdown& t);

}  // namespace kinetrace::detail::passes
