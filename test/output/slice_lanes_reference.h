#pragma once

// SliceLanes as it placed slices before its lanes were search trees (kinetrace 22800ee): a
// tree of nested slices per lane, tried by walking down the slices that hold the new one.
// Quadratic when slices come out of time order, and kept here only as the reference the
// trees are compared with on small inputs. One difference is known and counted: past the
// budget it forgot only the slices ending before the median end even when fewer than a
// quarter did (SliceLanes then forgets those ending at it too).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

#include "model/lane_spans.h"
#include "output/slice_index.h"

namespace kinetrace::detail::reference {

class SliceLanes {
 public:
  static constexpr std::size_t kTriedLanes = 16;

  explicit SliceLanes(std::size_t budget) : budget_(budget) {}

  std::size_t place(int64_t startNs, int64_t endNs) {
    const std::size_t lane = placeOnALane(startNs, endNs);
    if (++remembered_ > budget_) forgetOlderHalf();
    return lane;
  }

  std::size_t laneAt(int64_t timeNs) const {
    if (lanes_.size() + furtherSpans_.size() <= 1) return 0;
    std::size_t lane = 0;
    int64_t bestStart = 0, bestEnd = 0;
    bool found = false;
    auto consider = [&](int64_t start, int64_t end, std::size_t onLane) {
      if (!found || start > bestStart || (start == bestStart && end < bestEnd)) {
        found = true;
        bestStart = start;
        bestEnd = end;
        lane = onLane;
      }
    };
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
      if (const Node* inner = innermost(lanes_[i].roots, timeNs)) {
        consider(inner->start, inner->end, i);
      }
    }
    if (const std::optional<SliceIndex::Slice> further = furtherSlices_.innermost(timeNs)) {
      consider(further->start, further->end, further->lane);
    }
    return lane;
  }

  std::size_t remembered() const { return remembered_; }
  // Forgettings where fewer than a quarter of the slices remembered ended before the median
  // end (and some did): from the first of them on, SliceLanes forgets more.
  std::size_t scantForgettings() const { return scantForgettings_; }

  void forgetOlderHalf() {
    std::vector<int64_t> ends;
    for (const Lane& lane : lanes_) collectEnds(lane.roots, &ends);
    furtherSlices_.collectEnds(&ends);
    if (ends.empty()) return;
    auto middle = ends.begin() + static_cast<std::ptrdiff_t>(ends.size() / 2);
    std::nth_element(ends.begin(), middle, ends.end());
    int64_t horizon = *middle;
    const auto before = static_cast<std::size_t>(
        std::count_if(ends.begin(), middle, [horizon](int64_t end) { return end < horizon; }));
    if (before > 0 && 4 * before < ends.size()) ++scantForgettings_;
    if (*std::min_element(ends.begin(), ends.end()) == horizon) ++horizon;
    for (Lane& lane : lanes_) {
      remembered_ -= std::min(remembered_, forgetBefore(lane.roots, horizon));
      lane.forgottenUntil = std::max(lane.forgottenUntil, horizon);
    }
    // The further lanes' index forgets inclusively now: the last end before the horizon.
    remembered_ -= std::min(remembered_, furtherSlices_.forgetEndingBy(horizon - 1));
  }

 private:
  struct Node {
    int64_t start = 0;
    int64_t end = 0;
    std::vector<Node> children;  // apart from each other, by start
  };
  struct Lane {
    std::vector<Node> roots;  // apart from each other, by start
    int64_t forgottenUntil = INT64_MIN;
  };

  std::size_t placeOnALane(int64_t startNs, int64_t endNs) {
    for (std::size_t i = 0; i < kTriedLanes; ++i) {
      if (i == lanes_.size()) lanes_.emplace_back();
      Lane& lane = lanes_[i];
      if (startNs < lane.forgottenUntil) continue;
      if (tryPlace(lane.roots, startNs, endNs)) return i;
    }
    std::size_t further = furtherSpans_.firstApart(startNs, endNs);
    if (further == LaneSpans::kNone) {
      further = furtherSpans_.add(startNs, endNs);
    } else {
      furtherSpans_.widen(further, startNs, endNs);
    }
    const std::size_t lane = kTriedLanes + further;
    furtherSlices_.insert({startNs, endNs, lane});
    return lane;
  }

  static bool tryPlace(std::vector<Node>& roots, int64_t start, int64_t end) {
    std::vector<Node>* down = &roots;
    std::vector<Node>::iterator after;
    for (;;) {
      std::vector<Node>& level = *down;
      after = !level.empty() && level.back().start <= start
                  ? level.end()
                  : std::upper_bound(level.begin(), level.end(), start,
                                     [](int64_t t, const Node& n) { return t < n.start; });
      if (after == level.begin()) break;
      Node& before = *std::prev(after);
      if (before.start == start && before.end == start && end == start) {
        before.children.push_back(Node{start, end, {}});
        return true;
      }
      if (before.start <= start && end <= before.end && before.end > start) {
        if (end == before.end && end > start && after != level.end() && after->start == end &&
            after->end > after->start) {
          return false;
        }
        down = &before.children;
        continue;
      }
      if (before.end > start && !(before.start == start && before.end == start)) return false;
      break;
    }
    std::vector<Node>& level = *down;
    auto first = after;
    while (first != level.begin() && std::prev(first)->start == start) --first;
    auto last = first;
    for (; last != level.end() && last->start <= end; ++last) {
      const Node& n = *last;
      if (n.start == end && n.start != start) {
        if (n.end != n.start) return false;
        continue;
      }
      if (n.end > end) return false;
      if (n.start == start && n.end != start && n.end != end) return false;
    }
    auto inside = first;
    while (inside != last && (inside->start < end || inside->start == start)) ++inside;
    Node node;
    node.start = start;
    node.end = end;
    node.children.assign(std::make_move_iterator(first), std::make_move_iterator(inside));
    const auto at = level.erase(first, inside);
    level.insert(at, std::move(node));
    return true;
  }

  static const Node* innermost(const std::vector<Node>& roots, int64_t timeNs) {
    const Node* best = nullptr;
    for (const std::vector<Node>* level = &roots;;) {
      auto after = std::upper_bound(level->begin(), level->end(), timeNs,
                                    [](int64_t t, const Node& n) { return t < n.start; });
      if (after == level->begin()) return best;
      const Node& n = *std::prev(after);
      if (!(timeNs < n.end || n.start == timeNs)) return best;
      best = &n;
      level = &n.children;
    }
  }

  // The inputs compared are small: the recursions below stay shallow.
  static void collectEnds(const std::vector<Node>& level, std::vector<int64_t>* ends) {
    for (const Node& n : level) {
      ends->push_back(n.end);
      collectEnds(n.children, ends);
    }
  }

  static std::size_t forgetBefore(std::vector<Node>& level, int64_t horizonNs) {
    std::size_t dropped = 0;
    std::vector<Node> kept;
    for (Node& n : level) {
      if (n.end < horizonNs) {
        std::vector<int64_t> inside;
        collectEnds(n.children, &inside);
        dropped += 1 + inside.size();
      } else {
        dropped += forgetBefore(n.children, horizonNs);
        kept.push_back(std::move(n));
      }
    }
    level = std::move(kept);
    return dropped;
  }

  std::vector<Lane> lanes_;
  LaneSpans furtherSpans_;
  SliceIndex furtherSlices_;
  std::size_t budget_;
  std::size_t remembered_ = 0;
  std::size_t scantForgettings_ = 0;
};

}  // namespace kinetrace::detail::reference
