#include "output/json_escape.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace kinetrace::detail {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string escaped(std::string_view text) {
  std::string out;
  appendJsonString(out, text);
  return out;
}

// What a JSON parser reads back from our output.
std::string decoded(std::string_view text) {
  return nlohmann::json::parse(escaped(text)).get<std::string>();
}

// nlohmann refuses to serialise invalid UTF-8: an oracle independent of our decoder.
bool isValidUtf8(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

TEST(JsonEscapeTest, CopiesPlainAsciiUnchangedBetweenQuotes) {
  EXPECT_EQ(escaped(""), "\"\"");
  EXPECT_EQ(escaped("abc"), "\"abc\"");
  const std::string printable = " !#$%&'()*+,-./0123456789:;<=>?@ABCXYZ[]^_`abcxyz{|}~";
  EXPECT_EQ(escaped(printable), "\"" + printable + "\"");
}

TEST(JsonEscapeTest, PassesDeleteCharacterThrough) { EXPECT_EQ(escaped("a\x7F"), "\"a\x7F\""); }

TEST(JsonEscapeTest, EscapesQuoteAndBackslash) {
  EXPECT_EQ(escaped("say \"hi\""), R"("say \"hi\"")");
  EXPECT_EQ(escaped("C:\\dir\\"), R"("C:\\dir\\")");
}

TEST(JsonEscapeTest, UsesShortFormsForCommonControlCharacters) {
  EXPECT_EQ(escaped("\b\f\n\r\t"), R"("\b\f\n\r\t")");
}

TEST(JsonEscapeTest, UsesUnicodeEscapesForOtherControlCharacters) {
  EXPECT_EQ(escaped(std::string("\0", 1)), R"("\u0000")");
  EXPECT_EQ(escaped("\x01\x1F\x0B"), R"("\u0001\u001f\u000b")");
}

TEST(JsonEscapeTest, EveryControlCharacterDecodesToItself) {
  for (int c = 0; c < 0x20; ++c) {
    const std::string text = "x" + std::string(1, static_cast<char>(c)) + "y";
    EXPECT_EQ(decoded(text), text) << "control character " << c;
  }
}

TEST(JsonEscapeTest, PassesValidMultiByteUtf8Through) {
  for (const std::string text : {"caf\xC3\xA9", "\xE2\x82\xAC 5", "\xF0\x9F\x98\x80",
                                 "\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF"}) {
    EXPECT_EQ(escaped(text), "\"" + text + "\"");
  }
}

TEST(JsonEscapeTest, ReplacesInvalidLeadAndStrayContinuationBytes) {
  EXPECT_EQ(decoded("a\x80z"), "a" + kFffd + "z");
  EXPECT_EQ(decoded("\xC0\xC1\xF5\xFF"), kFffd + kFffd + kFffd + kFffd);
  EXPECT_EQ(decoded("\xBF\xBF"), kFffd + kFffd);
}

TEST(JsonEscapeTest, ReplacesOverlongEncodings) {
  EXPECT_EQ(decoded("\xC0\xAF"), kFffd + kFffd);          // '/' in two bytes
  EXPECT_EQ(decoded("\xE0\x80\xAF"), kFffd + kFffd + kFffd);
  EXPECT_EQ(decoded("\xF0\x80\x80\xAF"), kFffd + kFffd + kFffd + kFffd);
}

TEST(JsonEscapeTest, ReplacesEncodedSurrogates) {
  EXPECT_EQ(decoded("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // U+D800
  EXPECT_EQ(decoded("\xED\xBF\xBF"), kFffd + kFffd + kFffd);  // U+DFFF
}

TEST(JsonEscapeTest, ReplacesCodePointsAboveUnicodeRange) {
  EXPECT_EQ(decoded("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // U+110000
}

TEST(JsonEscapeTest, ReplacesATruncatedSequenceWithOneReplacementCharacter) {
  EXPECT_EQ(decoded("\xE2\x82"), kFffd);
  EXPECT_EQ(decoded("\xE2\x82x"), kFffd + "x");
  EXPECT_EQ(decoded("\xF0\x9F\x98"), kFffd);
  EXPECT_EQ(decoded("\xF0\x9F\x98\xC3\xA9"), kFffd + "\xC3\xA9");
}

TEST(JsonEscapeTest, HandlesSpecialBytesAtEveryPositionOfABlock) {
  // The fast path scans 16 or 8 bytes at a time and finishes with an overlapping block;
  // a special byte in any lane, or two of them, must stop it.
  for (std::size_t length : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 15u, 16u, 17u, 31u, 40u}) {
    for (std::size_t first = 0; first < length; ++first) {
      for (std::size_t second = first; second < length; ++second) {
        for (char special : {'"', '\\', '\n', '\x01', '\x80'}) {
          std::string text(length, 'a');
          text[first] = special;
          text[second] = '"';
          std::string expected = text;
          if (special == '\x80' && first != second) expected.replace(first, 1, kFffd);
          ASSERT_EQ(decoded(text), expected) << length << " " << first << " " << second;
        }
      }
    }
  }
}

TEST(JsonEscapeTest, RandomBytesAlwaysGiveValidJsonAndValidUtf8PassesUnchanged) {
  std::mt19937 random(12345);
  // Biased toward bytes that matter: ASCII, controls, and UTF-8 lead/continuation bytes.
  const unsigned char palette[] = {'a', 'Z', ' ', '"', '\\', 0x00, 0x1F, 0x7F, 0x80, 0x9F,
                                   0xA0, 0xBF, 0xC2, 0xC3, 0xDF, 0xE0, 0xE2, 0xED, 0xEF,
                                   0xF0, 0xF4, 0xF5, 0xFF};
  for (int round = 0; round < 20000; ++round) {
    std::string text(random() % 48, '\0');
    for (char& c : text) c = static_cast<char>(palette[random() % sizeof palette]);
    const std::string json = escaped(text);
    std::string back;
    ASSERT_NO_THROW(back = nlohmann::json::parse(json).get<std::string>()) << json;
    EXPECT_TRUE(isValidUtf8(back));
    if (isValidUtf8(text)) {
      EXPECT_EQ(back, text);
    }
  }
}

TEST(JsonEscapeTest, SplitPointGivesTheSameOutputAsEscapingWhole) {
  std::mt19937 random(777);
  const unsigned char palette[] = {'a', '"', 0x80, 0xBF, 0xC3, 0xE2, 0xF0, 0xF4, 0x9F, 0x98};
  for (int round = 0; round < 20000; ++round) {
    std::string text(4 + random() % 40, '\0');
    for (char& c : text) c = static_cast<char>(palette[random() % sizeof palette]);
    const std::size_t maxBytes = 4 + random() % (text.size() - 3);
    const std::size_t cut = jsonEscapeSplitPoint(text, maxBytes);
    ASSERT_GT(cut, 0u);
    ASSERT_LE(cut, maxBytes);
    std::string whole(text.size() * kJsonEscapeMaxExpansion, '\0');
    whole.resize(static_cast<std::size_t>(writeJsonEscaped(whole.data(), text) - whole.data()));
    std::string pieces(text.size() * kJsonEscapeMaxExpansion, '\0');
    char* end = writeJsonEscaped(pieces.data(), std::string_view(text).substr(0, cut));
    end = writeJsonEscaped(end, std::string_view(text).substr(cut));
    pieces.resize(static_cast<std::size_t>(end - pieces.data()));
    EXPECT_EQ(pieces, whole);
  }
}

TEST(JsonEscapeTest, EscapesAVeryLongStringWithCharactersAcrossChunkBoundaries) {
  std::string text;
  while (text.size() < 3'000'000) text += "ab\"\xE2\x82\xAC\n\xF0\x9F\x98\x80\\";
  EXPECT_EQ(decoded(text), text);
}

}  // namespace
}  // namespace kinetrace::detail
