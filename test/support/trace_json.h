#pragma once

// Reading a written Chrome trace back in tests.

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kinetrace::testing {

// A JSON `ts`/`dur` (microseconds) as integer nanoseconds.
inline int64_t nsOf(const nlohmann::json& micros) {
  return std::llround(micros.get<double>() * 1000);
}

// The events of phase `ph` (and category `cat`, unless empty), in file order.
inline std::vector<nlohmann::json> eventsWith(const nlohmann::json& root, const std::string& ph,
                                              const std::string& cat = "") {
  std::vector<nlohmann::json> found;
  for (const nlohmann::json& e : root["traceEvents"]) {
    if (e["ph"] == ph && (cat.empty() || e.value("cat", "") == cat)) found.push_back(e);
  }
  return found;
}

}  // namespace kinetrace::testing
