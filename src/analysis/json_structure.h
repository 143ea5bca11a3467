#pragma once

#include <string_view>

namespace kinetrace::detail {

// Calls onStructural(c) for each character of JSON text that lies outside its strings (so
// brackets, commas and colons are the document's own, never a string's content). Lets a
// reader size up a document (its depth, its count of values) before handing it to a
// parser that would build all of it.
template <typename OnStructural>
void forEachStructuralChar(std::string_view json, OnStructural&& onStructural) {
  bool inString = false;
  bool escaped = false;
  for (const char c : json) {
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        inString = false;
      }
      continue;
    }
    if (c == '"') {
      inString = true;
    } else {
      onStructural(c);
    }
  }
}

}  // namespace kinetrace::detail
