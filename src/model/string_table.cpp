#include "model/string_table.h"

namespace kinetrace::detail {

StringTable::StringTable() { intern(""); }

StringId StringTable::intern(std::string_view text) {
  auto found = ids_.find(text);
  if (found != ids_.end()) return found->second;
  const std::string& stored = storage_.emplace_back(text);
  auto id = static_cast<StringId>(strings_.size());
  strings_.push_back(&stored);
  ids_.emplace(std::string_view(stored), id);
  // The text, the std::string, the pointer and a hash node.
  bytes_ += text.size() + sizeof(std::string) + sizeof(void*) + 48;
  return id;
}

}  // namespace kinetrace::detail
