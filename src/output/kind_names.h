#pragma once

#include <string>
#include <string_view>

#include "model/gpu_metrics.h"
#include "model/records.h"

// Display names of the model's kinds, as PyTorch's profiler writes them and as HTA and
// TensorBoard search for them. Only sinks use these; nothing compares them.

namespace kinetrace::detail {

std::string_view copyKindName(CopyKind kind);        // "HtoD", "DtoH", "PtoP", ...
std::string_view memoryKindName(MemoryKind kind);    // "Pinned", "Device", ...
std::string_view syncKindName(SyncKind kind);        // "Stream Sync", "Event Sync", ...
std::string_view overheadKindName(OverheadKind kind);  // "CUPTI buffer flush", ...
// "Memcpy HtoD (Pinned -> Device)": a constant per (copy, source, destination) kind, built
// once, so writing a copy formats nothing.
std::string_view memcpyEventName(CopyKind kind, MemoryKind source, MemoryKind destination);
std::string_view memsetEventName(MemoryKind kind);   // "Memset (Device)"
std::string_view metricUnitName(MetricUnit unit);    // "%", "bytes/s"
// The key of a kernel's average of `metric`: "SM throughput (%)".
std::string gpuMetricArgKey(const GpuMetric& metric);

}  // namespace kinetrace::detail
