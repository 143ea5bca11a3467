#include "kinetrace/value.h"

namespace kinetrace {

Value Value::object(std::initializer_list<Member> members) { return Value(Object(members)); }

const Value* Value::find(std::string_view key) const {
  if (kind() != Kind::Object) return nullptr;
  for (const Member& member : asObject()) {
    if (member.key == key) return &member.value;
  }
  return nullptr;
}

Value& Value::set(std::string key, Value value) {
  if (kind() != Kind::Object) data_ = Object{};
  Object& members = std::get<Object>(data_);
  for (Member& member : members) {
    if (member.key == key) {
      member.value = std::move(value);
      return member.value;
    }
  }
  members.push_back(Member{std::move(key), std::move(value)});
  return members.back().value;
}

bool Value::operator==(const Value& other) const { return data_ == other.data_; }

}  // namespace kinetrace
