#include "model/lane_spans.h"

#include <algorithm>

namespace kinetrace::detail {

std::size_t LaneSpans::add(int64_t from, int64_t until) {
  if (size_ == capacity_) grow();
  const std::size_t lane = size_++;
  untils_[capacity_ + lane] = until;
  froms_[capacity_ + lane] = from;
  update(lane);
  return lane;
}

void LaneSpans::widen(std::size_t lane, int64_t from, int64_t until) {
  const std::size_t leaf = capacity_ + lane;
  untils_[leaf] = std::max(untils_[leaf], until);
  froms_[leaf] = std::min(froms_[leaf], from);
  update(lane);
}

std::size_t LaneSpans::firstApart(int64_t endsBy, int64_t startsAfter) const {
  if (size_ == 0 || !apart(1, endsBy, startsAfter)) return kNone;
  // Down from the root, to the left child whenever a lane below it is apart. Unused leaves
  // (past size_, at the right) pass only where every lane passes (a span ending at
  // INT64_MAX), so the search never ends on one.
  std::size_t node = 1;
  while (node < capacity_) {
    node *= 2;
    if (!apart(node, endsBy, startsAfter)) ++node;
  }
  return node - capacity_;
}

// Doubles the leaves: unused ones span nothing a lane could be apart from.
void LaneSpans::grow() {
  const std::size_t capacity = std::max<std::size_t>(1, capacity_ * 2);
  std::vector<int64_t> untils(2 * capacity, INT64_MAX);
  std::vector<int64_t> froms(2 * capacity, INT64_MIN);
  std::copy_n(untils_.begin() + static_cast<std::ptrdiff_t>(capacity_), size_,
              untils.begin() + static_cast<std::ptrdiff_t>(capacity));
  std::copy_n(froms_.begin() + static_cast<std::ptrdiff_t>(capacity_), size_,
              froms.begin() + static_cast<std::ptrdiff_t>(capacity));
  for (std::size_t node = capacity - 1; node >= 1; --node) {
    untils[node] = std::min(untils[2 * node], untils[2 * node + 1]);
    froms[node] = std::max(froms[2 * node], froms[2 * node + 1]);
  }
  untils_ = std::move(untils);
  froms_ = std::move(froms);
  capacity_ = capacity;
}

void LaneSpans::update(std::size_t lane) {
  for (std::size_t node = (capacity_ + lane) / 2; node >= 1; node /= 2) {
    untils_[node] = std::min(untils_[2 * node], untils_[2 * node + 1]);
    froms_[node] = std::max(froms_[2 * node], froms_[2 * node + 1]);
  }
}

}  // namespace kinetrace::detail
