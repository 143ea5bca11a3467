#include "session/metadata.h"

#include <algorithm>
#include <cstdlib>

#include "output/kind_names.h"
#include "output/trace_vocabulary.h"

namespace kinetrace::detail {
namespace {

int64_t envInteger(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  return (end != nullptr && *end == '\0') ? value : fallback;
}

bool has(const Metadata& metadata, std::string_view key) {
  return std::any_of(metadata.begin(), metadata.end(),
                     [key](const Value::Member& m) { return m.key == key; });
}

// User entries after kinetrace's own, except those kinetrace's replace.
void appendUser(Metadata& out, const Metadata& user) {
  for (const Value::Member& member : user) {
    if (!has(out, member.key)) out.push_back(member);
  }
}

Value devicePropertiesOf(const TraceData& trace) {
  Value::Array devices;
  for (const DeviceInfo& d : trace.devices) {
    devices.push_back(Value::object({
        {"id", d.id},
        {"name", trace.tables.strings.get(d.name)},
        {"totalGlobalMem", d.totalGlobalMem},
        {"computeMajor", d.computeMajor},
        {"computeMinor", d.computeMinor},
        {"maxThreadsPerBlock", d.maxThreadsPerBlock},
        {"maxThreadsPerMultiprocessor", d.maxThreadsPerMultiprocessor},
        {"regsPerBlock", d.regsPerBlock},
        {"warpSize", d.warpSize},
        {"sharedMemPerBlock", d.sharedMemPerBlock},
        {"numSms", d.numSms},
        {"regsPerMultiprocessor", d.regsPerMultiprocessor},
        {"sharedMemPerBlockOptin", d.sharedMemPerBlockOptin},
        {"sharedMemPerMultiprocessor", d.sharedMemPerMultiprocessor},
    }));
  }
  return Value(std::move(devices));
}

// What GPU metrics were sampled and what sampling lost; nothing when none were.
Value gpuMetricsOf(const TraceData& trace) {
  Value::Array metrics;
  for (const GpuMetric& metric : trace.tables.gpuMetrics.metrics) {
    metrics.push_back(Value::object({{"name", metric.name},
                                     {"display_name", metric.displayName},
                                     {"unit", metricUnitName(metric.unit)}}));
  }
  const LossCounters& l = trace.losses;
  if (!trace.tables.gpuMetrics.refused.empty()) {
    return Value::object({{"metrics", Value(std::move(metrics))},
                          {"refused", trace.tables.gpuMetrics.refused}});
  }
  return Value::object({{"metrics", Value(std::move(metrics))},
                        {"interval_ns", trace.tables.gpuMetrics.intervalNs},
                        {"samples", trace.counts[RecordKind::MetricSample]},
                        {"lost", l.gpuMetricSamplesLost},
                        {"corrupted", l.gpuMetricSamplesCorrupted},
                        {"setup_dropped", l.gpuMetricSetupSamplesDropped},
                        {"kernels_without_their_samples", l.kernelsWithoutTheirSamples},
                        {"kernels_without_their_samples_because",
                         Value::object({{"let_go", l.kernelsWhoseSamplesWereLetGo},
                                        {"late", l.kernelsWhoseSamplesCameLate},
                                        {"memory_cap", l.kernelsWithoutTheirSamples -
                                                           l.kernelsWhoseSamplesWereLetGo -
                                                           l.kernelsWhoseSamplesCameLate}})}});
}

}  // namespace

void setMetadata(Metadata& metadata, std::string key, Value value) {
  for (Value::Member& member : metadata) {
    if (member.key == key) {
      member.value = std::move(value);
      return;
    }
  }
  metadata.push_back(Value::Member{std::move(key), std::move(value)});
}

Metadata headerMetadata(const Config& config, bool usesTsc, const Metadata& user) {
  Metadata out;
  out.push_back({chrome::kSchemaVersion, 1});
  // HTA refuses a trace without a rank; launchers such as torchrun set these variables. The
  // backend is the process group's, which only the program knows: torch.profiler adds its own
  // distributedInfo (backend included) through the libkineto API, replacing this one.
  out.push_back(
      {chrome::kDistributedInfo, Value::object({{chrome::kRank, envInteger("RANK", 0)},
                                                {chrome::kWorldSize, envInteger("WORLD_SIZE", 1)},
                                                {"local_rank", envInteger("LOCAL_RANK", 0)}})});
  out.push_back({"kinetrace_version", KINETRACE_VERSION_STRING});
  out.push_back({"kinetrace_activities", config.activities.toString()});
  out.push_back({"kinetrace_host_clock", usesTsc ? "tsc" : "clock_monotonic"});
  appendUser(out, user);
  return out;
}

Metadata footerMetadata(const TraceData& trace, const FooterFacts& facts, const Metadata& user) {
  Metadata out;
  out.push_back({chrome::kDeviceProperties, devicePropertiesOf(trace)});
  for (const Value::Member& member : facts.gpuMetadata) out.push_back(member);
  out.push_back({chrome::kGpuStatus, facts.gpuStatus});
  if (!trace.tables.gpuMetrics.empty() || !trace.tables.gpuMetrics.refused.empty())
    out.push_back({chrome::kGpuMetrics, gpuMetricsOf(trace)});
  const LossCounters& l = trace.losses;
  out.push_back({"kinetrace_dropped_host_events", l.droppedHostEvents});
  out.push_back({"kinetrace_cupti_dropped_records", l.cuptiDroppedRecords});
  out.push_back({"kinetrace_cupti_buffers_refused", l.cuptiBuffersRefused});
  out.push_back({"kinetrace_cupti_records_undecoded", l.cuptiRecordsUndecoded});
  out.push_back({"kinetrace_dropped_assembled_records", l.droppedAssembledRecords});
  out.push_back({"kinetrace_dropped_names", l.droppedNames});
  out.push_back({"kinetrace_names_cut", l.namesCut});
  out.push_back({"kinetrace_dropped_metadata", facts.droppedMetadata});
  out.push_back({"kinetrace_out_of_window_events", l.outOfWindowEvents});
  out.push_back({"kinetrace_gpu_ops_before_launch", l.gpuOpsBeforeLaunch});
  out.push_back({"kinetrace_gpu_ops_without_launch", l.gpuOpsWithoutLaunch});
  out.push_back({"kinetrace_gpu_ops_ambiguous_graph_launch", l.gpuOpsAmbiguousGraphLaunch});
  out.push_back({"kinetrace_unfinished_ranges", l.unfinishedRanges});
  out.push_back({"kinetrace_graph_node_sites_not_kept", l.graphNodeSitesNotKept});
  out.push_back({"kinetrace_event_args_not_kept", l.eventArgsNotKept});
  Value counts;
  for (const RecordKindInfo& kind : kRecordKinds) {
    if (kind.countKey != nullptr) counts.set(kind.countKey, trace.counts[kind.kind]);
  }
  out.push_back({"kinetrace_record_counts", std::move(counts)});
  out.push_back({"kinetrace_window_start_ns", trace.startNs});
  out.push_back({"kinetrace_window_stop_ns", trace.stopNs});
  out.push_back({"kinetrace_host_clock_drift_ns", facts.hostClockDriftNs});
  out.push_back({"kinetrace_memory_peak_bytes", trace.peakMemoryBytes});
  out.push_back({"kinetrace_memory_cap_bytes", trace.memoryCapBytes});
  const ClockOffsetBounds& b = trace.clockBounds;
  if (b.hasHigh || b.hasLow) {
    Value offset;
    if (b.hasLow) offset.set("low", b.lowNs);
    if (b.hasHigh) offset.set("high", b.highNs);
    offset.set("meaning",
               "GPU timestamp minus host time lies in [low, high]: GPU work starts after its "
               "launch call begins, and ends before a synchronisation that waited for it returns");
    // Each device's clock is converted on its own: its bounds, from its own work.
    Value::Array devices;
    for (const auto& [device, bound] : b.devices) {
      Value one;
      one.set("device", int64_t{device});
      if (bound.hasLow) one.set("low", bound.lowNs);
      if (bound.hasHigh) one.set("high", bound.highNs);
      devices.push_back(std::move(one));
    }
    offset.set("devices", Value(std::move(devices)));
    out.push_back({"kinetrace_gpu_clock_offset_bound_ns", std::move(offset)});
  }
  appendUser(out, user);
  return out;
}

}  // namespace kinetrace::detail
