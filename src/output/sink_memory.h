#pragma once

#include "kinetrace/sink.h"
#include "model/memory_budget.h"

// A sink whose state grows with the trace it writes (the .pftrace writer's tracks, lanes and
// interned strings) can draw it from a budget: what an offline command (`kinetrace convert`,
// `merge`) does with its one `--memory-mb`, so that writing a stranger's trace stays within
// it as reading it does. A sink that cannot have what it needs throws kinetrace::Error
// naming the output and what grew.

namespace kinetrace::detail {

class DrawsFromBudget {
 public:
  virtual ~DrawsFromBudget() = default;
  // Before begin(). The budget outlives the sink.
  virtual void drawMemoryFrom(MemoryBudget& budget) = 0;
};

// Hands `budget` to `sink` when its state grows with the trace; nothing for a sink whose
// memory is fixed (the Chrome JSON writer's buffer).
inline void drawSinkMemoryFrom(Sink& sink, MemoryBudget& budget) {
  if (auto* drawing = dynamic_cast<DrawsFromBudget*>(&sink)) drawing->drawMemoryFrom(budget);
}

}  // namespace kinetrace::detail
