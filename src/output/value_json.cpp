#include "output/value_json.h"

#include <nlohmann/json.hpp>

namespace kinetrace::detail {

Value valueFromJson(const nlohmann::ordered_json& json) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::boolean:
      return Value(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      // nlohmann reads every non-negative integer as unsigned; kinetrace's integers are
      // signed unless they do not fit.
      const auto value = json.get<uint64_t>();
      if (value <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(value));
      return Value(value);
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Value::Array items;
      for (const auto& item : json) items.push_back(valueFromJson(item));
      return Value(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value::Object members;
      for (const auto& [key, item] : json.items()) members.push_back({key, valueFromJson(item)});
      return Value(std::move(members));
    }
    default:
      return Value();
  }
}

nlohmann::ordered_json valueToJson(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Null:
      return nullptr;
    case Value::Kind::Bool:
      return value.asBool();
    case Value::Kind::Int:
      return value.asInt();
    case Value::Kind::Uint:
      return value.asUint();
    case Value::Kind::Double:
      return value.asDouble();
    case Value::Kind::String:
      return value.asString();
    case Value::Kind::Array: {
      nlohmann::ordered_json items = nlohmann::ordered_json::array();
      for (const Value& item : value.asArray()) items.push_back(valueToJson(item));
      return items;
    }
    case Value::Kind::Object: {
      nlohmann::ordered_json members = nlohmann::ordered_json::object();
      for (const Value::Member& member : value.asObject())
        members[member.key] = valueToJson(member.value);
      return members;
    }
  }
  return nullptr;
}

std::optional<Value> parseJsonValue(std::string_view text) {
  nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(text, nullptr, false);
  if (parsed.is_discarded()) return std::nullopt;
  return valueFromJson(parsed);
}

}  // namespace kinetrace::detail
