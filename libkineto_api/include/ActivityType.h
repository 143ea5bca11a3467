// kinetrace's libkineto-compatible API: activity types.
//
// The enumerators and their values are part of the ABI that PyTorch was compiled against:
// they must stay in this order (libkineto_api/abi checks them against the wheel's headers).
#pragma once

#include <array>
#include <set>
#include <string>

namespace libkineto {

enum class ActivityType {
  // Recorded by default.
  CPU_OP = 0,
  USER_ANNOTATION,
  GPU_USER_ANNOTATION,
  GPU_MEMCPY,
  GPU_MEMSET,
  CONCURRENT_KERNEL,
  EXTERNAL_CORRELATION,
  CUDA_RUNTIME,
  CUDA_DRIVER,
  CPU_INSTANT_EVENT,
  PYTHON_FUNCTION,
  OVERHEAD,
  MTIA_RUNTIME,
  MTIA_CCP_EVENTS,
  MTIA_INSIGHT,
  CUDA_SYNC,
  CUDA_EVENT,

  // Recorded only when asked for.
  GLOW_RUNTIME,
  CUDA_PROFILER_RANGE,
  HPU_OP,
  XPU_RUNTIME,
  XPU_DRIVER,
  COLLECTIVE_COMM,
  PRIVATEUSE1_RUNTIME,
  PRIVATEUSE1_DRIVER,

  ENUM_COUNT,  // not a type: the number of types
  OPTIONAL_ACTIVITY_TYPE_START = GLOW_RUNTIME,
};

// The trace category of a type ("cpu_op", "kernel", "gpu_memcpy", ...).
const char* toString(ActivityType t);
// The type of a category name; throws std::invalid_argument for an unknown name.
ActivityType toActivityType(const std::string& str);

constexpr int activityTypeCount = static_cast<int>(ActivityType::ENUM_COUNT);
constexpr int defaultActivityTypeCount =
    static_cast<int>(ActivityType::OPTIONAL_ACTIVITY_TYPE_START);
std::array<ActivityType, activityTypeCount> activityTypes();
std::array<ActivityType, defaultActivityTypeCount> defaultActivityTypes();

}  // namespace libkineto
