#include "model/records.h"

#include <iterator>

#include "model/gpu_source.h"
#include "model/trace_data.h"

namespace kinetrace::detail {

bool TraceRecords::empty() const { return size() == 0; }

std::size_t TraceRecords::size() const {
  std::size_t total = 0;
  forEachKind([&total](RecordKind, const auto& records) { total += records.size(); });
  return total;
}

std::size_t TraceRecords::bytes() const {
  std::size_t total = 0;
  forEachKind([&total](RecordKind, const auto& records) {
    total += records.size() * sizeof(typename std::decay_t<decltype(records)>::value_type);
  });
  return total + metricValues.size() * sizeof(double);
}

void TraceRecords::clear() {
  forEachKind([](RecordKind, auto& records) { records.clear(); });
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
#define KINETRACE_RECORD_MOVE(Kind, Type, member, countKey, stat) move(member, other.member);
  KINETRACE_RECORD_KINDS(KINETRACE_RECORD_MOVE)
#undef KINETRACE_RECORD_MOVE
}

void RecordCounts::add(const TraceRecords& records) {
  records.forEachKind(
      [this](RecordKind kind, const auto& ofKind) { (*this)[kind] += ofKind.size(); });
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
