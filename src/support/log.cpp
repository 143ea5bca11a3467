#include "support/log.h"

namespace kinetrace::detail {

std::atomic<int> gLogLevel{static_cast<int>(LogLevel::Warning)};

}  // namespace kinetrace::detail
