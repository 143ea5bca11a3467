#include "model/records.h"

#include <iterator>

#include "model/gpu_source.h"
#include "model/trace_data.h"

namespace kinetrace::detail {

bool TraceRecords::empty() const { return size() == 0; }

std::size_t TraceRecords::size() const {
  std::size_t total = 0;
  forEachKind([&total](const auto& records) { total += records.size(); });
  return total;
}

std::size_t TraceRecords::bytes() const {
  std::size_t total = 0;
  forEachKind([&total](const auto& records) {
    total += records.size() * sizeof(typename std::decay_t<decltype(records)>::value_type);
  });
  return total + metricValues.size() * sizeof(double);
}

void TraceRecords::clear() {
  forEachKind([](auto& records) { records.clear(); });
  metricValues.clear();
}

void TraceRecords::append(TraceRecords&& other) {
  auto move = [](auto& to, auto& from) {
    if (to.empty()) {
      to.swap(from);
    } else {
      to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
    }
    from.clear();
  };
  // The other's metric values go after these: its indexes into them move as far.
  const auto valuesBefore = static_cast<uint32_t>(metricValues.size());
  if (valuesBefore > 0) {
    for (KernelRecord& k : other.kernels) {
      if (k.metricAverages != 0) k.metricAverages += valuesBefore;
    }
    for (GpuMetricSampleRecord& sample : other.metricSamples) sample.values += valuesBefore;
  }
  move(metricValues, other.metricValues);
  move(ranges, other.ranges);
  move(instants, other.instants);
  move(counters, other.counters);
  move(apiCalls, other.apiCalls);
  move(flows, other.flows);
  move(kernels, other.kernels);
  move(memcpys, other.memcpys);
  move(memsets, other.memsets);
  move(graphs, other.graphs);
  move(syncs, other.syncs);
  move(memory, other.memory);
  move(overheads, other.overheads);
  move(gpuSpans, other.gpuSpans);
  move(metricSamples, other.metricSamples);
}

void RecordCounts::add(const TraceRecords& r) {
  ranges += r.ranges.size();
  instants += r.instants.size();
  counters += r.counters.size();
  apiCalls += r.apiCalls.size();
  kernels += r.kernels.size();
  memcpys += r.memcpys.size();
  memsets += r.memsets.size();
  graphs += r.graphs.size();
  syncs += r.syncs.size();
  memory += r.memory.size();
  overheads += r.overheads.size();
  gpuSpans += r.gpuSpans.size();
  metricSamples += r.metricSamples.size();
}

void GpuBatch::clear() {
  records.clear();
  externalIds.clear();
  newDevices.clear();
  droppedRecords = buffersRefused = undecoded = 0;
  allRecordsBeforeNs = INT64_MAX;
  metricSet.reset();
  metricLosses = GpuMetricLosses{};
  metricsCompleteUntil.clear();
}

}  // namespace kinetrace::detail
