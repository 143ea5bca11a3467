#include "output/trace_summary.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <type_traits>
#include <variant>

#include "kinetrace/error.h"
#include "output/value_json.h"

namespace kinetrace::detail {
namespace {

// The summary's keys, listed once: writing and reading walk the same tables, so a field
// added here is written and read back alike, and the JSON keeps this order.
template <typename Record>
struct Field;

template <typename Record>
using FieldMember =
    std::variant<std::string Record::*, int64_t Record::*, uint64_t Record::*, uint32_t Record::*,
                 double Record::*, std::vector<KernelTotal> Record::*,
                 std::vector<CopyTotal> Record::*, std::vector<DeviceBusy> Record::*>;

template <typename Record>
struct Field {
  const char* key;
  FieldMember<Record> member;
};

template <typename Record>
struct FieldTable;

template <>
struct FieldTable<KernelTotal> {
  static constexpr Field<KernelTotal> kFields[] = {
      {"name", &KernelTotal::name},
      {"count", &KernelTotal::count},
      {"total_ns", &KernelTotal::totalNs},
      {"max_ns", &KernelTotal::maxNs},
  };
};

template <>
struct FieldTable<CopyTotal> {
  static constexpr Field<CopyTotal> kFields[] = {
      {"kind", &CopyTotal::kind},
      {"count", &CopyTotal::count},
      {"bytes", &CopyTotal::bytes},
      {"total_ns", &CopyTotal::totalNs},
  };
};

template <>
struct FieldTable<DeviceBusy> {
  static constexpr Field<DeviceBusy> kFields[] = {
      {"device", &DeviceBusy::deviceId},
      {"busy_ns", &DeviceBusy::busyNs},
      {"kernel_busy_ns", &DeviceBusy::kernelBusyNs},
  };
};

// "kinetrace_summary": 1, written first, marks the object as a summary.
constexpr const char* kSummaryMarker = "kinetrace_summary";

template <>
struct FieldTable<Summary> {
  static constexpr Field<Summary> kFields[] = {
      {"trace", &Summary::traceFile},
      {"pid", &Summary::pid},
      {"rank", &Summary::rank},
      {"world_size", &Summary::worldSize},
      {"process_name", &Summary::processName},
      {"window_ns", &Summary::windowNs},
      {"devices", &Summary::devices},
      {"busy_ns", &Summary::busyNs},
      {"kernel_busy_ns", &Summary::kernelBusyNs},
      {"utilisation", &Summary::utilisation},
      {"kernel_utilisation", &Summary::kernelUtilisation},
      {"kernel_count", &Summary::kernelCount},
      {"kernel_total_ns", &Summary::kernelTotalNs},
      {"top_kernels", &Summary::topKernels},
      {"memcpy_count", &Summary::memcpyCount},
      {"memcpy_bytes", &Summary::memcpyBytes},
      {"memcpy_by_kind", &Summary::memcpyByKind},
      {"memset_count", &Summary::memsetCount},
      {"memset_bytes", &Summary::memsetBytes},
      {"graph_count", &Summary::graphCount},
      {"sync_count", &Summary::syncCount},
      {"host_range_count", &Summary::hostRangeCount},
      {"dropped_gpu_records", &Summary::droppedGpuRecords},
      {"dropped_host_events", &Summary::droppedHostEvents},
      {"out_of_window_events", &Summary::outOfWindowEvents},
      {"gpu_ops_without_launch", &Summary::gpuOpsWithoutLaunch},
      {"gpu_status", &Summary::gpuStatus},
  };
};

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

template <typename Record>
void appendFields(const Record& record, Value::Object& object) {
  for (const Field<Record>& field : FieldTable<Record>::kFields) {
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(record.*member)>;
          if constexpr (IsVector<T>::value) {
            Value::Array items;
            for (const auto& item : record.*member) {
              Value::Object itemObject;
              appendFields(item, itemObject);
              items.push_back(Value(std::move(itemObject)));
            }
            object.push_back({field.key, Value(std::move(items))});
          } else {
            object.push_back({field.key, Value(record.*member)});
          }
        },
        field.member);
  }
}

[[noreturn]] void wrongType(const char* key) {
  throw Error(fmt::format("malformed kinetrace summary: \"{}\" has the wrong type", key));
}

template <typename T>
void readScalar(const Value& value, const char* key, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (value.kind() != Value::Kind::String) wrongType(key);
    out = value.asString();
  } else {
    switch (value.kind()) {
      case Value::Kind::Int:
        out = static_cast<T>(value.asInt());
        break;
      case Value::Kind::Uint:
        out = static_cast<T>(value.asUint());
        break;
      case Value::Kind::Double:
        if (!std::is_floating_point_v<T>) wrongType(key);
        out = static_cast<T>(value.asDouble());
        break;
      default:
        wrongType(key);
    }
  }
}

// Members missing (or null) keep their defaults; keys not in the table are ignored.
template <typename Record>
void fromValue(const Value& object, Record& record) {
  for (const Field<Record>& field : FieldTable<Record>::kFields) {
    const Value* value = object.find(field.key);
    if (value == nullptr || value->isNull()) continue;
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(record.*member)>;
          if constexpr (IsVector<T>::value) {
            if (value->kind() != Value::Kind::Array) wrongType(field.key);
            for (const Value& item : value->asArray()) {
              if (item.kind() != Value::Kind::Object) wrongType(field.key);
              fromValue(item, (record.*member).emplace_back());
            }
          } else {
            readScalar(*value, field.key, record.*member);
          }
        },
        field.member);
  }
}

}  // namespace

Value summaryToValue(const Summary& summary) {
  Value::Object object{{kSummaryMarker, Value(1)}};
  appendFields(summary, object);
  return Value(std::move(object));
}

Summary summaryFromValue(const Value& value) {
  if (value.kind() != Value::Kind::Object || value.find(kSummaryMarker) == nullptr) {
    throw Error("not a kinetrace summary (expected a JSON object with \"kinetrace_summary\")");
  }
  Summary summary;
  fromValue(value, summary);
  return summary;
}

std::string summaryToJson(const Summary& summary) {
  // Kernel names are C++ signatures and may hold invalid UTF-8: replace, never throw.
  return valueToJson(summaryToValue(summary))
             .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
         "\n";
}


}  // namespace kinetrace::detail
