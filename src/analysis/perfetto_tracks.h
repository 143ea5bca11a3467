#pragma once

// The tracks a .pftrace describes (TrackDescriptor packets), by uuid: which process, thread
// or counter each is, so an event on a track can be given its pid and tid. A child track
// with no descriptor of its own (a lane PerfettoSink made for a thread's overlapping
// slices) is its thread's. Separate from the reader: a track table is filled from one kind
// of packet and only looked up from the others. Draws from the read budget.

#include <cstdint>
#include <string_view>

#include "analysis/read_budget.h"

namespace kinetrace::detail {

inline constexpr const char* kTracksGrowth = "tracks";

struct TrackInfo {
  explicit TrackInfo(ReadBudget& budget)
      : name(BudgetAllocator<char>(budget, kTracksGrowth)),
        unit(BudgetAllocator<char>(budget, kTracksGrowth)),
        category(BudgetAllocator<char>(budget, kTracksGrowth)) {}
  enum class Kind { Other, Process, Thread, Counter } kind = Kind::Other;
  int64_t pid = 0;
  int64_t tid = 0;
  uint64_t parent = 0;
  BudgetString name;
  // A counter's unit and category, when its writer gave them (a GPU metric's): its values
  // are read back as a series keyed by the unit, as the JSON trace has them.
  BudgetString unit;
  BudgetString category;
};

class TrackTable {
 public:
  explicit TrackTable(ReadBudget& budget);

  // A TrackDescriptor message: adds its track, or replaces the one of its uuid.
  void describe(std::string_view bytes);
  // The track of `uuid`; one never described is an error.
  const TrackInfo& at(uint64_t uuid) const;

 private:
  ReadBudget& budget_;
  BudgetUnorderedMap<uint64_t, TrackInfo> tracks_;
};

}  // namespace kinetrace::detail
