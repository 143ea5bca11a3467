#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kinetrace::detail {

using StringId = uint32_t;

// Interned strings: each distinct string is stored once and named by a small id, so a
// kernel name repeated a million times costs one copy and a million 4-byte ids.
// Not thread-safe: filled while a trace is assembled, read-only afterwards.
class StringTable {
 public:
  StringTable();
  // Move-only: the index holds views into the stored strings, which a move keeps in place
  // and a copy would leave pointing into the original.
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;
  StringId intern(std::string_view text);
  std::string_view get(StringId id) const { return *strings_[id]; }
  std::size_t size() const { return strings_.size(); }
  // Roughly what the table holds, for the memory budget: text plus per-entry overhead.
  std::size_t bytes() const { return bytes_; }

  static constexpr StringId kEmpty = 0;

 private:
  // A deque never moves its elements, so the views used as map keys stay valid.
  std::deque<std::string> storage_;
  std::deque<const std::string*> strings_;
  std::unordered_map<std::string_view, StringId> ids_;
  std::size_t bytes_ = 0;
};

}  // namespace kinetrace::detail
