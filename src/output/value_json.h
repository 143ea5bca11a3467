#pragma once

#include <optional>
#include <string_view>

#include "kinetrace/value.h"

namespace kinetrace::detail {

// Metadata given as JSON text (Trace::addMetadataJson, a summary file) as a typed value;
// std::nullopt when the text is not valid JSON. Object members keep their order.
std::optional<Value> parseJsonValue(std::string_view text);

}  // namespace kinetrace::detail
