#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kinetrace/error.h"
#include "kinetrace/value.h"
#include "model/memory_budget.h"

// The one cap on what an offline command (`kinetrace analyze`, `convert`, `merge`, `summary`)
// holds in memory while it reads traces that anyone may have written: `--memory-mb`.
//
// A command makes one ReadBudget and passes it by reference to every reader, sink and list
// that holds state growing with its input: the byte source's buffers, the JSON lexer's
// strings, the event and the top-level metadata being read, .pftrace interned strings,
// tracks and open slices, the distinct names, steps and records `analyze` keeps, what
// `merge` remembers of each rank, a summary file's bytes. There is no default: a reader
// cannot be written without one.
//
// What grows asks before it grows. A structure that can spill or drop and count (the lists
// of spill.h, the .pftrace reader's open slices) uses tryTake() and does so; one that cannot
// uses take() (or BudgetAllocator), which throws kinetrace::Error naming the file being
// read, what grew and the cap, and saying to raise --memory-mb.
//
// A ReadBudget is used by one thread at a time. Commands that read several files at once
// (`analyze` of a job's ranks) give each reading thread a ReadBudget of its own that draws
// on the command's counters (MemoryBudget's, atomic): one cap for all, and each thread's
// refusals naming its own file.

namespace kinetrace::detail {

// What `--memory-mb` is when not given: the cap `analyze` has always had.
constexpr std::size_t kDefaultReadBudgetBytes = std::size_t{256} << 20;

// What malloc spends on an allocation besides the bytes asked for (its header, rounding to
// 16 bytes), counted with each allocation so that many small ones (a name table's nodes)
// are not undercounted by a third.
constexpr std::size_t kAllocationOverheadBytes = 16;

// The error a refused take() throws, with its parts kept so that a reader can say where in
// the file it was ("packet at byte 12") without naming the file twice.
class BudgetRefusal : public Error {
 public:
  BudgetRefusal(std::string file, std::string what, std::size_t capBytes);
  const std::string& file() const { return file_; }
  const std::string& whatGrew() const { return what_; }
  std::size_t capBytes() const { return capBytes_; }

 private:
  std::string file_;
  std::string what_;
  std::size_t capBytes_;
};

class ReadBudget {
 public:
  explicit ReadBudget(std::size_t capBytes = kDefaultReadBudgetBytes)
      : own_(capBytes), memory_(own_) {}
  // A budget that draws on another's counters (`shared.memory()`), for another thread.
  explicit ReadBudget(MemoryBudget& shared) : memory_(shared) {}
  ReadBudget(const ReadBudget&) = delete;
  ReadBudget& operator=(const ReadBudget&) = delete;

  // Takes `bytes` when they fit under the cap with what is held; false otherwise.
  bool tryTake(std::size_t bytes) noexcept { return memory_.tryAcquire(bytes); }
  // Takes `bytes`, or throws kinetrace::Error: "<file>: <what> would take more than the 16 MB
  // of memory --memory-mb allows; raise --memory-mb" (`what`: "distinct names").
  void take(std::size_t bytes, std::string_view what) {
    if (!tryTake(bytes)) refuse(what);
  }
  void giveBack(std::size_t bytes) noexcept { memory_.release(bytes); }

  // Throws the BudgetRefusal that take() throws.
  [[noreturn]] void refuse(std::string_view what) const;

  // The counters themselves, for a sink that draws its own state from the same cap
  // (output/sink_memory.h).
  MemoryBudget& memory() noexcept { return memory_; }

  std::size_t cap() const noexcept { return memory_.cap(); }
  std::size_t used() const noexcept { return memory_.used(); }
  std::size_t peak() const noexcept { return memory_.peak(); }
  // What tryTake() could still give.
  std::size_t left() const noexcept { return used() >= cap() ? 0 : cap() - used(); }

  // The file that refusals name: set while it is read (Reading), "" between files.
  const std::string& file() const { return file_; }

  // Names `file` in the refusals of what grows while it is read; the file named before
  // comes back at the end of the scope.
  class Reading {
   public:
    Reading(ReadBudget& budget, std::string file) : budget_(budget), before_(std::move(file)) {
      std::swap(budget_.file_, before_);
    }
    ~Reading() { std::swap(budget_.file_, before_); }
    Reading(const Reading&) = delete;
    Reading& operator=(const Reading&) = delete;

   private:
    ReadBudget& budget_;
    std::string before_;
  };

 private:
  MemoryBudget own_;
  MemoryBudget& memory_;  // own_, or the counters shared with other threads' budgets
  std::string file_;
};

// Bytes taken from a budget for something whose size is estimated rather than allocated
// through BudgetAllocator (a parsed metadata value, an event being built), given back
// when the hold is reset or destroyed. Move-only.
class BudgetHold {
 public:
  BudgetHold() = default;
  explicit BudgetHold(ReadBudget& budget) noexcept : budget_(&budget) {}
  ~BudgetHold() { reset(); }
  BudgetHold(BudgetHold&& other) noexcept
      : budget_(other.budget_), bytes_(std::exchange(other.bytes_, 0)) {}
  BudgetHold& operator=(BudgetHold&& other) noexcept {
    if (this != &other) {
      reset();
      budget_ = other.budget_;
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  BudgetHold(const BudgetHold&) = delete;
  BudgetHold& operator=(const BudgetHold&) = delete;

  // Adds `bytes` to the hold, or throws as ReadBudget::take.
  void take(std::size_t bytes, std::string_view what) {
    budget_->take(bytes, what);
    bytes_ += bytes;
  }
  bool tryTake(std::size_t bytes) noexcept {
    if (!budget_->tryTake(bytes)) return false;
    bytes_ += bytes;
    return true;
  }
  // Gives back `bytes` of the hold (at most what it holds).
  void giveBack(std::size_t bytes) noexcept {
    bytes = bytes < bytes_ ? bytes : bytes_;
    if (bytes == 0) return;
    budget_->giveBack(bytes);
    bytes_ -= bytes;
  }
  void reset() noexcept { giveBack(bytes_); }
  std::size_t bytes() const noexcept { return bytes_; }
  ReadBudget& budget() const noexcept { return *budget_; }

 private:
  ReadBudget* budget_ = nullptr;
  std::size_t bytes_ = 0;
};

// An allocator whose every allocation is taken from a budget (malloc's overhead counted)
// and given back when freed; one the budget refuses throws kinetrace::Error naming `what`
// (ReadBudget::take). For containers that grow with their input: BudgetVector, BudgetString,
// BudgetMap, BudgetSet, BudgetUnorderedMap, BudgetUnorderedSet.
template <typename T>
class BudgetAllocator {
 public:
  using value_type = T;
  using propagate_on_container_copy_assignment = std::true_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using is_always_equal = std::false_type;

  BudgetAllocator(ReadBudget& budget, const char* what) noexcept : budget_(&budget), what_(what) {}
  template <typename U>
  BudgetAllocator(const BudgetAllocator<U>& other) noexcept  // NOLINT: rebinding converts
      : budget_(other.budget_), what_(other.what_) {}

  T* allocate(std::size_t n) {
    if (n > (std::numeric_limits<std::size_t>::max() - kAllocationOverheadBytes) / sizeof(T)) {
      budget_->refuse(what_);
    }
    const std::size_t bytes = n * sizeof(T) + kAllocationOverheadBytes;
    budget_->take(bytes, what_);
    try {
      return static_cast<T*>(::operator new(n * sizeof(T)));
    } catch (...) {
      budget_->giveBack(bytes);
      throw;
    }
  }
  void deallocate(T* p, std::size_t n) noexcept {
    budget_->giveBack(n * sizeof(T) + kAllocationOverheadBytes);
    ::operator delete(p);
  }

  ReadBudget& budget() const noexcept { return *budget_; }
  const char* what() const noexcept { return what_; }

  template <typename U>
  bool operator==(const BudgetAllocator<U>& other) const noexcept {
    return budget_ == other.budget_;
  }
  template <typename U>
  bool operator!=(const BudgetAllocator<U>& other) const noexcept {
    return budget_ != other.budget_;
  }

 private:
  template <typename U>
  friend class BudgetAllocator;
  ReadBudget* budget_;
  const char* what_;
};

template <typename T>
using BudgetVector = std::vector<T, BudgetAllocator<T>>;
using BudgetString = std::basic_string<char, std::char_traits<char>, BudgetAllocator<char>>;
inline std::string_view viewOf(const BudgetString& text) {
  return std::string_view(text.data(), text.size());
}
template <typename K, typename V, typename Less = std::less<K>>
using BudgetMap = std::map<K, V, Less, BudgetAllocator<std::pair<const K, V>>>;
template <typename K, typename Less = std::less<K>>
using BudgetSet = std::set<K, Less, BudgetAllocator<K>>;
template <typename K, typename V, typename Hash = std::hash<K>, typename Eq = std::equal_to<K>>
using BudgetUnorderedMap =
    std::unordered_map<K, V, Hash, Eq, BudgetAllocator<std::pair<const K, V>>>;
template <typename K, typename Hash = std::hash<K>, typename Eq = std::equal_to<K>>
using BudgetUnorderedSet = std::unordered_set<K, Hash, Eq, BudgetAllocator<K>>;

// A memory block of trivially copyable records whose bytes are taken from a budget as it
// grows, so its owner can decide what to do when the budget says no (spill, drop and
// count) instead of failing: the growth's old and new blocks are both counted while the
// records move.
template <typename T>
class BudgetBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "records move as bytes");

 public:
  explicit BudgetBuffer(ReadBudget& budget) noexcept : budget_(&budget) {}
  ~BudgetBuffer() { release(); }
  BudgetBuffer(BudgetBuffer&& other) noexcept
      : budget_(other.budget_),
        data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  BudgetBuffer& operator=(BudgetBuffer&& other) noexcept {
    if (this != &other) {
      release();
      budget_ = other.budget_;
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  BudgetBuffer(const BudgetBuffer&) = delete;
  BudgetBuffer& operator=(const BudgetBuffer&) = delete;

  // Makes room for `items` records in all; false (nothing changed) when the budget refuses.
  bool tryReserve(std::size_t items) noexcept {
    if (items <= capacity_) return true;
    if (items > std::numeric_limits<std::size_t>::max() / sizeof(T) - 1) return false;
    const std::size_t bytes = bytesOf(items);
    if (!budget_->tryTake(bytes)) return false;
    T* grown = static_cast<T*>(::operator new(items * sizeof(T), std::nothrow));
    if (grown == nullptr) {
      budget_->giveBack(bytes);
      return false;
    }
    if (size_ > 0) std::memcpy(static_cast<void*>(grown), data_, size_ * sizeof(T));
    T* old = data_;
    const std::size_t oldCapacity = capacity_;
    data_ = grown;
    capacity_ = items;
    if (old != nullptr) {
      ::operator delete(old);
      budget_->giveBack(bytesOf(oldCapacity));
    }
    return true;
  }
  // Adds a record within the capacity reserved.
  void push(const T& item) noexcept { data_[size_++] = item; }
  void clear() noexcept { size_ = 0; }
  // Frees the block and gives its bytes back.
  void release() noexcept {
    if (data_ == nullptr) return;
    ::operator delete(data_);
    budget_->giveBack(bytesOf(capacity_));
    data_ = nullptr;
    size_ = 0;
    capacity_ = 0;
  }

  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  bool empty() const noexcept { return size_ == 0; }
  ReadBudget& budget() const noexcept { return *budget_; }

 private:
  static std::size_t bytesOf(std::size_t items) noexcept {
    return items * sizeof(T) + kAllocationOverheadBytes;
  }
  ReadBudget* budget_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// What a value holds in memory, roughly: its nodes, their keys and strings, and malloc's
// overhead on each. For charging parsed metadata while it is held.
std::size_t footprintOf(const Value& value);
std::size_t footprintOf(const Metadata& metadata);

// What parsing `json` into a Value takes at most while both the parser's tree and the
// value exist: a node per value the text can hold and its strings twice. Counted from the
// text, before parsing, so an oversized one is refused before it is built.
std::size_t parsedFootprintOf(std::string_view json);

}  // namespace kinetrace::detail
