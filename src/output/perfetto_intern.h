#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "output/string_index.h"

// PerfettoSink's table of interned strings of one kind (perfetto_sink.cpp).

namespace kinetrace::detail {

// Strings of one kind (event names, categories, annotation names) with their interning ids:
// the same id for a string on every sequence (each sequence defines it once, see
// Encoder::intern). Most strings come again and again from the same address (a trace's
// string table, a literal): a slot per address remembers the string's number, checked
// against the interned text, so a repeat costs one comparison, and an address reused for
// other text only misses the slot. Other strings (a trace read back from a file, whose
// strings move every event) are found by their content (StringIndex).
class InternTable {
 public:
  static constexpr std::size_t kNone = StringIndex::kNone;

  // Ids are first, first + stride, first + 2 * stride, ...
  explicit InternTable(uint64_t stride = 1, uint64_t first = 1) : stride_(stride), first_(first) {
    grow();
  }

  // The string's index (0, 1, 2, ... in order of first use), or kNone when the budget is
  // spent and the string is not already interned (the caller writes it in place).
  std::size_t find(std::string_view text, std::size_t* budgetBytes) {
    Slot* const pair = slotsOf(text);
    // Two slots an address, the one used last first: a string that shares its slots with
    // one other keeps its place (with one slot each, two such strings met in turn missed
    // every time: a quarter of the lookups of a 64-kernel trace). A slot holds the interned
    // copy and its size, so a hit compares the text without looking the string up.
    for (int way = 0; way < 2; ++way) {
      const Slot& slot = pair[way];
      if (slot.data == text.data() && slot.size == text.size() && slot.index != kNone &&
          sameBytes(slot.kept, text.data(), text.size())) {
        return slot.index;
      }
    }
    return findByContent(text, budgetBytes, pair);
  }
  uint64_t id(std::size_t index) const { return first_ + stride_ * index; }

 private:
  struct Slot {
    const char* data = nullptr;  // where the string was met
    const char* kept = nullptr;  // the interned copy
    std::size_t size = 0;
    std::size_t index = kNone;
  };
  // Fibonacci hashing of the address and size: literals are packed byte by byte, so
  // neighbouring strings must not share a slot (they did with address / 8, and a
  // torch.profiler-shaped trace missed its slots on every event for "grid" and "block").
  Slot* slotsOf(std::string_view text) {
    const uint64_t key = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(text.data())) ^
                         (static_cast<uint64_t>(text.size()) << 48);
    return &slots_[((key * 0x9E3779B97F4A7C15ull) >> (64 - slotBits_)) & ~std::size_t{1}];
  }

  // A miss on the address slots: the string found by its content, or added. Out of line,
  // so that the hits (most lookups) stay a few instructions in their callers.
  [[gnu::noinline]] std::size_t findByContent(std::string_view text, std::size_t* budgetBytes,
                                              Slot* pair) {
    const uint64_t hash = StringIndex::hashOf(text);
    std::size_t index = strings_.find(text, hash);
    if (index == kNone) {
      const std::size_t cost = text.size() + StringIndex::kBytesPerString;
      if (*budgetBytes < cost) return kNone;
      *budgetBytes -= cost;
      index = strings_.add(text, hash);
      if (strings_.size() > slotCount() / 4 && slotBits_ < kMaxSlotBits) {
        grow();
        return index;
      }
    }
    pair[1] = pair[0];
    pair[0] = Slot{text.data(), strings_.text(index).data(), text.size(), index};
    return index;
  }

  // Names and argument keys are mostly short: compared inline, without a call to memcmp.
  static bool sameBytes(const char* a, const char* b, std::size_t size) {
    if (size > 16) return std::memcmp(a, b, size) == 0;
    if (size >= 8) {
      return load<uint64_t>(a) == load<uint64_t>(b) &&
             load<uint64_t>(a + size - 8) == load<uint64_t>(b + size - 8);
    }
    if (size >= 4) {
      return load<uint32_t>(a) == load<uint32_t>(b) &&
             load<uint32_t>(a + size - 4) == load<uint32_t>(b + size - 4);
    }
    for (std::size_t i = 0; i < size; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  template <typename Word>
  static Word load(const char* at) {
    Word v;
    std::memcpy(&v, at, sizeof v);
    return v;
  }
  // The slots grow with the strings interned, from 64 up to 4,096, four for each string:
  // a short trace (a few dozen names) zeroes a few pages instead of 320 KB over five
  // tables (a fifth of the instructions of writing a 200-event trace). Growing forgets the
  // slots; the index still knows every string.
  static constexpr int kFirstSlotBits = 6;
  static constexpr int kMaxSlotBits = 12;
  std::size_t slotCount() const { return slotBits_ == 0 ? 0 : std::size_t{1} << slotBits_; }
  void grow() {
    slotBits_ = slotBits_ == 0 ? kFirstSlotBits : slotBits_ + 2;
    slots_ = std::make_unique<Slot[]>(slotCount());
  }
  uint64_t stride_;
  uint64_t first_;
  StringIndex strings_;
  std::unique_ptr<Slot[]> slots_;
  int slotBits_ = 0;
};

}  // namespace kinetrace::detail
