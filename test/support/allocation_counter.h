#pragma once

// Counts the heap allocations made while a scope is open, to check that a hot path
// allocates nothing. Linking allocation_counter.cpp replaces the global operator new of the
// whole test program (counting is off outside a ScopedAllocationCount).

namespace kinetrace::testing {

// Allocations (operator new, any thread) since the scope opened. Scopes do not nest.
class ScopedAllocationCount {
 public:
  ScopedAllocationCount();
  ~ScopedAllocationCount();
  ScopedAllocationCount(const ScopedAllocationCount&) = delete;
  ScopedAllocationCount& operator=(const ScopedAllocationCount&) = delete;
  long count() const;
};

}  // namespace kinetrace::testing
