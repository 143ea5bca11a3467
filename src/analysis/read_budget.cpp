#include "analysis/read_budget.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "analysis/json_structure.h"
#include "kinetrace/error.h"

namespace kinetrace::detail {

namespace {

std::string refusalText(const std::string& file, const std::string& what, std::size_t capBytes) {
  const std::size_t megabytes = (capBytes + (std::size_t{1} << 20) - 1) >> 20;
  return fmt::format(
      "{}{} would take more than the {} MB of memory --memory-mb allows; raise --memory-mb",
      file.empty() ? std::string() : file + ": ", what, megabytes);
}

}  // namespace

BudgetRefusal::BudgetRefusal(std::string file, std::string what, std::size_t capBytes)
    : Error(refusalText(file, what, capBytes)),
      file_(std::move(file)),
      what_(std::move(what)),
      capBytes_(capBytes) {}

void ReadBudget::refuse(std::string_view what) const {
  throw BudgetRefusal(file_, std::string(what), cap());
}

namespace {

// A heap string's bytes: none while it fits the string itself (15 bytes in libstdc++).
std::size_t heapBytesOf(const std::string& text) {
  return text.capacity() > 15 ? text.capacity() + 1 + kAllocationOverheadBytes : 0;
}

}  // namespace

std::size_t footprintOf(const Value& value) {
  std::size_t bytes = sizeof(Value);
  switch (value.kind()) {
    case Value::Kind::String:
      bytes += heapBytesOf(value.asString());
      break;
    case Value::Kind::Array:
      bytes += kAllocationOverheadBytes;
      for (const Value& item : value.asArray()) bytes += footprintOf(item);
      break;
    case Value::Kind::Object:
      bytes += footprintOf(value.asObject());
      break;
    default:
      break;
  }
  return bytes;
}

std::size_t footprintOf(const Metadata& metadata) {
  std::size_t bytes = kAllocationOverheadBytes;
  for (const Value::Member& member : metadata) {
    bytes += sizeof(std::string) + heapBytesOf(member.key) + footprintOf(member.value);
  }
  return bytes;
}

std::size_t parsedFootprintOf(std::string_view json) {
  // Every value but the first follows one of these outside a string; each becomes a node
  // of the parser's tree and one of the Value (with a member's key beside it), and a
  // container's vector may have twice the room its items need.
  std::size_t nodes = 1;
  forEachStructuralChar(json, [&nodes](char c) {
    if (c == ',' || c == '[' || c == '{' || c == ':') ++nodes;
  });
  constexpr std::size_t kNodeBytes =
      2 * (sizeof(nlohmann::ordered_json) + sizeof(Value::Member)) + kAllocationOverheadBytes;
  return 2 * json.size() + nodes * kNodeBytes;
}

}  // namespace kinetrace::detail
