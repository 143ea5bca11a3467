// kinetrace's libkineto-compatible API: the framework's clock converter.
//
// PyTorch times its ops with a fast approximate clock (the TSC) and hands the converter to
// Unix-epoch nanoseconds here before it stops a trace; kinetrace measures its own clock
// against it and places GPU activities in the same time base.
#pragma once

#include <cstdint>
#include <functional>

namespace libkineto {

using time_t = int64_t;  // epoch nanoseconds
#if defined(__x86_64__) || defined(_M_X64)
using approx_time_t = uint64_t;  // the TSC
#else
using approx_time_t = int64_t;
#endif

// The converter in use; the identity until the framework sets one.
std::function<time_t(approx_time_t)>& get_time_converter();

}  // namespace libkineto
