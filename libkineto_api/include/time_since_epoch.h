// kinetrace's libkineto-compatible API: a time point as nanoseconds since its clock's epoch.
#pragma once

#include <chrono>
#include <cstdint>

namespace libkineto {

template <class ClockT>
inline int64_t timeSinceEpoch(const std::chrono::time_point<ClockT>& t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace libkineto
