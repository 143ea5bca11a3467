#include "model/string_table.h"

namespace kinetrace::detail {

StringTable::StringTable() {
  add("");
}

namespace {
// The text, the std::string, the pointer and a hash node.
std::size_t entryBytes(std::string_view text) {
  return text.size() + sizeof(std::string) + sizeof(void*) + 48;
}
}  // namespace

void StringTable::setByteLimit(std::size_t bytes, MemoryBudget* budget, std::size_t reserve) {
  limit_ = bytes;
  budget_ = budget;
  if (budget_ != nullptr && reserve > 0 && budget_->tryAcquire(reserve)) {
    fromBudget_ += reserve;
    reserveLeft_ = reserve;
  }
}

void StringTable::releaseBudget() {
  if (budget_ == nullptr) return;  // writes nothing: a finished trace may be read meanwhile
  budget_->release(fromBudget_);
  fromBudget_ = 0;
  reserveLeft_ = 0;
  budget_ = nullptr;
}

StringId StringTable::intern(std::string_view text) {
  auto found = ids_.find(text);
  if (found != ids_.end()) return found->second;
  const std::size_t cost = entryBytes(text);
  bool fits = bytes_ < limit_;
  if (fits && budget_ != nullptr) {
    if (reserveLeft_ >= cost) {
      reserveLeft_ -= cost;
    } else if (budget_->tryAcquire(cost)) {
      fromBudget_ += cost;
    } else {
      fits = false;
    }
  }
  if (!fits) {
    ++dropped_;
    if (droppedId_ == 0) droppedId_ = add(kDroppedName);
    return droppedId_;
  }
  return add(text);
}

StringId StringTable::add(std::string_view text) {
  const std::string& stored = storage_.emplace_back(text);
  auto id = static_cast<StringId>(strings_.size());
  strings_.push_back(&stored);
  ids_.emplace(std::string_view(stored), id);
  bytes_ += entryBytes(text);
  return id;
}

}  // namespace kinetrace::detail
