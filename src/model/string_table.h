#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

#include "model/memory_budget.h"

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
  // Once the table holds `bytes`, or `budget` refuses room for a new string, a string not
  // in it yet is not added: intern() returns the id of kDroppedName instead and counts it.
  // Names repeat, so a handful of them fill most traces; a program that makes a new name per
  // event would otherwise grow the table with the window. `reserve` bytes are taken from
  // the budget at once, for the first names: a budget that records fill to the brim (a
  // flood of kernels) still leaves room for those kernels' names. What the table takes
  // from the budget goes back with releaseBudget() (the budget must outlive the table or
  // that call).
  void setByteLimit(std::size_t bytes, MemoryBudget* budget = nullptr, std::size_t reserve = 0);
  void releaseBudget();
  uint64_t dropped() const { return dropped_; }
  static constexpr std::string_view kDroppedName = "<name dropped: kinetrace's memory cap>";

  static constexpr StringId kEmpty = 0;

 private:
  // A deque never moves its elements, so the views used as map keys stay valid.
  std::deque<std::string> storage_;
  std::deque<const std::string*> strings_;
  std::unordered_map<std::string_view, StringId> ids_;
  std::size_t bytes_ = 0;
  std::size_t limit_ = SIZE_MAX;
  MemoryBudget* budget_ = nullptr;
  std::size_t fromBudget_ = 0;   // bytes taken from budget_, reserveLeft_ included
  std::size_t reserveLeft_ = 0;  // of the reserve, not used by names yet
  uint64_t dropped_ = 0;
  StringId droppedId_ = 0;  // kDroppedName's id, once it was needed
  StringId add(std::string_view text);
};

}  // namespace kinetrace::detail
