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

// A numeric argument as the model holds it, or why not: an unsigned one past int64 or a
// fraction is not made another number by a cast. One that is not a number (a string) is
// taken as absent, as ever.
struct IntArg {
  enum class Status { Absent, Fits, DoesNotFit } status = Status::Absent;
  int64_t value = 0;
  uint64_t unsignedValue = 0;  // for ids that are unsigned: as given, when not negative
  bool fitsUnsigned = false;
};

IntArg intArg(const Event& event, std::string_view key) {
  IntArg out;
  for (std::size_t i = 0; i < event.argCount; ++i) {
    if (event.args[i].key != key) continue;
    const ArgValue& value = event.args[i].value;
    if (const auto* v = std::get_if<int64_t>(&value)) {
      out.status = IntArg::Status::Fits;
      out.value = *v;
      out.fitsUnsigned = *v >= 0;
      out.unsignedValue = static_cast<uint64_t>(*v);
    } else if (const auto* u = std::get_if<uint64_t>(&value)) {
      out.fitsUnsigned = true;
      out.unsignedValue = *u;
      out.status = IntArg::Status::DoesNotFit;
      if (*u <= static_cast<uint64_t>(INT64_MAX)) {
        out.status = IntArg::Status::Fits;
        out.value = static_cast<int64_t>(*u);
      }
    } else if (const auto* d = std::get_if<double>(&value)) {
      out.status = IntArg::Status::DoesNotFit;
      // A whole number written as a double ("device": 1.0) is that number; 2^63 is exact.
      if (std::isfinite(*d) && std::trunc(*d) == *d && *d >= -9223372036854775808.0 &&
          *d < 9223372036854775808.0) {
        out.status = IntArg::Status::Fits;
        out.value = static_cast<int64_t>(*d);
        out.fitsUnsigned = out.value >= 0;
        out.unsignedValue = static_cast<uint64_t>(out.value);
      }
    }
    return out;
  }
  return out;
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

CollectedTrace::CollectedTrace(ReadBudget& readBudget, std::size_t bytesPerList)
    : budget(&readBudget),
      listBytes(bytesPerList),
      names(BudgetAllocator<BudgetString>(readBudget, "distinct names")),
      gpuOps(readBudget, "the list of GPU operations", listBytes),
      calls(readBudget, "the list of launch calls", listBytes),
      syncs(readBudget, "the list of synchronisations", listBytes),
      steps(BudgetAllocator<CollectedRange>(readBudget, "step ranges")),
      dataLoading(BudgetAllocator<CollectedRange>(readBudget, "data-loading ranges")),
      hostRanges(readBudget, "the list of host ranges", listBytes),
      gpuAnnotations(readBudget, "the list of GPU annotations", listBytes),
      copies(readBudget, "the list of copies", listBytes),
      rangeOfExternalId(readBudget, "the list of External ids", listBytes),
      memory(readBudget, "the list of memory samples", listBytes),
      collectiveCalls(readBudget, "the list of collective calls", listBytes),
      ncclCalls(BudgetAllocator<std::pair<BudgetString, NcclCallTotals>>(readBudget, "NCCL calls")),
      kernelMetrics(readBudget, "the list of kernel metrics", listBytes),
      metricSamples(readBudget, "the list of GPU metric samples", listBytes),
      criticalPathEvents(readBudget, "the list of the critical path's events", listBytes),
      threadNames(BudgetAllocator<std::pair<int64_t, uint32_t>>(readBudget, "thread names")),
      metricsHeld(readBudget) {}

TraceCollector::TraceCollector(std::string path, ReadBudget& budget)
    : TraceCollector(std::move(path), budget, listBytesOf(budget.cap())) {}

TraceCollector::TraceCollector(std::string path, ReadBudget& budget, std::size_t bytesPerList)
    : trace_(budget, bytesPerList),
      ids_(0, NameHash{this}, NameEqual{this},
           BudgetAllocator<uint32_t>(budget, "distinct names")) {
  trace_.path = std::move(path);
}

uint32_t TraceCollector::intern(std::string_view name) {
  probe_ = name;
  auto found = ids_.find(kProbe);
  if (found != ids_.end()) return *found;
  const auto id = static_cast<uint32_t>(trace_.names.size());
  trace_.names.emplace_back(name.data(), name.size(), trace_.names.get_allocator());
  ids_.insert(id);
  return id;
}

void TraceCollector::begin(const TraceHeader& header) {
  noteMetricsMetadata(header.metadata);
  noteRankAndGpuStatus(header.metadata);
}

void TraceCollector::noteRankAndGpuStatus(const Metadata& metadata) {
  for (const Value::Member& member : metadata) {
    if (member.key == chrome::kGpuStatus && member.value.kind() == Value::Kind::String) {
      // A sentence, cut where a hostile trace would make it a megabyte.
      constexpr std::size_t kMostStatusBytes = 1000;
      trace_.gpuStatus = member.value.asString().substr(0, kMostStatusBytes);
    }
    // CUPTI's version is written when it recorded: the status then says how, not why not.
    if (member.key == "cupti_version") trace_.gpuRecorded = true;
    if (member.key != chrome::kDistributedInfo) continue;
    if (const Value* rank = member.value.find(chrome::kRank)) {
      if (rank->kind() == Value::Kind::Int) trace_.rank = rank->asInt();
    }
  }
}

void TraceCollector::write(const Event& event) {
  const uint64_t ordinal = written_++;
  if (event.phase == Phase::Metadata) {
    if (event.name == chrome::kThreadName) {
      if (const std::optional<std::string_view> name = textArg(event, chrome::kNamingName)) {
        trace_.threadNames.emplace_back(event.tid, intern(*name));
      }
    }
    return;
  }
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
    const IntArg allocated = intArg(event, chrome::kArgTotalAllocated);
    if (allocated.status == IntArg::Status::Fits) {
      trace_.memory.add({{event.timestampNs, allocated.value}, trace_.memory.size()});
    } else if (allocated.status == IntArg::Status::DoesNotFit) {
      ++trace_.leftOut["memory samples whose \"Total Allocated\" is not a 64-bit integer"];
    }
    return;
  }
  if (event.phase == Phase::Counter && event.category == chrome::kCatGpuMetric) {
    noteMetricSample(event);
    return;
  }
  if (event.phase != Phase::Complete) return;
  if (trace_.keptCriticalPathEvents) noteCriticalPathEvent(event, end, ordinal);
  const std::string_view cat = event.category;
  if (cat == chrome::kCatKernel || cat == chrome::kCatMemcpy || cat == chrome::kCatMemset ||
      cat == chrome::kCatCudaGraph) {
    const IntArg device = intArg(event, chrome::kArgDevice);
    const IntArg stream = intArg(event, chrome::kArgStream);
    if (device.status == IntArg::Status::DoesNotFit ||
        stream.status == IntArg::Status::DoesNotFit) {
      ++trace_.leftOut["GPU operations whose device or stream is not a 64-bit integer"];
      return;
    }
    CollectedGpuOp op;
    op.startNs = event.timestampNs;
    op.endNs = end;
    op.device = device.status == IntArg::Status::Fits ? device.value : event.pid;
    op.stream = stream.status == IntArg::Status::Fits ? stream.value : event.tid;
    // A correlation or External id is any unsigned 64-bit number; one that is not (negative,
    // a fraction) joins nothing.
    const IntArg correlation = intArg(event, chrome::kArgCorrelation);
    op.correlationId = correlation.fitsUnsigned ? correlation.unsignedValue : 0;
    const IntArg externalId = intArg(event, chrome::kArgExternalId);
    op.externalId = externalId.fitsUnsigned ? externalId.unsignedValue : 0;
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
    noteCopy(event, op);
    if (cat == chrome::kCatKernel) noteKernelMetrics(event, op);
    return;
  }
  if (cat == chrome::kCatCudaSync) {
    const IntArg device = intArg(event, chrome::kArgDevice);
    const IntArg stream = intArg(event, chrome::kArgStream);
    const IntArg waitOn = intArg(event, "wait_on_stream");
    if (device.status == IntArg::Status::DoesNotFit ||
        stream.status == IntArg::Status::DoesNotFit ||
        waitOn.status == IntArg::Status::DoesNotFit) {
      ++trace_.leftOut["synchronisations whose device or stream is not a 64-bit integer"];
      return;
    }
    CollectedSync sync;
    sync.startNs = event.timestampNs;
    sync.endNs = end;
    sync.sequence = trace_.syncs.size();
    sync.device = device.status == IntArg::Status::Fits ? device.value : event.pid;
    sync.kind = syncKindOf(event.name);
    // Context and event syncs are on no stream: torch.profiler writes -1, kinetrace 0.
    const bool onStream = sync.kind != SyncKind::ContextSync && sync.kind != SyncKind::EventSync &&
                          stream.status == IntArg::Status::Fits && stream.value >= 0;
    sync.stream = onStream ? stream.value : -1;
    sync.waitOnStream =
        waitOn.status == IntArg::Status::Fits && waitOn.value >= 0 ? waitOn.value : -1;
    trace_.syncs.add(sync);
    return;
  }
  if (cat == chrome::kCatGpuAnnotation) {
    const IntArg device = intArg(event, chrome::kArgDevice);
    const IntArg stream = intArg(event, chrome::kArgStream);
    if (device.status == IntArg::Status::DoesNotFit ||
        stream.status == IntArg::Status::DoesNotFit) {
      ++trace_.leftOut["GPU annotations whose device or stream is not a 64-bit integer"];
      return;
    }
    trace_.gpuAnnotations.add({event.timestampNs, end,
                               device.status == IntArg::Status::Fits ? device.value : event.pid,
                               stream.status == IntArg::Status::Fits ? stream.value : event.tid,
                               trace_.gpuAnnotations.size(), intern(event.name)});
    return;
  }
  if (cat == chrome::kCatOverhead) return;
  if (cat == chrome::kCatCudaRuntime || cat == chrome::kCatCudaDriver) {
    const IntArg correlation = intArg(event, chrome::kArgCorrelation);
    if (correlation.fitsUnsigned) {
      trace_.calls.add(CollectedCall{correlation.unsignedValue, event.timestampNs, end, event.tid,
                                     intern(event.name)});
    }
    return;
  }
  CollectedRange range{event.timestampNs, end, event.tid, intern(event.name)};
  range.category = cat == chrome::kCatCpuOp            ? HostRangeCategory::CpuOp
                   : cat == chrome::kCatUserAnnotation ? HostRangeCategory::UserAnnotation
                   : cat == "python_function" && event.name.rfind("nn.Module: ", 0) == 0
                       ? HostRangeCategory::Module
                       : HostRangeCategory::Other;
  if (isStep(event.name)) trace_.steps.push_back(range);
  if (isDataLoading(event.name)) trace_.dataLoading.push_back(range);
  if (event.name.rfind("c10d::", 0) == 0) {
    trace_.collectiveCalls.add({event.timestampNs, trace_.collectiveCalls.size(), range.name});
  }
  if (const IntArg externalId = intArg(event, chrome::kArgExternalId);
      externalId.fitsUnsigned && externalId.unsignedValue != 0) {
    // Ids are unique per range in kinetrace's traces; torch.profiler may give a cpu_op and
    // its record_function one id, and either name serves to say what issued a kernel: the
    // first in the trace is kept.
    trace_.rangeOfExternalId.add(
        {externalId.unsignedValue, trace_.rangeOfExternalId.size(), range.name});
  }
  trace_.hostRanges.add(range);
}

// What the critical path reads of a complete event, its ids as the other lists take them: an
// id that is not a 64-bit number joins nothing (GPU operations and syncs whose device or
// stream is none are left out, as from the other lists).
void TraceCollector::noteCriticalPathEvent(const Event& event, int64_t endNs, uint64_t ordinal) {
  const std::string_view cat = event.category;
  if (cat == chrome::kCatGpuAnnotation || cat == chrome::kCatOverhead) return;
  CriticalPathEvent e;
  e.startNs = event.timestampNs;
  e.endNs = endNs;
  e.pid = event.pid;
  e.tid = event.tid;
  e.ordinal = ordinal;
  const IntArg correlation = intArg(event, chrome::kArgCorrelation);
  e.correlationId = correlation.fitsUnsigned ? correlation.unsignedValue : 0;
  const bool gpuOp = cat == chrome::kCatKernel || cat == chrome::kCatMemcpy ||
                     cat == chrome::kCatMemset || cat == chrome::kCatCudaGraph;
  if (gpuOp || cat == chrome::kCatCudaSync) {
    const IntArg device = intArg(event, chrome::kArgDevice);
    const IntArg stream = intArg(event, chrome::kArgStream);
    if (device.status == IntArg::Status::DoesNotFit ||
        stream.status == IntArg::Status::DoesNotFit) {
      return;
    }
    e.pid = device.status == IntArg::Status::Fits ? device.value : event.pid;
    e.tid = stream.status == IntArg::Status::Fits ? stream.value : event.tid;
  }
  if (gpuOp) {
    e.kind = PathEventKind::GpuOp;
    e.detail =
        static_cast<uint8_t>(cat == chrome::kCatCudaGraph || cat == chrome::kCatKernel
                                 ? (cat == chrome::kCatKernel && containsNoCase(event.name, "nccl")
                                        ? GpuOpKind::Communication
                                        : GpuOpKind::Compute)
                                 : GpuOpKind::Memory);
  } else if (cat == chrome::kCatCudaSync) {
    e.kind = PathEventKind::Sync;
    e.detail = static_cast<uint8_t>(syncKindOf(event.name));
    const IntArg waitOn = intArg(event, "wait_on_stream");
    const IntArg record = intArg(event, "wait_on_cuda_event_record_corr_id");
    e.waitOnStream = waitOn.status == IntArg::Status::Fits && waitOn.value >= 0 ? waitOn.value : -1;
    e.eventRecordCorrelation = record.fitsUnsigned ? record.unsignedValue : 0;
  } else if (cat == chrome::kCatCudaRuntime || cat == chrome::kCatCudaDriver) {
    e.kind = PathEventKind::Call;
  } else {
    e.kind = PathEventKind::HostRange;
    e.detail = static_cast<uint8_t>(
        (cat == chrome::kCatCpuOp ? CriticalPathEvent::kOperator : 0) |
        (cat == chrome::kCatUserAnnotation ? CriticalPathEvent::kAnnotation : 0) |
        (isDataLoading(event.name) ? CriticalPathEvent::kDataLoading : 0));
  }
  e.name = intern(event.name);
  trace_.criticalPathEvents.add(e);
}

void TraceCollector::noteNcclCall(const Event& event) {
  const std::optional<std::string_view> call = textArg(event, chrome::kArgNcclCall);
  // A communicator's creation and destruction launch set-up work, not transfers.
  if (!call || call->rfind("ncclComm", 0) == 0) return;
  auto found =
      std::find_if(trace_.ncclCalls.begin(), trace_.ncclCalls.end(), [&](const auto& entry) {
        return std::string_view(entry.first.data(), entry.first.size()) == *call;
      });
  if (found == trace_.ncclCalls.end()) {
    // A few names in practice; a file that has thousands costs no time per operation.
    if (trace_.ncclCalls.size() == kMaxNcclCalls) {
      ++trace_.leftOut[fmt::format("NCCL operations of calls past the first {} call names",
                                   kMaxNcclCalls)];
      return;
    }
    trace_.ncclCalls.emplace_back(BudgetString(call->data(), call->size(),
                                               BudgetAllocator<char>(*trace_.budget, "NCCL calls")),
                                  NcclCallTotals{});
    found = trace_.ncclCalls.end() - 1;
  }
  NcclCallTotals& totals = found->second;
  ++totals.operations;
  const IntArg bytes = intArg(event, chrome::kArgNcclBytes);
  totals.bytes += bytes.fitsUnsigned ? bytes.unsignedValue : 0;
  totals.gpuNs += event.durationNs;
}

// HTA's kinds of memory operation (get_memory_kernel_type): "Memset", or a copy's name to
// its direction ("Memcpy HtoD (Pageable -> Device)" -> "Memcpy HtoD").
void TraceCollector::noteCopy(const Event& event, const CollectedGpuOp& op) {
  const std::string_view name = event.name;
  const bool memset = name.rfind("Memset", 0) == 0;
  if (!memset && name.rfind("Memcpy", 0) != 0) return;
  CollectedCopy copy;
  copy.startNs = op.startNs;
  copy.endNs = op.endNs;
  copy.device = op.device;
  copy.sequence = trace_.copies.size();
  copy.kind = intern(memset ? std::string_view("Memset") : name.substr(0, 11));
  const IntArg bytes = intArg(event, chrome::kArgBytes);
  if (bytes.status == IntArg::Status::Fits && bytes.value >= 0) copy.bytes = bytes.value;
  std::optional<double> bandwidth;
  for (std::size_t i = 0; i < event.argCount; ++i) {
    if (event.args[i].key != chrome::kArgBandwidth) continue;
    if (const auto* d = std::get_if<double>(&event.args[i].value)) bandwidth = *d;
    if (const auto* whole = std::get_if<int64_t>(&event.args[i].value)) {
      bandwidth = static_cast<double>(*whole);
    }
  }
  // No link moves an exabyte a second: a bandwidth past that is a hostile trace's, which a
  // sum of two would make infinite.
  constexpr double kMostGigabytesPerSecond = 1e9;
  auto credible = [](double gbps) { return gbps >= 0 && gbps <= kMostGigabytesPerSecond; };
  if (bandwidth && !credible(*bandwidth)) {
    ++trace_.leftOut
          ["\"memory bandwidth (GB/s)\" values not from 0 to 1e9 (the copy's bytes over its "
           "duration taken instead)"];
    bandwidth.reset();
  }
  if (!bandwidth && copy.bytes >= 0 && op.endNs > op.startNs) {
    // Bytes per nanosecond are gigabytes per second.
    const double gbps =
        static_cast<double>(copy.bytes) / static_cast<double>(op.endNs - op.startNs);
    if (credible(gbps)) bandwidth = gbps;
  }
  copy.gigabytesPerSecond = bandwidth.value_or(0.0);
  trace_.copies.add(copy);
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
    const std::optional<uint32_t> metric = metricIdOf(event.args[i].key);
    if (!metric) continue;
    if (!std::isfinite(number)) {
      ++trace_.leftOut["kernel metric averages that are not finite numbers"];
      continue;
    }
    record.metric = *metric;
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

std::optional<uint32_t> TraceCollector::metricIdOf(std::string_view key) {
  key_.assign(key.data(), key.size());
  auto found = metricIds_.find(key_);
  if (found != metricIds_.end()) return found->second;
  std::optional<MetricName> metric = metricOfKey(key);
  if (!metric) return std::nullopt;
  if (trace_.gpuMetrics.metrics.size() == kMaxKernelMetrics) {
    ++trace_.leftOut[fmt::format("GPU metric values past the first {} metrics", kMaxKernelMetrics)];
    return std::nullopt;
  }
  // The key, and the metric's name and unit, each kept once more.
  trace_.metricsHeld.take(3 * (key_.size() + sizeof(std::string) + 2 * kAllocationOverheadBytes),
                          "GPU metric names");
  found = metricIds_.emplace(key_, static_cast<uint32_t>(trace_.gpuMetrics.metrics.size())).first;
  trace_.gpuMetrics.metrics.push_back(std::move(*metric));
  return found->second;
}

// A sample's value of one metric: a gpu_metric counter event named for the metric, its one
// argument keyed by the unit ("SM throughput", {"%": 42.0}), on its device's process.
void TraceCollector::noteMetricSample(const Event& event) {
  for (std::size_t i = 0; i < event.argCount; ++i) {
    double number = 0;
    const ArgValue& value = event.args[i].value;
    if (const auto* d = std::get_if<double>(&value)) {
      number = *d;
    } else if (const auto* whole = std::get_if<int64_t>(&value)) {
      number = static_cast<double>(*whole);
    } else {
      continue;
    }
    if (!std::isfinite(number)) {
      ++trace_.leftOut["GPU metric samples that are not finite numbers"];
      continue;
    }
    sampleKey_.assign(event.name.data(), event.name.size());
    sampleKey_ += " (";
    sampleKey_.append(event.args[i].key.data(), event.args[i].key.size());
    sampleKey_ += ")";
    const std::optional<uint32_t> metric = metricIdOf(sampleKey_);
    if (!metric) continue;
    trace_.metricSamples.add({event.pid, event.timestampNs, number, *metric});
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
  // torch.profiler writes its distributedInfo after the events: the later word counts, as
  // in `kinetrace merge`.
  noteRankAndGpuStatus(footer);
}

}  // namespace kinetrace::detail
