#pragma once

#include <fmt/core.h>

#include <atomic>
#include <cstdio>

#include "kinetrace/log_level.h"

// Messages to stderr, prefixed "kinetrace:", filtered by the configured level.
// Not for hot paths.

namespace kinetrace::detail {

extern std::atomic<int> gLogLevel;

inline void setLogLevel(LogLevel level) { gLogLevel.store(static_cast<int>(level)); }

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (static_cast<int>(level) > gLogLevel.load(std::memory_order_relaxed)) return;
  static constexpr const char* kPrefix[] = {"error", "warning", "info", "debug"};
  std::string text = fmt::format(format, std::forward<Args>(args)...);
  std::fprintf(stderr, "kinetrace %s: %s\n", kPrefix[static_cast<int>(level)], text.c_str());
}

}  // namespace kinetrace::detail
