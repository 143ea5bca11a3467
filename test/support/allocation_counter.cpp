#include "support/allocation_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

// In a file of its own: compilers that see these definitions beside the code that calls
// them warn about malloc/free behind new/delete.

namespace {
std::atomic<bool> gCounting{false};
std::atomic<long> gAllocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (gCounting.load(std::memory_order_relaxed))
    gAllocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace kinetrace::testing {

ScopedAllocationCount::ScopedAllocationCount() {
  gAllocations.store(0);
  gCounting.store(true);
}
ScopedAllocationCount::~ScopedAllocationCount() {
  gCounting.store(false);
}
long ScopedAllocationCount::count() const {
  return gAllocations.load();
}

}  // namespace kinetrace::testing
