#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace kinetrace::detail {

// Distinct strings numbered 0, 1, 2, ... in the order they were added, found by their
// content. The Perfetto writer interns every event name, category and argument name through
// one of these; a trace read back from JSON hands it strings at a new address every event,
// so each is found by its content: a hash of a few multiplies per 8 bytes, then a probe of
// an open-addressed table that holds numbers only, then one comparison. (A std::unordered_map
// of std::string cost a copy of the key, a modulo and a node per lookup: half the
// instructions of writing a torch.profiler trace's events.)
//
// The strings are copied into blocks that never move, so text() stays valid while the index
// lives. Not thread-safe.
class StringIndex {
 public:
  static constexpr std::size_t kNone = ~std::size_t{0};

  static uint64_t hashOf(std::string_view text) {
    constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ull;
    uint64_t hash = (text.size() + 1) * kMultiplier;
    const char* at = text.data();
    std::size_t left = text.size();
    for (; left >= 8; at += 8, left -= 8) {
      uint64_t word = 0;
      std::memcpy(&word, at, 8);
      hash = (hash ^ word) * kMultiplier;
      hash ^= hash >> 31;
    }
    if (left > 0) {
      uint64_t word = 0;
      for (std::size_t i = 0; i < left; ++i)
        word |= uint64_t{static_cast<unsigned char>(at[i])} << (8 * i);
      hash = (hash ^ word) * kMultiplier;
    }
    // Final mixing: the table uses the top bits.
    hash ^= hash >> 33;
    hash *= 0xFF51AFD7ED558CCDull;
    hash ^= hash >> 33;
    return hash;
  }

  // The string's number, or kNone when it was never added. `hash` is hashOf(text).
  std::size_t find(std::string_view text, uint64_t hash) const {
    if (slots_.empty()) return kNone;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = hash >> shift_;; at = (at + 1) & mask) {
      const uint32_t entry = slots_[at];
      if (entry == 0) return kNone;
      const std::size_t number = entry - 1;
      if (hashes_[number] == hash && texts_[number] == text) return number;
    }
  }

  // Adds a string that find() does not know; returns its number.
  std::size_t add(std::string_view text, uint64_t hash) {
    if ((texts_.size() + 1) * 2 > slots_.size()) grow();
    const std::size_t number = texts_.size();
    texts_.push_back(keep(text));
    hashes_.push_back(hash);
    place(hash, number);
    return number;
  }

  std::string_view text(std::size_t number) const { return texts_[number]; }
  std::size_t size() const { return texts_.size(); }

  // What a string costs here beyond its characters (its hash, its view, two table slots).
  static constexpr std::size_t kBytesPerString =
      sizeof(uint64_t) + sizeof(std::string_view) + 2 * sizeof(uint32_t);

 private:
  static constexpr std::size_t kBlockBytes = std::size_t{64} << 10;
  static constexpr int kFirstSlotBits = 6;

  void grow() {
    const int bits = slots_.empty() ? kFirstSlotBits : 64 - shift_ + 1;
    slots_.assign(std::size_t{1} << bits, 0);
    shift_ = 64 - bits;
    for (std::size_t number = 0; number < hashes_.size(); ++number) place(hashes_[number], number);
  }

  void place(uint64_t hash, std::size_t number) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = hash >> shift_;
    while (slots_[at] != 0) at = (at + 1) & mask;
    slots_[at] = static_cast<uint32_t>(number + 1);
  }

  // A copy of the text in a block that never moves.
  std::string_view keep(std::string_view text) {
    if (text.empty()) return {};
    if (text.size() > blockLeft_) {
      const std::size_t bytes = text.size() > kBlockBytes ? text.size() : kBlockBytes;
      blocks_.emplace_back(new char[bytes]);
      blockAt_ = blocks_.back().get();
      blockLeft_ = bytes;
    }
    std::memcpy(blockAt_, text.data(), text.size());
    const std::string_view kept(blockAt_, text.size());
    blockAt_ += text.size();
    blockLeft_ -= text.size();
    return kept;
  }

  std::vector<uint32_t> slots_;  // 0 empty, else number + 1; at most half full
  int shift_ = 64;               // a hash's slot is hash >> shift_
  std::vector<std::string_view> texts_;
  std::vector<uint64_t> hashes_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* blockAt_ = nullptr;
  std::size_t blockLeft_ = 0;
};

}  // namespace kinetrace::detail
