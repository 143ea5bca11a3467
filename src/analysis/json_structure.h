#pragma once

#include <string_view>

namespace kinetrace::detail {

// Where a scan of JSON text stands towards its strings. A scan that meets a '"' outside a
// string sets inString; while inString, it hands each character to stepInString(), which
// sees escapes through and clears inString at the closing quote.
struct JsonStringScan {
  bool inString = false;
  bool escaped = false;  // the last character was a backslash that escapes this one

  void stepInString(char c) {
    if (escaped) {
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == '"') {
      inString = false;
    }
  }
};

// Calls onStructural(c) for each character of JSON text that lies outside its strings (so
// brackets, commas and colons are the document's own, never a string's content). Lets a
// reader size up a document (its depth, its count of values) before handing it to a
// parser that would build all of it.
template <typename OnStructural>
void forEachStructuralChar(std::string_view json, OnStructural&& onStructural) {
  JsonStringScan scan;
  for (const char c : json) {
    if (scan.inString) {
      scan.stepInString(c);
      continue;
    }
    if (c == '"') {
      scan.inString = true;
    } else {
      onStructural(c);
    }
  }
}

}  // namespace kinetrace::detail
