#include "output/value_json.h"

#include <nlohmann/json.hpp>

namespace kinetrace::detail {
namespace {

Value fromJson(const nlohmann::ordered_json& json) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::boolean: return Value(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(json.get<uint64_t>());
    case nlohmann::ordered_json::value_t::number_float: return Value(json.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Value::Array items;
      for (const auto& item : json) items.push_back(fromJson(item));
      return Value(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value::Object members;
      for (const auto& [key, item] : json.items()) members.push_back({key, fromJson(item)});
      return Value(std::move(members));
    }
    default: return Value();
  }
}

}  // namespace

std::optional<Value> parseJsonValue(std::string_view text) {
  nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(text, nullptr, false);
  if (parsed.is_discarded()) return std::nullopt;
  return fromJson(parsed);
}

}  // namespace kinetrace::detail
