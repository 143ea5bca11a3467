#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string_view>

#include "kinetrace/value.h"

namespace kinetrace::detail {

// Metadata given as JSON text (Trace::addMetadataJson, a summary file) as a typed value;
// std::nullopt when the text is not valid JSON. Object members keep their order.
std::optional<Value> parseJsonValue(std::string_view text);

// A parsed JSON value as a typed value. Integers are Int unless they only fit Uint.
Value valueFromJson(const nlohmann::ordered_json& json);
// A typed value as JSON, object members in their order.
nlohmann::ordered_json valueToJson(const Value& value);

}  // namespace kinetrace::detail
