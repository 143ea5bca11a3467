#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

// event.h first: GCC's -Wshadow takes the enumerator Phase::Metadata, declared after the
// alias Metadata below, for a shadowing declaration.
#include "kinetrace/event.h"
#include "kinetrace/export.h"

// A typed metadata value: what a trace says about itself ("rank": 0, "cupti_version":
// 130001, "distributedInfo": {...}). Sinks turn values into their own format; nothing in
// kinetrace stores metadata as text and parses it back.
//
//   kinetrace::Value info = kinetrace::Value::object({{"rank", 0}, {"backend", "nccl"}});
//   profiler.addMetadata("distributedInfo", info);

namespace kinetrace {

class KINETRACE_API Value {
 public:
  struct Member;
  using Array = std::vector<Value>;
  using Object = std::vector<Member>;  // keys in the order they were added

  Value() = default;  // null
  Value(std::nullptr_t) {}
  Value(bool v) : data_(v) {}
  Value(int v) : data_(int64_t{v}) {}
  Value(long v) : data_(static_cast<int64_t>(v)) {}
  Value(long long v) : data_(static_cast<int64_t>(v)) {}
  Value(unsigned v) : data_(int64_t{v}) {}
  Value(unsigned long v) : data_(static_cast<uint64_t>(v)) {}
  Value(unsigned long long v) : data_(static_cast<uint64_t>(v)) {}
  Value(double v) : data_(v) {}
  Value(std::string v) : data_(std::move(v)) {}
  Value(std::string_view v) : data_(std::string(v)) {}
  Value(const char* v) : data_(std::string(v)) {}
  Value(Array v) : data_(std::move(v)) {}
  Value(Object v) : data_(std::move(v)) {}

  static Value array(std::initializer_list<Value> items) { return Value(Array(items)); }
  static Value object(std::initializer_list<Member> members);

  enum class Kind { Null, Bool, Int, Uint, Double, String, Array, Object };
  Kind kind() const { return static_cast<Kind>(data_.index()); }

  bool isNull() const { return kind() == Kind::Null; }
  // Accessors for the kind the value holds; any other kind is a programming error
  // (std::bad_variant_access).
  bool asBool() const { return std::get<bool>(data_); }
  int64_t asInt() const { return std::get<int64_t>(data_); }
  uint64_t asUint() const { return std::get<uint64_t>(data_); }
  double asDouble() const { return std::get<double>(data_); }
  const std::string& asString() const { return std::get<std::string>(data_); }
  const Array& asArray() const { return std::get<Array>(data_); }
  const Object& asObject() const { return std::get<Object>(data_); }

  // An object's member by key, or nullptr (also when this is not an object).
  const Value* find(std::string_view key) const;
  // Sets an object member, replacing one of the same key. A null value becomes an object.
  Value& set(std::string key, Value value);

  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }

 private:
  std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string, Array, Object> data_;
};

struct Value::Member {
  std::string key;
  Value value;
  bool operator==(const Member& other) const { return key == other.key && value == other.value; }
};

// Top-level metadata of a trace: keys in the order a sink should write them.
using Metadata = Value::Object;

}  // namespace kinetrace
