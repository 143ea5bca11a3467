#include "correlate/range_spans.h"

#include <algorithm>

namespace kinetrace::detail {

void RangeSpans::onBegin(uint64_t id, uint64_t parentId, StringId name) {
  RangeState& state = ranges_[id];
  state.parentId = parentId;
  state.name = name;
}

void RangeSpans::onAsyncBegin(uint64_t id, StringId name) {
  ranges_[id].name = name;
}

void RangeSpans::onEnd(uint64_t id, int64_t endNs) {
  auto state = ranges_.find(id);
  if (state == ranges_.end()) return;
  state->second.endNs = endNs;
  closed_.push_back(id);
}

void RangeSpans::extend(const GpuPlacement& at) {
  uint64_t id = at.externalId;
  for (int guard = 0; id != 0 && guard < 512; ++guard) {
    auto range = ranges_.find(id);
    if (range == ranges_.end()) return;
    auto& spans = range->second.spans;
    auto span = std::find_if(spans.begin(), spans.end(), [&](const SpanState& s) {
      return s.deviceId == at.deviceId && s.streamId == at.streamId;
    });
    if (span == spans.end()) {
      spans.push_back(SpanState{at.deviceId, at.streamId, at.startNs, at.endNs});
    } else {
      span->startNs = std::min(span->startNs, at.startNs);
      span->endNs = std::max(span->endNs, at.endNs);
    }
    id = range->second.parentId;
  }
}

void RangeSpans::finalize(uint64_t id, const RangeState& state, std::vector<GpuSpanRecord>& out) {
  for (const SpanState& span : state.spans) {
    GpuSpanRecord g;
    g.startNs = span.startNs;
    g.endNs = span.endNs;
    g.externalId = id;
    g.name = state.name;
    g.deviceId = span.deviceId;
    g.streamId = span.streamId;
    g.lane =
        lanes_.place(span.deviceId, span.streamId, StreamTrack::Spans, span.startNs, span.endNs);
    out.push_back(g);
  }
}

void RangeSpans::release(int64_t completeNs, std::vector<GpuSpanRecord>& out) {
  while (!closed_.empty()) {
    auto state = ranges_.find(closed_.front());
    if (state != ranges_.end()) {
      if (state->second.endNs >= completeNs) break;
      finalize(state->first, state->second, out);
      ranges_.erase(state);
    }
    closed_.pop_front();
  }
}

void RangeSpans::finish(std::vector<GpuSpanRecord>& out) {
  for (const auto& [id, state] : ranges_) finalize(id, state, out);
  ranges_.clear();
  closed_.clear();
}

std::size_t RangeSpans::heldBytes() const {
  // Hash-map nodes cost about their payload plus two pointers and a hash.
  constexpr std::size_t kNode = 32;
  std::size_t bytes = 0;
  for (const auto& [id, state] : ranges_)
    bytes += sizeof(RangeState) + kNode + state.spans.size() * sizeof(SpanState);
  bytes += closed_.size() * sizeof(uint64_t);
  return bytes;
}

}  // namespace kinetrace::detail
