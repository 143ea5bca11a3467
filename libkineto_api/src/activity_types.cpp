// Activity type names: the categories of libkineto's traces, which PyTorch, TensorBoard and
// Holistic Trace Analysis read.

#include <array>
#include <stdexcept>
#include <string>

#include "ActivityType.h"

namespace libkineto {
namespace {

struct TypeName {
  const char* name;
  ActivityType type;
};

constexpr std::array<TypeName, activityTypeCount> kTypeNames = {{
    {"cpu_op", ActivityType::CPU_OP},
    {"user_annotation", ActivityType::USER_ANNOTATION},
    {"gpu_user_annotation", ActivityType::GPU_USER_ANNOTATION},
    {"gpu_memcpy", ActivityType::GPU_MEMCPY},
    {"gpu_memset", ActivityType::GPU_MEMSET},
    {"kernel", ActivityType::CONCURRENT_KERNEL},
    {"external_correlation", ActivityType::EXTERNAL_CORRELATION},
    {"cuda_runtime", ActivityType::CUDA_RUNTIME},
    {"cuda_driver", ActivityType::CUDA_DRIVER},
    {"cpu_instant_event", ActivityType::CPU_INSTANT_EVENT},
    {"python_function", ActivityType::PYTHON_FUNCTION},
    {"overhead", ActivityType::OVERHEAD},
    {"mtia_runtime", ActivityType::MTIA_RUNTIME},
    {"mtia_ccp_events", ActivityType::MTIA_CCP_EVENTS},
    {"mtia_insight", ActivityType::MTIA_INSIGHT},
    {"cuda_sync", ActivityType::CUDA_SYNC},
    {"cuda_event", ActivityType::CUDA_EVENT},
    {"glow_runtime", ActivityType::GLOW_RUNTIME},
    {"cuda_profiler_range", ActivityType::CUDA_PROFILER_RANGE},
    {"hpu_op", ActivityType::HPU_OP},
    {"xpu_runtime", ActivityType::XPU_RUNTIME},
    {"xpu_driver", ActivityType::XPU_DRIVER},
    {"collective_comm", ActivityType::COLLECTIVE_COMM},
    {"privateuse1_runtime", ActivityType::PRIVATEUSE1_RUNTIME},
    {"privateuse1_driver", ActivityType::PRIVATEUSE1_DRIVER},
}};

constexpr bool namesInEnumOrder() {
  for (std::size_t i = 0; i < kTypeNames.size(); ++i) {
    if (static_cast<std::size_t>(kTypeNames[i].type) != i) return false;
  }
  return true;
}
static_assert(namesInEnumOrder(), "kTypeNames must list the types in enum order");

}  // namespace

const char* toString(ActivityType t) {
  const int index = static_cast<int>(t);
  return index >= 0 && index < activityTypeCount ? kTypeNames[index].name : "ENUM_COUNT";
}

ActivityType toActivityType(const std::string& str) {
  for (const TypeName& entry : kTypeNames) {
    if (str == entry.name) return entry.type;
  }
  throw std::invalid_argument("unknown activity type \"" + str + "\"");
}

std::array<ActivityType, activityTypeCount> activityTypes() {
  std::array<ActivityType, activityTypeCount> all{};
  for (int i = 0; i < activityTypeCount; ++i) all[i] = kTypeNames[i].type;
  return all;
}

std::array<ActivityType, defaultActivityTypeCount> defaultActivityTypes() {
  std::array<ActivityType, defaultActivityTypeCount> defaults{};
  for (int i = 0; i < defaultActivityTypeCount; ++i) defaults[i] = kTypeNames[i].type;
  return defaults;
}

}  // namespace libkineto
