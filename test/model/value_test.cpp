#include "kinetrace/value.h"

#include <gtest/gtest.h>

namespace kinetrace {
namespace {

TEST(ValueTest, HoldsEachKindAndSaysWhich) {
  EXPECT_EQ(Value().kind(), Value::Kind::Null);
  EXPECT_EQ(Value(true).kind(), Value::Kind::Bool);
  EXPECT_EQ(Value(-3).asInt(), -3);
  EXPECT_EQ(Value(uint64_t{1} << 63).asUint(), uint64_t{1} << 63);
  EXPECT_EQ(Value(0.5).asDouble(), 0.5);
  EXPECT_EQ(Value("text").asString(), "text");
  EXPECT_EQ(Value(std::string_view("view")).asString(), "view");
  EXPECT_EQ(Value::array({1, "two"}).asArray().size(), 2u);
}

TEST(ValueTest, ObjectsKeepTheOrderMembersWereAddedAndReplaceByKey) {
  Value object = Value::object({{"b", 1}, {"a", 2}});
  object.set("c", 3);
  object.set("b", 10);
  const Value::Object& members = object.asObject();
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0].key, "b");
  EXPECT_EQ(members[0].value.asInt(), 10);
  EXPECT_EQ(members[1].key, "a");
  EXPECT_EQ(members[2].key, "c");
  ASSERT_NE(object.find("a"), nullptr);
  EXPECT_EQ(object.find("missing"), nullptr);
  EXPECT_EQ(Value(1).find("a"), nullptr) << "not an object";
}

TEST(ValueTest, EqualityIsDeep) {
  EXPECT_EQ(Value::object({{"x", Value::array({1, 2})}}), Value::object({{"x", Value::array({1, 2})}}));
  EXPECT_NE(Value::object({{"x", Value::array({1, 2})}}), Value::object({{"x", Value::array({1, 3})}}));
  EXPECT_NE(Value(1), Value(uint64_t{1})) << "kinds differ";
}

}  // namespace
}  // namespace kinetrace
