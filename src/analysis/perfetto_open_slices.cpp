#include "analysis/perfetto_open_slices.h"

#include <utility>

#include "kinetrace/error.h"

namespace kinetrace::detail {

OpenSlices::OpenSlices(ReadBudget& budget)
    : budget_(budget),
      stacks_(0, std::hash<uint64_t>(), std::equal_to<uint64_t>(),
              BudgetAllocator<char>(budget, kOpenSlicesGrowth)),
      budgetBytes_(budget.cap() / 2) {}

OpenSlices::~OpenSlices() {
  budget_.giveBack(taken_);
}

std::size_t OpenSlices::bytesOf(const DecodedEvent& e) {
  const auto heap = [](std::size_t size) {
    return size > 15 ? size + 1 + kAllocationOverheadBytes : 0;
  };
  std::size_t bytes = heap(e.name.size()) + heap(e.category.size()) +
                      (e.flowIds.size() + e.terminatingFlowIds.size()) * sizeof(uint64_t) +
                      2 * kAllocationOverheadBytes;
  for (const Annotation& a : e.annotations) {
    bytes += sizeof(Annotation) + heap(a.name.size()) + heap(a.text.size());
  }
  return bytes;
}

// Beyond half the budget, begins are counted (as runs on their track, so an endless nesting
// takes no memory) and their ends matched to them. Half the budget bounds the slice and the
// room its stack may keep for it (twice its size, as a vector grows): the stacks' room is
// taken from the budget by their allocator, the slice's own from the budget here.
void OpenSlices::begin(DecodedEvent e) {
  BudgetVector<OpenSlice>& stack =
      stacks_.try_emplace(e.track, BudgetAllocator<OpenSlice>(budget_, kOpenSlicesGrowth))
          .first->second;
  const std::size_t bytes = bytesOf(e);
  const std::size_t counted = bytes + 2 * sizeof(OpenSlice);
  if (bytes_ + counted > budgetBytes_ || !budget_.tryTake(bytes)) {
    if (stack.empty()) stack.push_back(OpenSlice{});
    ++stack.back().leftOut;
    return;
  }
  bytes_ += counted;
  taken_ += bytes;
  try {
    stack.push_back(OpenSlice{std::move(e), true, 0, bytes});
  } catch (...) {
    bytes_ -= counted;
    taken_ -= bytes;
    budget_.giveBack(bytes);
    throw;
  }
}

std::optional<DecodedEvent> OpenSlices::end(uint64_t track) {
  auto found = stacks_.find(track);
  if (found == stacks_.end() || found->second.empty()) {
    throw Error("a slice end without its begin");
  }
  OpenSlice& top = found->second.back();
  if (top.leftOut > 0) {
    // Its begin was left out for want of memory.
    --top.leftOut;
    if (top.leftOut == 0 && !top.kept) found->second.pop_back();
    return std::nullopt;
  }
  DecodedEvent begin = std::move(top.begin);
  const std::size_t taken = top.bytes;
  found->second.pop_back();
  bytes_ -= taken + 2 * sizeof(OpenSlice);
  taken_ -= taken;
  budget_.giveBack(taken);
  return begin;
}

uint64_t OpenSlices::unended() const {
  uint64_t unended = 0;
  for (const auto& [track, stack] : stacks_) {
    for (const OpenSlice& slice : stack) unended += slice.leftOut + (slice.kept ? 1 : 0);
  }
  return unended;
}

}  // namespace kinetrace::detail
