// The protobuf wire encoding, checked against bytes worked out by hand from the encoding
// rules (https://protobuf.dev/programming-guides/encoding/), and the reader's errors.

#include "output/protobuf.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kinetrace/error.h"

namespace kinetrace::detail::proto {
namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

std::string errorOf(std::string_view message) {
  try {
    ProtoReader reader(message);
    ProtoField field;
    while (reader.next(field)) {
    }
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(ProtoWriterTest, VarintsAreSevenBitGroupsLowFirst) {
  ByteBuffer buffer;
  ProtoWriter w(buffer);
  w.varint(1, 150);  // the example of protobuf's documentation: 08 96 01
  EXPECT_EQ(std::string(buffer.view()), bytes({0x08, 0x96, 0x01}));
  buffer.clear();
  w.varint(8, 0);
  EXPECT_EQ(std::string(buffer.view()), bytes({0x40, 0x00}));
  buffer.clear();
  w.signedVarint(2, -1);  // int64 -1: ten bytes
  EXPECT_EQ(std::string(buffer.view()), bytes({0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  buffer.clear();
  w.varint(60, 1);  // field 60: a two-byte tag (60 << 3 | 0 = 480)
  EXPECT_EQ(std::string(buffer.view()), bytes({0xe0, 0x03, 0x01}));
  EXPECT_EQ(varintSize(127), 1u);
  EXPECT_EQ(varintSize(128), 2u);
  EXPECT_EQ(varintSize(~uint64_t{0}), 10u);
}

TEST(ProtoWriterTest, FixedAndLengthDelimitedFields) {
  ByteBuffer buffer;
  ProtoWriter w(buffer);
  w.fixed64(47, 0x0102030405060708ull);  // tag 47 << 3 | 1 = 377 = f9 02, little endian
  EXPECT_EQ(std::string(buffer.view()), bytes({0xf9, 0x02, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01}));
  buffer.clear();
  w.bytes(2, "testing");  // protobuf's documentation again: 12 07 74 65 73 74 69 6e 67
  EXPECT_EQ(std::string(buffer.view()), bytes({0x12, 0x07}) + "testing");
  buffer.clear();
  w.doubleValue(5, 1.0);  // 0x3ff0000000000000
  EXPECT_EQ(std::string(buffer.view()), bytes({0x29, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
}

TEST(ProtoWriterTest, NestedMessagesGetMinimalLengthsAtAnySize) {
  for (std::size_t size : {0u, 1u, 127u, 128u, 300u, 20000u}) {
    ByteBuffer buffer;
    buffer.append("prefix", 6);
    ProtoWriter w(buffer);
    const std::size_t outer = w.beginMessage(1);
    const std::size_t inner = w.beginMessage(2);
    w.bytes(3, std::string(size, 'x'));
    w.endMessage(inner);
    w.varint(4, 9);
    w.endMessage(outer);

    const std::string out(buffer.view());
    ASSERT_EQ(out.substr(0, 6), "prefix");
    ProtoReader top(std::string_view(out).substr(6));
    ProtoField field;
    ASSERT_TRUE(top.next(field));
    EXPECT_EQ(field.number, 1u);
    const std::size_t innerBytes = 1 + varintSize(size) + size;
    EXPECT_EQ(field.bytes.size(), 1 + varintSize(innerBytes) + innerBytes + 2) << size;
    ProtoReader outerReader(field.bytes);
    ProtoField part;
    ASSERT_TRUE(outerReader.next(part));
    EXPECT_EQ(part.number, 2u);
    ProtoReader innerReader(part.bytes);
    ProtoField leaf;
    ASSERT_TRUE(innerReader.next(leaf));
    EXPECT_EQ(leaf.bytes, std::string(size, 'x'));
    ASSERT_TRUE(outerReader.next(part));
    EXPECT_EQ(part.number, 4u);
    EXPECT_EQ(part.value, 9u);
    EXPECT_FALSE(outerReader.next(part));
    EXPECT_FALSE(top.next(field));
  }
}

TEST(ProtoReaderTest, ReadsEveryWireTypeBack) {
  ByteBuffer buffer;
  ProtoWriter w(buffer);
  w.varint(1, 300);
  w.fixed64(2, 77);
  w.doubleValue(3, -2.5);
  w.bytes(4, "abc");
  const std::string out = std::string(buffer.view()) + bytes({0x2d, 1, 0, 0, 0});  // field 5, fixed32
  ProtoReader reader(out);
  ProtoField f;
  std::vector<ProtoField> fields;
  while (reader.next(f)) fields.push_back(f);
  ASSERT_EQ(fields.size(), 5u);
  EXPECT_EQ(fields[0].type, WireType::Varint);
  EXPECT_EQ(fields[0].value, 300u);
  EXPECT_EQ(fields[1].type, WireType::Fixed64);
  EXPECT_EQ(fields[1].value, 77u);
  EXPECT_EQ(fields[2].asDouble(), -2.5);
  EXPECT_EQ(fields[3].bytes, "abc");
  EXPECT_EQ(fields[4].type, WireType::Fixed32);
  EXPECT_EQ(fields[4].value, 1u);
}

TEST(ProtoReaderTest, MalformedInputIsAnErrorSayingWhat) {
  EXPECT_EQ(errorOf(bytes({0x08, 0x96})),
            "malformed protobuf: a varint runs past the end of its message");
  EXPECT_EQ(errorOf(bytes({0x12, 0x05, 'a'})),
            "malformed protobuf: field 2 says 5 bytes, 1 are left");
  EXPECT_EQ(errorOf(bytes({0x09, 1, 2})), "malformed protobuf: field 1 needs 8 bytes, 2 are left");
  EXPECT_EQ(errorOf(bytes({0x0b})),
            "malformed protobuf: field 1 has wire type 3, which no message in a trace uses");
  EXPECT_EQ(errorOf(bytes({0x00, 0x01})), "malformed protobuf: field number 0");
  EXPECT_EQ(errorOf(std::string(11, '\xff')), "malformed protobuf: a varint longer than ten bytes");
}

}  // namespace
}  // namespace kinetrace::detail::proto
