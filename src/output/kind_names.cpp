#include "output/kind_names.h"

#include <array>
#include <cstddef>
#include <string>

#include "output/trace_vocabulary.h"

namespace kinetrace::detail {
namespace {

// One past the last enumerator of each kind: the tables below are indexed by the enum, and
// a value outside it (a record decoded from a newer CUPTI) is named as Unknown.
constexpr std::size_t kCopyKinds = static_cast<std::size_t>(CopyKind::PtoP) + 1;
constexpr std::size_t kMemoryKinds = static_cast<std::size_t>(MemoryKind::ManagedStatic) + 1;

template <typename Kind>
std::size_t indexOf(Kind kind, std::size_t count) {
  const auto index = static_cast<std::size_t>(kind);
  return index < count ? index : 0;  // 0 is Unknown in every kind
}

// Every (copy, source, destination) name, formatted once on first use. A function-local
// static is initialised exactly once even when several threads ask at the same time.
class MemcpyNames {
 public:
  MemcpyNames() {
    for (std::size_t copy = 0; copy < kCopyKinds; ++copy) {
      for (std::size_t src = 0; src < kMemoryKinds; ++src) {
        for (std::size_t dst = 0; dst < kMemoryKinds; ++dst) {
          std::string& name = names_[(copy * kMemoryKinds + src) * kMemoryKinds + dst];
          name = "Memcpy ";
          name += copyKindName(static_cast<CopyKind>(copy));
          name += " (";
          name += memoryKindName(static_cast<MemoryKind>(src));
          name += " -> ";
          name += memoryKindName(static_cast<MemoryKind>(dst));
          name += ")";
        }
      }
    }
  }
  std::string_view get(CopyKind copy, MemoryKind src, MemoryKind dst) const {
    return names_[(indexOf(copy, kCopyKinds) * kMemoryKinds + indexOf(src, kMemoryKinds)) *
                      kMemoryKinds +
                  indexOf(dst, kMemoryKinds)];
  }

 private:
  std::array<std::string, kCopyKinds * kMemoryKinds * kMemoryKinds> names_;
};

class MemsetNames {
 public:
  MemsetNames() {
    for (std::size_t kind = 0; kind < kMemoryKinds; ++kind) {
      names_[kind] = "Memset (";
      names_[kind] += memoryKindName(static_cast<MemoryKind>(kind));
      names_[kind] += ")";
    }
  }
  std::string_view get(MemoryKind kind) const { return names_[indexOf(kind, kMemoryKinds)]; }

 private:
  std::array<std::string, kMemoryKinds> names_;
};

}  // namespace

std::string_view copyKindName(CopyKind kind) {
  switch (kind) {
    case CopyKind::HtoD:
      return "HtoD";
    case CopyKind::DtoH:
      return "DtoH";
    case CopyKind::HtoA:
      return "HtoA";
    case CopyKind::AtoH:
      return "AtoH";
    case CopyKind::AtoA:
      return "AtoA";
    case CopyKind::AtoD:
      return "AtoD";
    case CopyKind::DtoA:
      return "DtoA";
    case CopyKind::DtoD:
      return "DtoD";
    case CopyKind::HtoH:
      return "HtoH";
    case CopyKind::PtoP:
      return "PtoP";
    case CopyKind::Unknown:
      break;
  }
  return "Unknown";
}

std::string_view memoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::Pageable:
      return "Pageable";
    case MemoryKind::Pinned:
      return "Pinned";
    case MemoryKind::Device:
      return "Device";
    case MemoryKind::Array:
      return "Array";
    case MemoryKind::Managed:
      return "Managed";
    case MemoryKind::DeviceStatic:
      return "Device Static";
    case MemoryKind::ManagedStatic:
      return "Managed Static";
    case MemoryKind::Unknown:
      break;
  }
  return "Unknown";
}

std::string_view syncKindName(SyncKind kind) {
  switch (kind) {
    case SyncKind::EventSync:
      return "Event Sync";
    case SyncKind::StreamWaitEvent:
      return "Stream Wait Event";
    case SyncKind::StreamSync:
      return "Stream Sync";
    case SyncKind::ContextSync:
      return "Context Sync";
    case SyncKind::Unknown:
      break;
  }
  return "Synchronization";
}

std::string_view overheadKindName(OverheadKind kind) {
  switch (kind) {
    case OverheadKind::DriverCompiler:
      return "Driver compiler";
    case OverheadKind::CuptiBufferFlush:
      return "CUPTI buffer flush";
    case OverheadKind::CuptiInstrumentation:
      return "CUPTI instrumentation";
    case OverheadKind::CuptiResource:
      return "CUPTI resource";
    case OverheadKind::ModuleLoading:
      return "Module loading";
    case OverheadKind::LazyFunctionLoading:
      return "Lazy function loading";
    case OverheadKind::CommandBufferFull:
      return "Command buffer full";
    case OverheadKind::ActivityBufferRequest:
      return "Activity buffer request";
    case OverheadKind::Unknown:
      break;
  }
  return "CUPTI overhead";
}

std::string_view memcpyEventName(CopyKind kind, MemoryKind source, MemoryKind destination) {
  static const MemcpyNames names;
  return names.get(kind, source, destination);
}

std::string_view memsetEventName(MemoryKind kind) {
  static const MemsetNames names;
  return names.get(kind);
}

std::string_view metricUnitName(MetricUnit unit) {
  switch (unit) {
    case MetricUnit::Percent:
      return chrome::kUnitPercent;
    case MetricUnit::BytesPerSecond:
      return chrome::kUnitBytesPerSecond;
    case MetricUnit::PerSecond:
      return chrome::kUnitPerSecond;
    case MetricUnit::Value:
      return chrome::kUnitValue;
  }
  return {};
}

std::string gpuMetricArgKey(const GpuMetric& metric) {
  std::string key = metric.displayName;
  key += " (";
  key += metricUnitName(metric.unit);
  key += ')';
  return key;
}

}  // namespace kinetrace::detail
