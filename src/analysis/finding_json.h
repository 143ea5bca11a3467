#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "analysis/trace_analysis.h"

namespace kinetrace::detail {

// A finding as `analyze --json` and `diff --json` write it: its id, the number of the rank it
// is about (none: the job's), its sentence, the fields its kind of report adds (`details`, in
// their order), then the figures it rests on by name.
inline nlohmann::ordered_json findingJson(const Finding& f, std::optional<int64_t> rankNumber,
                                          nlohmann::ordered_json details = {}) {
  nlohmann::ordered_json finding = {{"id", f.id}};
  if (rankNumber) finding["rank"] = *rankNumber;
  finding["text"] = f.text;
  if (details.is_object()) {
    for (auto& [key, value] : details.items()) finding[key] = std::move(value);
  }
  nlohmann::ordered_json evidence = nlohmann::ordered_json::object();
  for (const auto& [name, value] : f.evidence) evidence[name] = value;
  finding["evidence"] = std::move(evidence);
  return finding;
}

}  // namespace kinetrace::detail
