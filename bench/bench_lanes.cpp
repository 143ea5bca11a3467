// Slices laid on lanes on one track, in the shapes traces have and in those that once made
// it quadratic: SliceLanes (the .pftrace writer) places each slice and finds the lane of a
// point at its start, as a launch arrow's; LaneAllocator (the assembler) places each
// interval. The first argument is the shape (also the label), the second the slices.
//
//   bench_lanes --benchmark_counters_tabular=true
//
// items_per_second counts slices placed.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "correlate/lane_allocator.h"
#include "output/perfetto_lanes.h"

namespace kinetrace::detail {
namespace {

struct Slice {
  int64_t start, end;
};

enum Shape : int64_t { kStream, kOverlapping, kNestedRanges, kCrossing, kNestedDeep, kBackwards };
constexpr const char* kShapeNames[] = {"stream",   "overlapping",       "nested ranges",
                                       "crossing", "nested deep first", "backwards"};

// kStream: kernels one after another. kOverlapping: kernels three at a time (programmatic
// dependent launch). kNestedRanges: host ranges four deep, each written at its end, inner
// ones first (as kinetrace writes them). kCrossing: every slice crossing every other.
// kNestedDeep: every slice inside the one before (make_lane_traces.py's nested). kBackwards:
// slices apart, from the last to the first (its reverse).
std::vector<Slice> slices(int64_t shape, int64_t count) {
  std::vector<Slice> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int64_t i = 0; static_cast<int64_t>(out.size()) < count; ++i) {
    switch (shape) {
      case kStream:
        out.push_back({i * 1'000, i * 1'000 + 800});
        break;
      case kOverlapping:
        out.push_back({i * 1'000, i * 1'000 + 2'500});
        break;
      case kNestedRanges:
        for (int64_t depth = 3; depth >= 0; --depth) {
          out.push_back({i * 10'000 + depth * 100, i * 10'000 + 9'000 - depth * 100});
        }
        break;
      case kCrossing:
        out.push_back({i, i + count});
        break;
      case kNestedDeep:
        out.push_back({i * 1'000, (2 * count - i) * 1'000});
        break;
      default:
        out.push_back({(count - i) * 2'000, (count - i) * 2'000 + 1'000});
        break;
    }
  }
  out.resize(static_cast<std::size_t>(count));
  return out;
}

void BM_SliceLanes(benchmark::State& state) {
  const std::vector<Slice> input = slices(state.range(0), state.range(1));
  state.SetLabel(kShapeNames[state.range(0)]);
  std::size_t lanes = 0;
  for (auto _ : state) {
    SliceLanes placer;
    for (const Slice& s : input) {
      benchmark::DoNotOptimize(placer.place(s.start, s.end));
      benchmark::DoNotOptimize(placer.laneAt(s.start));
    }
    lanes = placer.laneCount();
  }
  state.SetItemsProcessed(state.iterations() * state.range(1));
  state.counters["lanes"] = static_cast<double>(lanes);
}

void BM_LaneAllocator(benchmark::State& state) {
  const std::vector<Slice> input = slices(state.range(0), state.range(1));
  state.SetLabel(kShapeNames[state.range(0)]);
  std::size_t lanes = 0;
  for (auto _ : state) {
    LaneAllocator placer;
    for (const Slice& s : input) benchmark::DoNotOptimize(placer.place(s.start, s.end));
    lanes = placer.laneCount();
  }
  state.SetItemsProcessed(state.iterations() * state.range(1));
  state.counters["lanes"] = static_cast<double>(lanes);
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t shape : {kStream, kOverlapping, kNestedRanges, kCrossing}) {
    for (int64_t count : {10'000, 100'000}) b->Args({shape, count});
  }
}

// The shapes a try on one of SliceLanes' lanes once took quadratic time on.
void outOfOrder(benchmark::internal::Benchmark* b) {
  for (int64_t shape : {kNestedDeep, kBackwards}) {
    for (int64_t count : {10'000, 100'000}) b->Args({shape, count});
  }
}

BENCHMARK(BM_SliceLanes)->Apply(shapes)->Apply(outOfOrder)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LaneAllocator)->Apply(shapes)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kinetrace::detail

BENCHMARK_MAIN();
