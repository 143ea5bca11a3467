// StringIndex: strings numbered in order of first addition, found again by their content
// wherever the text lies.

#include "output/string_index.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kinetrace::detail {
namespace {

std::size_t findOrAdd(StringIndex& index, std::string_view text) {
  const uint64_t hash = StringIndex::hashOf(text);
  const std::size_t found = index.find(text, hash);
  return found != StringIndex::kNone ? found : index.add(text, hash);
}

TEST(StringIndexTest, StringsAreNumberedInOrderAndFoundByContentAtAnyAddress) {
  StringIndex index;
  EXPECT_EQ(index.find("aten::add", StringIndex::hashOf("aten::add")), StringIndex::kNone);
  EXPECT_EQ(findOrAdd(index, "aten::add"), 0u);
  EXPECT_EQ(findOrAdd(index, "kernel"), 1u);
  EXPECT_EQ(findOrAdd(index, ""), 2u);
  std::string moved = "aten::";
  moved += "add";  // the same text in another buffer
  EXPECT_EQ(findOrAdd(index, moved), 0u);
  EXPECT_EQ(findOrAdd(index, ""), 2u);
  EXPECT_EQ(findOrAdd(index, "aten::ad"), 3u) << "a prefix is another string";
  EXPECT_EQ(index.size(), 4u);
  EXPECT_EQ(index.text(0), "aten::add");
  EXPECT_EQ(index.text(2), "");
}

// The index keeps its own copies: the caller's buffers can change, and texts stay valid as
// the table grows and new blocks are taken (strings longer than a block too).
TEST(StringIndexTest, ManyStringsOfEveryLengthKeepTheirNumbersAndTexts) {
  StringIndex index;
  std::vector<std::string> texts;
  for (int i = 0; i < 5000; ++i) {
    std::string text = "name " + std::to_string(i);
    if (i % 97 == 0) text += std::string(static_cast<std::size_t>(i) * 40, 'x');  // up to 190 KB
    texts.push_back(text);
    std::string buffer = text;
    EXPECT_EQ(findOrAdd(index, buffer), static_cast<std::size_t>(i));
    buffer.assign(buffer.size(), '?');  // the caller reuses its buffer
  }
  for (int i = 0; i < 5000; ++i) {
    const std::string copy = texts[static_cast<std::size_t>(i)];
    ASSERT_EQ(index.find(copy, StringIndex::hashOf(copy)), static_cast<std::size_t>(i));
    ASSERT_EQ(index.text(static_cast<std::size_t>(i)), copy);
  }
}

TEST(StringIndexTest, TextsDifferingInOneByteAnywhereHashApart) {
  // Every length around the 8-byte words the hash reads, a byte changed at every position.
  for (std::size_t length = 1; length <= 33; ++length) {
    const std::string base(length, 'a');
    for (std::size_t at = 0; at < length; ++at) {
      std::string other = base;
      other[at] = 'b';
      EXPECT_NE(StringIndex::hashOf(base), StringIndex::hashOf(other)) << length << " " << at;
    }
    EXPECT_NE(StringIndex::hashOf(base), StringIndex::hashOf(base + '\0')) << length;
  }
}

}  // namespace
}  // namespace kinetrace::detail
