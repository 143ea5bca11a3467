#include "analysis/trace_collector.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <optional>

#include "output/trace_vocabulary.h"

namespace kinetrace::detail {
namespace {

std::optional<int64_t> intArg(const Event& event, std::string_view key) {
  for (std::size_t i = 0; i < event.argCount; ++i) {
    if (event.args[i].key != key) continue;
    const ArgValue& value = event.args[i].value;
    if (const auto* v = std::get_if<int64_t>(&value)) return *v;
    if (const auto* v = std::get_if<uint64_t>(&value)) return static_cast<int64_t>(*v);
    if (const auto* v = std::get_if<double>(&value)) return static_cast<int64_t>(*v);
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string_view> textArg(const Event& event, std::string_view key) {
  for (std::size_t i = 0; i < event.argCount; ++i) {
    if (event.args[i].key != key) continue;
    if (const auto* v = std::get_if<std::string_view>(&event.args[i].value)) return *v;
    return std::nullopt;
  }
  return std::nullopt;
}

bool containsNoCase(std::string_view text, std::string_view part) {
  auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  return std::search(text.begin(), text.end(), part.begin(), part.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != text.end();
}

bool isDataLoading(std::string_view name) {
  return containsNoCase(name, "dataloader") || containsNoCase(name, "data_loader") ||
         containsNoCase(name, "data loader");
}

// A step's range: torch.profiler's and kinetrace's "ProfilerStep#N", or a range named
// "step" and its number ("step 12", "Step#3", "step_4"), as `kinetrace run`'s NVTX step
// marks are named. The number keeps "step" in other names (optimizer.step) out.
bool isStep(std::string_view name) {
  if (name.rfind(chrome::kProfilerStepPrefix, 0) == 0) return true;
  if (name.size() < 5 || !containsNoCase(name.substr(0, 4), "step")) return false;
  std::size_t at = 4;
  while (at < name.size() && (name[at] == ' ' || name[at] == '#' || name[at] == '_' ||
                              name[at] == ':' || name[at] == '-'))
    ++at;
  return at < name.size() && std::isdigit(static_cast<unsigned char>(name[at]));
}

SyncKind syncKindOf(std::string_view name) {
  if (name == "Stream Wait Event") return SyncKind::StreamWaitEvent;
  if (name == "Event Sync") return SyncKind::EventSync;
  if (name == "Stream Sync") return SyncKind::StreamSync;
  if (name == "Context Sync") return SyncKind::ContextSync;
  return SyncKind::Other;
}

}  // namespace

uint32_t TraceCollector::intern(std::string_view name) {
  key_.assign(name.data(), name.size());
  auto found = ids_.find(key_);
  if (found != ids_.end()) return found->second;
  const auto id = static_cast<uint32_t>(trace_.names.size());
  trace_.names.push_back(key_);
  ids_.emplace(key_, id);
  return id;
}

void TraceCollector::begin(const TraceHeader& header) {
  noteMetricsMetadata(header.metadata);
  for (const Value::Member& member : header.metadata) {
    if (member.key != chrome::kDistributedInfo) continue;
    if (const Value* rank = member.value.find(chrome::kRank)) {
      if (rank->kind() == Value::Kind::Int) trace_.rank = rank->asInt();
    }
  }
}

void TraceCollector::write(const Event& event) {
  if (event.phase == Phase::Metadata) return;
  if (event.phase == Phase::Complete && event.durationNs < 0) {
    // A range that ends before it starts: summing it would take time away from the rest.
    ++trace_.leftOut["events with a negative duration (\"dur\")"];
    return;
  }
  ++trace_.events;
  int64_t end = event.timestampNs;
  if (event.phase == Phase::Complete && __builtin_add_overflow(end, event.durationNs, &end)) {
    end = INT64_MAX;
  }
  if (!any_ || event.timestampNs < trace_.firstNs) trace_.firstNs = event.timestampNs;
  if (!any_ || end > trace_.lastNs) trace_.lastNs = end;
  any_ = true;

  if (event.phase == Phase::Instant && event.name == chrome::kMemoryEventName) {
    if (auto allocated = intArg(event, chrome::kArgTotalAllocated)) {
      trace_.memory.add({{event.timestampNs, *allocated}, trace_.memory.size()});
    }
    return;
  }
  if (event.phase != Phase::Complete) return;
  const std::string_view cat = event.category;
  if (cat == chrome::kCatKernel || cat == chrome::kCatMemcpy || cat == chrome::kCatMemset ||
      cat == chrome::kCatCudaGraph) {
    CollectedGpuOp op;
    op.startNs = event.timestampNs;
    op.endNs = end;
    op.deviceId = static_cast<uint32_t>(intArg(event, chrome::kArgDevice).value_or(event.pid));
    op.streamId = static_cast<uint32_t>(intArg(event, chrome::kArgStream).value_or(event.tid));
    // CUPTI's ids are 32-bit: a number outside them is not one, and joins no call.
    const int64_t correlation = intArg(event, chrome::kArgCorrelation).value_or(0);
    op.correlationId =
        correlation > 0 && correlation <= UINT32_MAX ? static_cast<uint32_t>(correlation) : 0;
    op.externalId = static_cast<uint64_t>(intArg(event, chrome::kArgExternalId).value_or(0));
    op.name = intern(event.name);
    op.sequence = trace_.gpuOps.size();
    // A whole graph's run (graph-level tracing) counts as compute: what ran inside is not
    // in the trace.
    op.kind = cat == chrome::kCatCudaGraph         ? GpuOpKind::Compute
              : cat != chrome::kCatKernel          ? GpuOpKind::Memory
              : containsNoCase(event.name, "nccl") ? GpuOpKind::Communication
                                                   : GpuOpKind::Compute;
    trace_.gpuOps.add(op);
    noteNcclCall(event);
    if (cat == chrome::kCatKernel) noteKernelMetrics(event, op);
    return;
  }
  if (cat == chrome::kCatCudaSync) {
    CollectedSync sync;
    sync.startNs = event.timestampNs;
    sync.endNs = end;
    sync.sequence = trace_.syncs.size();
    sync.device = static_cast<uint32_t>(intArg(event, chrome::kArgDevice).value_or(event.pid));
    sync.kind = syncKindOf(event.name);
    // Context and event syncs are on no stream: torch.profiler writes -1, kinetrace 0.
    const int64_t stream = intArg(event, chrome::kArgStream).value_or(-1);
    sync.stream = sync.kind == SyncKind::ContextSync || sync.kind == SyncKind::EventSync ||
                          stream < 0 || stream > INT32_MAX
                      ? -1
                      : static_cast<int32_t>(stream);
    const int64_t waitOn = intArg(event, "wait_on_stream").value_or(-1);
    sync.waitOnStream = waitOn < 0 || waitOn > INT32_MAX ? -1 : static_cast<int32_t>(waitOn);
    trace_.syncs.add(sync);
    return;
  }
  if (cat == chrome::kCatGpuAnnotation || cat == chrome::kCatOverhead) return;
  if (cat == chrome::kCatCudaRuntime || cat == chrome::kCatCudaDriver) {
    if (auto correlation = intArg(event, chrome::kArgCorrelation)) {
      trace_.calls.add(
          CollectedCall{static_cast<uint64_t>(*correlation), event.timestampNs, end, event.tid});
    }
    return;
  }
  CollectedRange range{event.timestampNs, end, event.tid, intern(event.name)};
  if (isStep(event.name)) trace_.steps.push_back(range);
  if (isDataLoading(event.name)) trace_.dataLoading.push_back(range);
  if (event.name.rfind("c10d::", 0) == 0) {
    trace_.collectiveCalls.add({event.timestampNs, trace_.collectiveCalls.size(), range.name});
  }
  if (auto externalId = intArg(event, chrome::kArgExternalId); externalId && *externalId != 0) {
    // Ids are unique per range in kinetrace's traces; torch.profiler may give a cpu_op and
    // its record_function one id, and either name serves to say what issued a kernel: the
    // first in the trace is kept.
    trace_.rangeOfExternalId.add(
        {static_cast<uint64_t>(*externalId), trace_.rangeOfExternalId.size(), range.name});
  }
  trace_.hostRanges.add(range);
}

void TraceCollector::noteNcclCall(const Event& event) {
  const std::optional<std::string_view> call = textArg(event, chrome::kArgNcclCall);
  // A communicator's creation and destruction launch set-up work, not transfers.
  if (!call || call->rfind("ncclComm", 0) == 0) return;
  auto found = std::find_if(trace_.ncclCalls.begin(), trace_.ncclCalls.end(),
                            [&](const auto& entry) { return entry.first == *call; });
  if (found == trace_.ncclCalls.end()) {
    trace_.ncclCalls.emplace_back(std::string(*call), NcclCallTotals{});
    found = trace_.ncclCalls.end() - 1;
  }
  NcclCallTotals& totals = found->second;
  ++totals.operations;
  totals.bytes +=
      static_cast<uint64_t>(std::max<int64_t>(intArg(event, chrome::kArgNcclBytes).value_or(0), 0));
  totals.gpuNs += event.durationNs;
}

namespace {

// A metric average's key names its metric and unit: "SM throughput (%)". Only the units GPU
// metrics have are taken, so another tool's "(...)" argument is not read as one.
std::optional<MetricName> metricOfKey(std::string_view key) {
  if (key.empty() || key.back() != ')') return std::nullopt;
  const std::size_t open = key.rfind(" (");
  if (open == std::string_view::npos || open == 0) return std::nullopt;
  const std::string_view unit = key.substr(open + 2, key.size() - open - 3);
  if (unit != chrome::kUnitPercent && unit != chrome::kUnitBytesPerSecond) return std::nullopt;
  return MetricName{std::string(key.substr(0, open)), std::string(unit)};
}

}  // namespace

void TraceCollector::noteKernelMetrics(const Event& event, const CollectedGpuOp& op) {
  ++trace_.gpuMetrics.kernels;
  KernelMetricValue record;
  record.startNs = op.startNs;
  record.endNs = op.endNs;
  record.sequence = op.sequence;
  record.name = op.name;
  bool any = false;
  for (std::size_t i = 0; i < event.argCount; ++i) {
    const ArgValue& value = event.args[i].value;
    double number = 0;
    if (const auto* d = std::get_if<double>(&value)) {
      number = *d;
    } else if (const auto* whole = std::get_if<int64_t>(&value)) {
      number = static_cast<double>(*whole);
    } else if (const auto* u = std::get_if<uint64_t>(&value)) {
      number = static_cast<double>(*u);
    } else {
      continue;
    }
    const std::string_view key = event.args[i].key;
    key_.assign(key.data(), key.size());
    auto found = metricIds_.find(key_);
    if (found == metricIds_.end()) {
      std::optional<MetricName> metric = metricOfKey(key);
      if (!metric) continue;
      if (trace_.gpuMetrics.metrics.size() == kMaxKernelMetrics) {
        ++trace_.leftOut[fmt::format("kernel metric averages past the first {} metrics",
                                     kMaxKernelMetrics)];
        continue;
      }
      found =
          metricIds_.emplace(key_, static_cast<uint32_t>(trace_.gpuMetrics.metrics.size())).first;
      trace_.gpuMetrics.metrics.push_back(std::move(*metric));
    }
    if (!std::isfinite(number)) {
      ++trace_.leftOut["kernel metric averages that are not finite numbers"];
      continue;
    }
    record.metric = found->second;
    record.value = number;
    trace_.kernelMetrics.add(record);
    any = true;
  }
  if (any) {
    ++trace_.gpuMetrics.kernelsWithMetrics;
  } else {
    record.metric = KernelMetricValue::kNoMetric;
    record.value = 0;
    trace_.kernelMetrics.add(record);
  }
}

// "kinetrace_gpu_metrics": {"metrics": [...], "interval_ns", "samples", "lost", "corrupted",
// "setup_dropped", "kernels_without_their_samples"}; the footer's is the later word.
void TraceCollector::noteMetricsMetadata(const Metadata& metadata) {
  for (const Value::Member& member : metadata) {
    if (member.key != chrome::kGpuMetrics || member.value.kind() != Value::Kind::Object) continue;
    GpuMetricsReport& m = trace_.gpuMetrics;
    m.hasMetadata = true;
    auto number = [&member](const char* key) -> uint64_t {
      const Value* v = member.value.find(key);
      if (v == nullptr) return 0;
      if (v->kind() == Value::Kind::Int)
        return static_cast<uint64_t>(std::max<int64_t>(0, v->asInt()));
      if (v->kind() == Value::Kind::Uint) return v->asUint();
      if (v->kind() == Value::Kind::Double)
        return static_cast<uint64_t>(std::max(0.0, v->asDouble()));
      return 0;
    };
    m.intervalNs = static_cast<int64_t>(number("interval_ns"));
    m.samples = number("samples");
    m.lost = number("lost");
    m.corrupted = number("corrupted");
    m.setupDropped = number("setup_dropped");
    m.kernelsWithoutTheirSamples = number("kernels_without_their_samples");
  }
}

void TraceCollector::end(const Metadata& footer) {
  noteMetricsMetadata(footer);
}

}  // namespace kinetrace::detail
