#pragma once

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kinetrace::detail {

// Small text helpers that C++17's std::string_view lacks (starts_with and ends_with are
// C++20's), in one place so every module means the same by them.

inline bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

inline bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// `text` without the white space (as std::isspace says, in the "C" locale) at either end.
inline std::string_view trim(std::string_view text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

// "1,234,567": a count's digits in groups of three, as people read counts.
inline std::string withThousands(uint64_t n) {
  std::string digits = std::to_string(n);
  for (std::size_t at = digits.size(); at > 3;) {
    at -= 3;
    digits.insert(at, ",");
  }
  return digits;
}

// The names of `items` (`nameOf(item)`, anything a std::string can append) separated by
// `separator`: "a, b, c".
template <class Items, class NameOf>
std::string joinNames(const Items& items, NameOf nameOf, std::string_view separator = ", ") {
  std::string joined;
  for (const auto& item : items) {
    if (!joined.empty()) joined += separator;
    joined += nameOf(item);
  }
  return joined;
}

}  // namespace kinetrace::detail
